package scaletest_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/signalbox/signalbox/embedded"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/sources/kafka"
)

// liveProducer writes one record to every partition of every topic each
// 30ms, event time now minus a disorder below the delay: no producer is
// late unless a produce call itself takes longer than the delay leaves
// (delay − disorder), which slow records. counts says how many partitions
// each topic has right now.
func liveProducer(t *testing.T, c *embedded.Cluster, counts map[string]*atomic.Int32) (stop func(), slow *slowProduces) {
	slow = &slowProduces{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		rng := rand.New(rand.NewPCG(5, 6))
		tick := time.NewTicker(30 * time.Millisecond)
		defer tick.Stop()
		for seq := 0; ; seq++ {
			select {
			case <-ctx.Done():
				done <- nil
				return
			case <-tick.C:
			}
			now := time.Now()
			var rs []*kgo.Record
			for _, topic := range topics {
				for p := range counts[topic].Load() {
					r := embedded.Record(topic, p, keyOf(p, rng), fmt.Sprintf(`{"t":%q,"p":%d,"live":%d}`, topic, p, seq))
					r.Timestamp = now.Add(-time.Duration(rng.Int64N(int64(disorder))))
					rs = append(rs, r)
				}
			}
			if err := c.Produce(ctx, rs...); err != nil && ctx.Err() == nil {
				done <- err
				return
			}
			if took := time.Since(now); took >= delay-disorder {
				t.Logf("a live produce took %v: its records (event times %v..%v) may be late", took, now.Add(-disorder).UnixMilli(), now.UnixMilli())
				slow.add(now)
			}
		}
	}()
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("live producer: %v", err)
		}
	}, slow
}

// slowProduces records the live produce calls that took longer than the
// delay leaves: their records may come out late, the producer's doing.
type slowProduces struct {
	mu    sync.Mutex
	stamp []time.Time // each call's "now"; its records' event times are within disorder before it
}

func (s *slowProduces) add(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stamp = append(s.stamp, now)
}

// lateByProducer reports whether l's lateness is a slow produce's: its
// event time is one such a call stamped.
func (s *slowProduces) lateByProducer(l line) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, now := range s.stamp {
		if l.EventMs >= now.Add(-disorder).UnixMilli() && l.EventMs <= now.UnixMilli() {
			return true
		}
	}
	return false
}

// fixedCounts is n partitions for every topic of topics.
func fixedCounts(n int32) map[string]*atomic.Int32 {
	out := map[string]*atomic.Int32{}
	for _, topic := range topics {
		out[topic] = new(atomic.Int32)
		out[topic].Store(n)
	}
	return out
}

// highWater returns every partition's high-water mark.
func highWater(t *testing.T, c *embedded.Cluster, counts map[string]int32) map[record.TopicPartition]int64 {
	end := map[record.TopicPartition]int64{}
	for topic, n := range counts {
		for p := range n {
			offs, err := c.ListOffsets(context.Background(), topic, p)
			if err != nil {
				t.Fatal(err)
			}
			end[record.TopicPartition{Topic: topic, Partition: p}] = offs.HighWater
		}
	}
	return end
}

// emitted counts, per partition and offset, the lines of every output.
func emitted(t *testing.T, ins ...*instance) map[record.TopicPartition]map[int64]int {
	seen := map[record.TopicPartition]map[int64]int{}
	for _, in := range ins {
		for _, l := range in.sink.lines(t) {
			if seen[l.tp()] == nil {
				seen[l.tp()] = map[int64]int{}
			}
			seen[l.tp()][l.Offset]++
		}
	}
	return seen
}

func covered(seen map[record.TopicPartition]map[int64]int, end map[record.TopicPartition]int64) bool {
	for tp, e := range end {
		if int64(len(seen[tp])) < e {
			return false
		}
	}
	return true
}

// TestDiscoveryLive: a live job reads orders and stock (2 partitions
// each); while producers write to every partition, orders grows to 3
// partitions and the producers write to the new one too. The discovery
// interval (200ms) is below the delay (1s). Every record comes out, none
// late, in timer order: across the whole output without a group (one
// instance), per instance and task with a group of two instances, where
// task 2 has no stock partition (unequal counts).
func TestDiscoveryLive(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		mode     string
		interval time.Duration
	}{
		{"no group", 200 * time.Millisecond},
		{"group", 200 * time.Millisecond},
	} {
		mode := tc.mode
		t.Run(fmt.Sprintf("%s, interval %v", mode, tc.interval), func(t *testing.T) {
			c, err := embedded.Start(embedded.WithTopic(topicA, 2), embedded.WithTopic(topicB, 2))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(c.Close)
			h := newHarness(t, c)
			h.parts = map[string]int32{topicA: 3, topicB: 2}
			counts := fixedCounts(2)
			opt := func(cfg *kafka.Config) { cfg.DiscoveryInterval = tc.interval }
			var ins []*instance
			if mode == "no group" {
				ins = append(ins, newInstance(t, h, "A", c, opt, func(cfg *kafka.Config) { cfg.Group = "" }))
			} else {
				ins = append(ins, newInstance(t, h, "A", c, opt), newInstance(t, h, "B", c, opt))
			}
			stopLive, slow := liveProducer(t, c, counts)
			var stops []func() error
			for _, in := range ins {
				stops = append(stops, in.start(t))
			}
			for _, in := range ins {
				waitFor(t, in.name+" to catch up", in.replayed.Load)
			}
			outs := make([]func() []line, len(ins))
			for i, in := range ins {
				outs[i] = in.out(t)
			}
			waitGrowth(t, "live records before the new partition", 20, lineCount(t, outs...))
			if err := c.CreatePartitions(context.Background(), topicA, 3); err != nil {
				t.Fatal(err)
			}
			counts[topicA].Store(3)
			waitFor(t, "records of the new partition to be emitted", func() bool {
				return len(emitted(t, ins...)[record.TopicPartition{Topic: topicA, Partition: 2}]) > 0
			})
			stopLive()
			end := highWater(t, c, h.parts)
			if end[record.TopicPartition{Topic: topicA, Partition: 2}] == 0 {
				t.Fatal("nothing was written to the new partition")
			}
			deadline := time.Now().Add(hangGuard)
			for !covered(emitted(t, ins...), end) && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			for i, stop := range stops {
				if err := stop(); err != nil {
					t.Fatalf("%s: %v", ins[i].name, err)
				}
			}

			seen := emitted(t, ins...)
			for tp, e := range end {
				if n := int64(len(seen[tp])); n < e {
					t.Errorf("%v: %d of %d offsets emitted", tp, n, e)
				}
			}
			for _, in := range ins {
				ls := in.sink.lines(t)
				late := 0
				prevTask := map[int32]*line{}
				var prev *line
				for k := range ls {
					l := &ls[k]
					if l.Late {
						if !slow.lateByProducer(*l) {
							late++
						}
						continue // emitted out of turn, flagged
					}
					if p := prevTask[l.Partition]; p != nil && cmpTimer(*p, *l) >= 0 {
						t.Errorf("%s: %+v after %+v in task %d", in.name, *l, *p, l.Partition)
					}
					if mode == "no group" && prev != nil && cmpTimer(*prev, *l) >= 0 {
						t.Errorf("%s: %+v after %+v: output not in timer order", in.name, *l, *prev)
					}
					prevTask[l.Partition], prev = l, l
				}
				t.Logf("%s emitted %d lines, %d late", in.name, len(ls), late)
				if late > 0 {
					t.Errorf("%s: %d late lines, want 0 (no producer is late)", in.name, late)
				}
			}
		})
	}
}
