package sinktest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/retry"
)

// Sink is the root package's Sink interface, restated so that this package
// does not import the root package.
type Sink interface {
	Open(ctx context.Context) error
	Write(ctx context.Context, batch []record.Record) error
	Flush(ctx context.Context) error
	Close() error
}

// Target is one sink under test with its destination.
type Target struct {
	// Sink is a new, unopened sink writing to an empty destination.
	Sink Sink
	// Read returns the values the destination durably holds, in the order
	// it stored them (for destinations without a total order, in an order
	// that is faithful per key).
	Read func(t *testing.T) [][]byte
	// TotalOrder is true when the destination keeps one order for all
	// records (a file, a table with a sequence), not only per key.
	TotalOrder bool
	// Fail, if set, makes the destination fail until heal is called:
	// transiently when retryable, else permanently. It returns ok=false for
	// a mode the destination cannot simulate; that check is then skipped.
	Fail func(t *testing.T, retryable bool) (heal func(), ok bool)
	// CloseDiscards is true for sinks whose Close never commits (a
	// CheckpointSink, a transactional Kafka sink): records written after the
	// last Flush must not be stored by Close. False: Close stores them.
	CloseDiscards bool
	// Poison, if set, changes r so that the destination refuses it for its
	// data (the sink must return a *retry.RejectedError for it). It returns
	// false when the destination refuses nothing; the case is then skipped.
	Poison func(r *record.Record) bool
	// ReadRecords, if set, returns every record the destination durably
	// holds, in the order it stored them, with its key and value decoded
	// back to bytes as a reader of that destination would (for the JSON
	// envelope, envelope.Decode). Without it the Bytes case is skipped.
	ReadRecords func(t *testing.T) []Stored

	// Restart, set for a CheckpointSink, returns a new, unopened sink on
	// the same destination and checkpoint identity, as a restarted job
	// builds it. The Checkpoint cases run only when it is set.
	Restart func() Sink
	// FailCheckpoint, if set, makes the destination refuse the checkpoint
	// part of FlushCheckpoint, not the records, until heal is called.
	// Without it the Checkpoint/Atomic case is skipped.
	FailCheckpoint func(t *testing.T) (heal func())
	// StoresOnWrite is true for a CheckpointSink whose Write may already
	// store records, where the destination stores each record once however
	// often it is written (PostgreSQL's unique offsets): records written
	// after the last checkpoint may then be stored by a failed
	// FlushCheckpoint or before Close. False: only FlushCheckpoint (or
	// Flush) stores them.
	StoresOnWrite bool
}

// Stored is one record read back from a destination.
type Stored struct {
	Offset     int64
	Key, Value []byte
}

// Factory builds a fresh Target for one subtest.
type Factory func(t *testing.T) Target

// Payload is the identity every generated record carries in its value.
type Payload struct {
	Seq int    `json:"seq"`
	Key string `json:"key"`
}

// Records returns n records numbered from first, spread over keys keys and
// three partitions, with strictly increasing event times and offsets.
func Records(first, n, keys int) []record.Record {
	rs := make([]record.Record, n)
	for i := range rs {
		seq := first + i
		key := fmt.Sprintf("k%d", seq%keys)
		v, _ := json.Marshal(Payload{Seq: seq, Key: key})
		rs[i] = record.Record{
			Topic: "in", Partition: int32(seq % 3), Offset: int64(seq),
			Key: []byte(key), OrderKey: key, Value: v,
			EventTime: 1_800_000_000_000 + int64(seq),
		}
	}
	return rs
}

// Run runs the conformance suite against the sinks the factory builds.
func Run(t *testing.T, f Factory) {
	t.Run("OrderAndAck", func(t *testing.T) { testOrderAndAck(t, f(t)) })
	t.Run("Close", func(t *testing.T) { testClose(t, f(t)) })
	t.Run("EmptyFlush", func(t *testing.T) { testEmpty(t, f(t)) })
	t.Run("FatalError", func(t *testing.T) { testFatal(t, f(t)) })
	t.Run("RetryableError", func(t *testing.T) { testRetryable(t, f(t)) })
	t.Run("Rejection", func(t *testing.T) { testRejection(t, f(t)) })
	t.Run("Bytes", func(t *testing.T) { testBytes(t, f(t)) })
	checkpoint := func(name string, test func(*testing.T, Target)) {
		t.Run(name, func(t *testing.T) {
			tg := f(t)
			if tg.Restart == nil {
				t.Skip("not a CheckpointSink target (Target.Restart unset)")
			}
			test(t, tg)
		})
	}
	checkpoint("Checkpoint/RoundTrip", testCheckpointRoundTrip)
	checkpoint("Checkpoint/Atomic", testCheckpointAtomic)
	checkpoint("Checkpoint/Close", testCheckpointClose)
}

// BinaryRecords returns the records of the Bytes case, numbered from
// offset 0, one partition, with increasing event times: 256 keys as Kafka's
// IntegerSerializer writes 0..255 (4 bytes big-endian; 128..255 are not
// valid UTF-8), then keys that are a bare invalid byte, text with NUL, the
// id envelope.ID gives key 128 (a text key that must not share its
// document), empty and nil. Values are binary, text, text with NUL, empty
// and nil (a tombstone), never JSON.
func BinaryRecords() []record.Record {
	var keys [][]byte
	for i := range 256 {
		keys = append(keys, []byte{0, 0, 0, byte(i)})
	}
	keys = append(keys, []byte{0xff}, []byte("a\x00b"), []byte("~b64:AAAAgA"), []byte("~b64:"), []byte{}, nil)
	values := [][]byte{{0x80, 0, 0xff}, []byte("plain text"), []byte("nul\x00inside"), {}, nil, []byte("é\xc3")}
	rs := make([]record.Record, len(keys))
	for i, k := range keys {
		rs[i] = record.Record{
			Topic: "in", Offset: int64(i), Key: k, OrderKey: string(k),
			Value: values[i%len(values)], EventTime: 1_800_000_000_000 + int64(i),
		}
	}
	return rs
}

func testBytes(t *testing.T, tg Target) {
	if tg.ReadRecords == nil {
		t.Skip("target cannot read records back as bytes")
	}
	s := tg.Sink
	must(t, "Open", s.Open(ctx))
	defer s.Close()
	all := BinaryRecords()
	must(t, "Write", s.Write(ctx, all[:100]))
	must(t, "Write", s.Write(ctx, all[100:]))
	must(t, "Flush", s.Flush(ctx))
	got := tg.ReadRecords(t)
	seen := map[int64]bool{}
	for _, g := range got {
		if g.Offset < 0 || g.Offset >= int64(len(all)) || seen[g.Offset] {
			t.Fatalf("offset %d: not written, or stored twice", g.Offset)
		}
		seen[g.Offset] = true
		w := all[g.Offset]
		if (g.Key == nil) != (w.Key == nil) || !bytes.Equal(g.Key, w.Key) {
			t.Fatalf("offset %d: key %q (nil %v), want %q (nil %v)", g.Offset, g.Key, g.Key == nil, w.Key, w.Key == nil)
		}
		if (g.Value == nil) != (w.Value == nil) || !bytes.Equal(g.Value, w.Value) {
			t.Fatalf("offset %d: value %q (nil %v), want %q (nil %v)", g.Offset, g.Value, g.Value == nil, w.Value, w.Value == nil)
		}
	}
	if len(seen) != len(all) {
		t.Fatalf("destination holds %d of the %d records", len(seen), len(all))
	}
}

var ctx = context.Background()

func must(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func testOrderAndAck(t *testing.T, tg Target) {
	s := tg.Sink
	must(t, "Open", s.Open(ctx))
	defer s.Close()
	all := Records(0, 300, 7)
	for _, b := range [][]record.Record{all[:1], all[1:100], all[100:101], all[101:250]} {
		must(t, "Write", s.Write(ctx, b))
	}
	must(t, "Flush", s.Flush(ctx))
	check(t, tg, all[:250], true)
	must(t, "Write", s.Write(ctx, all[250:]))
	must(t, "Flush", s.Flush(ctx))
	check(t, tg, all, true)
}

func testClose(t *testing.T, tg Target) {
	s := tg.Sink
	must(t, "Open", s.Open(ctx))
	all := Records(0, 40, 3)
	must(t, "Write", s.Write(ctx, all[:25]))
	must(t, "Flush", s.Flush(ctx))
	must(t, "Write", s.Write(ctx, all[25:]))
	must(t, "Close", s.Close())
	if tg.CloseDiscards {
		check(t, tg, all[:25], true)
		return
	}
	check(t, tg, all, true)
}

func testEmpty(t *testing.T, tg Target) {
	s := tg.Sink
	must(t, "Open", s.Open(ctx))
	must(t, "Flush", s.Flush(ctx))
	must(t, "Write(empty)", s.Write(ctx, nil))
	must(t, "Flush", s.Flush(ctx))
	must(t, "Close", s.Close())
	if got := tg.Read(t); len(got) != 0 {
		t.Fatalf("destination holds %d records, want 0", len(got))
	}
}

func testFatal(t *testing.T, tg Target) {
	s, all, heal := startFailing(t, tg, 60, 4, false)
	defer s.Close()
	err := s.Write(ctx, all[20:40])
	if err == nil {
		err = s.Flush(ctx)
	}
	if err == nil {
		t.Fatal("Write+Flush succeeded while the destination failed fatally")
	}
	if retry.IsRetryable(err) {
		t.Fatalf("fatal failure surfaced as retryable: %v", err)
	}
	heal()
	if err := s.Write(ctx, all[40:]); err == nil {
		if err := s.Flush(ctx); err == nil {
			t.Fatal("sink accepted and flushed records after a fatal error")
		}
	}
	check(t, tg, all[:20], false)
}

func testRetryable(t *testing.T, tg Target) {
	s, all, heal := startFailing(t, tg, 90, 5, true)
	defer s.Close()
	var failed error
	for _, b := range [][]record.Record{all[30:45], all[45:60]} {
		if err := s.Write(ctx, b); err != nil {
			if !retry.IsRetryable(err) {
				t.Fatalf("transient failure surfaced as fatal from Write: %v", err)
			}
			failed = err
			heal()
			must(t, "repeated Write", s.Write(ctx, b))
		}
	}
	if failed == nil {
		err := s.Flush(ctx)
		if err == nil {
			t.Fatal("Flush succeeded while the destination failed")
		}
		if !retry.IsRetryable(err) {
			t.Fatalf("transient failure surfaced as fatal from Flush: %v", err)
		}
		heal()
	}
	must(t, "Flush after recovery", s.Flush(ctx))
	must(t, "Write", s.Write(ctx, all[60:]))
	must(t, "Flush", s.Flush(ctx))
	check(t, tg, all, false)
}

// startFailing opens the sink, stores and flushes records 0..19 (fatal) or
// 0..29 (retryable) of n, then makes the destination fail.
func startFailing(t *testing.T, tg Target, n, keys int, retryable bool) (Sink, []record.Record, func()) {
	if tg.Fail == nil {
		t.Skip("target cannot simulate failures")
	}
	s := tg.Sink
	must(t, "Open", s.Open(ctx))
	all := Records(0, n, keys)
	head := n / 3
	must(t, "Write", s.Write(ctx, all[:head]))
	must(t, "Flush", s.Flush(ctx))
	heal, ok := tg.Fail(t, retryable)
	if !ok {
		s.Close()
		t.Skipf("target cannot simulate this failure (retryable=%v)", retryable)
	}
	return s, all, heal
}

// check reads the destination and compares it with want: each record
// present (exactly once when exact), per-key order (and total order when
// the target has one) of first occurrences preserved.
func check(t *testing.T, tg Target, want []record.Record, exact bool) {
	t.Helper()
	got := tg.Read(t)
	seen := map[int]int{}
	var firsts []Payload
	for _, v := range got {
		p := payloadOf(t, v)
		if seen[p.Seq]++; seen[p.Seq] == 1 {
			firsts = append(firsts, p)
		}
	}
	for _, r := range want {
		seq := seqOf(r)
		switch n := seen[seq]; {
		case n == 0:
			t.Fatalf("record seq %d missing (destination holds %d values)", seq, len(got))
		case n > 1 && exact:
			t.Fatalf("record seq %d stored %d times", seq, n)
		}
	}
	if len(seen) != len(want) {
		t.Fatalf("destination holds %d distinct records, want %d", len(seen), len(want))
	}
	last := map[string]int{}
	prev := -1
	for _, p := range firsts {
		if l, ok := last[p.Key]; ok && p.Seq < l {
			t.Fatalf("key %s: seq %d stored after %d", p.Key, p.Seq, l)
		}
		last[p.Key] = p.Seq
		if tg.TotalOrder && p.Seq < prev {
			t.Fatalf("seq %d stored after %d", p.Seq, prev)
		}
		prev = p.Seq
	}
}

// payloadOf decodes a stored value's identity.
func payloadOf(t *testing.T, v []byte) Payload {
	t.Helper()
	var p Payload
	if err := json.Unmarshal(v, &p); err != nil {
		t.Fatalf("stored value %q: %v", v, err)
	}
	return p
}

// seqOf is the sequence number a generated record carries.
func seqOf(r record.Record) int {
	var p Payload
	_ = json.Unmarshal(r.Value, &p)
	return p.Seq
}

// testRejection poisons a few records and drives the sink as the engine
// does: a rejection names records, which are set aside (dead-lettered), and
// the call is repeated without them. The destination must then hold every
// other record exactly once and in order, the rejected ones must be exactly
// the poisoned ones, unchanged (topic, partition, offset, event time) and
// with a reason, and the sink must go on working.
func testRejection(t *testing.T, tg Target) {
	all := Records(0, 70, 5)
	poisoned := map[int64]bool{}
	for _, i := range []int{0, 7, 8, 31, 49} {
		if tg.Poison == nil || !tg.Poison(&all[i]) {
			t.Skip("the destination refuses no record for its data")
		}
		poisoned[all[i].Offset] = true
	}
	s := tg.Sink
	must(t, "Open", s.Open(ctx))
	defer s.Close()
	byOffset := map[int64]record.Record{}
	for _, r := range all {
		byOffset[r.Offset] = r
	}
	var rejected []retry.Rejection
	deliver := func(what string, batch []record.Record, call func([]record.Record) error) {
		t.Helper()
		for range len(all) + 1 {
			err := call(batch)
			rej := retry.AsRejected(err)
			if rej == nil {
				must(t, what, err)
				return
			}
			if retry.IsRetryable(err) {
				t.Fatalf("%s: a rejection is marked retryable: %v", what, err)
			}
			rejected = append(rejected, rej.Rejections...)
			var rest []record.Record
			for _, r := range batch {
				if !slices.ContainsFunc(rej.Rejections, func(x retry.Rejection) bool { return x.Record.Offset == r.Offset }) {
					rest = append(rest, r)
				}
			}
			batch = rest
		}
		t.Fatalf("%s: rejections never end", what)
	}
	write := func(b []record.Record) error { return s.Write(ctx, b) }
	flush := func([]record.Record) error { return s.Flush(ctx) }
	deliver("Write", all[:20], write)
	deliver("Write", all[20:45], write)
	deliver("Flush", nil, flush)
	deliver("Write", all[45:60], write)
	deliver("Flush", nil, flush)
	got := map[int64]bool{}
	for _, rj := range rejected {
		orig := byOffset[rj.Record.Offset]
		if !poisoned[rj.Record.Offset] || got[rj.Record.Offset] {
			t.Fatalf("rejected offset %d: not poisoned, or rejected twice", rj.Record.Offset)
		}
		got[rj.Record.Offset] = true
		if rj.Reason == "" || rj.Record.Topic != orig.Topic || rj.Record.Partition != orig.Partition || rj.Record.EventTime != orig.EventTime {
			t.Fatalf("rejection %+v does not carry the original record and a reason", rj)
		}
	}
	if len(got) != len(poisoned) {
		t.Fatalf("rejected %d records, want the %d poisoned", len(got), len(poisoned))
	}
	var want []record.Record
	for _, r := range all[:60] {
		if !poisoned[r.Offset] {
			want = append(want, r)
		}
	}
	check(t, tg, want, true)
	// The sink goes on: a rejection is not sticky.
	deliver("Write", all[60:], write)
	deliver("Flush", nil, flush)
	check(t, tg, append(want, all[60:]...), true)
}
