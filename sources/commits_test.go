package sources

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/signalbox/signalbox/record"
)

var metaTP = record.TopicPartition{Topic: "t", Partition: 3}

// TestCheckpointMetadataRoundTrip: what EncodeCheckpoint writes,
// DecodeCheckpoint reads back for the offset it was committed with, −∞
// watermarks and extreme values included, within Kafka's default
// metadata limit.
func TestCheckpointMetadataRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	cases := []record.PartitionCheckpoint{
		{Low: 0, Position: 0, Watermark: math.MinInt64},
		{Low: math.MaxInt64, Position: math.MaxInt64, Watermark: math.MaxInt64},
		{Low: 5, Position: 9, Watermark: -1},
	}
	for range 200 {
		low := rng.Int64N(1 << 40)
		cases = append(cases, record.PartitionCheckpoint{Low: low, Position: low + rng.Int64N(1<<20), Watermark: rng.Int64() - math.MaxInt64/2})
	}
	for _, pc := range cases {
		pc.TopicPartition = metaTP
		meta := EncodeCheckpoint(pc)
		if len(meta) > 72 {
			t.Errorf("%q: %d bytes, more than documented", meta, len(meta))
		}
		got, ok := DecodeCheckpoint(metaTP, pc.Low, meta)
		if !ok || got != pc {
			t.Fatalf("%q decoded to %+v (%v), want %+v", meta, got, ok, pc)
		}
	}
}

// TestCheckpointMetadataRefused: metadata that is not a checkpoint, or
// does not match the committed offset, restores nothing.
func TestCheckpointMetadataRefused(t *testing.T) {
	for _, c := range []struct {
		meta      string
		committed int64
	}{
		{"", 5},
		{"some other consumer's note", 5},
		{"signalbox/1 5 9", 5},
		{"signalbox/1 5 9 100 7", 5},
		{"signalbox/1 5 9 100", 6},  // the offset was moved since
		{"signalbox/1 5 4 100", 5},  // position below Low
		{"signalbox/1 05 9 100", 5}, // not canonical
		{"signalbox/1 +5 9 100", 5},
		{"signalbox/1 5  9 100", 5},
		{"signalbox/1 5 9 1e3", 5},
		{"signalbox/1 5 9 99999999999999999999", 5},
		{"signalbox/2 5 9 100", 5},
	} {
		if pc, ok := DecodeCheckpoint(metaTP, c.committed, c.meta); ok {
			t.Errorf("%q at committed %d decoded to %+v, want refused", c.meta, c.committed, pc)
		}
	}
}

// FuzzDecodeCheckpoint: the metadata parser never panics, and what it
// accepts is exactly what EncodeCheckpoint writes for it.
//
//	go test -run=^$ -fuzz=FuzzDecodeCheckpoint ./sources/
func FuzzDecodeCheckpoint(f *testing.F) {
	f.Add("signalbox/1 5 9 100", int64(5))
	f.Add("signalbox/1 0 0 -9223372036854775808", int64(0))
	f.Add("", int64(-1))
	f.Fuzz(func(t *testing.T, meta string, committed int64) {
		pc, ok := DecodeCheckpoint(metaTP, committed, meta)
		if !ok {
			return
		}
		if pc.Low != committed || pc.Position < pc.Low || pc.TopicPartition != metaTP {
			t.Fatalf("%q accepted as %+v at committed %d", meta, pc, committed)
		}
		if again := EncodeCheckpoint(pc); again != meta {
			t.Fatalf("%q accepted, but encodes back as %q", meta, again)
		}
	})
}
