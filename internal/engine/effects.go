package engine

// What the steps ask of the outside world (doc.go: Ready and Advance).

import (
	"time"

	"github.com/signalbox/signalbox/record"
)

// Effects is what the steps asked for since the last Advance: the engine
// decides, the driver does the I/O, in the order the fields are listed.
// The engine only appends to it (S5).
type Effects struct {
	// Events for the observer (Config.Observe), in order.
	Events []Event
	// Resume and Pause: flow control's changes at the source.
	Resume, Pause []record.TopicPartition
	// Handled: partitions whose records were handled (Config.TellsHandled).
	Handled []record.TopicPartition
	// Evidence: the due time to ask the source's evidence for
	// (Config.Demands), when WantEvidence.
	Evidence     time.Time
	WantEvidence bool
	// Recycle: source record arrays the engine is done with.
	Recycle [][]record.Record
	// Live: when the replay was done (Unix ms), for the sinks' latency
	// meters; Publish: publish the stats.
	Live    int64
	Publish bool
	// Outs: sealed out batches for the sinks, in order. The driver hands
	// them over with Done(n) as it does: one it could not hand over (a
	// stop) stays, and goes first at the final checkpoint.
	Outs []*Out
	// Barrier: after handing over Outs, wait until the sinks have
	// acknowledged the last of them (a checkpoint), then, with a durable
	// store, store the checkpoint and commit.
	Barrier *Barrier
}

// Out is one unit of work for the sinks: released records, dead letters,
// and, at a checkpoint, the checkpoint they complete.
type Out struct {
	Records []record.Record
	Bytes   int // Records' Size, counted only under Config.InflightBytes
	Dead    []record.Record
	CP      *record.Checkpoint // flush, then checkpoint and commit
	CPAt    time.Time          // when CP was taken
	Flush   bool               // flush the at-least-once sinks (Config.FlushLinger)
	Final   bool
	// NoCommit: with a durable store the driver commits after storing the
	// checkpoint; the sinks only flush.
	NoCommit bool
	// Routes has a bit per routed sink for each of Records (process.go).
	Routes []uint64
}

// Barrier is a checkpoint the driver waits for (checkpoint): the commit,
// one named effect. Out is the out batch that carries CP, the last of
// Effects.Outs.
type Barrier struct {
	Out   *Out
	CP    *record.Checkpoint
	Start time.Time // when it was taken
	Final bool
	// Revoke: partitions are revoked once it is done, so the fences the
	// sinks reported before their acknowledgement are taken in first.
	Revoke bool
}

// Ready returns what the steps asked for since the last Advance. The
// driver does it, in field order, then calls Advance; it may call Ready
// again before (nothing is lost).
func (c *Engine) Ready() *Effects { return &c.fx }

// Advance tells the engine that everything Ready returned was done but
// the first unsent of Outs (a stop cut the hand-over short): those stay,
// and go out first with the next effects, with the barrier if they carry
// it.
func (c *Engine) Advance(unsent int) {
	fx := &c.fx
	clear(fx.Events)
	clear(fx.Recycle)
	n := copy(fx.Outs, fx.Outs[len(fx.Outs)-unsent:])
	clear(fx.Outs[n:])
	b := fx.Barrier
	if unsent == 0 {
		b = nil
	}
	*fx = Effects{Events: fx.Events[:0], Pause: fx.Pause[:0], Resume: fx.Resume[:0], Handled: fx.Handled[:0], Recycle: fx.Recycle[:0], Outs: fx.Outs[:n], Barrier: b}
}

// Pending reports whether out batches wait to be handed over (a stop cut
// an Advance short).
func (c *Engine) Pending() bool { return len(c.fx.Outs) > 0 }
