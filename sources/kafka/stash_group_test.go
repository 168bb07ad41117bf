package kafka

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/signalbox/signalbox/embedded"
	"github.com/signalbox/signalbox/record"
	"github.com/twmb/franz-go/pkg/kfake"
)

// A rebalance that moves a partition whose records are kept back (fetched
// before a Pause, invariant 12): the old owner drops them and never delivers
// them, the new owner reads every record from the committed offset, and the
// partition the old owner keeps is delivered whole once it is resumed.
func TestRevokeWhileRecordsAreKeptBack(t *testing.T) {
	t.Parallel()
	const n = 2000
	c := startCluster(t, embedded.WithTopic("a", 2),
		embedded.WithKfakeOptions(kfake.GroupMinSessionTimeout(100*time.Millisecond)))
	tps := []record.TopicPartition{{Topic: "a", Partition: 0}, {Topic: "a", Partition: 1}}
	for _, tp := range tps {
		mustProduce(t, c, recs(tp.Topic, tp.Partition, n, fmt.Sprintf("p%d-", tp.Partition))...)
	}
	cfg := func(id string) Config {
		return Config{Brokers: c.Addrs(), Topics: []string{"a"}, Group: "kept", ClientID: id,
			SessionTimeout: time.Second, HeartbeatInterval: 100 * time.Millisecond, FetchMaxBytes: 4 << 10}
	}
	a := openSource(t, cfg("member-a"))
	colA := newCollector(t, a)
	colA.until("A assigned both", func() bool { return len(colA.assigned) == 2 })

	// Pause once a fetched answer waits for Poll, until both partitions have
	// records kept back.
	ctx, cancel := context.WithTimeout(bg, hangGuard)
	defer cancel()
	for len(a.stash) < len(tps) {
		for len(a.out) == 0 {
			if ctx.Err() != nil {
				t.Fatal("hang: waiting for an answer with records to keep back")
			}
			time.Sleep(time.Millisecond)
		}
		a.Pause(tps...)
		if err := colA.poll(ctx); err != nil {
			t.Fatal(err)
		}
		for _, tp := range tps {
			if _, ok := a.stash[tp]; !ok {
				a.Resume(tp)
			}
		}
	}

	var stopA atomic.Bool
	waitA := background(colA, stopA.Load) // A takes part in the rebalance, paused
	b := openSource(t, cfg("member-b"))
	colB := newCollector(t, b)
	colB.until("B assigned one", func() bool { return len(colB.assigned) == 1 })
	waitOwned(t, a, 1)
	stopA.Store(true)
	waitA()

	var moved record.TopicPartition
	for tp := range colB.assigned {
		moved = tp
	}
	stayed := tps[1-moved.Partition]
	if _, ok := a.stash[moved]; ok {
		t.Errorf("A still keeps records of %v, which moved to B", moved)
	}
	colB.until("B reads the moved partition", colB.caughtUp)
	if got := distinct(colB.values[moved]); got != n {
		t.Errorf("B read %d distinct records of %v, want all %d", got, moved, n)
	}

	a.Resume(stayed)
	colA.until("A reads the partition it kept", func() bool { return colA.pos[stayed] >= n })
	if got := distinct(colA.values[stayed]); got != n {
		t.Errorf("A read %d distinct records of %v, want all %d", got, stayed, n)
	}
}

func distinct(vs []string) int {
	set := map[string]bool{}
	for _, v := range vs {
		set[v] = true
	}
	return len(set)
}
