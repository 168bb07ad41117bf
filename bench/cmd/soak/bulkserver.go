package main

import (
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/signalbox/signalbox/sinks/bulk/bulktest"
)

// bulkServer is an Elasticsearch `_bulk` endpoint that indexes every
// document it is sent (one per record: doc_id offset) into a checker, and
// answers every request with outage (429 or 503) while one is set.
type bulkServer struct {
	mu       sync.Mutex
	check    *checker
	outage   int
	requests int64
	refused  int64 // requests answered with an outage status
	start    time.Time
	dupsAt   map[int]int64 // re-deliveries per 10 s since start, by its first second
}

func newBulkServer(start time.Time) *bulkServer {
	return &bulkServer{check: newChecker(), start: start, dupsAt: map[int]int64{}}
}

// setOutage makes every request fail with status (0: serve again).
func (s *bulkServer) setOutage(status int) {
	s.mu.Lock()
	s.outage = status
	s.mu.Unlock()
}

// envelope is the part of the signalbox envelope the check reads.
type envelope struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Offset    int64   `json:"offset"`
	Key       *string `json:"key"`
	EventMs   int64   `json:"event_time_ms"`
	Late      bool    `json:"late"`
}

func (e envelope) delivery() delivery {
	d := delivery{Topic: e.Topic, Partition: e.Partition, Offset: e.Offset, EventMs: e.EventMs, Late: e.Late}
	if e.Key != nil {
		d.Key = *e.Key
	}
	return d
}

func (s *bulkServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/_bulk" || r.Method != http.MethodPost {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests++
	if s.outage != 0 {
		s.refused++
		w.Header().Set("Retry-After", "1")
		http.Error(w, http.StatusText(s.outage), s.outage)
		return
	}
	actions, err := bulktest.Read(r.Body, 64<<20)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	docs := make([]envelope, len(actions))
	results := make([]bulktest.Result, len(actions))
	for i, a := range actions {
		if err := json.Unmarshal(a.Doc, &docs[i]); err != nil {
			http.Error(w, "bad document: "+err.Error(), http.StatusBadRequest)
			return
		}
		results[i] = bulktest.Result{Index: a.Index, ID: a.ID, Status: http.StatusCreated}
	}
	for _, e := range docs { // indexed only once the whole request is read
		if s.check.add(e.delivery()) {
			s.dupsAt[int(time.Since(s.start)/(10*time.Second))*10]++
		}
	}
	bulktest.Answer(w, results)
}

// received is how many documents were indexed so far, re-deliveries
// included, and how many distinct records.
func (s *bulkServer) received() (all, distinct int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.check.received, s.check.received - s.check.dups
}
