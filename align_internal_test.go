package signalbox

import (
	"testing"

	"github.com/signalbox/signalbox/sources/kafka"
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

// The Kafka source reports handled answers (sources/kafka handledGate).
var _ HandledNotifier = (*kafka.Source)(nil)
