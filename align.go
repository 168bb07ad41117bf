package signalbox

import (
	"github.com/signalbox/signalbox/record"
)

// Flow control (design P3–P5): the engine pauses partitions that run ahead so
// that what it holds does not grow with the history.
//
//   - Alignment (WithAlignment). A partition's contribution is its newest
//     event time − delay − 1 ms. It is paused while its contribution is more than
//     the window, plus the event time its last answer spanned (counted for
//     at most aheadRecords of its records), ahead of its base: the released
//     watermark, or its own first contribution while the watermark is still
//     below it (−∞ at start). The lookahead partitions (the lookahead
//     lowest holders after the lowest one) may run one whole answer's span
//     further: their next answer is fetched while their last one is still
//     parked, so it is at hand when the watermark reaches them.
//   - Parked limit (WithParkedLimit). Past the limit, every timed partition
//     is paused but the lowest holder, until parked bytes fall below three
//     quarters of the limit.
//
// Pausing is holding: a paused partition keeps its catch-up phase and its
// contribution, gets fresh evidence from the source, and is never treated as
// caught up because of the pause. The lowest holder — the partition that
// holds the watermark lowest, ties broken by topic and partition — is never
// paused, so the watermark can always move. A partition that has delivered
// nothing holds at −∞ and is never paused either.

// HandledNotifier is implemented by sources that fetch ahead of the
// engine: between a source and flow control sit a few Fetches (the
// poller's, the engine's queue), and a pause reaches a partition only after
// they are delivered. The engine calls Handled with no partition before
// its first Poll, then, after each pass of flow control (align), with the
// partitions whose records it handled since the last call; the Kafka source
// then fetches a partition left behind its end offset again only once its
// previous records are reported handled, so that a pause takes effect
// before the partition's next answer however large answers are.
type HandledNotifier interface {
	Handled(tps ...record.TopicPartition)
}
