package signalbox_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/sources/script"
)

// unpausable is a source that cannot pause (it hides the script source's
// Pause and Resume), counting the records it delivered.
type unpausable struct {
	src       *script.Source
	delivered atomic.Int64
}

func (u *unpausable) Open(ctx context.Context) error { return u.src.Open(ctx) }
func (u *unpausable) Close() error                   { return u.src.Close() }
func (u *unpausable) Commit(ctx context.Context, offsets map[record.TopicPartition]int64) error {
	return u.src.Commit(ctx, offsets)
}
func (u *unpausable) Poll(ctx context.Context) (record.Fetch, error) {
	f, err := u.src.Poll(ctx)
	for _, pf := range f.Partitions {
		u.delivered.Add(int64(len(pf.Records)))
	}
	return f, err
}

// TestSchemaHoldBoundedWithoutPauser: a source that cannot pause, whose
// first record cannot be decoded while the registry is down: the engine
// stops polling it once HeldUnpausedLimit records are held, instead of
// holding everything the source has; once the registry is back every record
// arrives once, in order, none late or dead-lettered.
func TestSchemaHoldBoundedWithoutPauser(t *testing.T) {
	t.Parallel()
	const n, batch = 80_000, 100
	if signalbox.HeldUnpausedLimit != 16384 {
		t.Fatalf("HeldUnpausedLimit is %d; docs/design.md and Pauser's comment say 16,384", signalbox.HeldUnpausedLimit)
	}
	recs := make([]record.Record, n)
	for i := range recs {
		held := ""
		if i == 0 {
			held = `,"held":1`
		}
		recs[i] = record.Record{Topic: "in", Offset: int64(i), Key: []byte("k"), Value: fmt.Appendf(nil, `{"ts":%d%s}`, 1000+i, held)}
	}
	src := &unpausable{src: script.New(1, batch, script.Partition{TopicPartition: tp("in", 0), Records: recs})}
	dec := &downDecoder{}
	dec.down.Store(true)
	out, dl := &collect{}, &collect{}
	p, err := signalbox.New(src,
		signalbox.WithInputs(signalbox.Input{Topic: "in", Time: signalbox.TimeFromField, TimeField: "ts", Decoder: dec}),
		signalbox.WithDelay(0), signalbox.WithMaxFuture(0), signalbox.WithUntil(signalbox.UntilEndOffsets),
		signalbox.WithSink(out), signalbox.WithDeadLetter(dl)) // the wall clock: Stats are published on its ticks
	if err != nil {
		t.Fatal(err)
	}
	var atRecovery atomic.Int64
	go func() {
		// The registry comes back after the held record's third try (about
		// a second of backoff): long enough for an unbounded poller to have
		// read the whole source.
		for deadline := time.Now().Add(runTimeout); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if h := p.Stats().SchemaHolds; len(h) > 0 && h[0].Attempts >= 3 {
				atRecovery.Store(src.delivered.Load())
				dec.down.Store(false)
				return
			}
		}
	}()
	if err := runBounded(t, p); err != nil {
		t.Fatal(err)
	}
	// Besides the holds: the Fetch being prepared and the one waiting for it.
	if got, bound := atRecovery.Load(), int64(signalbox.HeldUnpausedLimit+3*batch); got == 0 || got > bound {
		t.Errorf("the source delivered %d records while the registry was down, want 1..%d", got, bound)
	}
	if len(out.records) != n || len(dl.records) != 0 {
		t.Fatalf("%d out, %d dead-lettered; want %d and 0", len(out.records), len(dl.records), n)
	}
	for i, r := range out.records {
		if r.Offset != int64(i) {
			t.Fatalf("record %d has offset %d", i, r.Offset)
		}
	}
	if s := p.Stats(); s.LateTotal().Count != 0 {
		t.Fatalf("%d late", s.LateTotal().Count)
	}
}
