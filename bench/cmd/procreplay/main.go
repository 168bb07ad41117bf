package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/internal/engine"
	"github.com/signalbox/signalbox/internal/recording"
	"github.com/signalbox/signalbox/process"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/sinks/jsonl"
)

// The expressions (issue 36, Targets).
const (
	filterSrc = `value.status != "test"`
	mapSrc    = `{"id": value.id, "sku": value.sku, "total": value.qty * value.price}`
)

// gcPercent is what `signalbox run` sets with the in-memory store
// (cmd/signalbox GCPercent), unless GOGC is set.
const gcPercent = 150

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "procreplay:", err)
		os.Exit(1)
	}
}

type options struct {
	n       int64
	batch   int
	mode    string // "replay" or "source"
	process bool
	at      string // where the processing runs: "release" or "ingest"
	out     string
	keys    int64 // distinct skus
	window  bool  // issue 37's window (jobfile.go)
	winOut  string
	lookup  bool // issue 38's table and lookup (jobfile.go)
	job     bool // the options from a job file even without -window or -lookup
}

func run(args []string, stdout io.Writer) error {
	var o options
	fs := flag.NewFlagSet("procreplay", flag.ContinueOnError)
	n := fs.String("n", "4M", "records to generate (suffix K or M)")
	fs.IntVar(&o.batch, "batch", 500, "records per fetch (one partition's)")
	fs.StringVar(&o.mode, "mode", "replay", "replay: the ordered replay; source: drain the generator only")
	fs.BoolVar(&o.process, "process", false, "run issue 36's filter and three-field map (package process; with -job, the job file's process, as signalbox run runs it)")
	fs.StringVar(&o.at, "at", "release", "with -process, where it runs: release (signalbox.WithProcess, as `signalbox run` does) or ingest (before parking, inside a signalbox.Filter: an estimate of running it there, see doc.go)")
	fs.StringVar(&o.out, "out", os.DevNull, "the JSONL sink's file")
	keys := fs.String("keys", "1000", "distinct skus (suffix K or M); with -lookup, the products table's keys")
	fs.BoolVar(&o.window, "window", false, "issue 37: a tumbling one-minute count, sum and max of value.qty per value.sku (a job file's window, package config)")
	fs.BoolVar(&o.job, "job", false, "build the plain replay's options from a job file too (package config), as -window and -lookup do")
	fs.StringVar(&o.winOut, "window-out", "/dev/zero", "with -window, the JSONL file of the window's results (not -out's: a job's sinks each need their own file)")
	fs.BoolVar(&o.lookup, "lookup", false, "issue 38: a products table of -keys keys read first from its topic, and the map {id, product: lookup(\"products\", value.sku)} (a job file's, package config)")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of the run to this file (go tool pprof)")
	traceFile := fs.String("trace", "", "write an execution trace of the run to this file (go tool trace; -pprof=sync shows where each goroutine waited)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var err error
	if o.n, err = parseCount(*n); err != nil {
		return fmt.Errorf("-n: %w", err)
	}
	if o.keys, err = parseCount(*keys); err != nil {
		return fmt.Errorf("-keys: %w", err)
	}
	if o.keys > 1_000_000 {
		return errors.New("-keys: at most 1M (a sku has 6 digits)")
	}
	if o.batch < 1 {
		return errors.New("-batch: must be at least 1")
	}
	if o.process && (o.window || o.lookup) {
		return errors.New("-process: not with -window or -lookup")
	}
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	label := "plain"
	switch {
	case o.process && o.job:
		label = "filter+map3@job"
	case o.process:
		label = "filter+map3@" + o.at
	case o.window && o.lookup:
		label = "window+lookup"
	case o.window:
		label = "window"
	case o.lookup:
		label = "lookup"
	case o.job:
		label = "plain@job"
	}
	for _, r := range []struct {
		flag, path string
		start      func(flag, path string) (func() error, error)
	}{{"-cpuprofile", *cpuprofile, recording.CPUProfile}, {"-trace", *traceFile, recording.Trace}} {
		if r.path == "" {
			continue
		}
		stop, err := r.start(r.flag, r.path)
		if err != nil {
			return err
		}
		defer stop()
	}
	var written int64
	cpu0, start := cpuTime(), time.Now()
	switch o.mode {
	case "replay":
		written, err = replay(o)
	case "source":
		label, written, err = "source", 0, drain(newGenerator(o.n, o.batch, o.keys, o.lookup))
	default:
		err = fmt.Errorf("-mode: %q is neither replay nor source", o.mode)
	}
	if err != nil {
		return err
	}
	wall, cpu := time.Since(start), cpuTime()-cpu0
	a := engine.Ahead()
	_, err = fmt.Fprintf(stdout, "%s records=%d keys=%d written=%d wall=%.3fs cpu=%.3fs cpu-ns/record=%.0f"+
		" ahead-blocks: filled=%d own=%d stolen=%d waits=%d short-chunk-records=%d\n",
		label, o.n, o.keys, written, wall.Seconds(), cpu.Seconds(), float64(cpu.Nanoseconds())/float64(o.n),
		a.Filled, a.Own, a.Stolen, a.Waits, a.Short)
	return err
}

// replay runs the ordered replay of the generated history and returns
// the records written.
func replay(o options) (int64, error) {
	if o.window || o.lookup || o.job {
		return replayJob(o)
	}
	f, err := os.Create(o.out)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var in []signalbox.Input
	for _, t := range topicNames() {
		in = append(in, signalbox.Input{Topic: t, Time: signalbox.TimeFromField, TimeField: "ts"})
	}
	opts := []signalbox.Option{signalbox.WithInputs(in...), signalbox.WithDelay(time.Second),
		signalbox.WithSink(jsonl.New(f, jsonl.Options{})), signalbox.WithUntil(signalbox.UntilEndOffsets)}
	if o.process {
		filter, err := process.Compile("process.filter", filterSrc, process.Filter)
		if err != nil {
			return 0, err
		}
		mapx, err := process.Compile("process.map", mapSrc, process.Map)
		if err != nil {
			return 0, err
		}
		switch o.at {
		case "release":
			steps := process.Steps{Filter: filter, Map: mapx} // a fork each, as package config gives signalbox run
			opts = append(opts, signalbox.WithProcessFork(steps.Process(), steps.Process))
		case "ingest":
			// Steps in a signalbox.Filter: before parking, the value hot
			// from decoding; an estimate only (a Filter may not change the
			// record, see doc.go)
			run := process.Steps{Filter: filter, Map: mapx}.Process()
			opts = append(opts, signalbox.WithFilter(func(r *record.Record) bool {
				keep, err := run(r)
				return keep || err != nil // no error in this history
			}))
		default:
			return 0, fmt.Errorf("-at: %q is neither release nor ingest", o.at)
		}
	}
	p, err := signalbox.New(newGenerator(o.n, o.batch, o.keys, false), opts...)
	if err != nil {
		return 0, err
	}
	if err := p.Run(context.Background()); err != nil {
		return 0, err
	}
	st := p.Stats()
	if want := o.n - testRecords(o.n, o.process); st.Out != want {
		return st.Out, fmt.Errorf("%d records written, want %d (%d filtered)", st.Out, want, st.Filtered)
	}
	return st.Out, nil
}

// drain polls the generator to its end, as the engine would, and drops
// the records.
func drain(g *generator) error {
	ctx := context.Background()
	if err := g.Open(ctx); err != nil {
		return err
	}
	defer g.Close()
	for !g.done() {
		f, err := g.Poll(ctx)
		if err != nil {
			return err
		}
		for _, pf := range f.Partitions {
			g.Recycle(pf.Records)
		}
	}
	return nil
}

// parseCount reads a count with an optional K or M suffix.
func parseCount(s string) (int64, error) {
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "M"):
		s, mult = strings.TrimSuffix(s, "M"), 1_000_000
	case strings.HasSuffix(s, "K"):
		s, mult = strings.TrimSuffix(s, "K"), 1_000
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%q is not a positive count", s)
	}
	return n * mult, nil
}

// cpuTime is the process's user + system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
