package kafka

import (
	"slices"

	"github.com/signalbox/signalbox/record"
)

// stash keeps back the records of paused partitions that were fetched
// before the Pause but had not reached Poll yet (invariant 12). It belongs
// to the Poll goroutine.
//
// While a partition is paused, or has records kept back, each of its
// PartitionFetches is kept whole and Poll delivers in its place one with no
// records, the Position of the first record kept back, and the answer's End
// and Err: the caller's view of the partition stays consistent (it is not
// caught up while records are kept back) and never moves past a record it
// has not seen. The first Poll after Resume delivers what was kept back, in
// fetch order, before anything newer of that partition. A Revoked drops the
// partition's kept records: the next owner re-reads them.
type stash map[record.TopicPartition][]record.PartitionFetch

// filter keeps back the records of f's paused partitions and delivers the
// kept records of partitions no longer paused, first.
func (st stash) filter(f *record.Fetch, paused func(record.TopicPartition) bool) {
	if len(st) == 0 && !slices.ContainsFunc(f.Partitions, func(pf record.PartitionFetch) bool {
		return len(pf.Records) > 0 && paused(pf.TopicPartition)
	}) {
		return
	}
	out := st.released(paused)
	for _, pf := range f.Partitions {
		kept, holding := st[pf.TopicPartition]
		switch {
		case !holding && (len(pf.Records) == 0 || !paused(pf.TopicPartition)):
			out = append(out, pf)
		default:
			kept = append(kept, pf)
			st[pf.TopicPartition] = kept
			out = append(out, record.PartitionFetch{TopicPartition: pf.TopicPartition,
				Position: kept[0].Records[0].Offset, End: pf.End, Err: pf.Err})
		}
	}
	f.Partitions = out
}

// released removes and returns, in fetch order, the kept PartitionFetches
// of partitions that are no longer paused.
func (st stash) released(paused func(record.TopicPartition) bool) []record.PartitionFetch {
	var out []record.PartitionFetch
	for _, tp := range st.ready(paused) {
		out = append(out, st[tp]...)
		delete(st, tp)
	}
	return out
}

// ready lists the partitions with kept records that are no longer paused,
// in a fixed order.
func (st stash) ready(paused func(record.TopicPartition) bool) []record.TopicPartition {
	var tps []record.TopicPartition
	for tp := range st {
		if !paused(tp) {
			tps = append(tps, tp)
		}
	}
	slices.SortFunc(tps, record.TopicPartition.Compare)
	return tps
}

// revoke forgets the kept records of tps.
func (st stash) revoke(tps []record.TopicPartition) {
	for _, tp := range tps {
		delete(st, tp)
	}
}
