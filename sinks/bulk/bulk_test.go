package bulk_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/retry"
	"github.com/signalbox/signalbox/sinks/bulk"
	"github.com/signalbox/signalbox/sinks/envelope"
	"github.com/signalbox/signalbox/sinks/sinktest"
)

var ctx = context.Background()

var fastRetry = retry.Policy{Initial: time.Millisecond, Max: 2 * time.Millisecond, MaxElapsed: -1}

func TestConformance(t *testing.T) {
	sinktest.Run(t, func(t *testing.T) sinktest.Target {
		es, srv := newFakeES(t, 1)
		return sinktest.Target{
			Sink: bulk.New(bulk.Config{URL: srv.URL, Index: "out", DocID: bulk.OffsetID, MaxDocs: 16,
				Retry: retry.Policy{Initial: time.Millisecond, Max: 2 * time.Millisecond, MaxElapsed: 30 * time.Millisecond}}),
			Read:       func(t *testing.T) [][]byte { return es.values() },
			TotalOrder: true,
			ReadRecords: func(t *testing.T) []sinktest.Stored {
				var out []sinktest.Stored
				for _, b := range es.documents() {
					d, err := envelope.Decode(b)
					if err != nil {
						t.Fatalf("document %q: %v", b, err)
					}
					out = append(out, sinktest.Stored{Offset: d.Offset, Key: d.Key, Value: d.Value})
				}
				return out
			},
			Poison: func(r *record.Record) bool {
				es.set(func(f *fakeES) { f.poison = true })
				r.Value = append(r.Value[:len(r.Value)-1:len(r.Value)-1], `,"poison":true}`...)
				return true
			},
			Fail: func(t *testing.T, retryable bool) (func(), bool) {
				mode := 2
				if retryable {
					mode = 1
				}
				es.set(func(f *fakeES) { f.outage = mode })
				return func() { es.set(func(f *fakeES) { f.outage = 0 }) }, true
			},
		}
	})
}

type payload struct {
	Seq    int    `json:"seq"`
	Key    string `json:"key"`
	Poison bool   `json:"poison,omitempty"`
}

// TestNewestVersionWins drives the sink through per-item 429/503 failures,
// whole-request 429 bursts and permanent rejections, and checks that the
// index ends with the newest accepted version of every document and that
// exactly the poisoned documents were reported.
func TestNewestVersionWins(t *testing.T) {
	for _, v := range []struct {
		name string
		v    bulk.Versioning
	}{{"external", bulk.EventTimeVersion}, {"none", bulk.NoVersion}} {
		for seed := uint64(0); seed <= 3; seed++ {
			failRate := 0.3
			if seed == 0 {
				failRate = 0 // no transient item failures: every poisoned doc is reported
			}
			t.Run(fmt.Sprintf("%s/seed%d", v.name, seed), func(t *testing.T) {
				t.Parallel()
				es, srv := newFakeES(t, seed)
				es.set(func(f *fakeES) { f.itemFailRate, f.burstEvery, f.burstLen, f.poison = failRate, 5, 2, true })
				var rejected []int
				s := bulk.New(bulk.Config{URL: srv.URL, Index: "inv", MaxDocs: 40, Linger: -1, Retry: fastRetry,
					Versioning: v.v})
				if err := s.Open(ctx); err != nil {
					t.Fatal(err)
				}
				const n, keys = 3000, 25
				newest := map[string]int{}
				var poisoned []int
				var batch []record.Record
				for seq := 0; seq < n; seq++ {
					p := payload{Seq: seq, Key: fmt.Sprint("sku-", seq*7%keys), Poison: seq%97 == 5}
					b, _ := json.Marshal(p)
					batch = append(batch, record.Record{Topic: "in", Offset: int64(seq), Key: []byte(p.Key), OrderKey: p.Key,
						EventTime: 1_800_000_000_000 + int64(seq/3), Value: b}) // seq/3: same-ms ties
					if p.Poison {
						poisoned = append(poisoned, seq)
					} else {
						newest[p.Key] = seq
					}
					if len(batch) == 37 {
						if err := s.Write(ctx, batch); err != nil {
							t.Fatal(err)
						}
						batch = nil
					}
				}
				if err := s.Write(ctx, batch); err != nil {
					t.Fatal(err)
				}
				err := s.Flush(ctx)
				if rej := retry.AsRejected(err); rej != nil {
					for _, r := range rej.Rejections {
						var p payload
						_ = json.Unmarshal(r.Record.Value, &p)
						rejected = append(rejected, p.Seq)
					}
					err = s.Flush(ctx)
				}
				if err != nil {
					t.Fatal(err)
				}
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				es.mu.Lock()
				defer es.mu.Unlock()
				if len(es.docs) != len(newest) {
					t.Fatalf("index holds %d docs, want %d", len(es.docs), len(newest))
				}
				for key, want := range newest {
					var env struct{ Value payload }
					if err := json.Unmarshal(es.docs[key].body, &env); err != nil {
						t.Fatal(err)
					}
					if env.Value.Seq != want {
						t.Errorf("doc %s holds seq %d, want newest %d", key, env.Value.Seq, want)
					}
				}
				// A poisoned doc that failed transiently and was superseded by a
				// newer version of the same _id in the same request is dropped
				// (invariant 3b), not reported; everything reported is poisoned.
				isPoisoned := map[int]bool{}
				for _, p := range poisoned {
					isPoisoned[p] = true
				}
				for _, r := range rejected {
					if !isPoisoned[r] {
						t.Fatalf("reported seq %d, which is not poisoned", r)
					}
				}
				if failRate == 0 && fmt.Sprint(rejected) != fmt.Sprint(poisoned) {
					t.Fatalf("reported %v, want %v", rejected, poisoned)
				}
				t.Logf("%d requests for %d documents", es.requests, n)
			})
		}
	}
}

func TestBatchClosesOnCountAndBytes(t *testing.T) {
	es, srv := newFakeES(t, 1)
	s := bulk.New(bulk.Config{URL: srv.URL, Index: "i", MaxDocs: 10, Linger: -1, DocID: bulk.OffsetID})
	_ = s.Open(ctx)
	if err := s.Write(ctx, sinktest.Records(0, 35, 3)); err != nil {
		t.Fatal(err)
	}
	if got := len(es.values()); got != 30 {
		t.Fatalf("after Write of 35 with MaxDocs 10: %d indexed, want 30 (3 full requests)", got)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if es.requests != 4 || len(es.values()) != 35 {
		t.Fatalf("%v, want 4 requests", es)
	}

	es2, srv2 := newFakeES(t, 1)
	s2 := bulk.New(bulk.Config{URL: srv2.URL, Index: "i", MaxBytes: 1000, Linger: -1, DocID: bulk.OffsetID})
	_ = s2.Open(ctx)
	_ = s2.Write(ctx, sinktest.Records(0, 20, 3)) // ~190 bytes each
	_ = s2.Flush(ctx)
	if es2.requests < 4 || len(es2.values()) != 20 {
		t.Fatalf("MaxBytes 1000: %v, want ≥4 requests", es2)
	}
}

func TestLingerSendsWithoutFlush(t *testing.T) {
	es, srv := newFakeES(t, 1)
	s := bulk.New(bulk.Config{URL: srv.URL, Index: "i", Linger: 10 * time.Millisecond})
	_ = s.Open(ctx)
	defer s.Close()
	if err := s.Write(ctx, sinktest.Records(0, 3, 3)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second) // generous: only a liveness bound
	for len(es.values()) < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("linger never sent the batch: %v", es)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestItemRejections: a per-item 400 rejects that document only (the rest
// is indexed, the sink goes on); a per-item 404 (the index, not the
// document) is fatal.
func TestItemRejections(t *testing.T) {
	es, srv := newFakeES(t, 1)
	es.set(func(f *fakeES) { f.poison = true })
	s := bulk.New(bulk.Config{URL: srv.URL, Index: "i", Retry: fastRetry, DocID: bulk.OffsetID})
	_ = s.Open(ctx)
	recs := sinktest.Records(0, 3, 3)
	recs[1].Value = []byte(`{"seq":1,"poison":true}`)
	_ = s.Write(ctx, recs)
	err := s.Flush(ctx)
	rej := retry.AsRejected(err)
	if rej == nil || len(rej.Rejections) != 1 || rej.Rejections[0].Record.Offset != 1 || retry.IsRetryable(err) ||
		!strings.Contains(rej.Rejections[0].Reason, "400 mapper_parsing_exception") {
		t.Fatalf("Flush: %v", err)
	}
	if got := len(es.values()); got != 2 {
		t.Fatalf("index holds %d documents, want 2", got)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatalf("second Flush: %v", err)
	}
	if err := s.Write(ctx, sinktest.Records(3, 2, 3)); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil || len(es.values()) != 4 {
		t.Fatalf("after a rejection: Flush %v, %d documents", err, len(es.values()))
	}

	es404, srv404 := newFakeES(t, 1)
	es404.set(func(f *fakeES) { f.missing = true })
	s = bulk.New(bulk.Config{URL: srv404.URL, Index: "i", Retry: fastRetry})
	_ = s.Open(ctx)
	_ = s.Write(ctx, recs)
	if err := s.Flush(ctx); err == nil || retry.AsRejected(err) != nil || retry.IsRetryable(err) {
		t.Fatalf("per-item 404: Flush = %v, want a fatal error", err)
	}
}

// TestRequestTooLarge: on 413 the sink halves its requests, in order; a
// document too large on its own is rejected alone, and the rest indexed.
func TestRequestTooLarge(t *testing.T) {
	es, srv := newFakeES(t, 1)
	recs := sinktest.Records(0, 40, 3)
	recs[17].Value = []byte(fmt.Sprintf(`{"seq":17,"key":"k2","pad":%q}`, strings.Repeat("x", 2000)))
	es.set(func(f *fakeES) { f.maxBody = 1500 }) // about 6 ordinary documents
	s := bulk.New(bulk.Config{URL: srv.URL, Index: "i", Retry: fastRetry, DocID: bulk.OffsetID, MaxDocs: 32, Linger: -1})
	_ = s.Open(ctx)
	if err := s.Write(ctx, recs); err != nil {
		t.Fatal(err)
	}
	err := s.Flush(ctx)
	rej := retry.AsRejected(err)
	if rej == nil || len(rej.Rejections) != 1 || rej.Rejections[0].Record.Offset != 17 || !strings.Contains(rej.Rejections[0].Reason, "413") {
		t.Fatalf("Flush: %v", err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	var want []record.Record
	for i := range recs {
		if i != 17 {
			want = append(want, recs[i])
		}
	}
	got := es.values()
	if len(got) != len(want) {
		t.Fatalf("%d documents indexed, want %d", len(got), len(want))
	}
	for i := range got {
		var p payload
		_ = json.Unmarshal(got[i], &p)
		if int64(p.Seq) != want[i].Offset {
			t.Fatalf("document %d is seq %d, want %d (order)", i, p.Seq, want[i].Offset)
		}
	}
}

func TestThrottledWriteBlocksUntilAccepted(t *testing.T) {
	es, srv := newFakeES(t, 1)
	es.set(func(f *fakeES) { f.burstEvery, f.burstLen, f.burstOnce = 1, 25, true })
	s := bulk.New(bulk.Config{URL: srv.URL, Index: "i", MaxDocs: 5, Linger: -1, Retry: fastRetry, DocID: bulk.OffsetID})
	_ = s.Open(ctx)
	// The second Write finds a full queue and must wait out the 429 burst.
	for i := 0; i < 2; i++ {
		if err := s.Write(ctx, sinktest.Records(i*5, 5, 1)); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(es.values()); n < 5 || es.requests < 26 {
		t.Fatalf("Write returned before the throttled request went through: %v", es)
	}
	_ = s.Close()
}

func BenchmarkEnqueueAndSend(b *testing.B) {
	_, srv := newFakeES(&testing.T{}, 1)
	defer srv.Close()
	s := bulk.New(bulk.Config{URL: srv.URL, Index: "i", Linger: -1})
	_ = s.Open(ctx)
	recs := sinktest.Records(0, 1000, 50)
	b.ReportAllocs()
	for b.Loop() {
		_ = s.Write(ctx, recs)
	}
	_ = s.Close()
}

// TestRequestTimeoutIsTransient: a request answered 408 as a whole is
// retried like a 5xx (docs/sinks.md), not a reason to stop the job.
func TestRequestTimeoutIsTransient(t *testing.T) {
	es, srv := newFakeES(t, 1)
	es.set(func(f *fakeES) { f.outage = 3 })
	s := bulk.New(bulk.Config{URL: srv.URL, Index: "out", DocID: bulk.OffsetID,
		Retry: retry.Policy{Initial: time.Millisecond, Max: 2 * time.Millisecond, MaxElapsed: 10 * time.Millisecond}})
	ctx := context.Background()
	if err := s.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Write(ctx, sinktest.Records(0, 3, 1)); err != nil && !retry.IsRetryable(err) {
		t.Fatalf("Write: %v is not retryable", err)
	}
	if err := s.Flush(ctx); err == nil || !retry.IsRetryable(err) {
		t.Fatalf("Flush during a 408 outage = %v, want a retryable error", err)
	}
}

// TestBinaryKeysAreDistinctDocuments: with the default KeyID, records whose
// keys Kafka's IntegerSerializer wrote for 0..255 (128..255 are not valid
// UTF-8), plus text keys shaped like encoded ids, become one document each,
// whose _id gives back the key and whose body gives back key and value.
func TestBinaryKeysAreDistinctDocuments(t *testing.T) {
	es, srv := newFakeES(t, 1)
	s := bulk.New(bulk.Config{URL: srv.URL, Index: "out", MaxDocs: 50, Linger: -1, Retry: fastRetry})
	if err := s.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	recs := sinktest.BinaryRecords()
	withKey := map[string]record.Record{}
	for _, r := range recs {
		if len(r.Key) > 0 {
			withKey[string(r.Key)] = r
		}
	}
	if err := s.Write(ctx, recs); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	docs := es.stored()
	if want := len(withKey) + 2; len(docs) != want { // the empty and the nil key: one document per record
		t.Fatalf("%d documents, want %d (%s)", len(docs), want, es)
	}
	for id, body := range docs {
		d, err := envelope.Decode(body)
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Key) == 0 {
			if id != bulk.OffsetID(&recs[d.Offset]) {
				t.Fatalf("keyless record %d has the id %q", d.Offset, id)
			}
			continue
		}
		key, err := envelope.ParseID(id)
		if err != nil || !bytes.Equal(key, d.Key) || !bytes.Equal(d.Value, withKey[string(key)].Value) {
			t.Fatalf("_id %q: key %q (%v), document key %q value %q", id, key, err, d.Key, d.Value)
		}
	}
	for i := range 128 { // text keys keep the ids they had
		if _, ok := docs[string([]byte{0, 0, 0, byte(i)})]; !ok {
			t.Fatalf("key %d is not its own id", i)
		}
	}
}

// TestLongIDRejected: an id over 512 bytes, which Elasticsearch refuses by
// failing the whole request (400 action_request_validation_exception), is
// rejected for its record alone; the others are indexed and the sink goes
// on. A 384-byte binary key is such an id once encoded.
func TestLongIDRejected(t *testing.T) {
	es, srv := newFakeES(t, 1)
	s := bulk.New(bulk.Config{URL: srv.URL, Index: "out", Linger: -1, Retry: fastRetry})
	if err := s.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	recs := sinktest.Records(0, 6, 6)
	long := bytes.Repeat([]byte{0xff}, 384)
	recs[2].Key, recs[2].OrderKey = long, string(long)
	recs[4].OrderKey = strings.Repeat("x", bulk.MaxIDBytes) // the longest id accepted
	fits := bytes.Repeat([]byte{0xfe}, 380)                 // the longest binary key that fits (docs/sinks.md)
	recs[5].Key, recs[5].OrderKey = fits, string(fits)
	if err := s.Write(ctx, recs); err != nil {
		t.Fatal(err)
	}
	rej := retry.AsRejected(s.Flush(ctx))
	if rej == nil || len(rej.Rejections) != 1 || rej.Rejections[0].Record.Offset != 2 || !strings.Contains(rej.Rejections[0].Reason, "512") {
		t.Fatalf("rejections %+v, want offset 2 for its id's length", rej)
	}
	if n := len(es.stored()); n != 5 {
		t.Fatalf("%d documents, want 5", n)
	}
	if id := envelope.ID(string(bytes.Repeat([]byte{0xfe}, 381))); len(id) <= bulk.MaxIDBytes {
		t.Fatalf("a 381-byte binary key has an id of %d bytes: 380 is not the longest that fits", len(id))
	}
	if err := s.Write(ctx, sinktest.Records(6, 2, 8)); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(es.stored()); n != 7 {
		t.Fatalf("%d documents, want 7", n)
	}
}
