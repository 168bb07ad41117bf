// Command windowmem measures the memory of keyed windows with many keys:
// one-minute tumbling windows (count, sum and max) over -keys distinct
// keys, each with one record in each of -minutes minutes of event time, in
// release order, through keyed.Windows over the MemStore or over a
// keyed/durable Store of -budget (with the Go memory limit and garbage
// collector percentage `signalbox run` sets for that state budget:
// config.MemoryLimit, config.GCPercent). It checks every result (one per
// key and minute, count 1, the record's quantity) and prints the peak RSS
// (VmHWM) and the peak Go heap in use. -store idle opens a durable Store
// and stops: the footprint of the binary, the runtime and pebble.
//
//	go build -o /tmp/windowmem ./bench/cmd/windowmem
//	/tmp/windowmem -store idle
//	/tmp/windowmem -store durable -keys 1000000 -budget 64MiB
//	/tmp/windowmem -store mem -keys 1000000
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/signalbox/signalbox/config"
	"github.com/signalbox/signalbox/internal/recording"
	"github.com/signalbox/signalbox/keyed"
	"github.com/signalbox/signalbox/keyed/durable"
	parked "github.com/signalbox/signalbox/timers/durable"
)

func main() {
	store := flag.String("store", "durable", "mem, durable or idle")
	keys := flag.Int("keys", 1_000_000, "distinct keys")
	minutes := flag.Int("minutes", 2, "minutes of event time (one record per key and minute)")
	budgetS := flag.String("budget", "64MiB", "state budget of the durable store (MiB)")
	dir := flag.String("dir", "", "directory of the durable store (default: a temporary one)")
	prof := flag.String("cpuprofile", "", "write a CPU profile here")
	flag.StringVar(&heapProfile, "heapprofile", "", "write a heap profile here when every key has an open window")
	flag.Parse()
	if *prof != "" {
		stop, err := recording.CPUProfile("-cpuprofile", *prof)
		if err != nil {
			log.Fatal(err)
		}
		defer stop()
	}
	budget, err := mib(*budgetS)
	if err != nil {
		log.Fatal(err)
	}
	if err := run(*store, *keys, *minutes, budget, *dir); err != nil {
		log.Print(err)
		defer os.Exit(1)
	}
}

var heapProfile string

// writeHeap writes the heap profile (after a collection), if asked.
func writeHeap() error {
	if heapProfile == "" {
		return nil
	}
	f, err := os.Create(heapProfile)
	if err != nil {
		return err
	}
	runtime.GC()
	return errors.Join(pprof.WriteHeapProfile(f), f.Close())
}

func mib(s string) (int64, error) {
	n, err := strconv.ParseFloat(strings.TrimSuffix(s, "MiB"), 64)
	return int64(n * (1 << 20)), err
}

func run(store string, keys, minutes int, budget int64, dir string) error {
	spec := keyed.Spec{Name: "per_minute", Kind: keyed.Tumbling, Size: 60_000, Aggregates: []keyed.Aggregate{
		{Name: "count", Op: keyed.Count}, {Name: "qty", Op: keyed.Sum}, {Name: "max_qty", Op: keyed.Max}}}
	var opts []keyed.Option
	var ds *durable.Store[keyed.State]
	if store != "mem" {
		po := parked.StoreOptions{MemoryBudget: budget}
		po.EnsureDefaults()
		config.SetRuntime(config.MemoryLimit(budget, 1<<20), config.GCPercent(po))
		if dir == "" {
			d, err := os.MkdirTemp("", "windowmem")
			if err != nil {
				return err
			}
			dir = d + "/state"
			defer func() { _ = os.RemoveAll(d) }()
		}
		ds, err := durable.Open[keyed.State](dir, keyed.StateCodec{}, durable.Options{MemoryBudget: budget})
		if err != nil {
			return err
		}
		defer func() { _ = ds.Close() }()
		if store == "idle" {
			time.Sleep(time.Second)
			report(store, budget, 0, 0, 0, 0, 0, 0)
			return nil
		}
		opts = append(opts, keyed.WithStore(ds))
	}
	_ = ds
	var results int64
	var bad error
	type value struct {
		Count int64 `json:"count"`
		Qty   int64 `json:"qty"`
		Max   int64 `json:"max_qty"`
	}
	w, err := keyed.New(spec, func(r *keyed.Result) error {
		results++
		var v value
		if err := json.Unmarshal(r.Value, &v); err != nil {
			return err
		}
		k, _ := strconv.Unquote(string(r.Key))
		i, _ := strconv.Atoi(strings.TrimPrefix(k, "sku-"))
		if q := qty(i, int(r.Start/60_000)); v.Count != 1 || v.Qty != q || v.Max != q {
			bad = fmt.Errorf("%s: %s, want count 1, qty %d", r.Key, r.Value, q)
		}
		return nil
	}, opts...)
	if err != nil {
		return err
	}
	start := time.Now()
	var peakHeap uint64
	var peakOpen int64
	var ms runtime.MemStats
	n := int64(0)
	args := make([][]byte, 3)
	for m := range minutes {
		for i := range keys {
			k := perm(i, keys)
			t := int64(m)*60_000 + int64(i)*60_000/int64(keys)
			q := []byte(strconv.FormatInt(qty(k, m), 10))
			args[1], args[2] = q, q
			it, err := spec.Item(fmt.Appendf(nil, `"sku-%07d"`, k), t, args)
			if err != nil {
				return err
			}
			if _, err := w.Add(it, t); err != nil {
				return err
			}
			n++
			if n == int64(keys) {
				if err := writeHeap(); err != nil {
					return err
				}
			}
			if n%1000 == 0 {
				peakOpen = max(peakOpen, w.Open)
				if err := w.Advance(t); err != nil {
					return err
				}
			}
			if n%100_000 == 0 {
				runtime.ReadMemStats(&ms)
				peakHeap = max(peakHeap, ms.HeapInuse)
			}
		}
	}
	peakOpen = max(peakOpen, w.Open)
	if err := w.Close(); err != nil {
		return err
	}
	if bad != nil {
		return bad
	}
	if results != int64(keys*minutes) || w.Open != 0 || w.Keys() != 0 {
		return fmt.Errorf("%d results, want %d; %d open, %d keys", results, keys*minutes, w.Open, w.Keys())
	}
	runtime.ReadMemStats(&ms)
	report(store, budget, n, results, peakOpen, max(peakHeap, ms.HeapInuse), time.Since(start), keys)
	return nil
}

// perm is a permutation of [0, n): the keys in no particular order.
func perm(i, n int) int { return int((int64(i)*1_000_003 + 17) % int64(n)) }

func qty(k, m int) int64 { return int64((k*7 + m*3) % 101) }

func report(store string, budget, records, results, peakOpen int64, heap uint64, d time.Duration, keys int) {
	f, err := os.Open("/proc/self/status")
	hwm := "?"
	if err == nil {
		s := bufio.NewScanner(f)
		for s.Scan() {
			if v, ok := strings.CutPrefix(s.Text(), "VmHWM:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
				hwm = fmt.Sprintf("%.1f MiB", float64(kb)/1024)
			}
		}
		_ = f.Close()
	}
	b := "-"
	if store != "mem" {
		b = fmt.Sprintf("%d MiB", budget>>20)
	}
	fmt.Printf("store %s, budget %s, keys %d, records %d, results %d (all checked), peak open windows %d, peak RSS (VmHWM) %s, peak Go heap in use %.1f MiB, %.1fs (%.2f µs/record)\n",
		store, b, keys, records, results, peakOpen, hwm, float64(heap)/(1<<20), d.Seconds(), float64(d.Microseconds())/float64(max(records, 1)))
}
