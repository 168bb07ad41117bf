package admin_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/internal/admin"
	"github.com/signalbox/signalbox/internal/progress"
	"github.com/signalbox/signalbox/internal/version"
)

// TestBuildOnStatusAndMetrics: /status and /metrics name the same build
// as `signalbox version`.
func TestBuildOnStatusAndMetrics(t *testing.T) {
	h := admin.Handler(admin.Options{Stats: func() signalbox.Stats { return signalbox.Stats{} }, Now: time.Now, Logger: zap.NewNop()})
	get := func(path string) string {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != http.StatusOK {
			t.Fatalf("%s: %d %s", path, rec.Code, rec.Body)
		}
		return rec.Body.String()
	}
	want := version.Get()
	var st progress.Status
	if err := json.Unmarshal([]byte(get("/status")), &st); err != nil {
		t.Fatal(err)
	}
	if st.Build != want {
		t.Errorf("/status build = %+v, want %+v", st.Build, want)
	}
	series := fmt.Sprintf("signalbox_build_info{commit=%q,goversion=%q,version=%q} 1\n", want.Commit, want.GoVersion, want.Version)
	if m := get("/metrics"); !strings.Contains(m, series) {
		t.Errorf("/metrics lacks %q", series)
	}
}
