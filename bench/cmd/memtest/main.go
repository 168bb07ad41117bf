package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/signalbox/signalbox/bench/report"
	"github.com/signalbox/signalbox/config"
	"github.com/signalbox/signalbox/embedded"
)

// job is what the parent hands a child on stdin.
type job struct {
	Store        string   `json:"store"` // "durable" or "memory"
	Brokers      []string `json:"brokers"`
	Topics       []string `json:"topics"`
	Budget       int64    `json:"budget"`
	MemTable     uint64   `json:"memtable"`       // 0: durable.StoreOptions' default
	Cache        int64    `json:"cache"`          // 0: durable.StoreOptions' default
	PartitionMax int32    `json:"partition_max"`  // 0: the Kafka source's default
	FetchMax     int32    `json:"fetch_max"`      // 0: the Kafka source's default
	Total        int64    `json:"total"`          // records in every topic
	Others       int64    `json:"others"`         // records in every topic but the held one
	HeapProfile  string   `json:"heap_profile"`   // "": none
	Idle         bool     `json:"idle"`           // nothing held back, alignment on
	Timeless     bool     `json:"timeless"`       // with Idle: inputs with time: none, so that nothing parks
	Align        int64    `json:"align"`          // with Idle: the alignment window in ns; < 0: the engine's default
	BatchSize    int      `json:"batch_size"`     // 0: the engine's default
	Inflight     int      `json:"inflight"`       // 0: the engine's default
	InflightB    int64    `json:"inflight_bytes"` // 0: what run sets with a state dir (config.InflightBytes); < 0: none
	HeapAtPeak   bool     `json:"heap_at_peak"`   // HeapProfile at each new peak of the heap, not at the hold
}

// progress is one line a child prints on stdout while it runs; the last
// line carries Result.
type progress struct {
	In     int64   `json:"in"`
	Result *result `json:"result,omitempty"`
}

// result is a child's report.
type result struct {
	Store       string  `json:"store"`
	Idle        bool    `json:"idle"`
	Timeless    bool    `json:"timeless"`
	Budget      int64   `json:"budget"`
	MemTable    uint64  `json:"memtable"`
	PeakParked  int64   `json:"peak_parked_records"`
	PeakParkedB int64   `json:"peak_parked_bytes"`
	PeakInMemB  int64   `json:"peak_store_bytes"` // the store's own Bytes(): what it holds in memory
	Spilled     int64   `json:"spilled_records"`
	PeakRSS     int64   `json:"peak_rss"`
	PeakHeap    int64   `json:"peak_go_heap"`        // sampled HeapInuse
	PeakGoSys   int64   `json:"peak_go_sys"`         // sampled Sys: all memory the Go runtime mapped
	HeldParked  int64   `json:"held_parked_records"` // parked once everything else is in
	HeldParkedB int64   `json:"held_parked_bytes"`   // their accounted size
	HeldStoreB  int64   `json:"held_store_bytes"`    // the store's Bytes() then
	RSSAtHold   int64   `json:"rss_at_hold"`         // VmRSS once everything else is parked
	HeapAtHold  int64   `json:"heap_at_hold"`        // HeapInuse at the same moment
	Out         int64   `json:"out"`
	Complete    bool    `json:"complete"`
	InOrder     bool    `json:"in_order"`
	Seconds     float64 `json:"seconds"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "memtest:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		child      = flag.Bool("child", false, "internal: run one store's job, read from stdin")
		storeOnly  = flag.String("store-only", "", "drive a durable.Store directly in this process, without Kafka: idle, held or delay (see storeonly.go)")
		factor     = flag.Int("factor", 10, "with -store-only: the parked set at its peak, in multiples of -budget")
		topics     = flag.Int("topics", 8, "topics; the first is held back")
		partitions = flag.Int("partitions", 3, "partitions per topic")
		perPart    = flag.Int("records", 16000, "records per partition")
		valueSize  = flag.Int("value", 512, "bytes per record value")
		budgetS    = flag.String("budget", "16MiB", "durable.Store memory budget (state.memory)")
		memtableS  = flag.String("memtable", "", "pebble memtable size (default: durable.StoreOptions' default)")
		cacheS     = flag.String("cache", "", "pebble block cache size (default: durable.StoreOptions' default)")
		partMaxS   = flag.String("partition-max", "", "Kafka source PartitionMaxBytes (default: as -fetch-max)")
		fetchMaxS  = flag.String("fetch-max", "", "Kafka source FetchMaxBytes (default: what signalbox run sets for the budget; with the memory store the source's default)")
		stores     = flag.String("stores", "durable,memory", "stores to run, in order: durable, memory")
		seed       = flag.Uint64("seed", 1, "seed of the payloads")
		idle       = flag.Bool("idle", false, "hold no topic back and leave event-time alignment at its default: the same job with (almost) nothing parked, whose peak RSS is the idle footprint the targets add to the budget")
		timeless   = flag.Bool("timeless", false, "with -idle: read every input with `time: none`, so that nothing parks: the same job's footprint at consumer speed with nothing parked (records are checked for completeness and per-partition offset order)")
		align      = flag.Duration("align", -1, "with -idle: the event-time alignment window (default: the engine's, signalbox.DefaultAlignment)")
		heapProf   = flag.String("heapprofile", "", "write each child's heap profile, taken with everything else parked, to this path + .<store> (with -store-only: to this path, taken at the peak of the Go heap)")
		heapPeak   = flag.Bool("heapprofile-peak", false, "with -heapprofile: rewrite the child's profile at each new peak of the Go heap in use instead")
		batchSize  = flag.Int("batch-size", 0, "the engine's batch size (signalbox.WithBatchSize; default: its default)")
		inflight   = flag.Int("inflight", 0, "the engine's batches in flight to the sinks (signalbox.WithMaxInflightBatches; default: its default)")
		inflightB  = flag.Int64("inflight-bytes", 0, "the engine's bound on released bytes not yet written (signalbox.WithMaxInflightBytes); 0: what signalbox run sets with a state dir (config.InflightBytes), negative: none")
	)
	jsonOut := flag.String("json", "", "with -store-only: append the row to this results file (created when missing) and redraw its chart next to it (same name, .svg)")
	replot := flag.String("replot", "", "redraw the chart of this results file (written by -json) next to it, and do nothing else")
	flag.Parse()
	if *child {
		return runChild()
	}
	if *replot != "" {
		return report.Replot(*replot, stateChart)
	}
	if *storeOnly != "" {
		budget, err := config.ParseSize(*budgetS)
		if err != nil {
			return fmt.Errorf("-budget: %w", err)
		}
		dir, err := os.MkdirTemp("", "memtest-store-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		return runStoreOnly(storeShape{shape: *storeOnly, budget: budget, factor: *factor, value: *valueSize, dir: dir,
			heapProfile: *heapProf, json: *jsonOut})
	}
	sizes := map[string]int64{}
	for name, s := range map[string]string{"budget": *budgetS, "memtable": *memtableS, "cache": *cacheS, "partition-max": *partMaxS, "fetch-max": *fetchMaxS} {
		if s == "" {
			continue
		}
		v, err := config.ParseSize(s)
		if err != nil {
			return fmt.Errorf("-%s: %w", name, err)
		}
		sizes[name] = v
	}
	ctx := context.Background()
	names := make([]string, *topics)
	opts := []embedded.Option{}
	for i := range names {
		names[i] = fmt.Sprintf("mem-%02d", i)
		opts = append(opts, embedded.WithTopic(names[i], int32(*partitions)))
	}
	c, err := embedded.Start(opts...)
	if err != nil {
		return err
	}
	defer c.Close()
	start := time.Now()
	if err := produce(ctx, c, names, *partitions, *perPart, *valueSize, *seed); err != nil {
		return err
	}
	total := int64(*topics * *partitions * *perPart)
	fmt.Fprintf(os.Stderr, "memtest: produced %d records in %s\n", total, time.Since(start).Round(time.Millisecond))
	var results []result
	for _, store := range strings.Split(*stores, ",") {
		j := job{
			Store: store, Brokers: c.Addrs(), Topics: names, Budget: sizes["budget"],
			MemTable: uint64(sizes["memtable"]), Cache: sizes["cache"], PartitionMax: int32(sizes["partition-max"]), FetchMax: int32(sizes["fetch-max"]),
			Total: total, Others: total - int64(*partitions**perPart), HeapProfile: *heapProf, Idle: *idle, Timeless: *timeless && *idle, Align: int64(*align),
			BatchSize: *batchSize, Inflight: *inflight, InflightB: *inflightB, HeapAtPeak: *heapPeak,
		}
		if *idle {
			j.Others = total // nothing is held back: "everything else" is everything
		}
		r, err := parent(ctx, c, j)
		if err != nil {
			return fmt.Errorf("%s store: %w", store, err)
		}
		results = append(results, r)
	}
	held := fmt.Sprintf("topic `%s` held back until the others are parked", names[0])
	if *idle {
		held = "no topic held back, alignment at its default (idle)"
		if *align >= 0 {
			held = fmt.Sprintf("no topic held back, alignment window %s (idle)", *align)
		}
	}
	fmt.Printf("Command: `go run ./bench/cmd/memtest %s` · %d topics × %d partitions × %d records of %d-byte values (%d records); %s.\n\n",
		strings.Join(os.Args[1:], " "), *topics, *partitions, *perPart, *valueSize, total, held)
	fmt.Print(table(results))
	for _, r := range results {
		if !r.Complete || !r.InOrder {
			return fmt.Errorf("%s store: output complete=%v in order=%v", r.Store, r.Complete, r.InOrder)
		}
	}
	return nil
}

// produce writes perPart records into every partition of every topic. Event
// times (the Kafka timestamps) interleave across partitions: record i of
// every partition is at base + 10ms·i plus a per-partition offset.
func produce(ctx context.Context, c *embedded.Cluster, topics []string, partitions, perPart, valueSize int, seed uint64) error {
	rng := rand.New(rand.NewPCG(seed, 5))
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const chunk = 50_000
	recs := make([]*kgo.Record, 0, chunk)
	for ti, t := range topics {
		for p := range partitions {
			for i := range perPart {
				v := make([]byte, valueSize)
				for k := range v {
					v[k] = 'a' + byte(rng.IntN(26))
				}
				ts := base.Add(time.Duration(i)*10*time.Millisecond + time.Duration(ti*partitions+p)*time.Millisecond/4)
				recs = append(recs, &kgo.Record{
					Topic: t, Partition: int32(p), Key: fmt.Appendf(nil, "item-%d", rng.IntN(1000)), Value: v, Timestamp: ts,
				})
				if len(recs) == chunk {
					if err := c.Produce(ctx, recs...); err != nil {
						return err
					}
					recs = recs[:0]
				}
			}
		}
	}
	return c.Produce(ctx, recs...)
}

// parent runs j in a child process, holding j.Topics[0] back until the child
// has ingested every record of the other topics (unless j.Idle).
func parent(ctx context.Context, c *embedded.Cluster, j job) (result, error) {
	release := func() {}
	if !j.Idle {
		release = c.DelayFetches(j.Topics[0], time.Hour)
	}
	defer release()
	exe, err := os.Executable()
	if err != nil {
		return result{}, err
	}
	in, err := json.Marshal(j)
	if err != nil {
		return result{}, err
	}
	cmd := exec.CommandContext(ctx, exe, "-child")
	cmd.Stdin, cmd.Stderr = bytes.NewReader(in), os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return result{}, err
	}
	if err := cmd.Start(); err != nil {
		return result{}, err
	}
	var res *result
	held := true
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		var pr progress
		if err := json.Unmarshal(sc.Bytes(), &pr); err != nil {
			return result{}, fmt.Errorf("child said %q: %w", sc.Text(), err)
		}
		if pr.Result != nil {
			res = pr.Result
		}
		if held && !j.Idle && pr.In >= j.Others {
			// Everything but the held topic is in: the parked set is at
			// its peak. Let the child sample it, then release.
			held = false
			fmt.Fprintf(os.Stderr, "memtest: %s: %d records parked behind %s; releasing it\n", j.Store, pr.In, j.Topics[0])
			time.AfterFunc(2*time.Second, release)
		}
	}
	if err := cmd.Wait(); err != nil {
		return result{}, fmt.Errorf("child: %w", err)
	}
	if res == nil {
		return result{}, fmt.Errorf("child printed no result")
	}
	return *res, nil
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// table renders the results as a Markdown table.
func table(rs []result) string {
	var b strings.Builder
	b.WriteString("| store | budget | parked behind the held input (accounted) | × budget | store's in-memory bytes then | RSS / live Go heap then | peak parked | records spilled | peak RSS (VmHWM) | peak Go heap in use | output |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, r := range rs {
		store, budget, ratio := r.Store, "–", "–"
		if r.Store == "durable" {
			budget, ratio = mib(r.Budget), fmt.Sprintf("%.1f×", float64(r.HeldParkedB)/float64(r.Budget))
		}
		if r.Idle {
			// Nothing held back: the peak parked set is the multiple.
			store += ", idle"
			if r.Timeless {
				store += " (time: none)"
			}
			if r.Store == "durable" {
				ratio = fmt.Sprintf("%.2f× (peak)", float64(r.PeakParkedB)/float64(r.Budget))
			}
		}
		verdict := "complete, in order"
		if !r.Complete || !r.InOrder {
			verdict = fmt.Sprintf("**complete=%v in order=%v**", r.Complete, r.InOrder)
		}
		held := fmt.Sprintf("%s (%d records) | %s | %s | %s / %s", mib(r.HeldParkedB), r.HeldParked, ratio, mib(r.HeldStoreB), mib(r.RSSAtHold), mib(r.HeapAtHold))
		if r.Idle {
			held = "– | " + ratio + " | – | –" // no held input: nothing to sample behind it
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s (%d records) | %d | %s | %s | %d records, %s |\n",
			store, budget, held, mib(r.PeakParkedB), r.PeakParked, r.Spilled, mib(r.PeakRSS), mib(r.PeakHeap), r.Out, verdict)
	}
	return b.String()
}
