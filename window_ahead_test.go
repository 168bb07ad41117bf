package signalbox_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/keyed"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/sources/script"
	"github.com/signalbox/signalbox/tables"
)

// aheadFns are a window's where, key and arguments over values such as
// {"key":"k3","ts":…,"n":4}, each returning memory it reuses at the next
// call, as package process's Set does; calls counts the key's calls.
func aheadFns(calls *atomic.Int64) signalbox.Window {
	var kb, nb []byte
	member := func(r *record.Record, name string) (json.RawMessage, error) {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(r.Value, &m); err != nil {
			return nil, err
		}
		return m[name], nil
	}
	key := func(r *record.Record) ([]byte, error) {
		calls.Add(1)
		v, err := member(r, "key")
		if err == nil && string(v) == `"bad"` {
			err = errors.New("a bad key")
		}
		kb = append(kb[:0], v...)
		return kb, err
	}
	n := func(r *record.Record) ([]byte, error) {
		v, err := member(r, "n")
		nb = append(nb[:0], v...)
		return nb, err
	}
	where := func(r *record.Record) (bool, error) { return r.Offset%7 != 3, nil }
	return signalbox.Window{Where: where, Key: key, Args: []func(*record.Record) ([]byte, error){nil, n, n, key}}
}

// aheadWindow is a tumbling count, sum, max and last per key, its
// functions aheadFns', with a Fork when forks is not nil (counting the
// forks' key calls there).
func aheadWindow(main, forks *atomic.Int64) signalbox.Window {
	w := aheadFns(main)
	w.Spec = keyed.Spec{Name: "ahead", Kind: keyed.Tumbling, Size: 1000, Aggregates: []keyed.Aggregate{
		{Name: "n", Op: keyed.Count}, {Name: "sum", Op: keyed.Sum}, {Name: "max", Op: keyed.Max}, {Name: "last", Op: keyed.Last}}}
	if forks != nil {
		w.Fork = func() signalbox.Window {
			f := aheadFns(forks)
			f.Spec = w.Spec
			return f
		}
	}
	return w
}

// aheadParts: four partitions of topic a, each of n records of keys k0..k5
// (one in 97 "bad", whose key fails; one in 89 with n "x", not a number),
// event times rising by 0 to 60 ms, from rng.
func aheadParts(rng *rand.Rand, n int) []script.Partition {
	var parts []script.Partition
	for p := range int32(4) {
		sp := script.Partition{TopicPartition: tp("a", p)}
		ts := int64(1_000_000)
		for i := range n {
			ts += rng.Int64N(61)
			key := fmt.Sprintf("k%d", rng.IntN(6))
			if rng.IntN(97) == 0 {
				key = "bad"
			}
			num := fmt.Sprint(rng.IntN(100))
			if rng.IntN(89) == 0 {
				num = `"x"`
			}
			sp.Records = append(sp.Records, record.Record{Topic: "a", Partition: p, Offset: int64(i), Key: []byte(key),
				Value: fmt.Appendf(nil, `{"key":%q,"ts":%d,"n":%s}`, key, ts, num)})
		}
		parts = append(parts, sp)
	}
	return parts
}

// aheadProcess is a Process that drops one record in 11, fails one in 13
// and otherwise rewrites the value (n: "1" before its digits), in a new
// array, adding the key's version in table as of the record's event time
// when there is a table; calls counts its calls.
func aheadProcess(calls *atomic.Int64, table *tables.Table) signalbox.Process {
	return func(r *record.Record) (bool, error) {
		calls.Add(1)
		switch {
		case r.Offset%11 == 0:
			return false, nil
		case r.Offset%13 == 5:
			return false, errors.New("a failing process")
		}
		v := strings.Replace(string(r.Value), `"n":`, `"n":1`, 1)
		if table != nil {
			version, ok := table.AsOf(string(r.Key), r.EventTime)
			if !ok {
				version = []byte("null")
			}
			v = v[:len(v)-1] + `,"version":` + string(version) + "}"
		}
		r.Value = []byte(v)
		return true, nil
	}
}

// aheadTable is a table topic of n versions of keys k0..k5 at random
// event times over aheadParts' span.
func aheadTable(rng *rand.Rand, n int) script.Partition {
	sp := script.Partition{TopicPartition: tp("prod", 0)}
	ts := int64(1_000_000)
	for i := range n {
		ts += rng.Int64N(200)
		key := fmt.Sprintf("k%d", rng.IntN(6))
		sp.Records = append(sp.Records, record.Record{Topic: "prod", Partition: 0, Offset: int64(i), Key: []byte(key),
			Value: fmt.Appendf(nil, `{"v":%d,"ts":%d}`, i, ts)})
	}
	return sp
}

// TestWindowAheadSameResults (design K10): a window with a Fork, whose
// records a helper goroutine evaluates ahead of the run's, gives exactly
// the results, released records and dead letters of the same window
// without one, whatever the fetches' interleaving and the release chunk
// size (one chunk and several a release; the block the engine and the
// helper meet in anywhere; the helper run at once, or never); the same
// with a Process before the window,
// with and without a fork (WithProcessFork), and with a Process that looks
// a table up, whose versions arrive between the releases; and without a
// dead-letter sink, where the first bad record ends the run with the same
// error whoever evaluated it (a fatal error mid-release); with a fork, the
// Process's hint (WithProcessHint) is given the blocks, a table's lookups
// hinted at, which changes nothing; and with a slow helper, whose blocks
// the engine reaches while it fills them, the engine fills other blocks
// meanwhile (it steals), which changes nothing either. The helper must
// have evaluated some records: otherwise the test proves nothing.
func TestWindowAheadSameResults(t *testing.T) {
	var helped, processed, failed int64
	var hinted atomic.Int64 // blocks hinted at (WithProcessHint)
	stolenBefore, slowRuns := signalbox.StolenBlocks(), 0
	for seed := uint64(1); seed <= 15; seed++ {
		batch := []int{150, 1000, 4096}[seed%3]
		// the helper on a goroutine of its own; or run at once, filling
		// every block before the engine goes on; or never run, the engine
		// claiming every block
		spawn := []func(func()){nil, func(f func()) { f() }, func(func()) {}}[seed%5%3]
		withProcess, withTable := seed > 4, seed > 8
		// the helper on its own goroutine, its Process slow: the engine
		// reaches a block the helper holds, and fills another meanwhile
		// (steal)
		slow := withProcess && spawn == nil
		noDead := seed%4 == 0 // no dead-letter sink: the first bad record ends the run
		run := func(ahead bool) (string, int64) {
			var main, forks, procs, procForks atomic.Int64
			var fk *atomic.Int64
			if ahead {
				fk = &forks
			}
			raw, win, dead := &collect{}, &collect{}, &collect{}
			parts := aheadParts(rand.New(rand.NewPCG(seed, 1)), 700)
			var table *tables.Table
			inputs := tsInputs("a")
			if withTable {
				var err error
				if table, err = tables.New("prod", 24*time.Hour); err != nil {
					t.Fatal(err)
				}
				parts = append(parts, aheadTable(rand.New(rand.NewPCG(seed, 2)), 300))
				inputs = tsInputs("a", "prod")
			}
			opts := []signalbox.Option{inputs,
				signalbox.WithSink(raw),
				signalbox.WithWindow(aheadWindow(&main, fk), win),
				signalbox.WithBatchSize(batch),
				signalbox.WithClock(ticking()),
				signalbox.WithUntil(signalbox.UntilEndOffsets),
			}
			switch {
			case withProcess && ahead:
				fork := func() signalbox.Process {
					p := aheadProcess(&procForks, table)
					if !slow {
						return p
					}
					return func(r *record.Record) (bool, error) {
						time.Sleep(100 * time.Microsecond)
						return p(r)
					}
				}
				opts = append(opts, signalbox.WithProcessFork(aheadProcess(&procs, table), fork),
					signalbox.WithProcessHint(func(recs []*record.Record) {
						if len(recs) == 0 || len(recs) > 64 {
							t.Errorf("a hint at %d records, want a block of 1 to 64", len(recs))
						}
						hinted.Add(1)
						if table != nil { // as package process's Hints does
							for _, r := range recs {
								table.HintValue(table.HintKey(string(r.Key)))
							}
						}
					}))
			case withProcess:
				opts = append(opts, signalbox.WithProcess(aheadProcess(&procs, table)))
			}
			if table != nil {
				opts = append(opts, signalbox.WithTables(signalbox.Table{Topic: "prod", Into: table}))
			}
			if ahead && spawn != nil {
				opts = append(opts, signalbox.WithSpawn(spawn))
			}
			if !noDead {
				opts = append(opts, signalbox.WithDeadLetter(dead))
			}
			defer func() { processed += procForks.Load() }()
			p, err := signalbox.New(script.New(seed, 1+int(seed%5)*40, parts...), opts...)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Run(context.Background()); noDead {
				if !errors.Is(err, signalbox.ErrNoDeadLetter) {
					t.Fatalf("seed %d, no dead-letter sink: %v, want the first bad record's error", seed, err)
				}
				failed++
				return "error: " + err.Error(), forks.Load() // which record, and why: the same whoever evaluated
			} else if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			for _, r := range win.records {
				fmt.Fprintf(&b, "result %s %s\n", r.Key, r.Value)
			}
			for _, r := range raw.records {
				fmt.Fprintf(&b, "raw %s %d@%d %s\n", r.Topic, r.Partition, r.Offset, r.Value)
			}
			for _, r := range dead.records {
				i := slices.IndexFunc(r.Headers, func(h record.Header) bool { return h.Key == record.ReasonHeader })
				fmt.Fprintf(&b, "dead %d@%d %s\n", r.Partition, r.Offset, r.Headers[i].Value)
			}
			if len(win.records) == 0 || len(dead.records) == 0 {
				t.Fatalf("seed %d: %d results, %d dead letters: the scenario lost its point", seed, len(win.records), len(dead.records))
			}
			return b.String(), forks.Load()
		}
		want, _ := run(false)
		got, n := run(true)
		if slow {
			slowRuns++
		}
		helped += n
		if got != want {
			t.Fatalf("seed %d, batch %d: evaluated ahead, the run differs:\n%s", seed, batch, firstDiff([]byte(got), []byte(want)))
		}
	}
	if failed != 2*3 { // seeds 4, 8 and 12, with and without forks
		t.Fatalf("%d runs ended on a bad record without a dead-letter sink, want 6", failed)
	}
	if stolen := signalbox.StolenBlocks() - stolenBefore; slowRuns > 0 && stolen == 0 {
		t.Fatalf("%d runs with a slow helper, and the engine filled no block while it waited for one", slowRuns)
	}
	if helped == 0 || processed == 0 || hinted.Load() == 0 {
		t.Fatalf("records evaluated by a window's forks: %d, by a Process's: %d, blocks hinted at: %d; want some of each", helped, processed, hinted.Load())
	}
}
