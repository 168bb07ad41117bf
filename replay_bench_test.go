package signalbox_test

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/metrics"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/sinks/jsonl"
	"github.com/signalbox/signalbox/sources/script"
)

// discard is a Sink that counts what it is given.
type discard struct{ n atomic.Int64 }

func (d *discard) Open(context.Context) error  { return nil }
func (d *discard) Flush(context.Context) error { return nil }
func (d *discard) Close() error                { return nil }
func (d *discard) Write(_ context.Context, b []record.Record) error {
	d.n.Add(int64(len(b)))
	return nil
}

// replayParts is a history of 3 topics × 4 partitions × perPart JSON
// records with event times rising by 1 ms, bounded disorder across
// partitions.
func replayParts(perPart int) ([]script.Partition, int) {
	var parts []script.Partition
	for _, topic := range []string{"orders", "stock", "prices"} {
		for p := range int32(4) {
			sp := script.Partition{TopicPartition: tp(topic, p)}
			for i := range perPart {
				sp.Records = append(sp.Records, tsRecord(topic, p, int64(i), fmt.Sprintf("k%d", i%50), 1_700_000_000_000+int64(i)+int64(p)))
			}
			parts = append(parts, sp)
		}
	}
	return parts, 12 * perPart
}

// benchReplay replays the history through the engine per iteration, to a
// sink that discards, and reports records per second; during the run,
// during(p) runs in its own goroutine until the run ends (nil: nothing).
func benchReplay(b *testing.B, during func(ctx context.Context, p *signalbox.Pipeline)) {
	parts, n := replayParts(20_000)
	b.ReportAllocs()
	b.ResetTimer()
	var total time.Duration
	for i := range b.N {
		out := &discard{}
		p, err := signalbox.New(script.New(uint64(i), 512, parts...), tsInputs("orders", "stock", "prices"),
			signalbox.WithDelay(time.Second), signalbox.WithSink(out), signalbox.WithUntil(signalbox.UntilEndOffsets))
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		if during != nil {
			go func() { defer close(done); during(ctx, p) }()
		} else {
			close(done)
		}
		start := time.Now()
		err = p.Run(context.Background())
		total += time.Since(start)
		cancel()
		<-done
		if err != nil {
			b.Fatal(err)
		}
		if got := out.n.Load(); got != int64(n) {
			b.Fatalf("%d records out, want %d", got, n)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/total.Seconds(), "records/s")
}

// BenchmarkReplay is the engine alone: decode, park, release, sink.
func BenchmarkReplay(b *testing.B) { benchReplay(b, nil) }

// BenchmarkReplayScraped is BenchmarkReplay while a Prometheus registry
// gathers the pipeline's metrics every 100ms, ten times faster than a
// usual scrape interval.
func BenchmarkReplayScraped(b *testing.B) {
	benchReplay(b, func(ctx context.Context, p *signalbox.Pipeline) {
		reg := prometheus.NewRegistry()
		reg.MustRegister(metrics.NewCollector(p.Stats, nil))
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if _, err := reg.Gather(); err != nil {
					b.Error(err)
				}
			}
		}
	})
}

// BenchmarkReplayJSONL is the engine with the JSONL sink (into io.Discard)
// on ~100-byte JSON values that carry their event time both as the record
// timestamp and in field ts, read in either time mode: the same records,
// the same output. It reports the process's CPU time (user + system) per
// record besides the wall-clock rate: on a busy machine CPU time varies
// less than wall time.
func BenchmarkReplayJSONL(b *testing.B) {
	parts, n := jsonlParts()
	for _, mode := range []signalbox.TimeSource{signalbox.TimeFromTimestamp, signalbox.TimeFromField} {
		b.Run(string(mode), func(b *testing.B) { benchReplayJSONL(b, parts, n, mode) })
	}
}

// jsonlParts are BenchmarkReplayJSONL's records: n of them in 12 partitions.
func jsonlParts() (parts []script.Partition, n int) {
	for _, topic := range []string{"orders", "stock", "prices"} {
		for p := range int32(4) {
			sp := script.Partition{TopicPartition: tp(topic, p)}
			for i := range 20_000 {
				ts := 1_700_000_000_000 + int64(i) + int64(p)
				r := tsRecord(topic, p, int64(i), fmt.Sprintf("i-%03d", i%1000), ts)
				r.Value = fmt.Appendf(nil, `{"item":"i-%03d","ts":%d,"kind":"sold","qty":%d,"pad":"%s"}`, i%1000, ts, i%7, strings.Repeat("x", 40))
				r.Timestamp = time.UnixMilli(ts)
				sp.Records = append(sp.Records, r)
			}
			parts = append(parts, sp)
		}
	}
	return parts, 12 * 20_000
}

// benchReplayJSONL replays parts (n records) in time mode into a JSONL
// sink, with extra options, and reports records/s and cpu-ns/record.
func benchReplayJSONL(b *testing.B, parts []script.Partition, n int, mode signalbox.TimeSource, extra ...signalbox.Option) {
	var in []signalbox.Input
	for _, t := range []string{"orders", "stock", "prices"} {
		i := signalbox.Input{Topic: t, Time: mode}
		if mode == signalbox.TimeFromField {
			i.TimeField = "ts"
		}
		in = append(in, i)
	}
	b.ReportAllocs()
	cpu0 := cpuTime()
	var total time.Duration
	for i := range b.N {
		out := jsonl.New(io.Discard, jsonl.Options{})
		p, err := signalbox.New(script.New(uint64(i), 512, parts...), append([]signalbox.Option{signalbox.WithInputs(in...),
			signalbox.WithDelay(time.Second), signalbox.WithSink(out), signalbox.WithUntil(signalbox.UntilEndOffsets)}, extra...)...)
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if err := p.Run(context.Background()); err != nil {
			b.Fatal(err)
		}
		total += time.Since(start)
		if got := p.Stats().Out; got != int64(n) {
			b.Fatalf("%d records out, want %d", got, n)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/total.Seconds(), "records/s")
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(n*b.N), "cpu-ns/record")
}

// cpuTime is the process's user + system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
