package signalbox_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/record"
)

// wideAssign assigns parts partitions at once, each with a committed
// checkpoint (as an eager rebalance hands back every partition), then
// waits for the end of the run.
type wideAssign struct {
	parts    int
	assigned bool
}

func (w *wideAssign) Open(context.Context) error { return nil }
func (w *wideAssign) Poll(ctx context.Context) (record.Fetch, error) {
	if !w.assigned {
		w.assigned = true
		var f record.Fetch
		for p := range int32(w.parts) {
			f.Assigned = append(f.Assigned, record.PartitionInfo{TopicPartition: tp("in", p), End: 10,
				Checkpoint: &record.PartitionCheckpoint{TopicPartition: tp("in", p), Position: 10, Watermark: 5}})
		}
		return f, nil
	}
	<-ctx.Done()
	return record.Fetch{}, ctx.Err()
}
func (w *wideAssign) Commit(context.Context, map[record.TopicPartition]int64) error { return nil }
func (w *wideAssign) Close() error                                                  { return nil }

// BenchmarkWideAssign measures the engine's handling of one assignment of
// 20,000 partitions that each restore a checkpoint (no records: the sink
// is never written).
func BenchmarkWideAssign(b *testing.B) {
	const parts = 20_000
	for range b.N {
		ctx, cancel := context.WithCancel(context.Background())
		n := 0
		p, err := signalbox.New(&wideAssign{parts: parts}, signalbox.WithClock(frozen), signalbox.WithMaxFuture(0),
			signalbox.WithSink(&countSink{written: new(atomic.Int64)}), signalbox.WithObserver(func(e signalbox.Event) {
				if e.Kind == signalbox.EventAssigned {
					if n++; n == parts {
						cancel()
					}
				}
			}))
		if err != nil {
			b.Fatal(err)
		}
		if err := p.Run(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
