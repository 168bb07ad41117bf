package admin

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// TestDocumentedDefaults: docs/config.md states the defaults this package
// applies.
func TestDocumentedDefaults(t *testing.T) {
	md, err := os.ReadFile("../../docs/config.md")
	if err != nil {
		t.Fatal(err)
	}
	secs := func(d time.Duration) string { return fmt.Sprintf("%d s", int(d.Seconds())) }
	for _, want := range []string{
		"| `admin.addr` | `" + DefaultAddr + "` |",
		fmt.Sprintf("published nothing for %d minute", int(DefaultStallAfter.Minutes())),
		"a " + secs(readTimeout) + " read timeout, a " + secs(writeTimeout) + " write timeout and a " + secs(idleTimeout) + " idle timeout",
	} {
		if !strings.Contains(strings.Join(strings.Fields(string(md)), " "), want) {
			t.Errorf("docs/config.md does not say %q", want)
		}
	}
}
