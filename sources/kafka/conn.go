package kafka

import (
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// ConnOpts returns the franz-go options that say how to reach and
// authenticate to the cluster: seed brokers, client id, TLS and SASL, after
// applying the defaults to a copy of c. Every client signalbox builds for
// this cluster (the source's, a Kafka sink's, the tools') starts from them,
// so all of them connect one way.
func (c Config) ConnOpts() ([]kgo.Opt, error) {
	c.EnsureDefaults()
	opts := []kgo.Opt{kgo.SeedBrokers(c.Brokers...), kgo.ClientID(c.ClientID)}
	if c.TLS.Enable {
		tc, err := c.TLS.config()
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.DialTLSConfig(tc))
	}
	auth := scram.Auth{User: c.SASL.User, Pass: c.SASL.Password}
	switch c.SASL.Mechanism {
	case SASLPlain:
		opts = append(opts, kgo.SASL(plain.Auth{User: c.SASL.User, Pass: c.SASL.Password}.AsMechanism()))
	case SASLScramSHA256:
		opts = append(opts, kgo.SASL(auth.AsSha256Mechanism()))
	case SASLScramSHA512:
		opts = append(opts, kgo.SASL(auth.AsSha512Mechanism()))
	}
	return opts, nil
}
