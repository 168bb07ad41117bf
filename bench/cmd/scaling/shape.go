package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/signalbox/signalbox/bench/harness"
	"github.com/signalbox/signalbox/internal/workload"
)

// shape is how the history is laid out and reached: the producer's batch
// bytes, SCRAM-SHA-256 authentication or none, TLS or plaintext, and the
// brokers in the broker process. Every consumer of a run reads the same
// shape.
type shape struct {
	Batch   int  `json:"batch_bytes"`
	SASL    bool `json:"sasl"`
	TLS     bool `json:"tls,omitempty"`
	Brokers int  `json:"brokers"`
}

// maxBatch is the largest producer batch the broker accepts: kfake's
// message.max.bytes, Kafka's default 1 MiB + 12.
const maxBatch = 1<<20 + 12

// The SCRAM-SHA-256 user of a -sasl broker; signalbox reads the password
// from passwordEnv.
const (
	saslUser     = "bench"
	saslPassword = "bench-scram-password"
	passwordEnv  = "SIGNALBOX_BENCH_PASSWORD"
)

// defaultShape is the reference data: 16 KiB batches, no SASL, one broker.
var defaultShape = shape{Batch: workload.BatchBytes, Brokers: 1}

// parseShape parses a shape: batch bytes, then optional "+sasl", "+tls"
// and "+Nbrokers", e.g. "16KiB", "1MiB+sasl+tls", "1MiB+3brokers".
func parseShape(s string) (shape, error) {
	parts := strings.Split(strings.TrimSpace(s), "+")
	b, err := parseBytes(parts[0])
	if err != nil {
		return shape{}, fmt.Errorf("shape %q: %w", s, err)
	}
	sh := shape{Batch: b, Brokers: 1}
	seen := map[string]bool{}
	for _, p := range parts[1:] {
		kind := p
		if strings.HasSuffix(p, "brokers") {
			kind = "brokers"
		}
		if seen[kind] {
			return shape{}, fmt.Errorf("shape %q: %s given twice", s, kind)
		}
		seen[kind] = true
		switch {
		case p == "sasl":
			sh.SASL = true
		case p == "tls":
			sh.TLS = true
		case kind == "brokers":
			n, err := strconv.Atoi(strings.TrimSuffix(p, "brokers"))
			if err != nil || n < 1 {
				return shape{}, fmt.Errorf("shape %q: %q: want a broker count of at least 1, such as 3brokers", s, p)
			}
			sh.Brokers = n
		default:
			return shape{}, fmt.Errorf("shape %q: %q: want sasl, tls or Nbrokers", s, p)
		}
	}
	if err := checkBatch(sh.Batch); err != nil {
		return shape{}, fmt.Errorf("shape %q: batch: %w", s, err)
	}
	return sh, nil
}

// checkBatch says what is wrong with a producer batch of b bytes.
func checkBatch(b int) error {
	if b < 1<<10 || b > maxBatch {
		return fmt.Errorf("%d bytes: must be between 1KiB and the broker's message.max.bytes (%d)", b, maxBatch)
	}
	return nil
}

// String is the shape as parseShape reads it.
func (s shape) String() string {
	out := bytesLabel(s.Batch)
	if s.SASL {
		out += "+sasl"
	}
	if s.TLS {
		out += "+tls"
	}
	if s.Brokers != 1 {
		out += fmt.Sprintf("+%dbrokers", s.Brokers)
	}
	return out
}

// authLabel is the shape's authentication and encryption, for the table.
func (s shape) authLabel() string {
	switch {
	case s.SASL && s.TLS:
		return "SCRAM-SHA-256, TLS"
	case s.SASL:
		return "SCRAM-SHA-256"
	case s.TLS:
		return "TLS"
	}
	return "none"
}

// parseBytes parses "16KiB", "1MiB" or "4096".
func parseBytes(s string) (int, error) {
	s = strings.TrimSpace(s)
	mult := 1
	switch {
	case strings.HasSuffix(s, "MiB"):
		mult, s = 1<<20, strings.TrimSuffix(s, "MiB")
	case strings.HasSuffix(s, "KiB"):
		mult, s = 1<<10, strings.TrimSuffix(s, "KiB")
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%q: want a positive size such as 16KiB, 1MiB or 4096", s)
	}
	return n * mult, nil
}

// bytesLabel writes n as parseBytes reads it, in the largest whole unit.
func bytesLabel(n int) string {
	switch {
	case n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return strconv.Itoa(n)
}

// clientAuth is the franz-go options that authenticate to a broker of
// shape s: SCRAM-SHA-256 as the bench user, or none.
func (s shape) clientAuth() []kgo.Opt {
	if !s.SASL {
		return nil
	}
	return []kgo.Opt{kgo.SASL(scram.Auth{User: saslUser, Pass: saslPassword}.AsSha256Mechanism())}
}

// remote is a broker process of some shape, with its schema registry's URL
// ("" without) and, for a TLS shape, the file of the certificate it serves
// and the client configuration that trusts it: where the history is
// produced (workload.Broker).
type remote struct {
	addrs []string
	url   string
	shape shape
	ca    string
	tls   kgo.Opt // trusts ca; nil for a plaintext shape
}

// ClientOptions implements workload.Broker.
func (r remote) ClientOptions() []kgo.Opt {
	opts := append([]kgo.Opt{kgo.SeedBrokers(r.addrs...)}, r.shape.clientAuth()...)
	if r.tls != nil {
		opts = append(opts, r.tls)
	}
	return opts
}

// trust sets r's client TLS configuration from its certificate file, for
// a TLS shape.
func (r *remote) trust() error {
	if !r.shape.TLS {
		return nil
	}
	trust, err := harness.TrustCA(r.ca)
	if err != nil {
		return fmt.Errorf("the broker's certificate: %w", err)
	}
	r.tls = trust
	return nil
}

// RegistryURL implements workload.SchemaRegistry.
func (r remote) RegistryURL() string { return r.url }
