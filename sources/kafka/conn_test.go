package kafka

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/signalbox/signalbox/embedded"
)

// ConnOpts authenticates with every SASL mechanism the Config names, and a
// wrong password is refused.
func TestConnOptsAuthenticate(t *testing.T) {
	for _, mech := range []string{SASLPlain, SASLScramSHA256, SASLScramSHA512} {
		t.Run(mech, func(t *testing.T) {
			c := startCluster(t, embedded.WithTopic("auth", 1), embedded.WithUser(mech, "alice", "s3cret"))
			ping := func(pass string) error {
				opts, err := Config{Brokers: c.Addrs(), Topics: []string{"auth"},
					SASL: SASL{Mechanism: mech, User: "alice", Password: pass}}.ConnOpts()
				if err != nil {
					t.Fatal(err)
				}
				cl, err := kgo.NewClient(opts...)
				if err != nil {
					t.Fatal(err)
				}
				defer cl.Close()
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				return cl.Ping(ctx)
			}
			if err := ping("s3cret"); err != nil {
				t.Fatalf("right password: %v", err)
			}
			if err := ping("wrong"); err == nil {
				t.Fatal("a wrong password was accepted")
			}
		})
	}
}
