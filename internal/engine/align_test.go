package engine

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/watermark"
)

// TestAlignmentAheadCountsRecords: alignment lets a partition run ahead by
// its last answer's span, counted for at most aheadRecords of the answer's
// records: an answer of the usual size keeps its whole span, a big batch's
// thousands of records only that many records' share of it.
func TestAlignmentAheadCountsRecords(t *testing.T) {
	const hour = int64(3_600_000)
	for _, c := range []struct {
		span int64
		recs int
		want int64
	}{
		{3 * hour, 768, 3 * hour},                // sized by records: the whole span
		{3 * hour, aheadRecords, 3 * hour},       // at the bound: still whole
		{28 * hour, 7 * aheadRecords, 4 * hour},  // one 1 MiB batch: a seventh
		{28 * hour, 28 * aheadRecords, 1 * hour}, // a bigger one: less
		{0, 100_000, 0},                          // no event time spanned
	} {
		ps := &partState{span: c.span, spanRecs: c.recs}
		if got := ps.ahead(); got != c.want {
			t.Errorf("span %d ms over %d records: ahead %d ms, want %d", c.span, c.recs, got, c.want)
		}
	}
}

// TestNextHolders: the bound nextHolders returns is, for random partitions
// (some timeless, caught up or without a record yet, ties frequent), the
// lookahead-th lowest contribution of the timed holders other than the
// lowest, or the highest of them when there are fewer, as sorting them
// all gives it.
func TestNextHolders(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		c := &Engine{cfg: &Config{}, parts: map[record.TopicPartition]*partState{}}
		var all []*partState
		for p := range int32(rng.IntN(8)) {
			ps := &partState{tp: record.TopicPartition{Topic: "t", Partition: p}, holds: rng.IntN(4) > 0,
				maxET: int64(rng.IntN(6))}
			if rng.IntN(6) == 0 {
				ps.timeless = true
			}
			if rng.IntN(6) == 0 {
				ps.maxET = watermark.MinTime
			}
			c.parts[ps.tp] = ps
			all = append(all, ps)
		}
		var lowest *partState
		if len(all) > 0 && rng.IntN(2) == 0 {
			lowest = all[rng.IntN(len(all))]
		}
		var ctbs []int64
		for _, ps := range all {
			if ps != lowest && !ps.timeless && ps.holds && ps.maxET != watermark.MinTime {
				ctbs = append(ctbs, ps.contribution(0))
			}
		}
		slices.Sort(ctbs)
		want := watermark.MinTime
		if len(ctbs) > 0 {
			want = ctbs[min(len(ctbs), lookahead)-1]
		}
		if got := c.nextHolders(lowest); got != want {
			t.Fatalf("contributions %v (sorted, the lowest holder left out): nextHolders %d, want %d", ctbs, got, want)
		}
	}
}
