package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/signalbox/signalbox/bench/chart"
	"github.com/signalbox/signalbox/bench/harness"
	"github.com/signalbox/signalbox/bench/report"
	"github.com/signalbox/signalbox/internal/workload"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "benchall:", err)
		os.Exit(1)
	}
}

func run() error {
	var o harness.Options
	w := &o.Workload
	child := flag.Bool("child", false, "internal: run one throughput job read as JSON from stdin")
	out := flag.String("out", "docs/", "directory for bench.md, bench.json and bench.svg")
	replot := flag.String("replot", "", "redraw bench.svg beside this bench.json from it, and do nothing else")
	inproc := flag.Bool("inprocess", false, "run throughput replays in this process (no per-strategy peak RSS)")
	*w = workload.Options{Seed: 1, Topics: 13, Partitions: 3, RecordsPerPartition: 10000, SlowTopics: 2,
		SlowFor: 3 * time.Second, LiveFor: 5 * time.Second, LiveRate: 2000}
	w.AddFlags(flag.CommandLine)
	flag.DurationVar(&o.Delay, "delay", 300*time.Millisecond, "delay bound of every strategy")
	flag.DurationVar(&o.IdleTimeout, "idle", time.Second, "partition idle timeout of the timeout strategies")
	flag.DurationVar(&o.InputTimeout, "input-idle", time.Second, "input idle timeout of the two-layer strategy")
	flag.DurationVar(&o.Window, "window", 2*time.Second, "fixed window")
	flag.Parse()
	if *replot != "" {
		return report.Replot(*replot, chart.Report)
	}
	log, _ := zap.NewProduction()
	if *child {
		return runChild(log)
	}
	o.Throughput = true
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	runner := harness.Runner(subprocess)
	if *inproc {
		runner = harness.InProcess
	}
	rep, err := harness.Run(ctx, o, runner, log)
	if err != nil {
		return err
	}
	rep.Command = "go run ./bench/cmd/benchall " + strings.Join(os.Args[1:], " ")
	pv := report.Here(rep.Command, rep.Started)
	rep.CPU, rep.Commit = pv.CPU, pv.Commit
	return write(*out, rep)
}

// runChild runs one throughput job for the parent (see subprocess).
func runChild(log *zap.Logger) error {
	var job harness.ThroughputJob
	if err := json.NewDecoder(os.Stdin).Decode(&job); err != nil {
		return err
	}
	t, err := harness.RunThroughput(context.Background(), job, log)
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(t)
}

// subprocess runs job in a fresh copy of this binary.
func subprocess(ctx context.Context, job harness.ThroughputJob, _ *zap.Logger) (harness.Throughput, error) {
	exe, err := os.Executable()
	if err != nil {
		return harness.Throughput{}, err
	}
	in, err := json.Marshal(job)
	if err != nil {
		return harness.Throughput{}, err
	}
	cmd := exec.CommandContext(ctx, exe, "-child")
	cmd.Stdin, cmd.Stderr = bytes.NewReader(in), os.Stderr
	outb, err := cmd.Output()
	if err != nil {
		return harness.Throughput{}, fmt.Errorf("throughput of %s in a subprocess: %w", job.Strategy, err)
	}
	var t harness.Throughput
	return t, json.Unmarshal(outb, &t)
}

func write(dir string, rep harness.Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	js, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "bench.json"), append(js, '\n'), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "bench.svg"), chart.Report(rep), 0o644); err != nil {
		return err
	}
	md := filepath.Join(dir, "bench.md")
	old, err := os.ReadFile(md)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	return os.WriteFile(md, []byte(report.Splice(string(old), beginMark, endMark, section(rep))), 0o644)
}
