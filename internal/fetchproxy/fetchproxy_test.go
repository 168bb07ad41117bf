package fetchproxy

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/signalbox/signalbox/embedded"
)

// A client bootstrapped on one proxy of a two-broker cluster reads every
// partition through the proxies (the metadata names them, invariant 1):
// each partition's answers pass through the rewrite, which changes the
// records' bytes that the client then reads.
func TestClientStaysBehindTheProxy(t *testing.T) {
	c, err := embedded.Start(embedded.WithBrokers(2), embedded.WithTopic("t", 4))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var recs []*kgo.Record
	for p := range int32(4) {
		recs = append(recs, embedded.Record("t", p, "k", "before"))
	}
	if err := c.Produce(ctx, recs...); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[int32]bool{}
	p, err := Start(c.Addrs(), func(topic string, partition int32, raw []byte) []byte {
		if i := bytes.Index(raw, []byte("before")); i >= 0 && topic == "t" {
			mu.Lock()
			seen[partition] = true
			mu.Unlock()
			// Same length, so the batch's lengths hold; the CRC is not
			// checked by this client.
			raw = bytes.Clone(raw)
			copy(raw[i:], "after!")
		}
		return raw
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Addrs()[0]), kgo.ConsumeTopics("t"), kgo.DisableFetchCRCValidation(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for got := 0; got < 4; {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			got++
			if string(r.Value) != "after!" {
				t.Errorf("partition %d: value %q, want the rewritten one", r.Partition, r.Value)
			}
		})
	}
	if len(seen) != 4 {
		t.Fatalf("the rewrite saw partitions %v, want all 4", seen)
	}
}
