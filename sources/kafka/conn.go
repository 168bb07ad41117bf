package kafka

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
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
	case SASLOAuthBearer:
		opts = append(opts, kgo.SASL(oauth.Oauth(c.SASL.bearer)))
	}
	return opts, nil
}

// bearer is the OAUTHBEARER token for one authentication: Token, or
// TokenFile's content read now, without surrounding white space.
func (s SASL) bearer(context.Context) (oauth.Auth, error) {
	if s.TokenFile == "" {
		return oauth.Auth{Token: s.Token}, nil
	}
	b, err := os.ReadFile(s.TokenFile)
	if err != nil {
		return oauth.Auth{}, fmt.Errorf("sasl.token_file: %w", err)
	}
	if b = bytes.TrimSpace(b); len(b) == 0 {
		return oauth.Auth{}, errors.New("sasl.token_file: " + s.TokenFile + " is empty")
	}
	return oauth.Auth{Token: string(b)}, nil
}
