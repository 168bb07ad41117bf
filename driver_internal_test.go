package signalbox

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/signalbox/signalbox/internal/engine"
	"github.com/signalbox/signalbox/record"
)

// testRun is a run of topic "a", delay 0, with opts, with a/0 assigned
// (end offset end) at the epoch.
func testRun(t *testing.T, end int64, opts ...Option) *run {
	t.Helper()
	p, err := New(nopSource{}, append([]Option{WithInputs(Input{Topic: "a", Time: TimeFromField, TimeField: "ts"}),
		WithSink(nopSink{}), WithClock(func() time.Time { return time.UnixMilli(0) })}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	r := newRun(context.Background(), p)
	f := record.Fetch{Assigned: []record.PartitionInfo{{TopicPartition: record.TopicPartition{Topic: "a"}, End: end}}}
	r.eng.BeginFetch(&f, time.UnixMilli(0))
	if err := r.eng.TakeFetch(&f, nil, nil, time.UnixMilli(0)); err != nil {
		t.Fatal(err)
	}
	return r
}

// An acknowledgement the loop receives from the sink goroutine is the
// engine's input whether or not an observer listens: a fence it reports
// goes to the engine (engine.Engine.Fenced; its test TestFencedRevoke
// shows what it changes), and the engine's next revoke of it is then one
// that forgets what was emitted (R9).
func TestLoopTakesInAcknowledgementsWithoutAnObserver(t *testing.T) {
	r := testRun(t, 1)
	a0 := record.TopicPartition{Topic: "a"}
	r.acks <- Event{Kind: EventFenced, Partition: a0}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.loop(ctx, make(chan polled)) }()
	for len(r.acks) > 0 { // wait until the loop took it
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-done
	if !r.eng.IsFenced(a0) {
		t.Fatal("the fence the sink goroutine reported was not taken in")
	}
}

// apply hands the out batches over in place: the slice keeps its capacity
// (no allocation per batch), and on a stop the ones not handed over stay,
// first and in order, for the final checkpoint.
func TestApplyKeepsOutsUnsent(t *testing.T) {
	r := testRun(t, 0)
	fx := r.eng.Ready()
	fx.Outs = append(fx.Outs, &engine.Out{})
	if err := r.apply(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(fx.Outs) != 0 || cap(fx.Outs) == 0 {
		t.Fatalf("after apply: len %d cap %d, want 0 and the capacity kept", len(fx.Outs), cap(fx.Outs))
	}
	<-r.outs
	for len(r.outs) < cap(r.outs)-1 {
		r.outs <- &out{} // the sink goroutine lags: room for one more
	}
	o1, o2, o3 := &engine.Out{}, &engine.Out{}, &engine.Out{}
	fx.Outs = append(fx.Outs, o1, o2, o3)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := r.apply(ctx); err == nil {
		t.Fatal("apply with the sinks full and ctx cancelled: no error")
	}
	if !slices.Equal(fx.Outs, []*engine.Out{o2, o3}) {
		t.Fatalf("unsent outs %p, want %p %p", fx.Outs, o2, o3)
	}
}

// A barrier whose batch went out before a stop cut the hand-over short
// (a flush batch sealed after it was not sent) is still awaited at the
// next apply, on that batch's acknowledgement.
func TestApplyAwaitsABarrierSentBeforeAStop(t *testing.T) {
	r := testRun(t, 0)
	for len(r.outs) < cap(r.outs)-1 {
		r.outs <- &out{Out: &engine.Out{}} // the sink goroutine lags: room for one more
	}
	fx := r.eng.Ready()
	withCP, flush := &engine.Out{CP: &record.Checkpoint{}}, &engine.Out{Flush: true}
	fx.Outs = append(fx.Outs, withCP, flush)
	fx.Barrier = &engine.Barrier{Out: withCP, CP: withCP.CP}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := r.apply(ctx); err == nil {
		t.Fatal("apply with the sinks full and ctx cancelled: no error")
	}
	if fx := r.eng.Ready(); len(fx.Outs) != 1 || fx.Outs[0] != flush || fx.Barrier == nil {
		t.Fatalf("after the stop: outs %v, barrier %v; want the flush batch and the barrier", fx.Outs, fx.Barrier)
	}
	acked := make(chan bool, 1)
	go func() { // the sink goroutine: it acknowledges the checkpoint's batch
		for o := range r.outs {
			if o.Out == withCP {
				acked <- true
				close(o.ack)
				return
			}
		}
	}()
	if err := r.apply(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-acked:
	default:
		t.Fatal("apply returned before the barrier's batch was acknowledged")
	}
}
