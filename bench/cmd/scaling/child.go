package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/signalbox/signalbox/bench/harness"
	"github.com/signalbox/signalbox/embedded"
)

// brokerChild is the -child value that runs the broker process.
const brokerChild = "broker"

// runChild runs the raw consumer or the JSONL copy and prints how many
// records it read, or the broker process.
func runChild(c config, stdout io.Writer) error {
	if len(c.shapes) != 1 {
		return fmt.Errorf("-child: want one shape, got %d", len(c.shapes))
	}
	sh := c.shapes[0]
	b := remote{addrs: strings.Split(c.brokers, ","), shape: sh, ca: c.ca}
	if c.child != brokerChild {
		if err := b.trust(); err != nil {
			return err
		}
	}
	switch c.child {
	case franz:
		n, err := franzConsume(context.Background(), b, strings.Split(c.topics, ","))
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(stdout, n)
		return err
	case franzJSONL:
		if c.file == "" {
			return fmt.Errorf("-child %s: -file not given", franzJSONL)
		}
		n, err := jsonlCopy(context.Background(), b, strings.Split(c.topics, ","), c.file)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(stdout, n)
		return err
	case brokerChild:
		return serveBroker(c, sh, stdout)
	}
	return fmt.Errorf("-child: %q is not %s, %s or %s", c.child, franz, franzJSONL, brokerChild)
}

// serveBroker runs the embedded cluster of shape sh with the topics of
// c.topics (name:partitions) until signalled; it prints the brokers'
// addresses on a line, then with -avro its schema registry's URL. A TLS
// shape serves a fresh self-signed certificate, written to c.ca first.
func serveBroker(c config, sh shape, stdout io.Writer) error {
	opts := []embedded.Option{embedded.WithBrokers(sh.Brokers)}
	if sh.SASL {
		opts = append(opts, embedded.WithUser(embedded.MechanismScramSHA256, saslUser, saslPassword))
	}
	if sh.TLS {
		cert, err := embedded.SelfSignedTLS()
		if err != nil {
			return err
		}
		if c.ca == "" {
			return fmt.Errorf("-child %s: a TLS shape needs -ca", brokerChild)
		}
		if err := os.WriteFile(c.ca, cert.CertPEM, 0o644); err != nil {
			return err
		}
		opts = append(opts, embedded.WithTLS(cert.Server, cert.Client))
	}
	if c.avro {
		opts = append(opts, embedded.WithSchemaRegistry("127.0.0.1:0"))
	}
	for _, t := range strings.Split(c.topics, ",") {
		name, n, ok := strings.Cut(t, ":")
		var p int32
		if _, err := fmt.Sscan(n, &p); !ok || err != nil || p < 1 {
			return fmt.Errorf("-topics: %q: want name:partitions", t)
		}
		opts = append(opts, embedded.WithTopic(name, p))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ready := func(cl *embedded.Cluster) {
		fmt.Fprintln(stdout, strings.Join(cl.Addrs(), ","))
		if u := cl.RegistryURL(); u != "" {
			fmt.Fprintln(stdout, u)
		}
	}
	return embedded.Run(ctx, "127.0.0.1:0", ready, opts...)
}

// franzConsume is the ceiling (harness.RawConsume): franz-go's consumer
// with its defaults, authenticating to b as the shape says.
func franzConsume(ctx context.Context, b remote, topics []string) (int64, error) {
	return harness.RawConsume(ctx, b.ClientOptions(), topics)
}
