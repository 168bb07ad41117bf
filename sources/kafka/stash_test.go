package kafka

import (
	"math/rand/v2"
	"testing"

	"github.com/signalbox/signalbox/record"
)

// TestStashKeepsPausedRecordsInOrder drives the stash with random fetch,
// pause and resume interleavings over three partitions: no record of a
// paused partition is delivered, every record is delivered exactly once and
// in offset order, and a reported Position never passes a record that was
// not delivered.
func TestStashKeepsPausedRecordsInOrder(t *testing.T) {
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 1))
		tps := []record.TopicPartition{{Topic: "a", Partition: 0}, {Topic: "a", Partition: 1}, {Topic: "b", Partition: 0}}
		st := make(stash)
		paused := map[record.TopicPartition]bool{}
		isPaused := func(tp record.TopicPartition) bool { return paused[tp] }
		fetched := map[record.TopicPartition]int64{} // next offset the "fetcher" reads
		got := map[record.TopicPartition][]int64{}
		check := func(f record.Fetch) {
			t.Helper()
			for _, pf := range f.Partitions {
				if len(pf.Records) > 0 && paused[pf.TopicPartition] {
					t.Fatalf("seed %d: paused %v delivered %d records", seed, pf.TopicPartition, len(pf.Records))
				}
				for _, r := range pf.Records {
					want := int64(len(got[pf.TopicPartition]))
					if r.Offset != want {
						t.Fatalf("seed %d: %v delivered offset %d, want %d", seed, pf.TopicPartition, r.Offset, want)
					}
					got[pf.TopicPartition] = append(got[pf.TopicPartition], r.Offset)
				}
				if seen := int64(len(got[pf.TopicPartition])); pf.Position > seen {
					t.Fatalf("seed %d: %v Position %d passes undelivered offset %d", seed, pf.TopicPartition, pf.Position, seen)
				}
			}
		}
		for range 300 {
			tp := tps[rng.IntN(len(tps))]
			switch rng.IntN(4) {
			case 0:
				paused[tp] = true
			case 1:
				delete(paused, tp)
			default:
				var f record.Fetch
				for range 1 + rng.IntN(3) {
					tp := tps[rng.IntN(len(tps))]
					n := rng.IntN(4)
					pf := record.PartitionFetch{TopicPartition: tp, End: 1000}
					for range n {
						pf.Records = append(pf.Records, record.Record{Offset: fetched[tp]})
						fetched[tp]++
					}
					pf.Position = fetched[tp]
					f.Partitions = append(f.Partitions, pf)
				}
				st.filter(&f, isPaused)
				check(f)
			}
		}
		clear(paused)
		var f record.Fetch
		st.filter(&f, isPaused)
		check(f)
		for _, tp := range tps {
			if int64(len(got[tp])) != fetched[tp] {
				t.Fatalf("seed %d: %v delivered %d of %d records", seed, tp, len(got[tp]), fetched[tp])
			}
		}
	}
}

func TestStashRevokeDropsKeptRecords(t *testing.T) {
	tp := record.TopicPartition{Topic: "a"}
	st := make(stash)
	f := record.Fetch{Partitions: []record.PartitionFetch{{TopicPartition: tp, Position: 3, End: 9,
		Records: []record.Record{{Offset: 1}, {Offset: 2}}}}}
	st.filter(&f, func(record.TopicPartition) bool { return true })
	if pf := f.Partitions[0]; len(pf.Records) != 0 || pf.Position != 1 || pf.End != 9 {
		t.Fatalf("paused partition delivered %+v, want no records, Position 1, End 9", pf)
	}
	st.revoke([]record.TopicPartition{tp})
	if len(st) != 0 {
		t.Fatalf("revoke kept %d partitions", len(st))
	}
}
