package kafka

import (
	"testing"

	"github.com/signalbox/signalbox/embedded"
	"github.com/signalbox/signalbox/record"
)

// TestGroupKeepsCheckpointInCommitMetadata: CommitCheckpoint commits each
// partition's Low with its checkpoint in the commit's metadata, and the
// next member to be assigned the partition gets it back in
// PartitionInfo.Checkpoint, with Start at its Low. A plain Commit (as
// other tools make) carries none, and a Seeker's start outranks it.
func TestGroupKeepsCheckpointInCommitMetadata(t *testing.T) {
	c := startCluster(t, embedded.WithTopic("m", 2))
	mustProduce(t, c, recs("m", 0, 10, "v")...)
	mustProduce(t, c, recs("m", 1, 10, "v")...)
	p0, p1 := record.TopicPartition{Topic: "m", Partition: 0}, record.TopicPartition{Topic: "m", Partition: 1}
	cfg := Config{Brokers: c.Addrs(), Topics: []string{"m"}, Group: "meta"}
	cp := record.Checkpoint{Watermark: 1000, Partitions: []record.PartitionCheckpoint{
		{TopicPartition: p0, Low: 3, Position: 8, End: 10, Replaying: true, Watermark: 1000},
		{TopicPartition: p1, Low: 10, Position: 10, End: 10, Watermark: -9223372036854775808},
	}}
	assigned := func(setup ...func(*Source)) (map[record.TopicPartition]record.PartitionInfo, *Source) {
		t.Helper()
		col := openAssigned(t, 2, cfg, setup...)
		return col.assigned, col.src
	}

	_, first := assigned()
	if err := first.CommitCheckpoint(bg, cp); err != nil {
		t.Fatal(err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	got, second := assigned()
	for _, want := range cp.Partitions {
		a := got[want.TopicPartition]
		want.End, want.Replaying = 0, false // not kept: the restart snapshots its own end
		if a.Start != want.Low || a.Checkpoint == nil || *a.Checkpoint != want {
			t.Errorf("%v assigned Start %d, checkpoint %+v; want Start %d, checkpoint %+v", want.TopicPartition, a.Start, a.Checkpoint, want.Low, want)
		}
	}
	if err := second.Commit(bg, map[record.TopicPartition]int64{p0: 5}); err != nil {
		t.Fatal(err)
	}
	if err := second.Close(); err != nil {
		t.Fatal(err)
	}
	got, third := assigned()
	if a := got[p0]; a.Start != 5 || a.Checkpoint != nil {
		t.Errorf("after a plain commit, %v assigned Start %d, checkpoint %+v; want 5 and none", p0, a.Start, a.Checkpoint)
	}
	if a := got[p1]; a.Checkpoint == nil {
		t.Errorf("%v lost its checkpoint to another partition's commit", p1)
	}
	if err := third.Close(); err != nil {
		t.Fatal(err)
	}
	got, _ = assigned(func(s *Source) { s.StartAt(map[record.TopicPartition]int64{p1: 2}) })
	if a := got[p1]; a.Start != 2 || a.Checkpoint != nil {
		t.Errorf("with StartAt, %v assigned Start %d, checkpoint %+v; want 2 and none", p1, a.Start, a.Checkpoint)
	}
}
