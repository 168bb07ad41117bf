package main

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/config"
	"github.com/signalbox/signalbox/internal/admin"
	"github.com/signalbox/signalbox/internal/logging"
	"github.com/signalbox/signalbox/internal/progress"
	"github.com/signalbox/signalbox/internal/recording"
	"github.com/signalbox/signalbox/internal/startup"
	"github.com/signalbox/signalbox/sources/kafka"
	"github.com/signalbox/signalbox/timers/durable"
	"github.com/signalbox/signalbox/watermark"
)

func newRunCmd() *cobra.Command {
	var file, adminAddr, cpuProfile, allocProfile, heapProfile, traceFile string
	var heapEvery time.Duration
	var reset bool
	cmd := &cobra.Command{
		Use:   "run -c job.yaml",
		Short: "Run a job: read Kafka, release records in event-time order to the sinks",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log := logger(cmd)
			defer log.Sync() //nolint:errcheck // stderr
			job, err := loadJob(file, cmd.ErrOrStderr(), exitUsage)
			if err != nil {
				return err
			}
			plan, err := job.Build(log)
			if err != nil {
				return usageError(err)
			}
			defer func() {
				if err := plan.Close(); err != nil {
					log.Error("closing the tables", zap.Error(err))
				}
			}()
			// The admin address is checked before anything is changed:
			// a typo must not cost a --reset-state its store.
			addr, setting := job.Admin.Addr, "admin.addr"
			if f := cmd.Flags(); f.Changed("admin-addr") || f.Changed("status-addr") {
				addr, setting = adminAddr, "--admin-addr"
			}
			if addr == "" {
				addr = admin.DefaultAddr
			}
			if addr != admin.Off {
				if _, err := admin.ListenAddr(addr); err != nil {
					return usageError(fmt.Errorf("%s: %w", setting, err))
				}
			}
			if reset {
				if err := resetState(plan.StateDir, log); err != nil {
					return runtimeError(err)
				}
			}
			if plan.StateDir == "" {
				defer tuneRuntime(plan, nil, log)()
			} else {
				opts := durable.StoreOptions{MemoryBudget: plan.StateMemory}
				opts.EnsureDefaults()
				defer tuneRuntime(plan, &opts, log)()
				if plan.StateScratch && !reset {
					// Windows rebuild from Kafka: the store only spills.
					if err := resetState(plan.StateDir, log); err != nil {
						return runtimeError(err)
					}
				}
				store, err := durable.OpenStore(plan.StateDir, opts)
				if err != nil {
					return runtimeError(fmt.Errorf("state.dir: %w (signalbox run --reset-state rebuilds it from Kafka's committed offsets)", err))
				}
				defer func() {
					if err := store.Close(); err != nil {
						log.Error("closing the parked state", zap.Error(err))
					}
				}()
				var parked signalbox.ParkedStore = store
				if plan.StateScratch {
					parked = store.Scratch()
					plan.Options = append(plan.Options, signalbox.WithParkedLimit(0)) // it spills beyond its budget
				}
				plan.Options = append(plan.Options, signalbox.WithParkedStore(parked),
					signalbox.WithMaxInflightBytes(config.InflightBytes(opts)))
			}
			p, err := plan.Pipeline()
			if err != nil {
				return usageError(err)
			}
			for _, rec := range []struct {
				flag, path string
				start      func(flag, path string) (func() error, error)
			}{
				{"--cpuprofile", cpuProfile, recording.CPUProfile},
				{"--trace", traceFile, recording.Trace},
				{"--allocprofile", allocProfile, recording.AllocProfile},
				{"--heapprofile", heapProfile, func(flag, path string) (func() error, error) {
					return recording.HeapProfiles(flag, path, heapEvery)
				}},
			} {
				if rec.path == "" {
					continue
				}
				stopRecording, err := rec.start(rec.flag, rec.path)
				if err != nil {
					return usageError(err)
				}
				defer func() {
					if err := stopRecording(); err != nil {
						log.Warn("profile or trace not written", zap.String("flag", rec.flag), zap.String("file", rec.path), zap.Error(err))
					}
				}()
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			context.AfterFunc(ctx, stop) // a second signal kills at once
			if addr != admin.Off {
				ao := admin.Options{Addr: addr, Setting: setting, Stats: p.Stats, Logger: log}
				if plan.Tables != nil {
					ao.Tables = plan.Tables.Sizes
				}
				srv, err := admin.Start(ao)
				if err != nil {
					return runtimeError(err)
				}
				defer srv.Close()
			}
			out := cmd.OutOrStdout()
			tty := !plan.WritesStdout && logging.IsTerminal(out)
			pctx, stopProgress := context.WithCancel(ctx)
			var wg sync.WaitGroup
			wg.Go(func() { progress.Run(pctx, p.Stats, out, tty, log) })
			log.Info("running", zap.String("job", file), zap.Strings("topics", plan.Kafka.Topics), zap.String("group", plan.Kafka.Group))
			// One start-up deadline for every Kafka client the job opens:
			// its sinks, then the source.
			err = p.Run(startup.WithDeadline(ctx, time.Now().Add(cmp.Or(plan.Kafka.StartupTimeout, kafka.DefaultStartupTimeout))))
			stopProgress()
			wg.Wait()
			s := p.Stats()
			late := s.LateTotal()
			log.Info("stopped", zap.Int64("in", s.In), zap.Int64("out", s.Out), zap.Int64("dead_lettered", s.Dead),
				zap.Int64("late", late.Count), zap.String("watermark", stoppedWatermark(s)),
				zap.Int64("checkpoints", s.Checkpoints), zap.Error(err))
			if err != nil {
				return runtimeError(err)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVarP(&file, "config", "c", "", "job file (YAML)")
	f.BoolVar(&reset, "reset-state", false, "delete the parked-record store in state.dir before starting (parked records are rebuilt from Kafka)")
	f.StringVar(&adminAddr, "admin-addr", "", "serve /metrics, /status, /healthz, /readyz on host:port (overrides admin.addr; default "+admin.DefaultAddr+
		"; an empty host means loopback, port 0 any free port, \""+admin.Off+"\" turns it off)")
	f.StringVar(&adminAddr, "status-addr", "", "the former name of --admin-addr")
	f.MarkDeprecated("status-addr", "use --admin-addr") //nolint:errcheck // the flag exists
	f.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the run to this file (for benchmarks)")
	f.MarkHidden("cpuprofile") //nolint:errcheck // the flag exists
	f.StringVar(&traceFile, "trace", "", "write an execution trace of the run to this file (for benchmarks: go tool trace)")
	f.MarkHidden("trace") //nolint:errcheck // the flag exists
	f.StringVar(&allocProfile, "allocprofile", "", "write the run's allocation profile to this file when it ends (for benchmarks)")
	f.MarkHidden("allocprofile") //nolint:errcheck // the flag exists
	f.StringVar(&heapProfile, "heapprofile", "", "write heap profiles to PREFIX-NNNN.pb.gz at the start, every --heapprofile-every and at the end (for soaks)")
	f.MarkHidden("heapprofile") //nolint:errcheck // the flag exists
	f.DurationVar(&heapEvery, "heapprofile-every", time.Minute, "interval between --heapprofile snapshots")
	f.MarkHidden("heapprofile-every") //nolint:errcheck // the flag exists
	cmd.MarkFlagRequired("config")
	return cmd
}

// resetState deletes the parked-record store in dir; it refuses a
// directory holding anything but a store's files.
func resetState(dir string, log *zap.Logger) error {
	if dir == "" {
		log.Info("--reset-state: the job has no state.dir; nothing to reset")
		return nil
	}
	if err := durable.ResetStore(dir); err != nil {
		return err
	}
	log.Info("state reset", zap.String("dir", dir))
	return nil
}

// stoppedWatermark spells the watermark a job stopped at: -inf when the
// engine never published one (the job did not start).
func stoppedWatermark(s signalbox.Stats) string {
	if s.Published.IsZero() {
		return progress.FormatTime(watermark.MinTime)
	}
	return progress.FormatTime(s.Watermark)
}
