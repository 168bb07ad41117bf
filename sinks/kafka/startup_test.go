package kafka_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/signalbox/signalbox/internal/startup"
	"github.com/signalbox/signalbox/internal/startup/startuptest"
	"github.com/signalbox/signalbox/sinks/kafka"
)

const (
	startupBound = 2 * time.Second
	startupSlack = 5 * startupBound // generous: the bound is the feature
)

// openWithin opens a sink on cfg and checks that it fails with
// ErrStartupTimeout within the bound, naming addr.
func openWithin(t *testing.T, ctx context.Context, cfg kafka.Config, addr string) {
	t.Helper()
	s := kafka.New(cfg)
	start := time.Now()
	err := s.Open(ctx)
	took := time.Since(start)
	t.Logf("failed after %v: %v", took.Round(time.Millisecond), err)
	if err == nil {
		_ = s.Close()
		t.Fatal("Open succeeded")
	}
	if !errors.Is(err, kafka.ErrStartupTimeout) {
		t.Fatalf("Open: %v, want ErrStartupTimeout", err)
	}
	if took > startupSlack {
		t.Errorf("failure after %v; the bound is %v", took, startupBound)
	}
	if !strings.Contains(err.Error(), addr) {
		t.Errorf("error %q does not name broker %s", err, addr)
	}
}

// TestOpenSilentBroker: a broker that accepts connections and never answers
// fails Open within StartupTimeout, or within the start-up deadline the
// context carries.
func TestOpenSilentBroker(t *testing.T) {
	addr := startuptest.SilentBroker(t)
	t.Run("StartupTimeout", func(t *testing.T) {
		openWithin(t, ctx, kafka.Config{Brokers: []string{addr}, Topic: "out", StartupTimeout: startupBound}, addr)
	})
	t.Run("carried deadline", func(t *testing.T) {
		dctx := startup.WithDeadline(ctx, time.Now().Add(startupBound))
		openWithin(t, dctx, kafka.Config{Brokers: []string{addr}, Topic: "out"}, addr)
	})
}

// TestOpenStalledProducerInit: a broker that answers metadata but not the
// producer's InitProducerID (idempotent and transactional) fails Open within
// StartupTimeout.
func TestOpenStalledProducerInit(t *testing.T) {
	for _, txn := range []string{"", "txn"} {
		t.Run("transactional_id="+txn, func(t *testing.T) {
			c, err := kfake.NewCluster(kfake.Ports(0), kfake.SeedTopics(1, "out"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(c.Close)
			release := make(chan struct{})
			t.Cleanup(func() { close(release) })
			c.ControlKey(int16(kmsg.InitProducerID), func(kmsg.Request) (kmsg.Response, error, bool) {
				c.SleepControl(func() { <-release })
				return nil, nil, false
			})
			addr := c.ListenAddrs()[0]
			openWithin(t, ctx, kafka.Config{Brokers: []string{addr}, Topic: "out", TransactionalID: txn, StartupTimeout: startupBound}, addr)
		})
	}
}

// TestOpenRefusedConnection: a broker address where nothing listens fails
// Open at once, naming the address, not at the start-up deadline.
func TestOpenRefusedConnection(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	s := kafka.New(kafka.Config{Brokers: []string{addr}, Topic: "out", StartupTimeout: time.Hour})
	err = s.Open(ctx)
	if err == nil {
		_ = s.Close()
		t.Fatal("Open succeeded")
	}
	if errors.Is(err, kafka.ErrStartupTimeout) || !strings.Contains(err.Error(), addr) {
		t.Fatalf("Open: %v, want the refused dial to %s", err, addr)
	}
}
