package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/signalbox/signalbox/bench/harness"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "salesgen:", err)
		os.Exit(2)
	}
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("salesgen", flag.ContinueOnError)
	n := fs.Int("n", 4_000_000, "sales to write, over all partitions")
	parts := fs.Int("partitions", 3, "partitions: one file each")
	out := fs.String("out", "", "directory to write into (required)")
	brokers := fs.String("brokers", "127.0.0.1:19092", "the jobs' broker")
	topic := fs.String("topic", "sales", "the jobs' topic")
	keys := fs.Int("keys", 1000, "distinct skus")
	products := fs.Bool("products", false, "also write products.txt, one version of each sku for the topic products (a minute before the first sale, event time in ts), and lookup.yaml: the plain job enriching each sale with lookup(\"products\", value.sku) (issue 38)")
	caFile := fs.String("tls-ca", "", "the jobs speak TLS to the broker, trusting this PEM file (signalbox broker --tls-cert-out)")
	saslUser := fs.String("sasl-user", "", "the jobs authenticate with SCRAM-SHA-256 as this user (signalbox broker --sasl-user)")
	saslEnv := fs.String("sasl-password-env", "", "with -sasl-user: the environment variable holding the password")
	produce := fs.Bool("produce", false, "also produce the sales into -topic at -brokers with franz-go (the jobs' tls and sasl too), each file into its partition: for a broker that librdkafka (kcat) cannot authenticate to")
	batch := fs.Int("batch", 1<<20, "with -produce: the producer's batch bytes (ProducerBatchMaxBytes)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if (*saslUser == "") != (*saslEnv == "") {
		return fmt.Errorf("-sasl-user and -sasl-password-env go together")
	}
	if *out == "" || *n < *parts || *parts < 1 || *keys < 1 {
		return fmt.Errorf("-out is required, -n must be at least -partitions (at least 1), and -keys at least 1")
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	if err := writeSales(*out, *n, *parts, *keys); err != nil {
		return err
	}
	jobs := []struct{ name, extra string }{{"plain.yaml", ""}, {"window.yaml", windowSection(*out)}, {"process.yaml", processSection}}
	if *products {
		if err := writeProducts(*out, *keys); err != nil {
			return err
		}
		jobs = append(jobs, struct{ name, extra string }{"lookup.yaml", lookupSection})
	}
	for _, j := range jobs {
		if err := os.WriteFile(filepath.Join(*out, j.name), []byte(job(*brokers, *topic, *out)+security(*caFile, *saslUser, *saslEnv)+j.extra), 0o644); err != nil {
			return err
		}
	}
	if *produce {
		if err := produceSales(*out, *parts, *brokers, *topic, *caFile, *saslUser, *saslEnv, *batch, *products); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "%d sales in %s/sales0.txt .. sales%d.txt; jobs %s/plain.yaml, window.yaml and process.yaml\n", *n, *out, *parts-1, *out)
	return nil
}

// saleBase is the event time the sales start from.
var saleBase = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC).UnixMilli()

// writeSales writes n sales of keys skus over parts files, each in
// event-time order.
func writeSales(dir string, n, parts, keys int) error {
	rnd := rand.New(rand.NewPCG(7, 37))
	base := saleBase
	step := int64(200*60_000*parts) / int64(n)
	ws := make([]*bufio.Writer, parts)
	fs := make([]*os.File, parts)
	ts := make([]int64, parts)
	for p := range parts {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("sales%d.txt", p)))
		if err != nil {
			return err
		}
		fs[p], ws[p], ts[p] = f, bufio.NewWriterSize(f, 1<<20), base
	}
	for i := range n {
		p := i % parts
		ts[p] += rnd.Int64N(2*step + 1)
		sku := fmt.Sprintf("sku-%03d", rnd.IntN(keys))
		fmt.Fprintf(ws[p], "%s|{\"id\":\"o%d\",\"sku\":%q,\"ts\":%d,\"qty\":%d,\"price\":%d.%02d,\"status\":\"ok\"}\n",
			sku, i, sku, ts[p], rnd.IntN(10), 1+rnd.IntN(99), rnd.IntN(100))
	}
	for p := range parts {
		if err := ws[p].Flush(); err != nil {
			return err
		}
		if err := fs[p].Close(); err != nil {
			return err
		}
	}
	return nil
}

// writeProducts writes products.txt: one version of each of keys skus,
// lines key|value, a minute before the first sale.
func writeProducts(dir string, keys int) error {
	f, err := os.Create(filepath.Join(dir, "products.txt"))
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	for i := range keys {
		sku := fmt.Sprintf("sku-%03d", i)
		fmt.Fprintf(w, "%s|{\"sku\":%q,\"name\":\"product %d\",\"price\":%d.%02d,\"ts\":%d}\n", sku, sku, i, 1+i%99, i%100, saleBase-60_000)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// produceSales produces each partition's file (lines key|value) into
// that partition of topic, and with products products.txt into the topic
// products, line i into partition i % parts, over TLS and SCRAM-SHA-256
// when asked.
func produceSales(dir string, parts int, brokers, topic, caFile, user, passwordEnv string, batch int, products bool) error {
	opts := []kgo.Opt{kgo.SeedBrokers(strings.Split(brokers, ",")...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchMaxBytes(int32(batch)), kgo.MaxBufferedRecords(100_000)}
	if caFile != "" {
		trust, err := harness.TrustCA(caFile)
		if err != nil {
			return fmt.Errorf("-tls-ca: %w", err)
		}
		opts = append(opts, trust)
	}
	if user != "" {
		pw := os.Getenv(passwordEnv)
		if pw == "" {
			return fmt.Errorf("-sasl-password-env: the environment variable %s is unset or empty", passwordEnv)
		}
		opts = append(opts, kgo.SASL(scram.Auth{User: user, Pass: pw}.AsSha256Mechanism()))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx := context.Background()
	var (
		mu    sync.Mutex
		first error
	)
	done := func(_ *kgo.Record, err error) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil && first == nil {
			first = err
		}
	}
	send := func(file, topic string, partition func(i int) int32) error {
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			return err
		}
		i := 0
		for line := range bytes.Lines(b) {
			k, v, _ := bytes.Cut(bytes.TrimSuffix(line, []byte("\n")), []byte("|"))
			cl.Produce(ctx, &kgo.Record{Topic: topic, Partition: partition(i), Key: k, Value: v}, done)
			i++
		}
		return nil
	}
	for p := range parts {
		if err := send(fmt.Sprintf("sales%d.txt", p), topic, func(int) int32 { return int32(p) }); err != nil {
			return err
		}
	}
	if products {
		if err := send("products.txt", "products", func(i int) int32 { return int32(i % parts) }); err != nil {
			return err
		}
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	return first
}

// job is the plain job: the topic with event time in ts, into raw.jsonl
// in dir, until the end offsets, no admin server.
func job(brokers, topic, dir string) string {
	return fmt.Sprintf(`brokers: [%s]
start: earliest
inputs:
  - {topic: %s, time: field, time_field: ts, time_format: unix_ms}
until: end-offsets
admin: {addr: "off"}
sinks:
  - {type: jsonl, path: %s}
`, brokers, topic, filepath.Join(dir, "raw.jsonl"))
}

// security is the jobs' tls and sasl sections, empty without them.
func security(caFile, user, passwordEnv string) string {
	var s string
	if caFile != "" {
		s += fmt.Sprintf("tls: {enabled: true, ca_file: %s}\n", caFile)
	}
	if user != "" {
		s += fmt.Sprintf("sasl: {mechanism: SCRAM-SHA-256, user: %s, password_env: %s}\n", user, passwordEnv)
	}
	return s
}

// processSection is issue 36's filter and three-field map.
const processSection = `process:
  filter: 'value.status != "test"'
  map: '{"id": value.id, "sku": value.sku, "total": value.qty * value.price}'
`

// lookupSection is issue 38's table of products and its lookup.
const lookupSection = `tables:
  - {name: products, topic: products, key: key, format: json, time: field, time_field: ts, time_format: unix_ms}
process:
  map: '{"id": value.id, "product": lookup("products", value.sku)}'
`

// windowSection is issue 37's per-minute window per sku, into minute.jsonl.
func windowSection(dir string) string {
	return fmt.Sprintf(`windows:
  - name: per_minute
    key: value.sku
    tumbling: 1m
    aggregate: {count: count(), qty: sum(value.qty), max_qty: max(value.qty)}
    sinks:
      - {type: jsonl, path: %s}
`, filepath.Join(dir, "minute.jsonl"))
}
