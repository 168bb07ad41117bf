package engine

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/signalbox/signalbox/internal/strategy"
	"github.com/signalbox/signalbox/record"
)

// testConfig is the configuration of a run of topic "a", delay 0, as the
// root package's defaults make it: a plain value, no source, no sink.
func testConfig() *Config {
	return &Config{
		BatchSize: 4096, BatchBytes: 1 << 30, Tick: 100 * time.Millisecond, CheckpointEvery: time.Second,
		Strategy: func() strategy.Strategy { return strategy.OffsetGate(0) },
		Store:    NewMemStore(), ParkRefs: true,
		Timeless: func(string) bool { return false },
		Start:    time.UnixMilli(0),
	}
}

// testCore is an engine of testConfig, changed by opts, with a/0 assigned
// (end offset end) at the epoch.
func testCore(t *testing.T, end int64, opts ...func(*Config)) *Engine {
	t.Helper()
	cfg := testConfig()
	for _, o := range opts {
		o(cfg)
	}
	c := New(cfg)
	f := record.Fetch{Assigned: []record.PartitionInfo{{TopicPartition: record.TopicPartition{Topic: "a"}, End: end}}}
	c.BeginFetch(&f, time.UnixMilli(0))
	if err := c.TakeFetch(&f, nil, nil, time.UnixMilli(0)); err != nil {
		t.Fatal(err)
	}
	return c
}

// records of a/0 at offsets 0, 1, ... with the event times ets.
func records(ets ...int64) []record.Record {
	recs := make([]record.Record, len(ets))
	for i, et := range ets {
		recs[i] = record.Record{Topic: "a", Offset: int64(i), EventTime: et, OrderKey: "k"}
	}
	return recs
}

// releaseChunks steps the release under way to its end, as the driver
// does, and returns the offsets of the batches sealed by each chunk;
// between two chunks it calls between, if not nil, with the chunks so far.
func releaseChunks(t *testing.T, r *Engine, between func(n int)) [][]int {
	t.Helper()
	var chunks [][]int
	for more := true; more; {
		var err error
		if more, err = r.ReleaseMore(); err != nil {
			t.Fatal(err)
		}
		var got []int
		for _, o := range r.Ready().Outs {
			for _, rec := range o.Records {
				got = append(got, int(rec.Offset))
			}
		}
		chunks = append(chunks, got)
		if more && between != nil {
			between(len(chunks))
		}
		r.Advance(0) // the driver hands them over
	}
	return chunks
}

// A release leaves the store one batch-size chunk at a time, each chunk's
// batches sealed for the driver before the next chunk is released (S3):
// nothing reaches the sinks while the core steps, and what the driver has
// not taken stays parked.
func TestCoreReleasesChunkByChunk(t *testing.T) {
	r := testCore(t, 5, func(c *Config) { c.BatchSize, c.UntilEnd = 2, true })
	a0 := record.TopicPartition{Topic: "a"}
	f := record.Fetch{Partitions: []record.PartitionFetch{{TopicPartition: a0, Records: records(10, 20, 30, 40, 50), Position: 5, End: 5}}}
	now := time.UnixMilli(1)
	r.BeginFetch(&f, now)
	if err := r.TakeFetch(&f, nil, nil, now); err != nil {
		t.Fatal(err)
	}
	r.StartPass(now)
	chunks := releaseChunks(t, r, nil)
	// The partition is caught up, so the watermark follows the clock: at 1ms
	// nothing is due. The end of the replay releases everything.
	if len(chunks) != 1 || len(chunks[0]) != 0 {
		t.Fatalf("at 1ms the release put out %v, want nothing", chunks)
	}
	if done, err := r.EndPass(now); !done || err != nil {
		t.Fatalf("endPass: done %v, err %v; want the bounded run done", done, err)
	}
	chunks = releaseChunks(t, r, func(n int) {
		if r.store.Len() != 5-2*n {
			t.Errorf("after chunk %d, %d records parked, want %d", n, r.store.Len(), 5-2*n)
		}
	})
	want := [][]int{{0, 1}, {2, 3}, nil}
	if len(chunks) != 3 || !slices.Equal(chunks[0], want[0]) || !slices.Equal(chunks[1], want[1]) || len(chunks[2]) != 0 {
		t.Fatalf("flush chunks %v, want %v then the last record left in the current batch", chunks, want)
	}
	if got := r.cur.Records; len(got) != 1 || got[0].Offset != 4 {
		t.Fatalf("current batch %v, want offset 4", got)
	}
	if r.wm != 50 {
		t.Errorf("watermark after the flush %d, want 50", r.wm)
	}
}

// A Fetch that revokes a partition is two steps (S4): beginFetch asks for a
// checkpoint barrier, whose batch carries the partition's safe offsets, and
// the partition stays assigned; only takeFetch, once the driver has done
// the barrier, lets it go.
func TestCoreRevokeWaitsForTheBarrier(t *testing.T) {
	r, a0, now := oneParked(t)
	rev := record.Fetch{Revoked: []record.TopicPartition{a0}}
	r.BeginFetch(&rev, now)
	b := r.Ready().Barrier
	if b == nil {
		t.Fatal("a revoke asked for no barrier")
	}
	if len(b.CP.Partitions) != 1 || b.CP.Partitions[0].Low != 0 || b.CP.Partitions[0].Position != 1 {
		t.Fatalf("barrier checkpoint %+v, want a/0 low 0 (offset 0 parked) position 1", b.CP.Partitions)
	}
	if outs := r.Ready().Outs; len(outs) != 1 || outs[0] != b.Out {
		t.Fatal("the barrier's batch is not the one sealed for the driver")
	}
	if r.parts[a0] == nil {
		t.Fatal("the partition was let go before the barrier was done")
	}
	r.Advance(0) // the driver did the barrier
	if err := r.TakeFetch(&rev, nil, nil, now); err != nil {
		t.Fatal(err)
	}
	if r.parts[a0] != nil {
		t.Fatal("takeFetch did not revoke the partition")
	}
	if pc := r.restored[a0]; pc.Position != 1 {
		t.Errorf("the revoke remembered position %d, want 1", pc.Position)
	}
}

// A fenced partition's revoke forgets what this instance emitted of it
// (design R9): the checkpoint sink refused its checkpoint, so the sink's
// checkpoint, not this run's memory, says what a re-read skips; an
// unfenced one's revoke remembers its position.
func TestFencedRevoke(t *testing.T) {
	for _, fenced := range []bool{false, true} {
		r, a0, now := oneParked(t)
		if fenced {
			r.Fenced(a0)
		}
		rev := record.Fetch{Revoked: []record.TopicPartition{a0}}
		r.BeginFetch(&rev, now)
		r.Advance(0)
		if err := r.TakeFetch(&rev, nil, nil, now); err != nil {
			t.Fatal(err)
		}
		if _, kept := r.restored[a0]; kept == fenced {
			t.Errorf("fenced %v: the revoke remembered the partition: %v", fenced, kept)
		}
		if r.IsFenced(a0) {
			t.Errorf("fenced %v: the fence outlived the revoke", fenced)
		}
	}
}

// oneParked is testCore with a/0's offset 0 (at 10 ms) parked, read at
// 1 ms: end offset 2, position 1.
func oneParked(t *testing.T) (*Engine, record.TopicPartition, time.Time) {
	t.Helper()
	r := testCore(t, 2)
	a0 := record.TopicPartition{Topic: "a"}
	now := time.UnixMilli(1)
	f := record.Fetch{Partitions: []record.PartitionFetch{{TopicPartition: a0, Records: records(10), Position: 1, End: 2}}}
	r.BeginFetch(&f, now)
	if err := r.TakeFetch(&f, nil, nil, now); err != nil {
		t.Fatal(err)
	}
	return r, a0, now
}

// brokenTable is a TableStore whose storage failed (tables.Table.Err).
type brokenTable struct{ puts int }

func (*brokenTable) Name() string                      { return "products" }
func (*brokenTable) History() time.Duration            { return time.Hour }
func (b *brokenTable) Put(string, int64, []byte, bool) { b.puts++ }
func (*brokenTable) Trim(int64)                        {}
func (b *brokenTable) Err() error {
	if b.puts > 0 {
		return errors.New("pebble: disk full")
	}
	return nil
}

// A table whose storage fails fails the step that put the version
// (lookups would otherwise answer from a table missing it), naming the
// table and the cause; nothing is output meanwhile.
func TestTableStorageFailureFailsTheRun(t *testing.T) {
	tb := &brokenTable{}
	r := testCore(t, 2, func(c *Config) { c.Tables = []Table{{Topic: "a", Into: tb}} })
	a0 := record.TopicPartition{Topic: "a"}
	recs := records(10)
	recs[0].Value = []byte(`{"v":1}`)
	f := record.Fetch{Partitions: []record.PartitionFetch{{TopicPartition: a0, Records: recs, Position: 1, End: 2}}}
	now := time.UnixMilli(1)
	r.BeginFetch(&f, now)
	err := r.TakeFetch(&f, nil, nil, now)
	if err == nil || !strings.Contains(err.Error(), "table products: pebble: disk full") {
		t.Fatalf("TakeFetch: %v, want the table's storage error", err)
	}
	if tb.puts != 1 || len(r.Ready().Outs) != 0 {
		t.Fatalf("%d puts, %d out batches; want the one put and nothing out", tb.puts, len(r.Ready().Outs))
	}
}
