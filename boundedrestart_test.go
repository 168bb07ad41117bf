package signalbox_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/sources/script"
)

// TestBoundedRestartReachesItsOwnSnapshot: a bounded run (until:
// end-offsets) restored from a checkpoint taken during an earlier run's
// replay stops at its own start-up snapshot (M2), not at the earlier run's
// (R2 keeps that one only while it is further). The earlier run saw the
// partitions end at offset 2; this run starts with them ending at 6 and
// must emit every record up to there, each once.
func TestBoundedRestartReachesItsOwnSnapshot(t *testing.T) {
	parts := []script.Partition{{TopicPartition: tp("orders", 0)}, {TopicPartition: tp("orders", 1)}}
	var cp record.Checkpoint
	for i := range parts {
		for off := range int64(6) {
			parts[i].Records = append(parts[i].Records, tsRecord("orders", int32(i), off, "k", 1000*(off+1)))
		}
		// Offset 0 was emitted and checkpointed while the earlier run was
		// still replaying towards its snapshot, 2.
		cp.Partitions = append(cp.Partitions, record.PartitionCheckpoint{TopicPartition: parts[i].TopicPartition,
			Low: 1, Position: 1, End: 2, Replaying: true, Watermark: 1000})
	}
	cp.Watermark = 1000
	for seed := range uint64(4) {
		sink := &txSink{cp: &cp}
		p, err := signalbox.New(script.New(seed, 2, parts...), tsInputs("orders"),
			signalbox.WithDelay(time.Second), signalbox.WithClock(frozen), signalbox.WithSink(sink),
			signalbox.WithUntil(signalbox.UntilEndOffsets))
		if err != nil {
			t.Fatal(err)
		}
		if err := runBounded(t, p); err != nil {
			t.Fatal(err)
		}
		got := map[string]int{}
		for _, r := range sink.stored {
			got[id(r)]++
		}
		for _, pt := range parts {
			for off := int64(1); off < 6; off++ {
				if k := fmt.Sprintf("%s/%d@%d", pt.Topic, pt.Partition, off); got[k] != 1 {
					t.Errorf("seed %d: %s stored %d times, want once (stored: %v)", seed, k, got[k], got)
				}
			}
		}
		if len(sink.stored) != 10 {
			t.Errorf("seed %d: stored %d records, want 10", seed, len(sink.stored))
		}
	}
}
