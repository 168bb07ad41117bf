package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"time"
	"unsafe"

	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/timers"
	"github.com/signalbox/signalbox/timers/durable"
)

// storeShape is one run of -store-only: a durable.Store driven directly, in
// this process, so that the process's peak RSS is the store's (plus the Go
// runtime's) and nothing else's.
type storeShape struct {
	shape  string // "idle", "held" or "delay"
	budget int64
	factor int // parked set, in multiples of budget (accounted size)
	value  int // bytes per record value
	dir    string
	// heapProfile, if set, is where the heap profile goes, rewritten at
	// every new peak of the Go heap in use.
	heapProfile string
	json        string // results file to append the row to; "": none
}

// storeResult is what a -store-only run reports.
type storeResult struct {
	parkedPeak, parkedPeakB int64
	peakRSS, peakHeap       int64
	peakPebble, peakDisk    int64
	peakInMem               int64
	seconds                 float64
}

// runStoreOnly parks and releases records through a durable.Store in one of
// the two shapes that make a parked set large:
//
//   - held: an input held back; everything else parks behind it, and is
//     released only at the end;
//   - delay: a large delay at a steady rate; the parked set is the last
//     rate × delay records, released as the watermark trails the newest
//     event time by the delay.
//
// and "idle", the same job with nothing parked. The parked set reaches
// factor × budget of accounted size (record.Record.Size). It sets the Go
// memory limit and garbage collector percentage as `signalbox run` does
// (config.BoundMemory, config.GCPercent), checkpoints
// every 50,000 records, and prints one Markdown table row.
func runStoreOnly(sh storeShape) error {
	so := durable.StoreOptions{MemoryBudget: sh.budget}
	so.EnsureDefaults()
	boundRuntime(so)
	s, err := durable.OpenStore(sh.dir, so)
	if err != nil {
		return err
	}
	defer func() { _ = s.Close() }()
	// Values are slices of a random pool, so that pebble cannot compress
	// them away; keys cycle through 1000 entities. Nothing here allocates
	// per record: the driver adds no garbage of its own.
	rng := rand.New(rand.NewPCG(1, 1))
	pool := make([]byte, 1<<20)
	for i := range pool {
		pool[i] = byte(rng.Uint32())
	}
	keys := make([]string, 1000)
	for i := range keys {
		keys[i] = fmt.Sprintf("entity-%08d", rng.IntN(1e8))
	}
	r := record.Record{Topic: "orders", Key: []byte(keys[0]), Value: pool[:sh.value], OrderKey: keys[0]}
	size := int64(r.Size())
	window := sh.budget * int64(sh.factor) / size // records parked at the peak
	total := window
	if sh.shape == "delay" {
		total = 3 * window
	}
	if sh.shape == "idle" {
		total, window = 0, 0
	}
	var res storeResult
	sample := func() {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		u := s.Usage()
		if int64(ms.HeapInuse) > res.peakHeap && sh.heapProfile != "" {
			writeHeapProfile(job{HeapProfile: sh.heapProfile, Store: "store-only"})
		}
		res.peakHeap = max(res.peakHeap, int64(ms.HeapInuse))
		res.peakPebble = max(res.peakPebble, u.Pebble)
		res.peakDisk = max(res.peakDisk, u.Disk)
		res.peakInMem = max(res.peakInMem, u.InMemory)
		res.parkedPeak = max(res.parkedPeak, int64(s.Len()))
	}
	start := time.Now()
	released := int64(0)
	sink := func(*record.Record) error { released++; return nil }
	for i := int64(0); i < total; i++ {
		k := keys[i%int64(len(keys))]
		p := timers.Pos{EventTime: i, Key: k, Input: "orders", Partition: int32(i % 24), Offset: i / 24}
		at := int(i*7919) % (len(pool) - sh.value)
		r.EventTime, r.Partition, r.Offset, r.OrderKey = p.EventTime, p.Partition, p.Offset, k
		r.Key, r.Value = unsafeBytes(k), pool[at:at+sh.value]
		if err := s.Park(p, &r); err != nil {
			return err
		}
		if i%50000 == 49999 {
			if sh.shape == "delay" {
				if err := s.Release(i-window, 0, sink); err != nil {
					return err
				}
			}
			if err := s.Checkpoint(record.Checkpoint{Watermark: i - window}, nil); err != nil {
				return err
			}
			sample()
		}
	}
	sample()
	if err := s.Release(math.MaxInt64, 0, sink); err != nil {
		return err
	}
	if sh.shape == "idle" {
		time.Sleep(time.Second) // let pebble's background work settle
		sample()
	}
	res.seconds = time.Since(start).Seconds()
	res.peakRSS = status("VmHWM:")
	if released != total {
		return fmt.Errorf("released %d of %d records", released, total)
	}
	mib := func(b int64) string { return fmt.Sprintf("%.1f", float64(b)/(1<<20)) }
	factor := fmt.Sprintf("%d×", sh.factor)
	if sh.shape == "idle" {
		factor = "–" // nothing parked
	}
	fmt.Printf("| %s | %s MiB | %s | %d | %s MiB | %s | %s | %s | %s | %s | %.2f | %.1f s |\n",
		sh.shape, mib(sh.budget), factor, res.parkedPeak, mib(res.parkedPeak*size),
		mib(res.peakRSS), mib(res.peakHeap), mib(res.peakPebble), mib(res.peakInMem), mib(res.peakDisk),
		float64(res.peakRSS)/float64(sh.budget), res.seconds)
	if sh.json == "" {
		return nil
	}
	f := sh.factor
	if sh.shape == "idle" {
		f = 0
	}
	return appendState(sh.json, stateRow{Shape: sh.shape, Budget: sh.budget, Factor: f, ParkedPeak: res.parkedPeak, PeakRSS: res.peakRSS,
		PeakHeap: res.peakHeap, Seconds: res.seconds}, start)
}

// unsafeBytes views s as bytes without copying; the store only reads them.
func unsafeBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }
