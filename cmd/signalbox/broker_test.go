package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// TestBrokerCommandTLSAndSASL: `signalbox broker --tls-cert-out` serves
// TLS with the certificate it writes, and --sasl-user requires that user:
// a client that trusts the file and authenticates produces, `signalbox
// run` with the job file's tls.ca_file and sasl reads it all back, and a
// plaintext client gets nothing.
func TestBrokerCommandTLSAndSASL(t *testing.T) {
	dir := t.TempDir()
	cert := filepath.Join(dir, "broker.pem")
	t.Setenv("BROKER_TEST_PASSWORD", "s3cret-for-the-test")
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	lines, done := brokerCmd(ctx, "--registry-addr", "off", "--topic", "t:2", "--tls-cert-out", cert,
		"--sasl-user", "bench", "--sasl-password-env", "BROKER_TEST_PASSWORD")
	addr, err := lines.ReadString('\n')
	if err != nil {
		t.Fatalf("no address printed: %v", err)
	}
	addr = strings.TrimSpace(addr)
	go io.Copy(io.Discard, lines)
	pem, err := os.ReadFile(cert)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatalf("%s holds no certificate: %q", cert, pem)
	}
	auth := scram.Auth{User: "bench", Pass: "s3cret-for-the-test"}.AsSha256Mechanism()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DialTLSConfig(&tls.Config{RootCAs: pool}), kgo.SASL(auth))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const n = 5
	for i := range n {
		r := &kgo.Record{Topic: "t", Partition: int32(i % 2), Key: []byte(fmt.Sprint("k", i)),
			Value: fmt.Appendf(nil, `{"ts":%d,"n":%d}`, 1_700_000_000_000+int64(i), i)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("producing over TLS and SASL: %v", err)
		}
	}

	plainCtx, plainCancel := context.WithTimeout(ctx, 2*time.Second)
	defer plainCancel()
	plain, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	if err := plain.Ping(plainCtx); err == nil {
		t.Fatal("a plaintext client without SASL reached the broker")
	}
	plain.Close()

	out := filepath.Join(dir, "out.jsonl")
	job := filepath.Join(dir, "job.yaml")
	if err := os.WriteFile(job, fmt.Appendf(nil, `brokers: [%s]
start: earliest
tls: {enabled: true, ca_file: %s}
sasl: {mechanism: SCRAM-SHA-256, user: bench, password_env: BROKER_TEST_PASSWORD}
inputs: [{topic: t, time: field, time_field: ts, time_format: unix_ms}]
until: end-offsets
admin: {addr: "off"}
sinks: [{type: jsonl, path: %s}]
`, addr, cert, out), 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	if code := execute(ctx, []string{"--log-level", "warn", "run", "-c", job}, io.Discard, &stderr); code != 0 {
		t.Fatalf("run over TLS and SASL: exit %d: %s", code, stderr.String())
	}
	if got := readOutput(t, out); len(got) != n {
		t.Fatalf("run read %d records, want %d", len(got), n)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("broker exit %d", code)
	}
}

// TestBrokerCommandUserFlags: the SASL flags name what is missing or
// wrong, and the broker does not start.
func TestBrokerCommandUserFlags(t *testing.T) {
	t.Setenv("BROKER_TEST_EMPTY", "")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--sasl-user", "u"}, "--sasl-user: needs --sasl-password-env"},
		{[]string{"--sasl-password-env", "X"}, "--sasl-password-env: needs --sasl-user"},
		{[]string{"--sasl-mechanism", "PLAIN"}, "--sasl-mechanism: needs --sasl-user"},
		{[]string{"--sasl-user", "u", "--sasl-password-env", "BROKER_TEST_EMPTY"}, "BROKER_TEST_EMPTY is unset or empty"},
		{[]string{"--sasl-user", "u", "--sasl-password-env", "PATH", "--sasl-mechanism", "GSSAPI"}, `--sasl-mechanism "GSSAPI"`},
	} {
		var stderr bytes.Buffer
		code := execute(context.Background(), append([]string{"broker", "--addr", "127.0.0.1:0", "--registry-addr", "off"}, c.args...), io.Discard, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%q: exit %d, %q; want 2 and %q", c.args, code, stderr.String(), c.want)
		}
	}
}
