package kafka

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/signalbox/signalbox/embedded"
	"github.com/signalbox/signalbox/internal/waitpar"
	"github.com/signalbox/signalbox/record"
	"github.com/twmb/franz-go/pkg/kgo"
)

// hangGuard bounds every wait in these tests; it only fires on a hang.
const hangGuard = 45 * time.Second

// TestMain: the tests that call t.Parallel here wait (start-up timeouts,
// session timeouts, rebalances) and barely use the CPU, so they all run
// at once (internal/waitpar).
func TestMain(m *testing.M) { os.Exit(waitpar.Main(m, 16)) }

func startCluster(t testing.TB, opts ...embedded.Option) *embedded.Cluster {
	t.Helper()
	c, err := embedded.Start(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// openSource opens a source on cfg with short waits; each of setup runs
// on the source before Open.
func openSource(t testing.TB, cfg Config, setup ...func(*Source)) *Source {
	t.Helper()
	cfg.FetchMaxWait = 100 * time.Millisecond
	cfg.RetryBackoff = 20 * time.Millisecond
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range setup {
		f(s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if err := s.Open(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func recs(topic string, partition int32, n int, prefix string) []*kgo.Record {
	out := make([]*kgo.Record, n)
	for i := range out {
		out[i] = embedded.Record(topic, partition, fmt.Sprintf("k%d", i), fmt.Sprintf("%s%d", prefix, i))
	}
	return out
}

// collector polls a source and keeps what it saw.
type collector struct {
	t        testing.TB
	src      *Source
	assigned map[record.TopicPartition]record.PartitionInfo
	assigns  []record.PartitionInfo // every assignment, in order
	revoked  []record.TopicPartition
	pos      map[record.TopicPartition]int64
	end      map[record.TopicPartition]int64
	values   map[record.TopicPartition][]string
	fetches  []record.PartitionFetch
	received []time.Time // when each of fetches arrived
}

// openAssigned opens a source of cfg and polls it until n partitions are
// assigned; the collector holds the source (src) and what it polled.
func openAssigned(t testing.TB, n int, cfg Config, setup ...func(*Source)) *collector {
	t.Helper()
	col := newCollector(t, openSource(t, cfg, setup...))
	col.until("assignment", func() bool { return len(col.assigned) == n })
	return col
}

func newCollector(t testing.TB, src *Source) *collector {
	return &collector{
		t: t, src: src,
		assigned: map[record.TopicPartition]record.PartitionInfo{},
		pos:      map[record.TopicPartition]int64{},
		end:      map[record.TopicPartition]int64{},
		values:   map[record.TopicPartition][]string{},
	}
}

// poll takes one Fetch, checking the invariants every Fetch must keep.
func (c *collector) poll(ctx context.Context) error {
	f, err := c.src.Poll(ctx)
	if err != nil {
		return err
	}
	if (len(f.Assigned) > 0 || len(f.Revoked) > 0) && len(f.Partitions) > 0 {
		c.t.Errorf("a Fetch mixes assignment changes and data: %+v", f)
	}
	for _, a := range f.Assigned {
		if _, dup := c.assigned[a.TopicPartition]; dup {
			c.t.Errorf("%v assigned again without a Revoked in between", a.TopicPartition)
		}
		c.assigned[a.TopicPartition] = a
		c.assigns = append(c.assigns, a)
		c.pos[a.TopicPartition] = a.Start
		c.end[a.TopicPartition] = a.End
	}
	for _, tp := range f.Revoked {
		c.revoked = append(c.revoked, tp)
		delete(c.assigned, tp)
	}
	now := time.Now()
	for _, pf := range f.Partitions {
		if _, ok := c.assigned[pf.TopicPartition]; !ok {
			c.t.Errorf("data for %v before its Assigned", pf.TopicPartition)
		}
		if pf.Err != nil && (pf.End != -1 || len(pf.Records) > 0) {
			c.t.Errorf("failed fetch carries evidence or records: %+v", pf)
		}
		for _, r := range pf.Records {
			if r.Offset < c.pos[pf.TopicPartition] || r.Offset >= pf.Position {
				c.t.Errorf("%v: record offset %d outside [%d, %d)", pf.TopicPartition, r.Offset, c.pos[pf.TopicPartition], pf.Position)
			}
			c.values[pf.TopicPartition] = append(c.values[pf.TopicPartition], string(r.Value))
		}
		c.pos[pf.TopicPartition] = pf.Position
		if pf.End >= 0 {
			c.end[pf.TopicPartition] = pf.End
		}
		c.fetches = append(c.fetches, pf)
		c.received = append(c.received, now)
	}
	return nil
}

// until polls until cond holds; it fails the test on a hang.
func (c *collector) until(what string, cond func() bool) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	for !cond() {
		if err := c.poll(ctx); err != nil {
			c.t.Fatalf("waiting for %s: %v", what, err)
		}
	}
}

// caughtUp reports whether every assigned partition's position reached the
// end snapshot it was assigned with.
func (c *collector) caughtUp() bool {
	if len(c.assigned) == 0 {
		return false
	}
	for tp, a := range c.assigned {
		if c.pos[tp] < a.End {
			return false
		}
	}
	return true
}

// pollFor polls for d, for checks that something does NOT happen.
func (c *collector) pollFor(d time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for c.poll(ctx) == nil {
	}
}

func mustProduce(t testing.TB, c *embedded.Cluster, rs ...*kgo.Record) {
	t.Helper()
	if err := c.Produce(context.Background(), rs...); err != nil {
		t.Fatal(err)
	}
}

func mustOffsets(t testing.TB, c *embedded.Cluster, topic string) embedded.Offsets {
	t.Helper()
	offs, err := c.ListOffsets(context.Background(), topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	return offs
}

// background polls col, as an engine would, until stop says so; wait
// waits for it to return. col must not be read meanwhile.
func background(col *collector, stop func() bool) (wait func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		ctx, cancel := context.WithTimeout(bg, hangGuard)
		defer cancel()
		for !stop() && col.poll(ctx) == nil {
		}
	}()
	return func() { <-done }
}
