package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/config"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/sources/kafka"
	"github.com/signalbox/signalbox/timers"
	"github.com/signalbox/signalbox/timers/durable"
)

// runChild runs the job read from stdin and prints progress lines, then
// the result, on stdout.
func runChild() error {
	var j job
	if err := json.NewDecoder(os.Stdin).Decode(&j); err != nil {
		return err
	}
	log := zap.NewNop()
	m := &meter{}
	var opts []signalbox.Option
	var ts *durable.Store
	switch j.Store {
	case "durable":
		dir, err := os.MkdirTemp("", "memtest-state-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		so := durable.StoreOptions{MemoryBudget: j.Budget, MemTableSize: j.MemTable, CacheSize: j.Cache}
		if ts, err = durable.OpenStore(dir, so); err != nil {
			return err
		}
		defer ts.Close()
		so.EnsureDefaults()
		j.Budget, j.MemTable = so.MemoryBudget, so.MemTableSize
		m.ParkedStore, m.spill = ts, ts
		opts = append(opts, signalbox.WithParkedStore(durableMeter{m, ts}))
	case "memory":
		// The engine's default store: it accounts record.Record.Size in
		// Stats.ParkedB already, sampled below.
	default:
		return errBadStore(j.Store)
	}
	kc := kafka.Config{Brokers: j.Brokers, Topics: j.Topics, Logger: log}
	if ts != nil {
		// What `signalbox run` does with state.memory; -fetch-max and
		// -partition-max then change only the fetch sizes.
		so := durable.StoreOptions{MemoryBudget: j.Budget, MemTableSize: j.MemTable, CacheSize: j.Cache}
		so.EnsureDefaults()
		boundRuntimeKafka(&kc, so)
		if j.InflightB == 0 {
			j.InflightB = config.InflightBytes(so)
		}
	}
	if j.InflightB > 0 {
		opts = append(opts, signalbox.WithMaxInflightBytes(j.InflightB))
	}
	if j.FetchMax > 0 {
		kc.FetchMaxBytes = j.FetchMax
		kc.PartitionMaxBytes = min(kc.PartitionMaxBytes, j.FetchMax)
	}
	if j.PartitionMax > 0 {
		kc.PartitionMaxBytes = j.PartitionMax
	}
	if j.BatchSize > 0 {
		opts = append(opts, signalbox.WithBatchSize(j.BatchSize))
	}
	if j.Inflight > 0 {
		opts = append(opts, signalbox.WithMaxInflightBatches(j.Inflight))
	}
	src, err := kafka.New(kc)
	if err != nil {
		return err
	}
	var inputs []signalbox.Input
	for _, t := range j.Topics {
		in := signalbox.Input{Topic: t, Time: signalbox.TimeFromTimestamp}
		if j.Timeless {
			in.Time = signalbox.TimeNone
		}
		inputs = append(inputs, in)
	}
	chk := &checker{timeless: j.Timeless}
	opts = append(opts,
		signalbox.WithInputs(inputs...),
		signalbox.WithSink(chk),
		signalbox.WithUntil(signalbox.UntilEndOffsets),
		signalbox.WithLogger(log))
	if !j.Idle {
		// The held input holds the watermark at −∞: with alignment on, the
		// other partitions would pause one window past their first record
		// and nothing more would park. memtest measures the parked set.
		// With -idle alignment is on (the engine's default window unless
		// -align), which keeps the parked set small.
		opts = append(opts, signalbox.WithAlignment(0))
	} else if j.Align >= 0 {
		opts = append(opts, signalbox.WithAlignment(time.Duration(j.Align)))
	}
	p, err := signalbox.New(src, opts...)
	if err != nil {
		return err
	}
	res := result{Store: j.Store, Idle: j.Idle, Timeless: j.Timeless, Budget: j.Budget, MemTable: j.MemTable}
	enc := json.NewEncoder(os.Stdout)
	var mu sync.Mutex // enc and res
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		sample(p, j.Others, heapProfile(j), stop, func(st signalbox.Stats, hold bool, ms *runtime.MemStats) {
			mu.Lock()
			defer mu.Unlock()
			if st.ParkedB > res.PeakInMemB {
				res.PeakInMemB, res.PeakParked = st.ParkedB, int64(st.Parked)
			}
			if j.HeapAtPeak && int64(ms.HeapInuse) > res.PeakHeap {
				writeHeapProfile(j)
			}
			res.PeakHeap = max(res.PeakHeap, int64(ms.HeapInuse))
			res.PeakGoSys = max(res.PeakGoSys, int64(ms.Sys))
			if hold {
				res.RSSAtHold, res.HeapAtHold = status("VmRSS:"), int64(ms.HeapInuse)
				res.HeldParked, res.HeldParkedB, res.HeldStoreB = int64(st.Parked), st.ParkedB, st.ParkedB
				if ts != nil {
					res.HeldParked, res.HeldParkedB = m.n.Load(), m.bytes.Load()
				}
			}
			_ = enc.Encode(progress{In: st.In})
		})
	}()
	start := time.Now()
	err = p.Run(context.Background())
	close(stop)
	<-done
	if err != nil {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	res.Seconds = time.Since(start).Seconds()
	if ts != nil {
		res.PeakParked, res.PeakParkedB = m.peakN.Load(), m.peakB.Load()
		res.PeakInMemB, res.Spilled = m.peakStore.Load(), m.spilled.Load()
	} else {
		res.PeakParkedB = res.PeakInMemB
	}
	res.PeakRSS = status("VmHWM:")
	res.Out = chk.out
	res.InOrder = !chk.disorder
	res.Complete = chk.out == j.Total && res.InOrder // strictly increasing: no duplicates
	return enc.Encode(progress{In: p.Stats().In, Result: &res})
}

type errBadStore string

func (e errBadStore) Error() string { return "unknown store " + strconv.Quote(string(e)) }

// sample reports the engine's progress and the Go runtime's memory every
// 100ms until stop is closed. The first time in reaches others (everything
// but the held topic ingested) it waits a second for the engine to park
// it, collects garbage, and reports with hold set: the heap then holds only
// what is live.
func sample(p *signalbox.Pipeline, others int64, profile func(), stop <-chan struct{}, report func(st signalbox.Stats, hold bool, ms *runtime.MemStats)) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	var ms runtime.MemStats
	held := false
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		st := p.Stats()
		hold := !held && st.In >= others
		if hold {
			held = true
			time.Sleep(time.Second)
			runtime.GC()
			profile()
			st = p.Stats()
		}
		runtime.ReadMemStats(&ms)
		report(st, hold, &ms)
	}
}

// heapProfile returns what writes the heap profile j asks for.
func heapProfile(j job) func() {
	if j.HeapProfile == "" || j.HeapAtPeak {
		return func() {}
	}
	return func() { writeHeapProfile(j) }
}

// writeHeapProfile writes the heap profile to j.HeapProfile + "." + j.Store.
func writeHeapProfile(j job) {
	if j.HeapProfile == "" {
		return
	}
	f, err := os.Create(j.HeapProfile + "." + j.Store)
	if err == nil {
		err = pprof.WriteHeapProfile(f)
		_ = f.Close()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "memtest: heap profile:", err)
	}
}

// status reads a size field of /proc/self/status in bytes (0 when
// unavailable).
func status(field string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == field {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// meter wraps a durable.Store and keeps the parked set's accounted size
// (record.Record.Size of every parked record), its peaks, and how many
// records a durable.Store spilled. Park and Release run on the engine
// goroutine; the peaks are read after Run.
type meter struct {
	signalbox.ParkedStore
	spill interface{ SpilledLen() int }

	n, bytes                atomic.Int64
	peakN, peakB, peakStore atomic.Int64
	spilled                 atomic.Int64
}

func (m *meter) Park(p timers.Pos, r *record.Record) error {
	size := int64(r.Size())
	before := 0
	if m.spill != nil {
		before = m.spill.SpilledLen()
	}
	if err := m.ParkedStore.Park(p, r); err != nil {
		return err
	}
	if m.spill != nil && m.spill.SpilledLen() > before {
		m.spilled.Add(1)
	}
	n, b := m.n.Add(1), m.bytes.Add(size)
	if b > m.peakB.Load() {
		m.peakN.Store(n)
		m.peakB.Store(b)
	}
	if b := m.ParkedStore.Bytes(); b > m.peakStore.Load() {
		m.peakStore.Store(b)
	}
	return nil
}

func (m *meter) Release(wm int64, limit int, fn func(*record.Record) error) error {
	return m.ParkedStore.Release(wm, limit, func(r *record.Record) error {
		m.n.Add(-1)
		m.bytes.Add(-int64(r.Size()))
		return fn(r)
	})
}

// durableMeter is a meter over a DurableStore, so that signalbox still
// checkpoints the parked set.
type durableMeter struct {
	*meter
	d signalbox.DurableStore
}

func (d durableMeter) Restore() (*record.Checkpoint, map[string][]byte, error) {
	return d.d.Restore()
}

func (d durableMeter) Checkpoint(cp record.Checkpoint, blobs map[string][]byte) error {
	return d.d.Checkpoint(cp, blobs)
}

func (d durableMeter) ParkedByPartition() map[record.TopicPartition]record.Parked {
	return d.d.ParkedByPartition()
}

// checker is the sink: it counts records and checks that each comes
// strictly after the previous one in the total release order.
type checker struct {
	out      int64
	last     timers.Pos
	disorder bool
	// timeless: records of time: none inputs come in arrival order, so
	// only each partition's offsets must rise.
	timeless bool
	offsets  map[record.TopicPartition]int64
}

func (c *checker) Open(context.Context) error  { return nil }
func (c *checker) Flush(context.Context) error { return nil }
func (c *checker) Close() error                { return nil }

func (c *checker) Write(_ context.Context, batch []record.Record) error {
	for i := range batch {
		r := &batch[i]
		if c.timeless {
			c.checkOffset(r)
			continue
		}
		p := timers.Pos{EventTime: r.EventTime, Key: r.OrderKey, Input: r.Topic, Partition: r.Partition, Offset: r.Offset}
		if c.out > 0 && !timers.Less(c.last, p) {
			c.disorder = true
		}
		c.last = timers.Pos{EventTime: p.EventTime, Key: strings.Clone(p.Key), Input: p.Input, Partition: p.Partition, Offset: p.Offset}
		c.out++
	}
	return nil
}

// checkOffset records r, which must come after its partition's last.
func (c *checker) checkOffset(r *record.Record) {
	if c.offsets == nil {
		c.offsets = make(map[record.TopicPartition]int64)
	}
	tp := record.TopicPartition{Topic: r.Topic, Partition: r.Partition}
	if last, ok := c.offsets[tp]; ok && r.Offset <= last {
		c.disorder = true
	}
	c.offsets[tp] = r.Offset
	c.out++
}

// boundRuntime sets the Go memory limit and garbage collector percentage as
// `signalbox run` does for a store with opts (config.BoundMemory with the
// Kafka source's defaults, config.GCPercent), and paces the limit as it does
// (config.SetRuntime), unless GOMEMLIMIT or GOGC is set.
func boundRuntime(opts durable.StoreOptions) { boundRuntimeKafka(&kafka.Config{}, opts) }

// boundRuntimeKafka is boundRuntime for the Kafka source k, which it fits
// to the budget.
func boundRuntimeKafka(k *kafka.Config, opts durable.StoreOptions) {
	config.SetRuntime(config.BoundMemory(k, opts), config.GCPercent(opts))
}
