package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/internal/admin"
	"github.com/signalbox/signalbox/internal/demo"
	"github.com/signalbox/signalbox/internal/workload"
)

// newDemoCmd is `signalbox demo`: the reference scenario on an embedded
// broker, run by the offset gate, with its summary.
func newDemoCmd() *cobra.Command {
	var (
		asJSON    bool
		adminAddr string
		d         demo.Options
	)
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run the reference scenario on an embedded broker and print the summary",
		Long: `demo starts an embedded Kafka-protocol broker, produces a compressed week of
keyed history into 13 topics × 3 partitions plus a reference topic of items
(the first 6 topics in Avro, with their schemas in an embedded
schema registry and a schema change halfway through each partition; the
others in JSON), makes one topic slow to connect, runs signalbox on it, then sends
live traffic for a few seconds. The reference topic is read as a table that
enriches every event with its item as of the event's time (process.map
with lookup). It prints records in and out, how many came out enriched, late and
out-of-order counts (0 unless --producer-delayed asks for late records),
two latencies beyond the delay in the live phase (release: when the engine
hands a record to the sinks; visible: when a reader of a real sink sees it,
by default a reader tailing a JSONL file sink), and replay throughput.
It exits 1 if any record came out of order or late beyond those asked for.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log := logger(cmd)
			var srv *admin.Server
			var srvErr error
			if adminAddr != admin.Off {
				d.OnPipeline = func(_ string, stats func() signalbox.Stats) {
					srv, srvErr = admin.Start(admin.Options{Addr: adminAddr, Setting: "--admin-addr", Stats: stats, Logger: log})
				}
			}
			defer func() {
				if srv != nil {
					srv.Close()
				}
			}()
			s, err := demo.RunDemo(cmd.Context(), d, log)
			if srvErr != nil {
				return runtimeError(srvErr)
			}
			if err != nil {
				return runtimeError(err)
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				if err := enc.Encode(s); err != nil {
					return runtimeError(err)
				}
			} else {
				printSummary(out, s)
			}
			if s.OutOfOrder != 0 || s.Late != s.ProducerDelayed {
				return runtimeError(fmt.Errorf("ordering violated: %d out of order, %d late (%d producer-delayed)", s.OutOfOrder, s.Late, s.ProducerDelayed))
			}
			return nil
		},
	}
	f := cmd.Flags()
	w := &d.Workload
	f.BoolVar(&asJSON, "json", false, "print the summary as JSON")
	f.StringVar(&adminAddr, "admin-addr", admin.DefaultAddr, "serve the ordering run's /metrics, /status, /healthz, /readyz on host:port (\""+admin.Off+"\": off)")
	*w = workload.Options{Seed: 1, Topics: 13, Partitions: 3, RecordsPerPartition: 5000, SlowTopics: 1,
		SlowFor: 2 * time.Second, LiveFor: 5 * time.Second, LiveRate: 2000, AvroTopics: 6}
	wf := flag.NewFlagSet("workload", flag.ContinueOnError)
	w.AddFlags(wf)
	f.AddGoFlagSet(wf)
	f.DurationVar(&d.Delay, "delay", 300*time.Millisecond, "delay bound")
	f.StringVar(&d.Visible, "visible", demo.VisibleJSONL, "the real sink whose reader measures visible latency: "+strings.Join(demo.VisibleKinds, ", ")+", or none")
	cmd.PreRunE = func(*cobra.Command, []string) error {
		var errs []error
		if w.LiveFor <= 0 {
			errs = append(errs, errors.New("--live: must be positive"))
		}
		for name, v := range map[string]int{"--topics": w.Topics, "--partitions": w.Partitions, "--records": w.RecordsPerPartition, "--rate": w.LiveRate} {
			if v <= 0 {
				errs = append(errs, fmt.Errorf("%s: must be positive", name))
			}
		}
		if w.SlowTopics < 0 || w.SlowTopics > w.Topics {
			errs = append(errs, fmt.Errorf("--slow-topics: must be between 0 and --topics"))
		}
		if adminAddr != admin.Off {
			if _, err := admin.ListenAddr(adminAddr); err != nil {
				errs = append(errs, fmt.Errorf("--admin-addr: %w", err))
			}
		}
		switch {
		case d.Visible == "none":
			d.Visible = ""
		case !slices.Contains(demo.VisibleKinds, d.Visible):
			errs = append(errs, fmt.Errorf("--visible: %q is not one of %s or none", d.Visible, strings.Join(demo.VisibleKinds, ", ")))
		}
		if w.SlowTopics == 0 {
			w.SlowTopics = -1 // workload.Options: negative means none
		}
		if err := errors.Join(errs...); err != nil {
			return usageError(err)
		}
		return nil
	}
	return cmd
}

func printSummary(out io.Writer, s demo.Summary) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	row := func(k string, format string, args ...any) {
		fmt.Fprintf(tw, "%s\t%s\n", k, fmt.Sprintf(format, args...))
	}
	slow := strings.Join(s.SlowTopics, ", ")
	if slow == "" {
		slow = "none"
	}
	row("scenario", "%d topics × %d partitions + reference topic %q read as table %q, seed %d",
		s.Topics, s.Partitions, workload.ReferenceTopic, demo.ReferenceTableName, s.Seed)
	avro := strings.Join(s.AvroTopics, ", ")
	if avro == "" {
		avro = "none"
	}
	row("Avro topics", "%s (%d records out decoded, %d writer schemas)", avro, s.Decoded, s.WriterSchemas)
	row("slow to connect", "%s for %s", slow, s.SlowFor)
	row("delay bound", "%s", s.Delay)
	row("records", "%d history + %d reference + %d live (%d producer-delayed)", s.HistoryRecords, s.ReferenceRecords, s.LiveRecords, s.ProducerDelayed)
	row("in / out", "%d / %d (%d still parked at stop)", s.In, s.Out, s.ParkedAtEnd)
	row("enriched", "%d of %d out with their item as of their event time: %s", s.Enriched, s.Out, demo.EnrichMap)
	row("window", "%s, tumbling 1h count per key: %d results, %d equal to a recount of the records out, %d repeated, %d still open at stop",
		demo.WindowName, s.Window.Results, s.Window.Equal, s.Window.Repeats, s.Window.OpenAtStop)
	row("out of order", "%d", s.OutOfOrder)
	row("late", "%d", s.Late)
	lat := func(l demo.Latency) string {
		return fmt.Sprintf("mean %.1f ms, p50 %.1f ms, p99 %.1f ms, max %.1f ms (%d records)", l.MeanMs, l.P50Ms, l.P99Ms, l.MaxMs, l.Samples)
	}
	row("release latency beyond delay", "%s", lat(s.LiveLatency))
	if s.VisibleSink != "" {
		row("visible latency beyond delay", "%s, seen by a reader of the %s sink", lat(s.VisibleLatency), s.VisibleSink)
	}
	row("replay throughput", "%.0f records/s (bounded replay of %d records)", s.ReplayPerSecond, s.ReplayRecords)
	row("replay with slow start", "%.2f s", s.ReplaySeconds)
	row("took", "%.1f s", s.Took)
	_ = tw.Flush()
}
