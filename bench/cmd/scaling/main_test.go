package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/signalbox/signalbox/bench/report"
	"github.com/signalbox/signalbox/internal/workload"
)

var (
	binOnce sync.Once
	binDir  string // removed once the tests end (TestMain)
	binPath string
	binErr  error
)

// testBinary builds signalbox once for the tests of this package.
func testBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "scaling-test-")
		if binErr != nil {
			return
		}
		binPath, binErr = build(binDir)
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// TestMain lets the test binary serve as the raw consumers' child process,
// as the command's own binary does.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "-child" {
		main()
		return
	}
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir) // the built signalbox: 65 MB a run otherwise left in the temporary directory
	}
	os.Exit(code)
}

// TestTinyRun runs the whole benchmark on a tiny history, one round, with a
// profile, into a bench.md that has other content. run fails if any
// consumer reads a different number of records than the history holds;
// the test checks the section's rows (the -vs rows too: -vs-gogc alone runs
// the same binary again with another GOGC), the profile, the kept CPU and
// allocation profiles and execution traces, and the splice. It asserts no
// timing.
func TestTinyRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds signalbox and runs a broker process")
	}
	md := filepath.Join(t.TempDir(), "bench.md")
	if err := os.WriteFile(md, []byte("# Benchmarks\n\nhand-written notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := testBinary(t)
	var out strings.Builder
	profiles := t.TempDir()
	js := filepath.Join(t.TempDir(), "scaling.json")
	if err := run([]string{"-sizes", "2400", "-rounds", "1", "-profile-size", "2400", "-profile-dir", profiles, "-trace", "-out", md, "-signalbox", bin, "-vs-gogc", "100",
		"-shapes", "16KiB+2brokers,1MiB+sasl+tls", "-json", js}, &out); err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	s := string(doc)
	if !strings.HasPrefix(s, "# Benchmarks\n\nhand-written notes\n") || !strings.Contains(s, beginMark) || !strings.Contains(s, out.String()) {
		t.Fatalf("bench.md not spliced:\n%s", s)
	}

	if !strings.Contains(out.String(), "run with GOGC=100") {
		t.Errorf("the A/B note does not say the -vs runs' GOGC:\n%s", out.String())
	}
	for _, c := range consumers {
		for _, sh := range []string{"| 16KiB | none | 2 |", "| 1MiB | SCRAM-SHA-256, TLS | 1 |"} {
			if !strings.Contains(out.String(), "| 3K "+sh+" "+labels[c]+" |") {
				t.Errorf("no row for %s in shape %s (3400 records):\n%s", c, sh, out.String())
			}
		}
	}
	res, err := report.ReadResults[results](js)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 2*len(consumers) || len(res.Runs) != 2 || !strings.Contains(res.Provenance.Command, "-shapes 16KiB+2brokers,1MiB+sasl+tls") {
		t.Errorf("results file: %d rows, %d runs, command %q; want %d rows of 2 shapes", len(res.Rows), len(res.Runs), res.Provenance.Command, 2*len(consumers))
	}
	for _, r := range res.Rows { // the headline: each JSONL job against the copy of the same round
		if hasPeer := r.PeerRatio > 0 && r.PeerRSS > 0; hasPeer != (peerOf(r.Consumer) != "") {
			t.Errorf("%s row: ratio %.2f, peak RSS %.2f to the JSONL copy; want them exactly when it has that peer", r.Consumer, r.PeerRatio, r.PeerRSS)
		}
	}
	if !strings.Contains(out.String(), "| × copy | × franz-go |") {
		t.Errorf("the table has no column against the JSONL copy:\n%s", out.String())
	}
	svg, err := os.ReadFile(report.SVGPath(js))
	if err != nil || !bytes.Equal(svg, chartOf(res)) {
		t.Errorf("the chart beside the results is not drawn from them (%v)", err)
	}
	if !strings.Contains(out.String(), "![records/s and peak RSS against history size, per consumer and shape](scaling.svg)") {
		t.Errorf("the section does not show the chart:\n%s", out.String())
	}
	if n := strings.Count(out.String(), "flat  flat%"); n != 4 {
		t.Errorf("%d CPU profiles in the section, want one per mode and shape (4):\n%s", n, out.String())
	}
	for _, mode := range []string{sbTimestamp, sbField} {
		for _, name := range []string{mode + "-16KiB+2brokers.pprof", mode + "-1MiB+sasl+tls.allocs.pprof", mode + "-1MiB+sasl+tls.trace"} {
			if st, err := os.Stat(filepath.Join(profiles, name)); err != nil || st.Size() == 0 {
				t.Errorf("profile %s not kept in -profile-dir (%v)", name, err)
			}
		}
	}
}

// TestProcCPU: the broker's CPU column reads /proc/PID/stat's utime and
// stime; for this process it rises with work done and never exceeds the
// CPU time Go's runtime reports for it, and a missing process is an error.
func TestProcCPU(t *testing.T) {
	before, err := procCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	var ru syscall.Rusage
	deadline := time.Now().Add(2 * time.Second)
	for x := 0; ; x++ { // burn CPU until the kernel's tick count moves
		if x%1_000_000 == 0 {
			if now, _ := procCPU(os.Getpid()); now > before || time.Now().After(deadline) {
				break
			}
		}
	}
	after, err := procCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	rusage := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	if after <= before || after > rusage+20*time.Millisecond {
		t.Fatalf("procCPU %v → %v; rusage says %v", before, after, rusage)
	}
	if _, err := procCPU(-1); err == nil {
		t.Fatal("procCPU of a missing process: no error")
	}
}

// TestAvroBroker: in the schema'd round the broker process serves a schema
// registry whose URL the harness reads; the Avro twins produced there are
// what the franz-go child counts; the Kafka sink's output topic is created,
// counted by its end offsets and deleted.
func TestAvroBroker(t *testing.T) {
	if testing.Short() {
		t.Skip("builds signalbox and runs a broker process")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	o := workloadOptions(240, true, 0)
	w, err := workload.New(o)
	if err != nil {
		t.Fatal(err)
	}
	b, _, stop, err := startBroker(defaultShape, w, true, filepath.Join(t.TempDir(), "broker.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if !strings.HasPrefix(b.url, "http://") {
		t.Fatalf("registry URL %q", b.url)
	}
	h, err := w.ProduceHistory(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if h.Twins != h.Records || h.Records != 240 {
		t.Fatalf("history %+v: want 240 records and as many twins", h)
	}
	n, err := franzConsume(ctx, b, append(w.AvroTwinTopics(), workload.ReferenceTopic))
	if err != nil || n != h.Twins+h.Reference {
		t.Fatalf("franz-go read %d records of the twins and the reference topic (%v), want %d", n, err, h.Twins+h.Reference)
	}
	for range 2 { // a second run finds the topic gone and creates it afresh
		if err := createOutTopic(ctx, b); err != nil {
			t.Fatal(err)
		}
		cl, err := kgo.NewClient(append(b.ClientOptions(), kgo.DefaultProduceTopic(outTopic))...)
		if err != nil {
			t.Fatal(err)
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("a")}, &kgo.Record{Value: []byte("b")}, &kgo.Record{Value: []byte("c")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		cl.Close()
		if n, err := drainOutTopic(ctx, b); err != nil || n != 3 {
			t.Fatalf("the output topic holds %d records (%v), want 3", n, err)
		}
	}
}

// TestWriteJobAvro: the Avro jobs read every twin with format avro and the
// registry, the reference topic with time none, into the sink of their mode.
func TestWriteJobAvro(t *testing.T) {
	w, err := workload.New(workloadOptions(240, true, 0))
	if err != nil {
		t.Fatal(err)
	}
	b := remote{addrs: []string{"127.0.0.1:9"}, url: "http://127.0.0.1:8", shape: defaultShape}
	dir := t.TempDir()
	for mode, want := range map[string][]string{
		sbAvroJSONL: {"url: http://127.0.0.1:8", "topic: avro-events-07\n    format: avro\n    time: field\n    time_field: ts\n", "type: jsonl"},
		sbAvroKafka: {"format: avro", "type: kafka\n    topic: " + outTopic},
		sbJSONKafka: {"topic: events-07\n    time: field", "type: kafka"},
	} {
		path, err := writeJob(dir, mode, b, w, config{delay: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		job, _ := os.ReadFile(path)
		for _, s := range want {
			if !strings.Contains(string(job), s) {
				t.Errorf("%s job lacks %q:\n%s", mode, s, job)
			}
		}
		if readsAvro(mode) == strings.Contains(string(job), "topic: events-0") {
			t.Errorf("%s job reads the wrong topics:\n%s", mode, job)
		}
	}
}

// TestTinyAvroRun runs the schema'd round on a tiny history, one round,
// with a profile: run fails if any consumer (the Avro jobs into JSONL and
// into Kafka among them) reads a different number of records than the
// history holds. The test checks every row, the Avro-against-JSON table,
// the two profiles and that the section goes between its own markers,
// leaving the issue-9 section alone. It asserts no timing.
func TestTinyAvroRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds signalbox and runs a broker process")
	}
	md := filepath.Join(t.TempDir(), "bench.md")
	other := beginMark + "\nthe issue-9 section\n" + endMark + "\n"
	if err := os.WriteFile(md, []byte("# Benchmarks\n\n"+other), 0o644); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := run([]string{"-avro", "-sizes", "2400", "-rounds", "1", "-profile-size", "2400", "-out", md, "-signalbox", testBinary(t)}, &out); err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	s := string(doc)
	if !strings.Contains(s, other) || !strings.Contains(s, avroBeginMark+"\n"+out.String()+avroEndMark) {
		t.Fatalf("bench.md not spliced between the Avro markers:\n%s", s)
	}
	for _, c := range avroConsumers {
		if !strings.Contains(out.String(), "| 3K | 16KiB | none | 1 | "+label(config{avro: true}, c)+" |") {
			t.Errorf("no row for %s (3400 records):\n%s", c, out.String())
		}
	}
	for _, sink := range []string{"JSONL file", "Kafka"} {
		if !strings.Contains(out.String(), "| 3K | "+sink+" | ") {
			t.Errorf("no Avro-against-JSON row for the %s sink:\n%s", sink, out.String())
		}
	}
	if n := strings.Count(out.String(), "flat  flat%"); n != 2 {
		t.Errorf("%d CPU profiles in the section, want 2:\n%s", n, out.String())
	}
}

// TestJSONLCopyWritesTheSinksLines: the peer without ordering writes, for
// every record of the history, the very line signalbox's `time:
// timestamp` job writes into its JSONL sink (the same fields and bytes;
// only the order of the lines may differ), and counts them.
func TestJSONLCopyWritesTheSinksLines(t *testing.T) {
	if testing.Short() {
		t.Skip("builds signalbox and runs a broker process")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	w, err := workload.New(workloadOptions(2400, false, 0))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	b, _, stop, err := startBroker(defaultShape, w, false, filepath.Join(dir, "broker.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	h, err := w.ProduceHistory(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	copied := filepath.Join(dir, "copy.jsonl")
	n, err := jsonlCopy(ctx, b, w.Topics(), copied)
	if want := h.Records + h.Reference; err != nil || n != want {
		t.Fatalf("the copy wrote %d records (%v), want %d", n, err, want)
	}
	job, err := writeJob(dir, sbTimestamp, b, w, config{delay: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.CommandContext(ctx, testBinary(t), "run", "-c", job).CombinedOutput(); err != nil {
		t.Fatalf("signalbox run: %v\n%s", err, out)
	}
	lines := func(path string) []string {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		ls := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
		slices.Sort(ls)
		return ls
	}
	got, want := lines(copied), lines(filepath.Join(dir, "out.jsonl"))
	if int64(len(got)) != n || !slices.Equal(got, want) {
		i := 0
		for i < min(len(got), len(want))-1 && got[i] == want[i] {
			i++
		}
		t.Fatalf("the copy's %d lines are not signalbox's %d; the first that differ (sorted):\n%s\n%s", len(got), len(want), got[i], want[i])
	}
	for _, field := range []string{`"topic":`, `"partition":`, `"offset":`, `"key":`, `"event_time":`, `"event_time_ms":`, `"value":`} {
		if !strings.Contains(got[0], field) {
			t.Errorf("the copy's line lacks %s: %s", field, got[0])
		}
	}
}
