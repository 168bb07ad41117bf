package signalbox

import (
	"maps"
	"slices"
	"testing"

	"github.com/signalbox/signalbox/record"
)

// pauseLog is a Pauser that keeps the set of paused partitions, as the
// Kafka source does (not counted: one Resume lifts any number of Pauses).
type pauseLog struct {
	paused map[record.TopicPartition]bool
}

func (l *pauseLog) Pause(tps ...record.TopicPartition) {
	for _, tp := range tps {
		l.paused[tp] = true
	}
}

func (l *pauseLog) Resume(tps ...record.TopicPartition) {
	for _, tp := range tps {
		delete(l.paused, tp)
	}
}

// A partition the engine paused for flow control and a schema hold paused
// too stays paused in the source until both have resumed it, in either
// order; a resume by one that did not pause it changes nothing.
func TestPauseGateKeepsEitherPause(t *testing.T) {
	a, b := record.TopicPartition{Topic: "t", Partition: 0}, record.TopicPartition{Topic: "t", Partition: 1}
	for _, engineFirst := range []bool{true, false} {
		src := &pauseLog{paused: map[record.TopicPartition]bool{}}
		g := &pauseGate{src: src, by: map[record.TopicPartition]uint8{}}
		engine, hold := g.pauserFor(pausedByEngine), g.pauserFor(pausedByHold)
		paused := func(step string, want ...record.TopicPartition) {
			t.Helper()
			if got := slices.SortedFunc(maps.Keys(src.paused), func(x, y record.TopicPartition) int { return int(x.Partition - y.Partition) }); !slices.Equal(got, want) {
				t.Fatalf("engine resumes first %v, after %s: source has %v paused, want %v", engineFirst, step, got, want)
			}
		}
		engine.Pause(a, b)
		hold.Pause(a)
		hold.Resume(b) // the hold never paused b
		paused("both pause a, the engine b", a, b)
		first, second := engine, hold
		if !engineFirst {
			first, second = hold, engine
		}
		first.Resume(a)
		paused("the first resumes a", a, b)
		second.Resume(a)
		paused("the second resumes a", b)
		engine.Resume(b)
		paused("the engine resumes b")
	}
	if (*pauseGate)(nil).pauserFor(pausedByEngine) != nil {
		t.Fatal("a source that cannot pause has a Pauser")
	}
}
