package admin_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/catchup"
	"github.com/signalbox/signalbox/embedded"
	"github.com/signalbox/signalbox/internal/admin"
	"github.com/signalbox/signalbox/sinks/jsonl"
	"github.com/signalbox/signalbox/sources/kafka"
)

// TestIdleMemberIsReady: two members of one group on a topic of one
// partition (more members than tasks) are both ready once they joined,
// though only one owns the partition: a rolling update of a StatefulSet
// with more replicas than tasks never waits on the idle one.
func TestIdleMemberIsReady(t *testing.T) {
	c, err := embedded.Start(embedded.WithTopic("orders", 1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // hang guard
	defer cancel()
	type member struct {
		p     *signalbox.Pipeline
		ready http.Handler
		done  chan error
	}
	var members []*member
	for _, id := range []string{"m0", "m1"} {
		src, err := kafka.New(kafka.Config{Brokers: c.Addrs(), Topics: []string{"orders"}, Group: "ready", ClientID: id,
			HeartbeatInterval: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		p, err := signalbox.New(src, signalbox.WithInputs(signalbox.Input{Topic: "orders"}), signalbox.WithSink(jsonl.New(io.Discard, jsonl.Options{})))
		if err != nil {
			t.Fatal(err)
		}
		m := &member{p: p, done: make(chan error, 1),
			ready: admin.Handler(admin.Options{Stats: p.Stats, Now: time.Now, Logger: zap.NewNop()})}
		go func() { m.done <- p.Run(ctx) }()
		members = append(members, m)
	}
	readyz := func(m *member) (int, string) {
		rec := httptest.NewRecorder()
		m.ready.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
		return rec.Code, rec.Body.String()
	}
	// Both ready, one owning the partition and the other none, in one
	// look at both (a rebalance may still move it).
	for {
		c0, b0 := readyz(members[0])
		c1, b1 := readyz(members[1])
		s0, s1 := members[0].p.Stats(), members[1].p.Stats()
		if c0 == http.StatusOK && c1 == http.StatusOK && len(s0.Partitions)+len(s1.Partitions) == 1 &&
			s0.Member != nil && s1.Member != nil && s0.Member.Generation == s1.Member.Generation {
			idle := s0
			if len(s0.Partitions) == 1 {
				idle = s1
			}
			t.Logf("both ready; the idle member (generation %d): %+v", idle.Member.Generation, idle.Partitions)
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("hang guard: /readyz %d %q and %d %q; partitions %v and %v", c0, b0, c1, b1, partitionsOf(s0), partitionsOf(s1))
		case err := <-members[0].done:
			t.Fatalf("member 0 stopped: %v", err)
		case err := <-members[1].done:
			t.Fatalf("member 1 stopped: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
	cancel()
	for i, m := range members {
		if err := <-m.done; err != nil {
			t.Errorf("member %d: %v", i, err)
		}
	}
}

func partitionsOf(s signalbox.Stats) []catchup.ID {
	var ids []catchup.ID
	for _, p := range s.Partitions {
		ids = append(ids, p.ID)
	}
	return ids
}
