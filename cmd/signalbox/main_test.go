package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sr"
	"go.uber.org/zap"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/embedded"
	"github.com/signalbox/signalbox/internal/admin"
	"github.com/signalbox/signalbox/internal/startup/startuptest"
	"github.com/signalbox/signalbox/internal/waitpar"
	"github.com/signalbox/signalbox/watermark"
)

// hangGuard bounds a test that talks to a broker; it is never expected to
// fire.
const hangGuard = 45 * time.Second

// TestMain: the tests that call t.Parallel here wait on start-up timeouts,
// a demo's live phase and a Prometheus scrape, not on the CPU: they all run
// at once (internal/waitpar).
func TestMain(m *testing.M) { os.Exit(waitpar.Main(m, 8)) }

// cli runs the CLI in-process.
func cli(t *testing.T, ctx context.Context, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = execute(ctx, args, &out, &errb)
	return code, out.String(), errb.String()
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestValidateGoodFile(t *testing.T) {
	md, err := os.ReadFile("../../docs/config.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindSubmatch(md)
	if m == nil {
		t.Fatal("no yaml block in docs/config.md")
	}
	code, out, errs := cli(t, context.Background(), "validate", "-c", writeFile(t, "job.yaml", string(m[1])))
	if code != 0 || out != "ok\n" {
		t.Fatalf("validate the docs example: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

func TestValidateBadFile(t *testing.T) {
	path := writeFile(t, "job.yaml", `brokers: [localhost:9092]
inputs:
  - {topic: a, time: field}
sinks: [{type: foo}]
delai: 2s
`)
	code, out, _ := cli(t, context.Background(), "validate", "-c", path)
	if code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	want := []string{
		"delai: unknown field (did you mean delay?) (line 5)",
		"inputs[0].time_field: required when time is field (line 3)",
		`sinks[0].type: "foo" is not one of jsonl, kafka, postgres, bulk (line 4)`,
	}
	if len(lines) != len(want) {
		t.Fatalf("got %d lines, want %d:\n%s", len(lines), len(want), out)
	}
	for i, w := range want {
		if lines[i] != path+": "+w {
			t.Errorf("line %d = %q, want %q", i, lines[i], path+": "+w)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"validate"}, // -c missing
		{"validate", "-c", "/nonexistent/job.yaml"}, // unreadable
		{"frobnicate"},
		{"run", "--no-such-flag"},
		{"--log-format", "xml", "validate", "-c", "x"},
		{"broker", "--topic", "t:zero"},
		{"broker", "--brokers", "0"},
		{"broker", "--registry-addr", "8081"},
		{"demo", "--admin-addr", "9321"},
	} {
		if code, _, errs := cli(t, context.Background(), args...); code != 2 {
			t.Errorf("%q: exit %d, want 2 (stderr %q)", args, code, errs)
		}
	}
}

func TestRunInvalidJobIsAConfigError(t *testing.T) {
	path := writeFile(t, "job.yaml", "brokers: []\n")
	code, _, errs := cli(t, context.Background(), "run", "-c", path)
	if code != 2 || !strings.Contains(errs, "brokers: at least one broker is required") {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
}

// outLine is one line of the jsonl sink's output.
type outLine struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	EventTime int64  `json:"event_time_ms"`
	Late      bool   `json:"late"`
}

// setup starts a broker, produces JSON records into two topics, each
// partition in event-time order but the topics interleaved out of order (a
// stock record produced last can be older than every order), and writes a
// job file with the given until into a jsonl file. It returns the job file,
// the output file and the number of records.
func setup(t *testing.T, ctx context.Context, until string) (job, out string, n int) {
	t.Helper()
	c, err := embedded.Start(embedded.WithTopic("orders", 2), embedded.WithTopic("stock", 2))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	const perPartition = 50
	var recs []*kgo.Record
	for _, topic := range []string{"orders", "stock"} {
		for p := range int32(2) {
			for i := range perPartition {
				ts := 1_700_000_000_000 + int64(i)*1000 + int64(p)*7
				if topic == "stock" {
					ts -= 500
				}
				key := fmt.Sprintf("item-%d", i%5)
				recs = append(recs, embedded.Record(topic, p, key,
					fmt.Sprintf(`{"ts":%d,"item":%q,"topic":%q}`, ts, key, topic)))
			}
		}
	}
	if err := c.Produce(ctx, recs...); err != nil {
		t.Fatal(err)
	}
	out = filepath.Join(t.TempDir(), "out.jsonl")
	job = writeFile(t, "job.yaml", fmt.Sprintf(`
brokers: [%s]
inputs:
  - {topic: orders, time: field, time_field: ts, key: field, key_field: item}
  - {topic: stock, time: field, time_field: ts, time_format: unix_ms}
delay: 100ms
until: %s
sinks:
  - {type: jsonl, path: %s}
checkpoint_interval: 100ms
`, c.Addrs()[0], until, out))
	return job, out, len(recs)
}

// readOutput reads the jsonl output; a missing file is empty.
func readOutput(t *testing.T, path string) []outLine {
	t.Helper()
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var got []outLine
	for _, l := range strings.SplitAfter(string(data), "\n") {
		if !strings.HasSuffix(l, "\n") {
			break // a line being written
		}
		var o outLine
		if err := json.Unmarshal([]byte(l), &o); err != nil {
			t.Fatalf("bad line %q: %v", l, err)
		}
		got = append(got, o)
	}
	return got
}

// checkOutput checks that got holds n distinct records, none late, in
// event-time order.
func checkOutput(t *testing.T, got []outLine, n int) {
	t.Helper()
	seen := map[string]bool{}
	for _, l := range got {
		id := fmt.Sprintf("%s/%d@%d", l.Topic, l.Partition, l.Offset)
		if seen[id] {
			t.Errorf("%s written twice", id)
		}
		seen[id] = true
		if l.Late {
			t.Errorf("late record %+v", l)
		}
	}
	if len(got) != n {
		t.Fatalf("output has %d records, want %d", len(got), n)
	}
	if !slices.IsSortedFunc(got, func(a, b outLine) int { return int(a.EventTime - b.EventTime) }) {
		t.Fatalf("output is not in event-time order: %+v", got)
	}
}

// TestRunEndToEnd runs a bounded job: it must exit 0 by itself with every
// record written, in event-time order.
func TestRunEndToEnd(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	job, out, n := setup(t, ctx, "end-offsets")
	code, _, errs := cli(t, ctx, "--log-level", "warn", "run", "-c", job)
	if code != 0 {
		t.Fatalf("run: exit %d\n%s", code, errs)
	}
	checkOutput(t, readOutput(t, out), n)
}

// TestRunRefusesForeignOutputFile: the jsonl output is a user's file whose
// last line has no newline. The job must not cut it: it exits 1 with one
// "signalbox:" prefix (not "signalbox: signalbox:") and names the file.
func TestRunRefusesForeignOutputFile(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	job, out, _ := setup(t, ctx, "end-offsets")
	const users = "{\"mine\":1}\n{\"mine\":2}"
	if err := os.WriteFile(out, []byte(users), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := cli(t, ctx, "--log-level", "error", "run", "-c", job)
	if code != 1 || !strings.HasPrefix(errs, "signalbox: ") || strings.Contains(errs, "signalbox: signalbox:") ||
		!strings.Contains(errs, out+": its last line has no final newline") {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	if got, _ := os.ReadFile(out); string(got) != users {
		t.Fatalf("the user's file became %q", got)
	}
}

// TestRunLiveStopsGracefully runs a live job until everything is written,
// then cancels it as a signal would: it must exit 0.
func TestRunLiveStopsGracefully(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	job, out, n := setup(t, ctx, "live")
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan int, 1)
	var errs bytes.Buffer
	go func() { done <- execute(runCtx, []string{"--log-level", "warn", "run", "-c", job}, io.Discard, &errs) }()
	for len(readOutput(t, out)) < n {
		select {
		case code := <-done:
			t.Fatalf("live run exited by itself with %d\n%s", code, errs.String())
		case <-ctx.Done():
			t.Fatalf("hang guard: output has %d of %d records", len(readOutput(t, out)), n)
		case <-time.After(20 * time.Millisecond):
		}
	}
	stop()
	if code := <-done; code != 0 {
		t.Fatalf("run stopped by cancellation: exit %d\n%s", code, errs.String())
	}
	checkOutput(t, readOutput(t, out), n)
}

// brokerCmd runs `signalbox broker` with args until ctx ends; its standard
// output is read from lines, and its exit code arrives on done.
func brokerCmd(ctx context.Context, args ...string) (lines *bufio.Reader, done chan int) {
	pr, pw := io.Pipe()
	done = make(chan int, 1)
	go func() {
		done <- execute(ctx, append([]string{"--log-level", "warn", "broker", "--addr", "127.0.0.1:0"}, args...), pw, io.Discard)
		pw.Close()
	}()
	return bufio.NewReader(pr), done
}

func TestBrokerCommand(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	lines, done := brokerCmd(ctx, "--topic", "t:2")
	addr, err := lines.ReadString('\n')
	if err != nil {
		t.Fatalf("no address printed: %v", err)
	}
	addr = strings.TrimSpace(addr)
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("broker at %q: %v", addr, err)
	}
	conn.Close()
	url, err := lines.ReadString('\n')
	if err != nil {
		t.Fatalf("no schema registry URL printed: %v", err)
	}
	checkRegistry(ctx, t, strings.TrimSpace(url))
	go io.Copy(io.Discard, lines)
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("broker exit %d", code)
	}
}

// checkRegistry registers a schema at the registry at url over HTTP and
// fetches it back by id.
func checkRegistry(ctx context.Context, t *testing.T, url string) {
	t.Helper()
	cl, err := sr.NewClient(sr.URLs(url))
	if err != nil {
		t.Fatalf("registry URL %q: %v", url, err)
	}
	const schema = `{"type":"record","name":"Sale","fields":[{"name":"sku","type":"string"}]}`
	ss, err := cl.CreateSchema(ctx, "sales-value", sr.Schema{Schema: schema})
	if err != nil {
		t.Fatalf("registering at %q: %v", url, err)
	}
	if got, err := cl.SchemaByID(ctx, ss.ID); err != nil || got.Schema != schema {
		t.Fatalf("schema %d fetched back as %+v, %v", ss.ID, got, err)
	}
}

// With --registry-addr off only the brokers' addresses are printed.
func TestBrokerCommandNoRegistry(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	lines, done := brokerCmd(ctx, "--registry-addr", "off")
	if _, err := lines.ReadString('\n'); err != nil {
		t.Fatalf("no address printed: %v", err)
	}
	cancel()
	rest, _ := io.ReadAll(lines)
	if code := <-done; code != 0 || len(rest) != 0 {
		t.Fatalf("broker exit %d; printed after the addresses: %q", code, rest)
	}
}

func TestRegistryListen(t *testing.T) {
	for _, c := range []struct{ addr, flag, want string }{
		{"127.0.0.1:9092", "", "127.0.0.1:8081"},
		{"127.0.0.1:0", "", "127.0.0.1:0"},
		{"0.0.0.0:9092", "127.0.0.1:18081", "127.0.0.1:18081"},
		{"127.0.0.1:9092", "off", ""},
	} {
		if got, err := registryListen(c.addr, c.flag); err != nil || got != c.want {
			t.Errorf("registryListen(%q, %q) = %q, %v; want %q", c.addr, c.flag, got, err, c.want)
		}
	}
}

func TestStatusCommand(t *testing.T) {
	stats := func() signalbox.Stats {
		return signalbox.Stats{
			Watermark: watermark.MinTime,
			Holders:   []watermark.Hold{{ID: watermark.ID{Input: "orders", Partition: 1}, State: "replaying", Behind: 42, MaxEventTime: watermark.MinTime, Contribution: watermark.MinTime}},
		}
	}
	srv := httptest.NewServer(admin.Handler(admin.Options{Stats: stats, Now: time.Now, Logger: zap.NewNop()}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	code, out, errs := cli(t, context.Background(), "status", "--addr", addr)
	if code != 0 || !strings.Contains(out, "watermark  -inf") || !strings.Contains(out, "held by    orders/1  replaying, 42 behind") ||
		!strings.Contains(out, "nothing delivered yet, so it holds the watermark at -inf") {
		t.Fatalf("status: exit %d\n%s\n%s", code, out, errs)
	}
	if code, out, _ := cli(t, context.Background(), "status", "--addr", srv.URL+"/"); code != 0 || !strings.Contains(out, "orders/1") {
		t.Fatalf("status --addr URL: exit %d\n%s", code, out)
	}
	code, out, _ = cli(t, context.Background(), "status", "--json", "--addr", addr)
	var doc map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil || doc["watermark_ms"] != nil {
		t.Fatalf("status --json: exit %d\n%s", code, out)
	}
	srv.Close()
	if code, _, _ := cli(t, context.Background(), "status", "--addr", addr); code != 1 {
		t.Fatalf("status of a stopped job: exit %d, want 1", code)
	}
}

// TestBadAdminAddrKeepsTheState: a malformed --admin-addr is a usage error
// found before --reset-state deletes anything: the state directory and its
// files are still there.
func TestBadAdminAddrKeepsTheState(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	if err := os.MkdirAll(state, 0o755); err != nil {
		t.Fatal(err)
	}
	keep := filepath.Join(state, "MANIFEST-000001")
	if err := os.WriteFile(keep, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	job := writeFile(t, "job.yaml", "brokers: [127.0.0.1:1]\ninputs: [{topic: a}]\nsinks: [{type: jsonl, path: "+filepath.Join(dir, "out.jsonl")+"}]\nstate: {dir: "+state+"}\n")
	code, _, errs := cli(t, context.Background(), "run", "-c", job, "--reset-state", "--admin-addr", "9321")
	if code != 2 || !strings.Contains(errs, "--admin-addr") {
		t.Fatalf("exit %d, stderr %q; want 2 naming --admin-addr", code, errs)
	}
	if _, err := os.Stat(keep); err != nil {
		t.Fatalf("the state was touched: %v", err)
	}
}

// TestRunThatNeverStartedLogsNoWatermark: a job that fails before its
// engine starts logs its watermark as -inf, not as the Unix epoch.
func TestRunThatNeverStartedLogsNoWatermark(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close() // nothing listens: the connection is refused
	job := writeFile(t, "job.yaml", "brokers: ["+addr+"]\ninputs: [{topic: orders, time: timestamp}]\ndelay: 1s\nsinks: [{type: jsonl}]\n")
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	code, _, errs := cli(t, ctx, "run", "-c", job, "--admin-addr", "off")
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s", code, errs)
	}
	var stopped string
	for _, line := range strings.Split(errs, "\n") {
		if strings.Contains(line, "stopped") {
			stopped = line
		}
	}
	if !strings.Contains(stopped, "-inf") || strings.Contains(stopped, "1970") {
		t.Fatalf("stopped line %q: want watermark -inf\n%s", stopped, errs)
	}
}

// TestRunSilentBrokerFailsWithinStartupTimeout: `run` against a broker that
// accepts connections and never answers exits within startup_timeout (one
// deadline for the Kafka sink and the source), naming the broker.
func TestRunSilentBrokerFailsWithinStartupTimeout(t *testing.T) {
	t.Parallel()
	addr := startuptest.SilentBroker(t)
	const bound = 2 * time.Second
	for _, sink := range []string{"{type: jsonl}", "{type: kafka, topic: out}"} {
		t.Run(sink, func(t *testing.T) {
			t.Parallel()
			job := writeFile(t, "job.yaml", "brokers: ["+addr+"]\nstartup_timeout: 2s\ngroup: g\n"+
				"inputs: [{topic: orders, time: timestamp}]\ndelay: 1s\nsinks: ["+sink+"]\n")
			ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
			defer cancel()
			start := time.Now()
			code, _, errs := cli(t, ctx, "run", "-c", job, "--admin-addr", "off")
			took := time.Since(start)
			if code != 1 || !strings.Contains(errs, "start-up timed out") || !strings.Contains(errs, addr) {
				t.Fatalf("exit %d after %v, want 1 naming %s and the start-up timeout\n%s", code, took, addr, errs)
			}
			if took > 5*bound {
				t.Errorf("run failed after %v; startup_timeout is %v", took, bound)
			}
		})
	}
}

// TestRunSinkAndSourceShareOneStartupDeadline: the Kafka sink's producer
// initialisation and the source's snapshot each answer within
// startup_timeout but together exceed it, and `run` fails; with a larger
// startup_timeout the same job runs to the end.
func TestRunSinkAndSourceShareOneStartupDeadline(t *testing.T) {
	t.Parallel()
	const step = 1500 * time.Millisecond
	for _, bound := range []string{"2s", "30s"} {
		t.Run(bound, func(t *testing.T) {
			t.Parallel()
			c, err := embedded.Start(embedded.WithTopic("orders", 1), embedded.WithTopic("out", 1))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			kf := c.Kfake()
			for _, key := range []kmsg.Key{kmsg.InitProducerID, kmsg.ListOffsets} {
				kf.ControlKey(int16(key), func(kmsg.Request) (kmsg.Response, error, bool) {
					kf.KeepControl()
					kf.SleepControl(func() { time.Sleep(step) }) // a slow broker is the scenario, not a wait
					return nil, nil, false
				})
			}
			job := writeFile(t, "job.yaml", "brokers: ["+c.Addrs()[0]+"]\nstartup_timeout: "+bound+"\nuntil: end-offsets\n"+
				"start: latest\ninputs: [{topic: orders, time: timestamp}]\ndelay: 1s\nsinks: [{type: kafka, topic: out}]\n")
			ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
			defer cancel()
			code, _, errs := cli(t, ctx, "run", "-c", job, "--admin-addr", "off")
			switch {
			case bound == "2s" && (code != 1 || !strings.Contains(errs, "start-up timed out")):
				t.Fatalf("exit %d, want 1 with a start-up timeout\n%s", code, errs)
			case bound != "2s" && code != 0:
				t.Fatalf("exit %d, want 0\n%s", code, errs)
			}
		})
	}
}
