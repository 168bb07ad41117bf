package config

import (
	"strings"
	"testing"
	"time"

	"github.com/signalbox/signalbox/sources/kafka"
)

// startup_timeout reaches the source and the Kafka sink's bound; the
// documented default is the source's; a value that is not a positive
// duration is named.
func TestStartupTimeout(t *testing.T) {
	if doc := docDefault(t, "startup_timeout"); doc != kafka.DefaultStartupTimeout.String() {
		t.Errorf("docs/config.md says %s, the source defaults to %v", doc, kafka.DefaultStartupTimeout)
	}
	if got := mustBuild(t, "startup_timeout: 2s\n"+minimal).Kafka.StartupTimeout; got != 2*time.Second {
		t.Errorf("startup_timeout 2s: the source gets %v", got)
	}
	if got := mustBuild(t, minimal).Kafka.StartupTimeout; got != 0 {
		t.Errorf("no startup_timeout: the source gets %v, want 0 (its default)", got)
	}
	for _, bad := range []string{"0s", "-1s", "soon"} {
		got := strings.Join(problems(t, "startup_timeout: "+bad+"\n"+minimal), "\n")
		if !strings.Contains(got, "startup_timeout: ") {
			t.Errorf("startup_timeout %s: %q does not name the field", bad, got)
		}
	}
}
