package signalbox

// Handing the released batches to the sink goroutine: the core seals them
// (seal) into the spare batches the driver gives it (batchFor); the driver
// sends them (with backpressure) in its one blocking wait, await.

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/signalbox/signalbox/record"
)

// Spare batches. The sink goroutine gives back every batch it has written
// (run.spare holds as many as can be in flight, WithMaxInflightBatches+1),
// so that a busy stream reuses its batches: the engine fills them in bursts
// (a fetch's worth) while the sink writes steadily, and a spare channel
// smaller than the backlog would drop the batches of every drained burst,
// to allocate them again at the next one. Every tick (by the wall clock)
// the engine drops the spares that were not needed in it: the fewest that
// waited whenever it took one (all of them when it took none), keeping
// idleSpareBatches. So after a sink stall drains, neither a quiet stream
// nor a steady trickle, which takes one spare as the sink returns another,
// holds every batch that was in flight (about 1 MiB each at 4096 records)
// for the rest of the run.
const idleSpareBatches = 2

// trimSpares ends a spare window: it drops the spares that waited unused
// through it, down to idleSpareBatches, and starts the next window.
func (r *run) trimSpares(now time.Time) {
	for drop := min(r.spareLow, len(r.spare)) - idleSpareBatches; drop > 0; drop-- {
		select {
		case <-r.spare:
		default:
			drop = 0
		}
	}
	r.spareLow, r.spareWindow = math.MaxInt, now
}

// smallBatch is the capacity of a small out batch, made for a quiet stream;
// only batches larger than it go back to the engine as spares (writer.go).
const smallBatch = 256

// batchFor returns an empty record batch for the next out: a spare the sink
// goroutine returned, if there is one (it returns only large ones, which
// exist while the stream is busy: a replay's step ends with a short batch
// whose successor would otherwise grow again, by doubling, to full size);
// else one sized after the last one's n records: when there were more than
// smallBatch, a large one, else a small one. A large one holds WithBatchSize
// records, or under WithMaxInflightBytes a quarter more than n, since the
// byte bound rather than the count ends those batches.
func (r *run) batchFor(n int) []record.Record {
	r.spareLow = min(r.spareLow, len(r.spare))
	select {
	case b := <-r.spare:
		return b
	default:
	}
	switch {
	case n <= smallBatch:
		return make([]record.Record, 0, min(smallBatch, r.cfg.batchSize))
	case r.cfg.inflightBytes > 0: // a busy stream: the next batch may fill, and is recycled
		return make([]record.Record, 0, min(r.cfg.batchSize, n+n/4))
	}
	return make([]record.Record, 0, r.cfg.batchSize)
}

// seal ends the current out batch if it has anything: it goes to the sink
// goroutine at the next apply (effects), and a new one takes its place.
// When it is the first batch of records since the sinks' last flush, the
// flush linger starts at now.
func (c *core) seal(now time.Time) {
	o := c.cur
	if len(o.records) == 0 && len(o.dead) == 0 && o.cp == nil && !o.flush {
		return
	}
	switch {
	case o.cp != nil || o.flush:
		c.unflushed = time.Time{}
	case c.unflushed.IsZero() && (len(o.records) > 0 || len(o.dead) > 0):
		c.unflushed = now
	}
	c.fx.outs = append(c.fx.outs, o)
	c.cur = &out{records: c.batch(len(o.records))}
}

// send hands o to the sink goroutine. It blocks while the sinks lag
// (backpressure). A driver without one (stepped) writes o itself.
func (r *run) send(ctx context.Context, o *out) error {
	if r.stepped != nil {
		if err := r.stepped.writeOne(context.WithoutCancel(ctx), o); err != nil {
			return err
		}
		r.stepped.giveBack(o)
		return nil
	}
	select {
	case r.outs <- o:
		return nil
	default:
	}
	return r.await(ctx, o, nil, r.sinkDone)
}

// errSinkStopped surfaces when the sink goroutine ended while the engine
// waited for it.
var errSinkStopped = errors.New("signalbox: sink goroutine stopped")

// await is the engine's one blocking wait: until o is handed to the sink
// goroutine (o != nil) or done is closed. Meanwhile it reports the sink
// goroutine's acknowledgements to the observer and keeps the published
// stats fresh for status views; it gives up on a sink error, on ctx, or when
// sinkDone (if not nil) is closed. Only Run's shutdown drains the sink
// goroutine differently: there its error is read after it has ended.
func (r *run) await(ctx context.Context, o *out, done, sinkDone <-chan struct{}) error {
	var outs chan<- *out
	if o != nil {
		outs = r.outs
	}
	pub := time.NewTicker(r.cfg.tick)
	defer pub.Stop()
	for {
		select {
		case outs <- o:
			return nil
		case <-done:
			return nil
		case <-pub.C:
			r.publish()
		case e := <-r.acks:
			r.notify(e)
		case err := <-r.errs:
			return err
		case <-ctx.Done():
			return ctx.Err()
		case <-sinkDone:
			return errSinkStopped
		}
	}
}
