package kafka

import (
	"sync"
	"time"

	"github.com/signalbox/signalbox/record"
)

// handledGate holds back a partition's next fetch until the caller has
// handled its previous records (Source.Handled). Between a fetcher and the
// engine's flow control sit several answers (the fetcher's, Poll's, the
// engine's queue), so a pause took effect only after each of them had
// delivered the partition's next records too. That is harmless while an
// answer is a few hundred records; with big producer batches (a broker
// answers whole batches) it is several batches of event time per partition
// beyond what alignment allows, parked. With the gate a partition is in at
// most one of those answers, so a pause bounds it to the next answer.
//
// It applies once the caller has called Handled (the engine does before
// its first Poll), to an answer of more than twice PartitionMaxRecords
// records (sized by records, answers are about that: only whole batches
// make them larger) that left its partition behind its end offset (a
// replay or a backlog). Answers of the usual size keep several on their
// way, which a replay of small batches needs to keep the engine busy, and
// a partition at its end is never held, so live answers are not delayed.
// An answer that is not reported handled within handledWait no longer
// holds its partition: the gate only ever delays fetching.
type handledGate struct {
	mu     sync.Mutex
	on     bool
	ahead  map[record.TopicPartition]time.Time // delivered, not handled: since when
	wakeUp func()                              // pokes the fetchers
	wait   time.Duration                       // 0: handledWait
}

// handledWait bounds how long an answer that is never reported handled
// holds its partition's next fetch.
const handledWait = time.Second

// delivering records that the records of tp are on their way to the caller.
func (g *handledGate) delivering(tp record.TopicPartition, now time.Time) {
	g.mu.Lock()
	if g.on {
		if g.ahead == nil {
			g.ahead = make(map[record.TopicPartition]time.Time)
		}
		g.ahead[tp] = now
	}
	g.mu.Unlock()
}

// holds reports whether tp's next fetch waits for its records to be
// handled, and until when at most.
func (g *handledGate) holds(tp record.TopicPartition, now time.Time) (until time.Time, held bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	at, ok := g.ahead[tp]
	if !ok {
		return time.Time{}, false
	}
	wait := g.wait
	if wait == 0 {
		wait = handledWait
	}
	if until = at.Add(wait); !now.Before(until) {
		delete(g.ahead, tp)
		return time.Time{}, false
	}
	return until, true
}

// handled releases tps and turns the gate on.
func (g *handledGate) handled(tps []record.TopicPartition) {
	g.mu.Lock()
	g.on = true
	n := len(g.ahead)
	for _, tp := range tps {
		delete(g.ahead, tp)
	}
	freed := n != len(g.ahead)
	g.mu.Unlock()
	if freed && g.wakeUp != nil {
		g.wakeUp()
	}
}

// forget drops tps (no longer fetched, or assigned afresh).
func (g *handledGate) forget(tps []record.TopicPartition) {
	g.mu.Lock()
	for _, tp := range tps {
		delete(g.ahead, tp)
	}
	g.mu.Unlock()
}

// Handled implements the root package's HandledNotifier: the caller has
// handled the records of tps it was given, and applied its flow control
// (Pause) to them. From the first call on, a partition left behind its end
// offset by an answer is fetched again only once that answer is reported
// handled (or handledWait later), when that answer was larger than twice
// PartitionMaxRecords records.
func (s *Source) Handled(tps ...record.TopicPartition) { s.handled.handled(tps) }
