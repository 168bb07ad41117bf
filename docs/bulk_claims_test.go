package docs_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/signalbox/signalbox/retry"
	"github.com/signalbox/signalbox/sinks/bulk"
	"github.com/signalbox/signalbox/sinks/sinktest"
)

// TestBulkItemStatusesAsDocumented holds docs/config.md's bulk section to
// the sink: the item statuses it names as stopping the job ("an item's 4xx
// other than 401, 403 and 404 … goes to dead_letter") are the ones the sink
// treats as fatal, and every other 4xx item comes back from Flush as a
// rejection of that document alone, which the engine dead-letters.
func TestBulkItemStatusesAsDocumented(t *testing.T) {
	md, err := os.ReadFile("config.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, _ := strings.Cut(string(md), "### `type: bulk`")
	sec, _, _ = strings.Cut(sec, "| field |")
	m := regexp.MustCompile(`an item's 4xx other than ((?:\d{3}, )*\d{3} and \d{3})`).FindStringSubmatch(strings.Join(strings.Fields(sec), " "))
	if m == nil {
		t.Fatalf("docs/config.md's bulk section does not say which item 4xx stop the job (\"an item's 4xx other than …\"):\n%s", sec)
	}
	fatal := map[int]bool{}
	for _, s := range regexp.MustCompile(`\d{3}`).FindAllString(m[1], -1) {
		n, _ := strconv.Atoi(s)
		fatal[n] = true
	}

	// 408 and 429 are retried, and 409 under external versioning is done:
	// neither is a final answer about the document.
	for _, status := range []int{400, 401, 402, 403, 404, 405, 409, 410, 413, 415, 422, 451} {
		err := flushItemStatus(t, status)
		switch rej := retry.AsRejected(err); {
		case fatal[status] && (err == nil || rej != nil || retry.IsRetryable(err)):
			t.Errorf("item %d: Flush = %v; docs/config.md says it stops the job (a fatal error)", status, err)
		case !fatal[status] && (rej == nil || len(rej.Rejections) != 1 || !strings.Contains(rej.Rejections[0].Reason, strconv.Itoa(status))):
			t.Errorf("item %d: Flush = %v; docs/config.md says the document goes to dead_letter with its status (one rejection)", status, err)
		}
	}
}

// flushItemStatus writes one document to a bulk sink whose server answers
// every item with status, and returns what Flush returns.
func flushItemStatus(t *testing.T, status int) error {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		docs := bytes.Count(body, []byte("\n")) / 2 // an action line and a source line each
		var out bytes.Buffer
		out.WriteString(`{"errors":true,"items":[`)
		for i := range docs {
			if i > 0 {
				out.WriteByte(',')
			}
			fmt.Fprintf(&out, `{"index":{"status":%d,"error":{"type":"status_%d","reason":"answered %d"}}}`, status, status, status)
		}
		out.WriteString("]}")
		w.Header().Set("Content-Type", "application/json")
		w.Write(out.Bytes()) //nolint:errcheck // the client sees a short body
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := bulk.New(bulk.Config{URL: srv.URL, Index: "i", Versioning: bulk.NoVersion,
		Retry: retry.Policy{Initial: time.Millisecond, Max: 2 * time.Millisecond, MaxElapsed: -1}})
	defer s.Close()
	if err := s.Open(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, sinktest.Records(0, 1, 1)); err != nil {
		return err
	}
	return s.Flush(ctx)
}
