package signalbox_test

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/signalbox/signalbox/embedded"
	"github.com/signalbox/signalbox/formats/formatstest"
)

// TestSchemadRegistryRefusesCredentials: a schema registry that answers 401
// (no credentials) or 403 (a wrong password, or credentials revoked while a
// partition is held for an outage) stops Run at once with an error naming
// schema_registry and the status, never the password: no partition is held
// forever, no record is dead-lettered or written.
func TestSchemadRegistryRefusesCredentials(t *testing.T) {
	const user, pass = "alice", "s3cret-pass"
	t.Setenv("SCHEMAD_AUTH_PASSWORD", "wrong-"+pass)
	for _, tc := range []struct {
		name, auth string
		status     int
		outage     bool // the registry is down (503) first, so a hold begins, then refuses
	}{
		{"no credentials", "", http.StatusUnauthorized, false},
		{"wrong password", ", username: " + user + ", password_env: SCHEMAD_AUTH_PASSWORD", http.StatusForbidden, false},
		{"refused while held", ", username: " + user + ", password_env: SCHEMAD_AUTH_PASSWORD", http.StatusForbidden, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := startCluster(t, embedded.WithTopic("inv", 3), embedded.WithTopic("sales", 2))
			r := formatstest.NewRegistry(t)
			produceLane(t, c, r, 300)
			r.Down.Store(tc.outage)
			r.Intercept(func(w http.ResponseWriter, req *http.Request) bool { // after Down's: refuses once the outage ends
				u, p, ok := req.BasicAuth()
				switch {
				case !ok:
					http.Error(w, `{"error_code":40101,"message":"Unauthorized"}`, http.StatusUnauthorized)
				case u != user || p != pass:
					http.Error(w, `{"error_code":40301,"message":"User cannot access the resource."}`, http.StatusForbidden)
				default:
					return false
				}
				return true
			})
			dir := t.TempDir()
			out, dead := filepath.Join(dir, "out.jsonl"), filepath.Join(dir, "dead.jsonl")
			doc := laneJob(c, r, out, dead, "")
			doc = strings.Replace(doc, fmt.Sprintf("schema_registry: {url: %q}", r.URL()), fmt.Sprintf("schema_registry: {url: %q%s}", r.URL(), tc.auth), 1)
			p, done := startLane(t, doc)
			if tc.outage {
				waitFor(t, "a partition held for the outage", func() bool { return len(p.Stats().SchemaHolds) > 0 })
				r.Down.Store(false)
			}
			start := time.Now()
			var err error
			select {
			case err = <-done:
			case <-time.After(30 * time.Second):
				t.Fatalf("Run still going 30s after the registry refused the credentials (holds %+v)", p.Stats().SchemaHolds)
			}
			msg := fmt.Sprint(err)
			if err == nil || !strings.Contains(msg, "schema_registry") || !strings.Contains(msg, fmt.Sprintf("HTTP %d", tc.status)) || strings.Contains(msg, pass) {
				t.Fatalf("Run = %q after %v; want an error naming schema_registry and HTTP %d, without the password", msg, time.Since(start), tc.status)
			}
			if s := p.Stats(); s.Dead != 0 || s.Out != 0 {
				t.Fatalf("stats: %d dead-lettered, %d out; want none", s.Dead, s.Out)
			}
			t.Logf("stopped %v after the refusal: %s", time.Since(start).Round(time.Millisecond), msg)
		})
	}
}
