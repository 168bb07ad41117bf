package engine

import (
	"testing"

	"github.com/signalbox/signalbox/record"
)

// BenchmarkReleaseParked is the in-memory store's release loop as a replay
// runs it: records parked by pointer into 24 partitions' arrays, far more
// than the caches hold, released in event-time order (which interleaves
// the arrays) and each copied into an out batch. One op is one record
// parked and released.
//
//	go test -run '^$' -bench ReleaseParked -benchmem .
func BenchmarkReleaseParked(b *testing.B) {
	const parts, perPart = 24, 1 << 15 // 786,432 records, 180 MiB
	const lag = 8192                   // records of a partition parked, 45 MiB in all: beyond the caches
	val := []byte(`{"item":"i-042","ts":1764479604123,"kind":"view","pad":"abcdefghijklmnopqrstuvwxyzabcdefghijklmn"}`)
	arrays := make([][]record.Record, parts)
	for p := range arrays {
		arrays[p] = make([]record.Record, perPart)
		for i := range arrays[p] {
			arrays[p][i] = record.Record{Topic: "events", Partition: int32(p), Offset: int64(i), Key: val[9:14], Value: val,
				EventTime: 1_764_479_604_123 + int64(i)*parts + int64((p*7)%parts), OrderKey: "i-042"}
		}
	}
	m := newMemStore()
	batch := make([]record.Record, 0, 4096)
	emit := func(r *record.Record) error {
		if len(batch) == cap(batch) {
			batch = batch[:0]
		}
		batch = append(batch, *r)
		return nil
	}
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; done += parts * perPart {
		for i := range perPart {
			for p := range arrays {
				if err := m.Park(posOf(&arrays[p][i]), &arrays[p][i]); err != nil {
					b.Fatal(err)
				}
			}
			if i%1024 == 1023 && i >= lag { // a release step per 1024 records of each partition
				if err := m.Release(arrays[0][i-lag].EventTime, 0, emit); err != nil {
					b.Fatal(err)
				}
			}
		}
		if err := m.Release(1<<62, 0, emit); err != nil {
			b.Fatal(err)
		}
	}
}
