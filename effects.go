package signalbox

// What a step of the engine's core asks of the outside world, and the
// driver that does it (doc.go: the step core).

import (
	"time"

	"github.com/signalbox/signalbox/record"
)

// effects is what the core's steps asked for since the driver last applied
// them: the core decides, the driver (loop, handle) does the I/O, in the
// order the fields are listed.
type effects struct {
	// pause and resume: flow control's changes at the source (Pauser).
	pause, resume []record.TopicPartition
	// handled: partitions whose records were handled (HandledNotifier).
	handled []record.TopicPartition
	// evidence: the due time to ask the source's evidence for
	// (EvidenceDemander), when wantEvidence.
	evidence     time.Time
	wantEvidence bool
	// recycle: source record arrays the engine is done with (Recycler).
	recycle [][]record.Record
}

// apply does what the core asked for since the last apply, and clears it.
func (r *run) apply() {
	fx := &r.fx
	if len(fx.resume) > 0 {
		r.pauser.Resume(fx.resume...)
	}
	if len(fx.pause) > 0 {
		r.pauser.Pause(fx.pause...)
	}
	if len(fx.handled) > 0 {
		r.handledTo.Handled(fx.handled...)
	}
	if fx.wantEvidence {
		r.demander.WantEvidence(fx.evidence)
	}
	for _, recs := range fx.recycle {
		r.recycler.Recycle(recs)
	}
	clear(fx.recycle)
	*fx = effects{pause: fx.pause[:0], resume: fx.resume[:0], handled: fx.handled[:0], recycle: fx.recycle[:0]}
}
