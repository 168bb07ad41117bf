package bulk_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/signalbox/signalbox/sinks/bulk/bulktest"
)

// fakeES is an in-memory index behind a `_bulk` endpoint: external
// versions, partial item failures, whole-request 429 bursts and outages.
type fakeES struct {
	mu       sync.Mutex
	rnd      *rand.Rand
	docs     map[string]doc
	applied  [][]byte // document values in the order they were applied
	bodies   [][]byte // the whole documents, in the same order
	requests int

	itemFailRate float64 // probability of a per-item 429/503
	burstEvery   int     // every burstEvery-th request starts a burst of 429s
	burstLen     int
	burstOnce    bool // only one burst
	burstLeft    int
	outage       int  // while non-zero: 503 (1), 400 (2) or 408 (3) for every request
	poison       bool // reject documents whose value has "poison":true with 400
	missing      bool // answer every item with 404 index_not_found_exception
	maxBody      int  // when non-zero: 413 for a longer request body
}

type doc struct {
	version   int64
	versioned bool
	body      json.RawMessage
}

func newFakeES(t *testing.T, seed uint64) (*fakeES, *httptest.Server) {
	f := &fakeES{rnd: rand.New(rand.NewPCG(seed, 1)), docs: map[string]doc{}}
	srv := httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(srv.Close)
	return f, srv
}

func (f *fakeES) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/_bulk" || r.Method != http.MethodPost {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests++
	switch f.outage {
	case 1:
		http.Error(w, "unavailable", http.StatusServiceUnavailable)
		return
	case 2:
		http.Error(w, "illegal_argument_exception", http.StatusBadRequest)
		return
	case 3:
		http.Error(w, "request timeout", http.StatusRequestTimeout)
		return
	}
	if f.burstLeft == 0 && f.burstEvery > 0 && f.requests%f.burstEvery == 0 {
		f.burstLeft = f.burstLen
		if f.burstOnce {
			f.burstEvery = 0
		}
	}
	if f.burstLeft > 0 {
		f.burstLeft--
		w.Header().Set("Retry-After", "0")
		http.Error(w, "too many requests", http.StatusTooManyRequests)
		return
	}
	body, _ := io.ReadAll(r.Body)
	if f.maxBody > 0 && len(body) > f.maxBody {
		http.Error(w, "Request Entity Too Large", http.StatusRequestEntityTooLarge)
		return
	}
	ops, err := bulktest.Read(bytes.NewReader(body), 16<<20)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	for _, a := range ops {
		// As Elasticsearch: a too-long id fails the whole request.
		if len(a.ID) > 512 {
			http.Error(w, fmt.Sprintf(`{"error":{"type":"action_request_validation_exception","reason":"Validation Failed: 1: id [%s] is too long, must be no longer than 512 bytes but was: %d;"},"status":400}`, a.ID, len(a.ID)), http.StatusBadRequest)
			return
		}
	}
	results := make([]bulktest.Result, 0, len(ops))
	for _, a := range ops {
		status, errType := f.apply(a.ID, a.Version, a.VersionType, a.Doc)
		res := bulktest.Result{Index: a.Index, ID: a.ID, Status: status}
		if errType != "" {
			res.ErrorType, res.Reason = errType, errType+" for "+a.ID
		}
		results = append(results, res)
	}
	bulktest.Answer(w, results)
}

func (f *fakeES) apply(id string, version *int64, versionType string, body []byte) (int, string) {
	if f.itemFailRate > 0 && f.rnd.Float64() < f.itemFailRate {
		if f.rnd.IntN(2) == 0 {
			return 429, "es_rejected_execution_exception"
		}
		return 503, "unavailable_shards_exception"
	}
	var env struct {
		Value json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return 400, "mapper_parsing_exception"
	}
	if f.missing {
		return 404, "index_not_found_exception"
	}
	if f.poison && bytes.Contains(env.Value, []byte(`"poison":true`)) {
		return 400, "mapper_parsing_exception"
	}
	cur, exists := f.docs[id]
	d := doc{body: body}
	if versionType == "external" && version != nil {
		if exists && cur.versioned && cur.version >= *version {
			return 409, "version_conflict_engine_exception"
		}
		d.version, d.versioned = *version, true
	}
	f.docs[id] = d
	f.applied = append(f.applied, env.Value)
	f.bodies = append(f.bodies, body)
	if exists {
		return 200, ""
	}
	return 201, ""
}

func (f *fakeES) values() [][]byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][]byte(nil), f.applied...)
}

// stored returns the documents the index holds, by id.
func (f *fakeES) stored() map[string][]byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := make(map[string][]byte, len(f.docs))
	for id, d := range f.docs {
		m[id] = d.body
	}
	return m
}

// documents returns every document applied, in order.
func (f *fakeES) documents() [][]byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][]byte(nil), f.bodies...)
}

func (f *fakeES) set(fn func(*fakeES)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

func (f *fakeES) String() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "%d docs, %d applied, %d requests", len(f.docs), len(f.applied), f.requests)
	return b.String()
}
