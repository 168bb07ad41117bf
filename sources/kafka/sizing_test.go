package kafka

import (
	"testing"
	"time"

	"github.com/signalbox/signalbox/record"
)

// TestPartitionBytesAimsAtRecords: the next request of a partition is
// sized from the bytes per record its last answer showed, to about
// PartitionMaxRecords records, within [4 KiB, PartitionMaxBytes].
func TestPartitionBytesAimsAtRecords(t *testing.T) {
	s := &Source{cfg: Config{PartitionMaxBytes: 1 << 20, PartitionMaxRecords: 1024}}
	for _, c := range []struct {
		asked int32
		n     int
		want  int32
	}{
		{64 << 10, 4096, 16 << 10},   // 16 bytes a record: 1024 records in 16 KiB
		{64 << 10, 64, 1 << 20},      // 1 KiB a record would ask 1 MiB: at the cap
		{64 << 10, 512, 128 << 10},   // 128 bytes a record
		{16 << 10, 100000, 4 << 10},  // highly compressed: never below 4 KiB
		{1 << 20, 1, 1 << 20},        // one huge record: the cap
		{128 << 10, 1024, 128 << 10}, // already right: unchanged
	} {
		if got := s.partitionBytes(c.asked, c.n); got != c.want {
			t.Errorf("asked %d, got %d records: next %d, want %d", c.asked, c.n, got, c.want)
		}
	}
}

// TestCertifiedIsTheOldestLivePartition: a fetcher certifies its partitions
// up to the oldest certification among those not failing — a paused
// partition's last ListOffsets holds it back — and a failing partition is
// left out (it holds the watermark anyway).
func TestCertifiedIsTheOldestLivePartition(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	f := &fetcher{parts: []*partState{
		{tp: record.TopicPartition{Topic: "a"}, certAt: t0.Add(3 * time.Second)},
		{tp: record.TopicPartition{Topic: "b"}, certAt: t0.Add(time.Second)}, // paused: last ListOffsets
		{tp: record.TopicPartition{Topic: "c"}, certAt: t0, failed: true},
	}}
	if got := f.certified(); !got.Equal(t0.Add(time.Second)) {
		t.Fatalf("certified %v, want the paused partition's %v", got, t0.Add(time.Second))
	}
	f.parts[1].certAt = t0.Add(5 * time.Second)
	if got := f.certified(); !got.Equal(t0.Add(3 * time.Second)) {
		t.Fatalf("certified %v, want %v", got, t0.Add(3*time.Second))
	}
	f.parts[0].failed, f.parts[1].failed = true, true
	if got := f.certified(); !got.IsZero() {
		t.Fatalf("every partition failing: certified %v, want none", got)
	}
}
