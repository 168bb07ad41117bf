package kafka

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/signalbox/signalbox/embedded"
	"github.com/signalbox/signalbox/record"
)

// TestEvidenceDemandShortensFetchWait: a demand shortens the next fetch's
// wait to the due time, never below minEvidenceWait, never above
// FetchMaxWait; withdrawing it restores FetchMaxWait. Paused partitions cap
// it at pausedWait.
func TestEvidenceDemandShortensFetchWait(t *testing.T) {
	s := &Source{cfg: Config{FetchMaxWait: 50 * time.Millisecond}}
	now := time.Unix(1_700_000_000, 0)
	for _, c := range []struct {
		due  time.Time
		want time.Duration
	}{
		{time.Time{}, 50 * time.Millisecond},
		{now.Add(20 * time.Millisecond), 20 * time.Millisecond},
		{now.Add(time.Second), 50 * time.Millisecond},
		{now.Add(-time.Second), minEvidenceWait},
		{now.Add(time.Millisecond), minEvidenceWait},
		{time.Time{}, 50 * time.Millisecond},
	} {
		s.WantEvidence(c.due)
		if got := s.fetchWait(now, false); got != c.want {
			t.Errorf("due %v: fetch wait %v, want %v", c.due, got, c.want)
		}
		if got, want := s.fetchWait(now, true), min(c.want, pausedWait); got != want {
			t.Errorf("due %v, some partitions paused: fetch wait %v, want %v", c.due, got, want)
		}
	}
}

// TestPausedFetchesWaitLittle: while some of its partitions are paused, a
// fetcher's fetches ask the broker to wait at most pausedWait, so that a
// resumed partition is fetched at once even when the partitions being
// fetched are caught up (the broker would hold their fetch for
// FetchMaxWait); once nothing is paused they wait FetchMaxWait again. The
// waits are read from the fetch requests the broker receives.
func TestPausedFetchesWaitLittle(t *testing.T) {
	src, col, take := caughtUpWatched(t)
	last := func(what string) int32 {
		w := take()
		if len(w) == 0 {
			t.Fatalf("%s: the broker received no fetch", what)
		}
		return w[len(w)-1]
	}
	tp := record.TopicPartition{Topic: "a", Partition: 0}
	src.Pause(tp)
	col.pollFor(300 * time.Millisecond)
	if got := last("paused"); time.Duration(got)*time.Millisecond > pausedWait {
		t.Errorf("a fetch sent while a partition is paused waits %d ms, want at most %v", got, pausedWait)
	}
	src.Resume(tp)
	col.pollFor(300 * time.Millisecond)
	if got := last("resumed"); time.Duration(got)*time.Millisecond != 100*time.Millisecond {
		t.Errorf("a fetch sent with nothing paused waits %d ms, want FetchMaxWait (100 ms)", got)
	}
}

// TestIdleFetcherWaitsAtHome: while a partition is paused (or held) and
// every other partition the fetcher could fetch is at its end, the fetcher
// does not park a fetch at the broker, where a partition resumed
// meanwhile could not join it: the fetches the broker receives ask it not
// to wait at all, and they keep coming, so the caught-up partitions'
// evidence stays fresh. With nothing paused the fetches wait at the
// broker again (FetchMaxWait).
func TestIdleFetcherWaitsAtHome(t *testing.T) {
	src, col, take := caughtUpWatched(t)
	tp := record.TopicPartition{Topic: "a", Partition: 0}
	src.Pause(tp)
	// A fetch sent before the pause may still arrive, however late the
	// machine's load makes it; the fetcher sends its next only after it,
	// so the first fetch that asks for no wait shows the pause in effect.
	for deadline, paused := time.Now().Add(10*time.Second), false; !paused; {
		if time.Now().After(deadline) {
			t.Fatal("no fetch without a wait within 10 s of the pause")
		}
		col.pollFor(20 * time.Millisecond)
		paused = slices.Contains(take(), 0)
	}
	col.pollFor(300 * time.Millisecond)
	idle := take()
	if len(idle) < 2 {
		t.Fatalf("%d fetches in 300 ms while idle, want the caught-up partition's evidence refreshed (every %v)", len(idle), pausedWait)
	}
	for _, w := range idle {
		if w != 0 {
			t.Fatalf("while idle with a partition paused, fetches asked the broker to wait %v ms, want 0", idle)
		}
	}
	src.Resume(tp)
	col.pollFor(300 * time.Millisecond)
	if w := take(); len(w) == 0 || w[len(w)-1] != 100 {
		t.Errorf("with nothing paused, fetches asked the broker to wait %v ms, want FetchMaxWait (100 ms) at last", w)
	}
}

// caughtUpWatched opens a source of two partitions of topic "a", polls it
// until both are caught up, and from then on records the waits of the
// fetches the broker receives (fetchWaits).
func caughtUpWatched(t *testing.T) (*Source, *collector, func() []int32) {
	c := startCluster(t, embedded.WithTopic("a", 2))
	mustProduce(t, c, append(recs("a", 0, 3, "v"), recs("a", 1, 3, "w")...)...)
	src := openSource(t, Config{Brokers: c.Addrs(), Topics: []string{"a"}})
	col := newCollector(t, src)
	col.until("caught up", col.caughtUp)
	return src, col, fetchWaits(c)
}

// fetchWaits records the MaxWaitMillis of every fetch c receives from now
// on; take returns those recorded since its last call.
func fetchWaits(c *embedded.Cluster) (take func() []int32) {
	var mu sync.Mutex
	var waits []int32
	kf := c.Kfake()
	kf.ControlKey(int16(kmsg.Fetch), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		kf.KeepControl()
		mu.Lock()
		waits = append(waits, kreq.(*kmsg.FetchRequest).MaxWaitMillis)
		mu.Unlock()
		return nil, nil, false
	})
	return func() []int32 {
		mu.Lock()
		defer mu.Unlock()
		w := waits
		waits = nil
		return w
	}
}
