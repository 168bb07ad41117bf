package signalbox_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/catchup"
	"github.com/signalbox/signalbox/embedded"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/sources/kafka"
	"github.com/signalbox/signalbox/timers/durable"
)

// member is one pipeline of a consumer group on the embedded cluster, with
// the events it reported, in order.
type member struct {
	p    *signalbox.Pipeline
	sink *collect
	stop func() error

	mu     sync.Mutex
	events []signalbox.Event
}

func (m *member) seen() []signalbox.Event {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]signalbox.Event(nil), m.events...)
}

// startMember runs a group member on c until its stop is called; clock is
// its processing-time clock, store its DurableStore (nil: none).
func startMember(t *testing.T, c *embedded.Cluster, name string, clock signalbox.Clock, store *durable.Store) *member {
	t.Helper()
	src, err := kafka.New(kafka.Config{Brokers: c.Addrs(), Topics: []string{"in"}, Group: "g", ClientID: name,
		FetchMaxWait: 50 * time.Millisecond, RetryBackoff: 20 * time.Millisecond, RevokeTimeout: time.Minute,
		SessionTimeout: 6 * time.Second, HeartbeatInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	m := &member{sink: &collect{}}
	opts := []signalbox.Option{tsInputs("in"), signalbox.WithSink(m.sink), signalbox.WithDelay(0),
		signalbox.WithClock(clock), signalbox.WithMaxFuture(0), signalbox.WithCheckpointInterval(20 * time.Millisecond),
		signalbox.WithObserver(func(e signalbox.Event) {
			m.mu.Lock()
			m.events = append(m.events, e)
			m.mu.Unlock()
		})}
	if store != nil {
		opts = append(opts, signalbox.WithParkedStore(store))
	}
	if m.p, err = signalbox.New(src, opts...); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.p.Run(ctx) }()
	var once sync.Once
	var rerr error
	m.stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case rerr = <-done:
			case <-time.After(time.Minute):
				rerr = fmt.Errorf("%s: Run did not return after cancel", name)
			}
		})
		return rerr
	}
	t.Cleanup(func() { _ = m.stop() })
	return m
}

// waitEvents waits until cond holds over m's events.
func waitEvents(t *testing.T, m *member, what string, cond func([]signalbox.Event) bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute) // a hang guard, never expected to fire
	for !cond(m.seen()) {
		if time.Now().After(deadline) {
			t.Fatalf("hang: waiting for %s; events %+v", what, m.seen())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// caughtUp reports whether tp reached CaughtUp in events, after its first
// assignment among them.
func caughtUp(events []signalbox.Event, tp record.TopicPartition) (at int, ok bool) {
	assigned := false
	for i, e := range events {
		if e.Partition != tp {
			continue
		}
		if e.Kind == signalbox.EventAssigned {
			assigned = true
		}
		if assigned && (e.Kind == signalbox.EventAssigned || e.Kind == signalbox.EventPhase) && e.To == catchup.CaughtUp {
			return i, true
		}
	}
	return 0, false
}

func openStore(t *testing.T, dir string) *durable.Store {
	t.Helper()
	store, err := durable.OpenStore(dir, durable.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return store
}

// A partition that a DurableStore restart positioned past the records it
// restored parked, then revoked (its restored records are dropped when the
// watermark passes them) and assigned back after another member read but
// did not emit them, starts at the group's committed offset, not at the
// store's position: every record comes out, and the commits reach the end
// (design R10; Seeker).
func TestStorePositionAppliesToTheFirstAssignmentOnly(t *testing.T) {
	const n = 10
	c := startCluster(t, embedded.WithTopic("in", 2))
	step := 10 * time.Minute
	base := time.Now().Add(-3 * time.Hour).Truncate(time.Second)
	var recs []*kgo.Record
	for p := int32(0); p < 2; p++ {
		for o := 0; o < n; o++ {
			et := base.Add(time.Duration(o) * step).Add(time.Duration(p) * time.Millisecond)
			recs = append(recs, embedded.Record("in", p, fmt.Sprint("k", o), fmt.Sprintf(`{"ts":%d}`, et.UnixMilli())))
		}
	}
	if err := c.Produce(context.Background(), recs...); err != nil {
		t.Fatal(err)
	}
	// A's clock: base+at plus the time since the test started (checkpoints
	// follow it); at moves only forward. Records 0..4 are at or below it at
	// first, records 5..9 above.
	var at atomic.Int64
	at.Store(int64(n/2*step - step/2))
	t0 := time.Now()
	clockA := func() time.Time { return base.Add(time.Duration(at.Load()) + time.Since(t0)) }
	dir := t.TempDir()
	tps := []record.TopicPartition{tp("in", 0), tp("in", 1)}

	// Run 1: A alone emits records 0..4 of each partition; 5..9 stay parked
	// in the store, whose checkpoint is at position n.
	store := openStore(t, dir)
	a := startMember(t, c, "A", clockA, store)
	waitEvents(t, a, "A's first run to catch up", func(ev []signalbox.Event) bool {
		_, ok0 := caughtUp(ev, tps[0])
		_, ok1 := caughtUp(ev, tps[1])
		return ok0 && ok1
	})
	waitFor(t, "A's first run to emit records 0..4", func() bool { return len(a.sink.lines()) == n/2*len(tps) })
	if err := a.stop(); err != nil {
		t.Fatal(err)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	emitted := map[record.TopicPartition]map[int64]int{}
	note := func(m *member) {
		m.sink.mu.Lock()
		defer m.sink.mu.Unlock()
		for _, r := range m.sink.records {
			tp := record.TopicPartition{Topic: r.Topic, Partition: r.Partition}
			if emitted[tp] == nil {
				emitted[tp] = map[int64]int{}
			}
			emitted[tp][r.Offset]++
		}
	}
	note(a)

	// Run 2: A restarts from the store (its partitions start at n, the
	// records 5..9 restored parked), then B joins and takes one partition.
	store = openStore(t, dir)
	defer store.Close()
	a = startMember(t, c, "A", clockA, store)
	waitEvents(t, a, "A's restart to catch up", func(ev []signalbox.Event) bool {
		_, ok0 := caughtUp(ev, tps[0])
		_, ok1 := caughtUp(ev, tps[1])
		return ok0 && ok1
	})
	// B's clock is stopped at the epoch: it reads but never emits.
	b := startMember(t, c, "B", frozen, nil)
	waitEvents(t, b, "B to catch up on a partition", func(ev []signalbox.Event) bool {
		_, ok0 := caughtUp(ev, tps[0])
		_, ok1 := caughtUp(ev, tps[1])
		return ok0 || ok1
	})
	var q record.TopicPartition // B's partition
	for _, e := range b.seen() {
		if e.Kind == signalbox.EventAssigned {
			q = e.Partition
		}
	}
	mine := tps[0]
	if q == mine {
		mine = tps[1]
	}
	waitEvents(t, a, "A to hold "+tpName(mine)+" and not "+tpName(q), func(ev []signalbox.Event) bool {
		assigned, revoked := signalbox.EventAssigned, signalbox.EventRevoked
		return lastEvent(ev, assigned, q) < lastEvent(ev, revoked, q) && lastEvent(ev, revoked, mine) < lastEvent(ev, assigned, mine)
	})
	// A's watermark passes every record: it emits its own partition's
	// 5..9, and drops the restored copies of q's, which it no longer owns.
	at.Store(int64(2 * time.Hour))
	waitFor(t, "A to emit "+tpName(mine)+"'s records 5..9", func() bool {
		return holds(a.sink, mine, n/2, n)
	})

	// B leaves without emitting q's records (its commit stays at 5); q comes
	// back to A.
	mark := len(a.seen())
	if err := b.stop(); err != nil {
		t.Fatal(err)
	}
	note(b)
	waitEvents(t, a, "A to get "+tpName(q)+" back, catch up and checkpoint", func(ev []signalbox.Event) bool {
		i, ok := caughtUp(ev[mark:], q)
		if !ok {
			return false
		}
		for _, e := range ev[mark+i:] {
			if e.Kind == signalbox.EventCheckpoint {
				return true
			}
		}
		return false
	})
	if err := a.stop(); err != nil {
		t.Fatal(err)
	}
	note(a)

	for _, tp := range tps {
		for o := int64(0); o < n; o++ {
			if emitted[tp][o] == 0 {
				t.Errorf("%s@%d never emitted", tpName(tp), o)
			}
		}
	}
	committed := map[record.TopicPartition]int64{}
	for _, co := range a.p.Stats().Delivery.Committed {
		committed[co.TopicPartition] = co.Offset
	}
	for _, tp := range tps {
		if committed[tp] != n {
			t.Errorf("%s: A committed %d last, want %d", tpName(tp), committed[tp], n)
		}
	}
	if t.Failed() {
		for _, e := range a.seen() {
			t.Logf("A: %+v", e)
		}
	}
}

func tpName(tp record.TopicPartition) string { return fmt.Sprintf("%s/%d", tp.Topic, tp.Partition) }

// waitFor waits until cond holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute) // a hang guard, never expected to fire
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("hang: waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// lastEvent returns the index of the last event of kind k for tp, or -1.
func lastEvent(ev []signalbox.Event, k signalbox.EventKind, tp record.TopicPartition) int {
	last := -1
	for i, e := range ev {
		if e.Kind == k && e.Partition == tp {
			last = i
		}
	}
	return last
}

// holds reports whether c holds every offset of tp in [from, to).
func holds(c *collect, tp record.TopicPartition, from, to int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	seen := map[int64]bool{}
	for _, r := range c.records {
		if r.Topic == tp.Topic && r.Partition == tp.Partition {
			seen[r.Offset] = true
		}
	}
	for o := from; o < to; o++ {
		if !seen[o] {
			return false
		}
	}
	return true
}
