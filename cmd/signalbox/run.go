package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/debug"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/config"
	"github.com/signalbox/signalbox/internal/logging"
	"github.com/signalbox/signalbox/internal/progress"
	"github.com/signalbox/signalbox/timers/durable"
)

func newRunCmd() *cobra.Command {
	var file, statusAddr, cpuProfile string
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
			if reset {
				if err := resetState(plan.StateDir, log); err != nil {
					return runtimeError(err)
				}
			}
			if plan.StateDir != "" {
				opts := durable.StoreOptions{MemoryBudget: plan.StateMemory}
				opts.EnsureDefaults()
				boundMemory(plan, opts, log)
				store, err := durable.OpenStore(plan.StateDir, opts)
				if err != nil {
					return runtimeError(fmt.Errorf("state.dir: %w (signalbox run --reset-state rebuilds it from Kafka's committed offsets)", err))
				}
				defer func() {
					if err := store.Close(); err != nil {
						log.Error("closing the parked state", zap.Error(err))
					}
				}()
				plan.Options = append(plan.Options, signalbox.WithParkedStore(store))
			}
			p, err := plan.Pipeline()
			if err != nil {
				return usageError(err)
			}
			if cpuProfile != "" {
				stopProfile, err := startCPUProfile(cpuProfile)
				if err != nil {
					return usageError(err)
				}
				defer stopProfile()
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			context.AfterFunc(ctx, stop) // a second signal kills at once
			if statusAddr != "" {
				shutdown, err := serveStatus(statusAddr, p.Stats, log)
				if err != nil {
					return runtimeError(err)
				}
				defer shutdown()
			}
			out := cmd.OutOrStdout()
			tty := !plan.WritesStdout && logging.IsTerminal(out)
			pctx, stopProgress := context.WithCancel(ctx)
			var wg sync.WaitGroup
			wg.Go(func() { progress.Run(pctx, p.Stats, out, tty, log) })
			log.Info("running", zap.String("job", file), zap.Strings("topics", plan.Kafka.Topics), zap.String("group", plan.Kafka.Group))
			err = p.Run(ctx)
			stopProgress()
			wg.Wait()
			s := p.Stats()
			late := s.LateTotal()
			log.Info("stopped", zap.Int64("in", s.In), zap.Int64("out", s.Out), zap.Int64("dead_lettered", s.Dead),
				zap.Int64("late", late.Count), zap.String("watermark", progress.FormatTime(s.Watermark)),
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
	f.StringVar(&statusAddr, "status-addr", "", "serve GET /status (JSON) on this address, e.g. 127.0.0.1:8080 (port 0: any free port)")
	f.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the run to this file (for benchmarks)")
	f.MarkHidden("cpuprofile") //nolint:errcheck // the flag exists
	cmd.MarkFlagRequired("config")
	return cmd
}

// boundMemory applies config.BoundMemory and sets the Go memory limit it
// proposes, unless GOMEMLIMIT is set.
func boundMemory(plan *config.Plan, opts durable.StoreOptions, log *zap.Logger) {
	limit := config.BoundMemory(&plan.Kafka, opts)
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(limit)
	}
	log.Info("memory bounded for the state budget", zap.Int64("budget", opts.MemoryBudget),
		zap.Int32("fetch_max_bytes", plan.Kafka.FetchMaxBytes), zap.Int64("go_memory_limit", limit))
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

// serveStatus serves GET /status on addr and returns a function that stops
// the server.
func serveStatus(addr string, stats func() signalbox.Stats, log *zap.Logger) (func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("status server: %w", err)
	}
	srv := &http.Server{Handler: statusHandler(stats), ReadHeaderTimeout: 10 * time.Second}
	log.Info("status server listening", zap.String("url", "http://"+ln.Addr().String()+"/status"))
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("status server stopped", zap.Error(err))
		}
	}()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx) //nolint:errcheck // best effort at exit
	}, nil
}

func statusHandler(stats func() signalbox.Stats) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.Encode(progress.FromStats(stats())) //nolint:errcheck // the client went away
	})
	return mux
}
