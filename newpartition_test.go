package signalbox_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/sources/script"
	"github.com/signalbox/signalbox/timers"
	"github.com/signalbox/signalbox/watermark"
)

// restartWithNewPartitions draws a job's partitions before a stop (1 or 2
// per topic of orders and stock), the records they get after it (all newer
// than anything before), and partitions created while it was stopped: new
// tasks (partition numbers never seen) and new members of existing tasks
// (a topic, prices, that did not exist), whose records start up to a second
// below the newest record of the first run. Event times have bounded
// disorder within a partition; keys and times collide often.
func restartWithNewPartitions(seed uint64) (before, after []script.Partition, fresh map[record.TopicPartition]bool) {
	rng := rand.New(rand.NewPCG(seed, 7))
	const base = 1_700_000_000_000
	gen := func(sp *script.Partition, from int64, n int) {
		off := int64(0)
		if k := len(sp.Records); k > 0 {
			off = sp.Records[k-1].Offset + 1
		}
		for i := range n {
			ts := from + int64(i/2)*10 + 10*rng.Int64N(4)
			sp.Records = append(sp.Records, tsRecord(sp.Topic, sp.Partition, off, fmt.Sprintf("k%d", rng.IntN(3)), ts))
			off++
		}
	}
	counts := map[string]int32{"orders": 1 + rng.Int32N(2), "stock": 1 + rng.Int32N(2)}
	var last int64
	for _, topic := range []string{"orders", "stock"} {
		for p := range counts[topic] {
			sp := script.Partition{TopicPartition: tp(topic, p)}
			gen(&sp, base, 20+rng.IntN(40))
			before = append(before, sp)
			for _, r := range sp.Records {
				last = max(last, eventTime(r))
			}
		}
	}
	for _, sp := range before {
		sp.Records = append([]record.Record(nil), sp.Records...)
		gen(&sp, last+50, rng.IntN(30)) // newer than the disorder: never late
		after = append(after, sp)
	}
	fresh = map[record.TopicPartition]bool{}
	add := func(topic string, p int32) {
		sp := script.Partition{TopicPartition: tp(topic, p)}
		gen(&sp, last-rng.Int64N(1000), 10+rng.IntN(60))
		after = append(after, sp)
		fresh[sp.TopicPartition] = true
	}
	for p := counts["orders"]; p < counts["orders"]+1+rng.Int32N(2); p++ {
		add("orders", p) // a new task, unless stock has partition p
	}
	add("prices", 0) // joins task 0
	return before, after, fresh
}

// eventTime is the "ts" a tsRecord carries.
func eventTime(r record.Record) int64 {
	var ts int64
	if _, err := fmt.Sscanf(string(r.Value[len(`{"key":"`)+len(r.Key)+len(`","ts":`):]), "%d", &ts); err != nil {
		panic(err)
	}
	return ts
}

// TestNewPartitionsAtRestartNeverReorder: a job runs its history to the end
// and stops; partitions are created while it is stopped; it restarts, under
// many interleavings and delays. Across both runs every record comes out
// once; the records not flagged late are in the total order (nothing
// released early, nothing behind a newer record); and the late ones are
// exactly the new partitions' records at or below the restored watermark
// (design G7). The checkpoint is in a checkpoint sink, or only in the
// consumer group's commits (CheckpointCommitter).
func TestNewPartitionsAtRestartNeverReorder(t *testing.T) {
	t.Run("checkpoint sink", func(t *testing.T) { newPartitionsProperty(t, false) })
	t.Run("group", func(t *testing.T) { newPartitionsProperty(t, true) })
}

func newPartitionsProperty(t *testing.T, inGroup bool) {
	for seed := range uint64(40) {
		before, after, fresh := restartWithNewPartitions(seed)
		delay := (disorder + time.Duration(seed%3)*20) * time.Millisecond
		out := &failingSink{}
		sink := &checkpointing{failingSink: out}
		group := &groupStore{}
		run := func(parts []script.Partition, s uint64) signalbox.Stats {
			var src signalbox.Source = script.New(s, 1+int(s%7), parts...)
			var snk signalbox.Sink = sink
			if inGroup {
				src, snk = newGroupScript(s, 1+int(s%7), group, parts), out
			}
			p, err := signalbox.New(src, tsInputs("orders", "stock", "prices"),
				signalbox.WithDelay(delay), signalbox.WithClock(frozen), signalbox.WithMaxFuture(0),
				signalbox.WithSink(snk), signalbox.WithCheckpointInterval(1+time.Duration(s%3)),
				signalbox.WithUntil(signalbox.UntilEndOffsets))
			if err != nil {
				t.Fatal(err)
			}
			if err := runBounded(t, p); err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			return p.Stats()
		}
		if late := run(before, seed).LateTotal().Count; late != 0 {
			t.Fatalf("seed %d: first run: %d late records", seed, late)
		}
		var restored int64
		if inGroup {
			cps := group.committed()
			if len(cps) != len(before) {
				t.Fatalf("seed %d: %d partitions committed a checkpoint, want %d", seed, len(cps), len(before))
			}
			restored = watermark.MaxTime
			for _, pc := range cps {
				restored = min(restored, pc.Watermark) // the lowest: the assignment's restored watermark
			}
		} else {
			restored = sink.checkpoint().Watermark
		}
		n1 := len(sink.records)
		second := run(after, seed*31+1)

		wantLate := map[string]bool{}
		total := 0
		for _, sp := range after {
			total += len(sp.Records)
			for _, r := range sp.Records {
				if fresh[sp.TopicPartition] && eventTime(r) <= restored {
					wantLate[id(r)] = true
				}
			}
		}
		seen := map[string]bool{}
		var prev *record.Record
		late := 0
		for i := range sink.records {
			r := &sink.records[i]
			if seen[id(*r)] {
				t.Fatalf("seed %d: %s released twice", seed, id(*r))
			}
			seen[id(*r)] = true
			if r.Late != wantLate[id(*r)] {
				t.Fatalf("seed %d: %s t=%d late=%v, want %v (restored watermark %d, new partition %v, run %d)",
					seed, id(*r), r.EventTime, r.Late, !r.Late, restored, fresh[record.TopicPartition{Topic: r.Topic, Partition: r.Partition}], 1+min(i/max(n1, 1), 1))
			}
			if r.Late {
				late++
				continue
			}
			if prev != nil && !timers.Less(posOf(prev), posOf(r)) {
				t.Fatalf("seed %d: %s t=%d released after %s t=%d", seed, id(*r), r.EventTime, id(*prev), prev.EventTime)
			}
			prev = r
		}
		if len(seen) != total {
			t.Fatalf("seed %d: %d records out, want %d", seed, len(seen), total)
		}
		if got := second.LateTotal().Count; got != int64(late) || late != len(wantLate) {
			t.Fatalf("seed %d: %d counted late, %d flagged, want %d", seed, got, late, len(wantLate))
		}
	}
}

func id(r record.Record) string { return fmt.Sprintf("%s/%d@%d", r.Topic, r.Partition, r.Offset) }
