package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestBuildInfo(t *testing.T) {
	c := NewBuildInfo("0.1.0", "abc123", "go1.26.8")
	want := `
# HELP signalbox_build_info Always 1; the labels name the running build: its version, VCS commit and Go version.
# TYPE signalbox_build_info gauge
signalbox_build_info{commit="abc123",goversion="go1.26.8",version="0.1.0"} 1
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
	if problems, err := testutil.CollectAndLint(c); err != nil || len(problems) > 0 {
		t.Fatalf("lint: %v %v", err, problems)
	}
}
