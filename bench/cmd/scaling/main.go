package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/signalbox/signalbox/bench/report"
	"github.com/signalbox/signalbox/internal/workload"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "scaling:", err)
		os.Exit(1)
	}
}

// config is the command line.
type config struct {
	sizes       []int64 // total event records per history size
	rounds      int
	delay       time.Duration
	checkpoint  time.Duration // signalbox's checkpoint_interval; 0: its default
	shapes      []shape       // the data's shapes, each measured at every size
	gogc        string        // GOGC for the signalbox runs; "": what signalbox run sets
	bin         string        // signalbox binary; "": build it
	vs          string        // a second signalbox binary measured in the same rounds; "": none
	vsGogc      string        // GOGC for the vs runs; "": as -gogc
	out         string        // bench.md to splice into; "": stdout only
	profileSize int64         // history size whose signalbox runs are profiled; 0: none
	profileDir  string        // where the profiles are kept; "": a temporary directory
	trace       bool          // the profiled runs also write an execution trace
	avro        bool          // the schema'd round: Avro twins against the JSON history
	jsonOut     string        // results file; the chart goes next to it (.svg); "": none
	replot      string        // redraw the chart of this results file and stop
	loadStart   string        // the machine's load average when the run started
	child       string        // internal: run one franz-go consumer, or the broker process
	brokers     string        // child: broker addresses
	topics      string        // child: topics (the broker: name:partitions)
	file        string        // child: the JSONL copy's output file
	ca          string        // child: the certificate file a TLS shape's broker writes and its consumers trust
}

func parseFlags(args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet("scaling", flag.ContinueOnError)
	sizes := fs.String("sizes", "1M,4M,12M", "history sizes in event records (suffix K or M), comma-separated")
	profile := fs.String("profile-size", "4M", "write a CPU profile of each signalbox mode at this size (one extra run each, not in the table); empty: none")
	fs.StringVar(&c.profileDir, "profile-dir", "", "keep the CPU and allocation profiles (<mode>.pprof, <mode>.allocs.pprof; with several shapes <mode>-<shape>.pprof) in this directory, for go tool pprof; empty: discard them")
	fs.BoolVar(&c.trace, "trace", false, "the profiled runs also write an execution trace (<mode>.trace beside the CPU profile; `go tool trace` shows what each goroutine waited for), which their CPU profile then includes")
	fs.IntVar(&c.rounds, "rounds", 3, "rounds per size; each round runs every consumer once, in turn")
	fs.DurationVar(&c.delay, "delay", time.Second, "signalbox's delay bound")
	nbrokers := fs.Int("broker-count", 1, "brokers in the broker process; the partitions' leaders are spread over them")
	batch := fs.String("batch", "16KiB", "producer batch bytes of the history (KiB or MiB suffix): 16KiB is Kafka's default batch.size, 1MiB franz-go's default ProducerBatchMaxBytes")
	useSASL := fs.Bool("sasl", false, "the broker requires SASL/SCRAM-SHA-256; every consumer (franz-go and signalbox's job file `sasl:`) and the producer authenticate")
	shapes := fs.String("shapes", "", "comma-separated shapes, each measured at every size and shown side by side in one table: batch bytes, then +sasl, +tls and +Nbrokers, e.g. 16KiB,1MiB,1MiB+sasl+tls,1MiB+3brokers; replaces -batch, -sasl and -broker-count")
	fs.StringVar(&c.jsonOut, "json", "", "also write the results (rows, samples, provenance) to this file and their chart next to it (same name, .svg); empty: none")
	fs.StringVar(&c.replot, "replot", "", "redraw the chart of this results file (written by -json) next to it, and do nothing else")
	fs.DurationVar(&c.checkpoint, "checkpoint", 0, "signalbox's checkpoint_interval (0: its default)")
	fs.StringVar(&c.gogc, "gogc", "", "GOGC for the signalbox runs only (empty: what signalbox run sets); set, it also turns off signalbox run's pacing of the memory limit (internal/gcpace)")
	fs.StringVar(&c.bin, "signalbox", "", "signalbox binary (default: go build ./cmd/signalbox into a temporary directory)")
	fs.StringVar(&c.vs, "vs", "", "a second signalbox binary, run in every round right after the first in each time mode and reported in rows of its own (an A/B comparison on the same data); empty: none")
	fs.StringVar(&c.vsGogc, "vs-gogc", "", "GOGC for the -vs binary's runs (empty: as -gogc); without -vs, the first binary is run again with it (an A/B of the collector's target)")
	fs.StringVar(&c.out, "out", "docs/bench.md", "splice the section into this file; empty: print it only")
	fs.BoolVar(&c.avro, "avro", false, "the schema'd round instead: the history also Avro-encoded in twin topics (schemas in the broker's registry), and franz-go on each, then signalbox reading JSON or Avro into a JSONL file sink and into a Kafka sink; written into its own section")
	fs.StringVar(&c.child, "child", "", "internal: run the raw consumer ("+franz+") or the JSONL copy ("+franzJSONL+") and print its count, or the broker process ("+brokerChild+")")
	fs.StringVar(&c.brokers, "brokers", "", "internal: the child's brokers")
	fs.StringVar(&c.topics, "topics", "", "internal: the child's topics")
	fs.StringVar(&c.file, "file", "", "internal: the file the "+franzJSONL+" child writes")
	fs.StringVar(&c.ca, "ca", "", "internal: the certificate file of a TLS shape's broker (it writes it, the consumers trust it)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	var errs []error
	for _, s := range strings.Split(*sizes, ",") {
		n, err := parseCount(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("-sizes: %w", err))
		}
		c.sizes = append(c.sizes, n)
	}
	if *profile != "" {
		n, err := parseCount(*profile)
		if err != nil {
			errs = append(errs, fmt.Errorf("-profile-size: %w", err))
		}
		c.profileSize = n
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if *shapes != "" {
		if set["batch"] || set["sasl"] || set["broker-count"] {
			errs = append(errs, errors.New("-shapes: not with -batch, -sasl or -broker-count (a shape names all three)"))
		}
		for _, x := range strings.Split(*shapes, ",") {
			sh, err := parseShape(x)
			if err != nil {
				errs = append(errs, fmt.Errorf("-shapes: %w", err))
			}
			c.shapes = append(c.shapes, sh)
		}
	} else {
		b, err := parseBytes(*batch)
		if err == nil {
			err = checkBatch(b)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("-batch: %w", err))
		}
		if *nbrokers < 1 {
			errs = append(errs, errors.New("-broker-count: must be at least 1"))
		}
		c.shapes = []shape{{Batch: b, SASL: *useSASL, Brokers: *nbrokers}}
	}
	if c.avro && (c.vs != "" || c.vsGogc != "") {
		errs = append(errs, errors.New("-avro: not with -vs or -vs-gogc"))
	}
	if c.rounds < 1 {
		errs = append(errs, errors.New("-rounds: must be at least 1"))
	}
	if c.delay < disorder {
		errs = append(errs, fmt.Errorf("-delay: must be at least the workload's disorder bound %v", disorder))
	}
	return c, errors.Join(errs...)
}

// parseCount parses "1M", "250K" or "1200".
func parseCount(s string) (int64, error) {
	s = strings.TrimSpace(s)
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "M"):
		mult, s = 1_000_000, strings.TrimSuffix(s, "M")
	case strings.HasSuffix(s, "K"):
		mult, s = 1_000, strings.TrimSuffix(s, "K")
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f <= 0 {
		return 0, fmt.Errorf("%q: want a positive count such as 1M, 250K or 1200", s)
	}
	return int64(f * float64(mult)), nil
}

// The reference scenario: 8 topics × 3 partitions of ~100-byte JSON values,
// event time in field ts (and as the Kafka timestamp), ≤ 200 ms disorder
// inside a partition, 1000 keys, no slow topic.
const (
	topics     = 8
	partitions = 3
	items      = 1000
	valueBytes = 100
	disorder   = 200 * time.Millisecond
)

func workloadOptions(size int64, avro bool, batch int) workload.Options {
	return workload.Options{Seed: 1, Topics: topics, Partitions: partitions, Items: items, ValueBytes: valueBytes,
		Disorder: disorder, SlowTopics: -1, RecordsPerPartition: int(max(size/(topics*partitions), 1)), AvroTwins: avro, BatchBytes: batch}
}

// The consumers, in the order of a round.
const (
	franz        = "franz-go"
	franzJSONL   = "franz-go-jsonl" // the peer without ordering: franz-go into a JSONL file (jsonlCopy)
	sbTimestamp  = "signalbox-timestamp"
	sbField      = "signalbox-field"
	vsTimestamp  = "vs-timestamp" // -vs: the second binary, time: timestamp
	vsField      = "vs-field"     // -vs: the second binary, time: field
	profileLabel = "profile"
)

var consumers = []string{franz, franzJSONL, sbTimestamp, vsTimestamp, sbField, vsField}

// The consumers of the schema'd round (-avro): the Avro twins with their own
// ceiling, and each format into a JSONL file sink and into a Kafka sink.
const (
	franzAvro   = "franz-go-avro"
	sbAvroJSONL = "signalbox-avro-jsonl"
	sbJSONKafka = "signalbox-json-kafka"
	sbAvroKafka = "signalbox-avro-kafka"
)

var avroConsumers = []string{franz, franzAvro, sbField, sbAvroJSONL, sbJSONKafka, sbAvroKafka}

// roundOf is the consumers of one round: without -vs, no vs rows; with
// -avro, the schema'd round.
func roundOf(c config) []string {
	if c.avro {
		return avroConsumers
	}
	if c.vs != "" {
		return consumers
	}
	return slices.DeleteFunc(slices.Clone(consumers), func(s string) bool { return s == vsTimestamp || s == vsField })
}

// isRaw reports whether consumer is a franz-go child, not signalbox.
func isRaw(consumer string) bool {
	return consumer == franz || consumer == franzAvro || consumer == franzJSONL
}

// writesFile reports whether consumer writes the JSONL file whose lines
// count its records.
func writesFile(consumer string) bool {
	return consumer == franzJSONL || !isRaw(consumer) && !writesKafka(consumer)
}

// peerOf is the consumer whose rate and peak RSS a consumer is compared
// with in the headline columns: the unordered JSONL copy of the same
// topics, for the consumers into a JSONL file of the JSON history (the
// raw reader franz-go stays the limit, ceilingOf); "" for the others.
func peerOf(consumer string) string {
	if ceilingOf(consumer) == franz && writesFile(consumer) {
		return franzJSONL
	}
	return ""
}

// ceilingOf is the raw consumer a consumer's rate is compared with: the
// franz-go reader of the same topics.
func ceilingOf(consumer string) string {
	if consumer == franzAvro || consumer == sbAvroJSONL || consumer == sbAvroKafka {
		return franzAvro
	}
	return franz
}

// readsAvro reports whether consumer reads the Avro twins.
func readsAvro(consumer string) bool { return ceilingOf(consumer) == franzAvro }

// writesKafka reports whether a signalbox consumer's job has the Kafka sink.
func writesKafka(consumer string) bool { return consumer == sbJSONKafka || consumer == sbAvroKafka }

// profiled are the signalbox jobs profiled at -profile-size.
func profiled(c config) []string {
	if c.avro {
		return []string{sbAvroJSONL, sbAvroKafka}
	}
	return []string{sbTimestamp, sbField}
}

// jobOf is the job mode of a signalbox consumer: the vs rows run the same
// jobs as the first binary's.
func jobOf(consumer string) string {
	switch consumer {
	case vsTimestamp:
		return sbTimestamp
	case vsField:
		return sbField
	}
	return consumer
}

// sample is one consumer's run.
type sample struct {
	Consumer string  `json:"consumer"`
	Round    int     `json:"round"`
	Records  int64   `json:"records"`
	Seconds  float64 `json:"seconds"`
	MaxRSS   int64   `json:"max_rss_bytes"`
	CPU      float64 `json:"cpu_seconds"` // user + system
	// BrokerCPU is the broker process's user + system time while the
	// consumer ran: the share of the machine that serving it took.
	BrokerCPU float64 `json:"broker_cpu_seconds"`
}

func (s sample) perSecond() float64 { return float64(s.Records) / s.Seconds }

// sizeRun is every sample at one history size and shape.
type sizeRun struct {
	Size     int64         `json:"size"`
	Shape    shape         `json:"shape"`
	Records  int64         `json:"records"` // event + reference records in the history
	Produced time.Duration `json:"produce_took"`
	Samples  []sample      `json:"samples"`
	Profiles []profile     `json:"-"`
}

// profile is the top of one profiled signalbox run.
type profile struct {
	Consumer string
	Top      string
}

func run(args []string, stdout io.Writer) error {
	c, err := parseFlags(args)
	if err != nil {
		return err
	}
	if c.child != "" {
		return runChild(c, stdout)
	}
	if c.replot != "" {
		return report.Replot(c.replot, chartOf)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log, _ := zap.NewDevelopment(zap.IncreaseLevel(zap.InfoLevel))
	tmp, err := os.MkdirTemp("", "signalbox-scaling-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if c.bin == "" {
		if c.bin, err = build(tmp); err != nil {
			return err
		}
	}
	if c.vs == "" && c.vsGogc != "" {
		c.vs = c.bin
	}
	started := time.Now()
	c.loadStart = loadAvg()
	var runs []sizeRun
	for _, size := range c.sizes {
		for _, sh := range c.shapes {
			r, err := measureSize(ctx, c, size, sh, tmp, log)
			if err != nil {
				return fmt.Errorf("size %d, shape %s: %w", size, sh, err)
			}
			runs = append(runs, r)
		}
	}
	res := resultsOf(c, args, runs, started)
	sec := section(c, res, runs)
	fmt.Fprint(stdout, sec)
	if c.jsonOut != "" {
		if err := report.WriteResults(c.jsonOut, res, chartOf); err != nil {
			return err
		}
	}
	if c.out == "" {
		return nil
	}
	old, err := os.ReadFile(c.out)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	begin, end := marks(c)
	return os.WriteFile(c.out, []byte(report.Splice(string(old), begin, end, sec)), 0o644)
}

// build compiles cmd/signalbox into dir.
func build(dir string) (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil || strings.TrimSpace(string(out)) == "" || strings.TrimSpace(string(out)) == os.DevNull {
		return "", fmt.Errorf("-signalbox not given and not inside the signalbox module to build it (go env GOMOD: %v)", err)
	}
	bin := filepath.Join(dir, "signalbox")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/signalbox")
	cmd.Dir = filepath.Dir(strings.TrimSpace(string(out)))
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/signalbox: %v\n%s", err, b)
	}
	return bin, nil
}

// measureSize starts a broker process, produces a history of size event
// records into it, and runs every consumer rounds times, alternating.
func measureSize(ctx context.Context, c config, size int64, sh shape, tmp string, log *zap.Logger) (sizeRun, error) {
	w, err := workload.New(workloadOptions(size, c.avro, sh.Batch))
	if err != nil {
		return sizeRun{}, err
	}
	b, brokerPID, stopBroker, err := startBroker(sh, w, c.avro, filepath.Join(tmp, "broker.log"))
	if err != nil {
		return sizeRun{}, err
	}
	defer stopBroker()
	addrs := b.addrs
	h, err := w.ProduceHistory(ctx, b)
	if err != nil {
		return sizeRun{}, err
	}
	r := sizeRun{Size: size, Shape: sh, Records: h.Records + h.Reference, Produced: h.Took}
	log.Info("history produced", zap.Int64("records", r.Records), zap.Int64("avro_twins", h.Twins), zap.Duration("took", h.Took))
	jobs := map[string]string{}
	for _, mode := range roundOf(c) {
		if !isRaw(mode) && jobOf(mode) == mode {
			if jobs[mode], err = writeJob(tmp, mode, b, w, c); err != nil {
				return r, err
			}
		}
	}
	for _, mode := range profiled(c) {
		if jobs[mode] == "" {
			if jobs[mode], err = writeJob(tmp, mode, b, w, c); err != nil {
				return r, err
			}
		}
	}
	one := func(consumer string, round int, profilePath string) (sample, error) {
		var cmd *exec.Cmd
		sink := filepath.Join(tmp, "out.jsonl")
		switch {
		case isRaw(consumer):
			exe, err := os.Executable()
			if err != nil {
				return sample{}, err
			}
			child, topics := consumer, w.Topics()
			if consumer == franzAvro {
				child, topics = franz, append(w.AvroTwinTopics(), workload.ReferenceTopic)
			}
			args := []string{"-child", child, "-shapes", sh.String(), "-brokers", strings.Join(addrs, ","), "-topics", strings.Join(topics, ","), "-ca", b.ca}
			if writesFile(consumer) {
				os.Remove(sink)
				args = append(args, "-file", sink)
			}
			cmd = exec.CommandContext(ctx, exe, args...)
		case writesKafka(consumer):
			if err := createOutTopic(ctx, b); err != nil {
				return sample{}, err
			}
			fallthrough
		default:
			os.Remove(sink)
			args := []string{"run", "-c", jobs[jobOf(consumer)]}
			if profilePath != "" {
				args = append(args, "--cpuprofile", profilePath, "--allocprofile", allocPath(profilePath))
				if c.trace {
					args = append(args, "--trace", tracePath(profilePath))
				}
			}
			bin, gogc := c.bin, c.gogc
			if jobOf(consumer) != consumer {
				bin = c.vs
				if c.vsGogc != "" {
					gogc = c.vsGogc
				}
			}
			cmd = exec.CommandContext(ctx, bin, args...)
			cmd.Env = append(os.Environ(), passwordEnv+"="+saslPassword)
			if gogc != "" {
				cmd.Env = append(cmd.Env, "GOGC="+gogc)
			}
		}
		b0, _ := procCPU(brokerPID)
		s, err := runMeasured(cmd, filepath.Join(tmp, consumer+".log"))
		s.Consumer, s.Round = consumer, round
		if b1, perr := procCPU(brokerPID); perr == nil {
			s.BrokerCPU = (b1 - b0).Seconds()
		}
		switch {
		case err == nil && writesKafka(consumer):
			s.Records, err = drainOutTopic(ctx, b)
		case err == nil && writesFile(consumer):
			s.Records, err = countLines(sink)
			os.Remove(sink)
		}
		if err == nil && s.Records != r.Records {
			err = fmt.Errorf("%s read %d records, want %d", consumer, s.Records, r.Records)
		}
		return s, err
	}
	for round := 1; round <= c.rounds; round++ {
		for _, consumer := range roundOf(c) {
			s, err := one(consumer, round, "")
			if err != nil {
				return r, err
			}
			log.Info("measured", zap.Int64("size", size), zap.Stringer("shape", sh), zap.Int("round", round), zap.String("consumer", consumer),
				zap.Float64("records_per_s", s.perSecond()), zap.Int64("max_rss_mib", s.MaxRSS>>20))
			r.Samples = append(r.Samples, s)
		}
	}
	if size == c.profileSize {
		for _, mode := range profiled(c) {
			dir := tmp
			if c.profileDir != "" {
				dir = c.profileDir
				if err := os.MkdirAll(dir, 0o755); err != nil {
					return r, err
				}
			}
			name := mode
			if len(c.shapes) > 1 {
				name += "-" + sh.String()
			}
			path := filepath.Join(dir, name+".pprof")
			if _, err := one(mode, 0, path); err != nil {
				return r, err
			}
			top, err := exec.CommandContext(ctx, "go", "tool", "pprof", "-top", "-nodecount=25", c.bin, path).Output()
			if err != nil {
				return r, fmt.Errorf("go tool pprof: %w", err)
			}
			r.Profiles = append(r.Profiles, profile{Consumer: mode, Top: string(top)})
		}
	}
	return r, nil
}

// loadAvg is the machine's 1, 5 and 15-minute load averages
// (/proc/loadavg), or "n/a".
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "n/a"
}

// allocPath is where the allocation profile of the run profiled into
// cpuPath goes: <mode>.allocs.pprof next to <mode>.pprof.
func allocPath(cpuPath string) string { return strings.TrimSuffix(cpuPath, ".pprof") + ".allocs.pprof" }

// tracePath is where the run profiled into cpuPath writes its execution trace.
func tracePath(cpuPath string) string { return strings.TrimSuffix(cpuPath, ".pprof") + ".trace" }

// procCPU is the user + system time of process pid so far, from
// /proc/pid/stat (fields 14 and 15, in clock ticks of 1/100 s, Linux's
// USER_HZ).
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	_, rest, ok := strings.Cut(string(b), ") ") // the command may hold spaces
	f := strings.Fields(rest)
	if !ok || len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	var ticks int64
	for _, x := range f[11:13] { // utime, stime: fields 14, 15 counting from pid
		n, err := strconv.ParseInt(x, 10, 64)
		if err != nil {
			return 0, err
		}
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond, nil
}

// startBroker starts the broker process of shape sh (this binary's
// broker child) with the workload's topics, and returns where it listens
// (with registry, the schema registry's URL too), its process id and a
// function that stops it.
func startBroker(sh shape, w *workload.Workload, registry bool, logPath string) (remote, int, func(), error) {
	b := remote{shape: sh}
	if sh.TLS {
		b.ca = filepath.Join(filepath.Dir(logPath), "broker-ca.pem")
	}
	exe, err := os.Executable()
	if err != nil {
		return b, 0, nil, err
	}
	var ts []string
	for _, t := range w.AllTopics() {
		ts = append(ts, fmt.Sprintf("%s:%d", t, partitions))
	}
	args := []string{"-child", brokerChild, "-shapes", sh.String(), "-topics", strings.Join(ts, ","), "-ca", b.ca}
	if registry {
		args = append(args, "-avro")
	}
	cmd := exec.Command(exe, args...)
	logf, err := os.Create(logPath)
	if err != nil {
		return b, 0, nil, err
	}
	cmd.Stderr = logf
	out, err := cmd.StdoutPipe()
	if err != nil {
		return b, 0, nil, err
	}
	if err := cmd.Start(); err != nil {
		return b, 0, nil, err
	}
	stop := func() {
		cmd.Process.Signal(syscall.SIGTERM) //nolint:errcheck // it may be gone
		cmd.Wait()                          //nolint:errcheck // stopped by us
		logf.Close()
	}
	lines := bufio.NewReader(out)
	line, err := lines.ReadString('\n')
	if err != nil {
		stop()
		return b, 0, nil, fmt.Errorf("the broker process printed no address (see %s): %w", logPath, err)
	}
	b.addrs = strings.Split(strings.TrimSpace(line), ",")
	if err := b.trust(); err != nil { // written before it listens
		stop()
		return b, 0, nil, err
	}
	if registry {
		if line, err = lines.ReadString('\n'); err != nil {
			stop()
			return b, 0, nil, fmt.Errorf("the broker process printed no schema registry URL (see %s): %w", logPath, err)
		}
		b.url = strings.TrimSpace(line)
	}
	return b, cmd.Process.Pid, stop, nil
}

// writeJob writes the job file of a signalbox mode: every event topic with
// `time: timestamp` or `time: field` (the Avro twins: `format: avro`, the
// schema registry, time from the timestamp-millis field), the reference
// topic `time: none`, a JSONL file sink or the Kafka sink into outTopic,
// until the end offsets.
func writeJob(dir, mode string, br remote, w *workload.Workload, c config) (string, error) {
	var b strings.Builder
	q, _ := json.Marshal(br.addrs) // a YAML flow sequence
	fmt.Fprintf(&b, "brokers: %s\nstart: earliest\n", q)
	if br.shape.SASL {
		fmt.Fprintf(&b, "sasl:\n  mechanism: SCRAM-SHA-256\n  user: %s\n  password_env: %s\n", saslUser, passwordEnv)
	}
	if br.shape.TLS {
		fmt.Fprintf(&b, "tls:\n  enabled: true\n  ca_file: %s\n", br.ca)
	}
	if readsAvro(mode) {
		fmt.Fprintf(&b, "schema_registry:\n  url: %s\ninputs:\n", br.url)
		for _, t := range w.AvroTwinTopics() {
			fmt.Fprintf(&b, "  - topic: %s\n    format: avro\n    time: field\n    time_field: %s\n", t, workload.TimeField)
		}
	} else {
		b.WriteString("inputs:\n")
		for _, t := range w.EventTopics() {
			if mode == sbTimestamp {
				fmt.Fprintf(&b, "  - topic: %s\n    time: timestamp\n", t)
			} else {
				fmt.Fprintf(&b, "  - topic: %s\n    time: field\n    time_field: %s\n    time_format: unix_ms\n", t, workload.TimeField)
			}
		}
	}
	fmt.Fprintf(&b, "  - topic: %s\n    time: none\ndelay: %s\nuntil: end-offsets\nsinks:\n", workload.ReferenceTopic, c.delay)
	if writesKafka(mode) {
		fmt.Fprintf(&b, "  - type: kafka\n    topic: %s\n", outTopic)
	} else {
		fmt.Fprintf(&b, "  - type: jsonl\n    path: %s\n", filepath.Join(dir, "out.jsonl"))
	}
	if c.checkpoint > 0 {
		fmt.Fprintf(&b, "checkpoint_interval: %s\n", c.checkpoint)
	}
	path := filepath.Join(dir, mode+".yaml")
	return path, os.WriteFile(path, []byte(b.String()), 0o644)
}

// runMeasured runs cmd with its output in logPath, and returns its wall time
// and peak RSS (the child's rusage). A raw consumer child prints its record
// count as the last line of its standard output.
func runMeasured(cmd *exec.Cmd, logPath string) (sample, error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return sample{}, err
	}
	defer logf.Close()
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = io.MultiWriter(&out, logf), logf
	start := time.Now()
	err = cmd.Run()
	s := sample{Seconds: time.Since(start).Seconds()}
	if cmd.ProcessState != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			s.MaxRSS = ru.Maxrss << 10 // KiB on Linux
			s.CPU = time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
		}
	}
	if err != nil {
		return s, fmt.Errorf("%s: %w (log: %s)", strings.Join(cmd.Args, " "), err, tail(logPath))
	}
	if lines := strings.Fields(out.String()); len(lines) > 0 && cmd.Args[1] == "-child" {
		s.Records, err = strconv.ParseInt(lines[len(lines)-1], 10, 64)
	}
	return s, err
}

// tail returns the last lines of a log file.
func tail(path string) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(len(lines)-5, 0):], "\n")
}

// countLines counts the lines of a file.
func countLines(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var c lineCounter
	_, err = io.Copy(&c, f)
	return int64(c), err
}

// lineCounter is an io.Writer that counts the newlines written to it.
type lineCounter int64

func (c *lineCounter) Write(p []byte) (int, error) {
	*c += lineCounter(bytes.Count(p, []byte{'\n'}))
	return len(p), nil
}

// median returns the median of xs (of an even count, the mean of the two
// middle values).
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	return (s[(n-1)/2] + s[n/2]) / 2
}
