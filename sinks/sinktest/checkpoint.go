package sinktest

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"slices"
	"testing"

	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/retry"
)

// CheckpointSink is the root package's CheckpointSink interface, restated
// so that this package does not import the root package.
type CheckpointSink interface {
	Sink
	Restore(ctx context.Context) (*record.Checkpoint, error)
	FlushCheckpoint(ctx context.Context, cp record.Checkpoint) error
}

// Checkpoint returns the checkpoint a job stores once records 0..n-1 of
// Records are released: one entry per partition in parts (all three when
// none), every field distinct per partition and per n, and the watermark
// the lowest partition's (which partition that is varies with n).
func Checkpoint(n int, parts ...int32) record.Checkpoint {
	if len(parts) == 0 {
		parts = []int32{0, 1, 2}
	}
	cp := record.Checkpoint{Watermark: math.MaxInt64}
	for _, p := range parts {
		at := int64(n) + int64(p)
		pc := record.PartitionCheckpoint{
			TopicPartition: record.TopicPartition{Topic: "in", Partition: p},
			Low:            at, Position: at + 10, End: at + 1000, Replaying: (n+int(p))%2 == 0,
			Watermark: 1_800_000_000_000 + int64(n) - 7*int64((int(p)+n)%3),
		}
		cp.Watermark = min(cp.Watermark, pc.Watermark)
		cp.Partitions = append(cp.Partitions, pc)
	}
	return cp
}

// openCheckpoint opens s, which must be a CheckpointSink.
func openCheckpoint(t *testing.T, s Sink) CheckpointSink {
	t.Helper()
	cs, ok := s.(CheckpointSink)
	if !ok {
		t.Fatalf("%T has Target.Restart set but is not a CheckpointSink", s)
	}
	must(t, "Open", cs.Open(ctx))
	return cs
}

// restored calls Restore and compares what it returns with want (nil: no
// checkpoint): the same partitions, field for field, and a watermark that
// is want's and never above any restored partition's own.
func restored(t *testing.T, when string, s CheckpointSink, want *record.Checkpoint) {
	t.Helper()
	got, err := s.Restore(ctx)
	must(t, "Restore "+when, err)
	if (got == nil) != (want == nil) {
		t.Fatalf("Restore %s: %+v, want %+v", when, got, want)
	}
	if got == nil {
		return
	}
	for _, p := range got.Partitions {
		if got.Watermark > p.Watermark {
			t.Fatalf("Restore %s: watermark %d above partition %s/%d's own %d", when, got.Watermark, p.Topic, p.Partition, p.Watermark)
		}
	}
	byPartition := func(a, b record.PartitionCheckpoint) int { return a.TopicPartition.Compare(b.TopicPartition) }
	ps := slices.SortedFunc(slices.Values(got.Partitions), byPartition)
	ws := slices.SortedFunc(slices.Values(want.Partitions), byPartition)
	if got.Watermark != want.Watermark || !reflect.DeepEqual(ps, ws) {
		t.Fatalf("Restore %s:\n got %s\nwant %s", when, show(got.Watermark, ps), show(want.Watermark, ws))
	}
}

func show(wm int64, ps []record.PartitionCheckpoint) string {
	s := fmt.Sprintf("watermark %d", wm)
	for _, p := range ps {
		s += fmt.Sprintf("\n\t%+v", p)
	}
	return s
}

// startCheckpoint opens the target's sink on its empty destination, where
// Restore must find nothing, and stores records 0..head-1 of n with
// Checkpoint(head).
func startCheckpoint(t *testing.T, tg Target, n, keys, head int) (CheckpointSink, []record.Record, record.Checkpoint) {
	t.Helper()
	s := openCheckpoint(t, tg.Sink)
	restored(t, "on an empty destination", s, nil)
	all := Records(0, n, keys)
	return s, all, commitAt(t, s, all[:head], head)
}

// commitAt writes recs and stores them with Checkpoint(n, parts...).
func commitAt(t *testing.T, s CheckpointSink, recs []record.Record, n int, parts ...int32) record.Checkpoint {
	t.Helper()
	must(t, "Write", s.Write(ctx, recs))
	cp := Checkpoint(n, parts...)
	must(t, fmt.Sprintf("FlushCheckpoint(%d, partitions %v)", n, parts), s.FlushCheckpoint(ctx, cp))
	return cp
}

// restart opens a restarted sink and checks that Restore returns want.
func restart(t *testing.T, tg Target, when string, want *record.Checkpoint) CheckpointSink {
	t.Helper()
	s := openCheckpoint(t, tg.Restart())
	restored(t, when, s, want)
	return s
}

// testCheckpointRoundTrip: Restore finds nothing on an empty destination;
// each FlushCheckpoint makes its records and checkpoint durable, as a
// restarted sink reads them; a checkpoint of some partitions keeps the
// others', and the restored watermark is then the lowest partition's, not
// the last checkpoint's.
func testCheckpointRoundTrip(t *testing.T, tg Target) {
	s, all, cp1 := startCheckpoint(t, tg, 70, 5, 30)
	must(t, "Close", s.Close())

	s = restart(t, tg, "after a restart", &cp1)
	check(t, tg, all[:30], true)
	cp2 := commitAt(t, s, all[30:60], 60)
	// Partition 2 only: the lowest of cp2, now the highest; partition 1's
	// watermark becomes the lowest.
	cp3 := commitAt(t, s, all[60:], 70, 2)
	must(t, "Close", s.Close())

	want := record.Checkpoint{Partitions: slices.Clone(cp2.Partitions)}
	want.Partitions[2] = cp3.Partitions[0]
	want.Watermark = min(want.Partitions[0].Watermark, want.Partitions[1].Watermark, want.Partitions[2].Watermark)
	s = restart(t, tg, "after a checkpoint of partition 2 only", &want)
	defer s.Close()
	check(t, tg, all, true)
}

// testCheckpointAtomic: while the destination refuses the checkpoint
// part, FlushCheckpoint fails and stores neither the checkpoint nor the
// records written since the last one (beyond what Target.StoresOnWrite
// allows); a restart restores the previous checkpoint, and re-delivering
// from it stores every record exactly once.
func testCheckpointAtomic(t *testing.T, tg Target) {
	if tg.FailCheckpoint == nil {
		t.Skip("target cannot make the destination refuse a checkpoint")
	}
	s, all, cp1 := startCheckpoint(t, tg, 60, 4, 20)
	must(t, "Write", s.Write(ctx, all[20:40]))
	heal := tg.FailCheckpoint(t)
	err := s.FlushCheckpoint(ctx, Checkpoint(40))
	heal()
	if err == nil {
		t.Fatal("FlushCheckpoint succeeded while the destination refused its checkpoint")
	}
	if retry.AsRejected(err) != nil {
		t.Fatalf("a refused checkpoint surfaced as a per-record rejection: %v", err)
	}
	_ = s.Close() // after a failure Close may report it
	checkAtLeast(t, tg, all[:20], all[20:40])

	s = restart(t, tg, "after a failed FlushCheckpoint", &cp1)
	cp2 := commitAt(t, s, all[20:], 60) // re-delivered from cp1
	must(t, "Close", s.Close())
	s = restart(t, tg, "after re-delivery", &cp2)
	defer s.Close()
	check(t, tg, all, true)
}

// testCheckpointClose: Close never commits: records written after the last
// FlushCheckpoint are not stored (beyond what Target.StoresOnWrite allows)
// and a restart restores the last checkpoint.
func testCheckpointClose(t *testing.T, tg Target) {
	s, all, cp1 := startCheckpoint(t, tg, 45, 3, 20)
	must(t, "Write", s.Write(ctx, all[20:]))
	must(t, "Close", s.Close())
	checkAtLeast(t, tg, all[:20], all[20:])
	restart(t, tg, "after Close", &cp1).Close()
}

// checkAtLeast checks that the destination holds want exactly once each
// and, beyond it, nothing but records of unsure, and only when
// Target.StoresOnWrite allows that (once each).
func checkAtLeast(t *testing.T, tg Target, want, unsure []record.Record) {
	t.Helper()
	if !tg.StoresOnWrite {
		check(t, tg, want, true)
		return
	}
	maybe := map[int]bool{}
	for _, r := range unsure {
		maybe[seqOf(r)] = true
	}
	got := tg.Read(t)
	stored := []record.Record{}
	for _, v := range got {
		if seq := payloadOf(t, v).Seq; maybe[seq] {
			stored = append(stored, unsure[slices.IndexFunc(unsure, func(r record.Record) bool { return seqOf(r) == seq })])
			delete(maybe, seq)
		}
	}
	check(t, tg, append(slices.Clone(want), stored...), true)
}
