package kafka

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/signalbox/signalbox/embedded"
	"github.com/signalbox/signalbox/internal/fetchproxy"
	"github.com/signalbox/signalbox/internal/kbatch"
	"github.com/signalbox/signalbox/internal/kbatch/kbatchtest"
	"github.com/signalbox/signalbox/record"
)

// Legacy message sets (magic 0 and 1) through a broker: kfake refuses to
// store them, so the tests store v2 batches and a proxy (fetchproxy)
// answers each fetch with legacy sets in their place, at the same offsets.

// legacyT0 is the CreateTime of the legacy messages at offset 0; a
// message's is legacyT0 + 1 s × its offset.
const legacyT0 = 1_600_000_000_000

// legacyMsgs are the messages at offsets [first, first+n), their value
// "legacy-<offset>", written with offsets from written on (the absolute
// offsets, or 0 for the relative ones of a magic-1 wrapper).
func legacyMsgs(first int64, n int, written int64) []kbatchtest.Message {
	ms := make([]kbatchtest.Message, n)
	for i := range ms {
		off := first + int64(i)
		ms[i] = kbatchtest.Message{Offset: written + int64(i), Timestamp: legacyT0 + 1000*off, Value: fmt.Appendf(nil, "legacy-%d", off)}
	}
	return ms
}

// legacyProxy puts a proxy in front of c whose Fetch answers for topic's
// partition 0 carry sets[first] in place of the batch at offset first;
// fetches counts that partition's answers.
type legacyProxy struct {
	*fetchproxy.Proxy
	mu      sync.Mutex
	fetches int
}

func startLegacyProxy(t *testing.T, c *embedded.Cluster, topic string, sets map[int64][]byte) *legacyProxy {
	t.Helper()
	lp := &legacyProxy{}
	p, err := fetchproxy.Start(c.Addrs(), func(tp string, partition int32, raw []byte) []byte {
		if tp != topic || partition != 0 {
			return raw
		}
		lp.mu.Lock()
		lp.fetches++
		lp.mu.Unlock()
		var out []byte
		for len(raw) >= 12 {
			n := 12 + int(binary.BigEndian.Uint32(raw[8:]))
			if n > len(raw) {
				break
			}
			if set, ok := sets[int64(binary.BigEndian.Uint64(raw))]; ok {
				out = append(out, set...)
			} else {
				out = append(out, raw[:n]...)
			}
			raw = raw[n:]
		}
		return append(out, raw...) // a batch cut short, as it came
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	lp.Proxy = p
	return lp
}

func (lp *legacyProxy) count() int {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	return lp.fetches
}

// records are the records col received, in order.
func (c *collector) records() []record.Record {
	var out []record.Record
	for _, pf := range c.fetches {
		out = append(out, pf.Records...)
	}
	return out
}

// readToEnd reads "old" through lp until it is caught up, and returns the
// collector and its records, which must be n.
func readToEnd(t *testing.T, lp *legacyProxy, n int) (*collector, []record.Record) {
	t.Helper()
	col := newCollector(t, openSource(t, Config{Brokers: lp.Addrs(), Topics: []string{"old"}}))
	col.until("caught up", col.caughtUp)
	recs := col.records()
	if len(recs) != n {
		t.Fatalf("%d records, want %d", len(recs), n)
	}
	return col, recs
}

// TestLegacySetThenBatch: a partition holding 10 magic-1 records, then a
// v2 batch of 10, delivers all 20 with their offsets and timestamps.
func TestLegacySetThenBatch(t *testing.T) {
	c := startCluster(t, embedded.WithTopic("old", 1))
	produceBatches(t, c, "old", 1, 2, 10)
	lp := startLegacyProxy(t, c, "old", map[int64][]byte{
		0: kbatchtest.Legacy(t, kbatchtest.LegacySpec{Magic: 1, Messages: legacyMsgs(0, 10, 0)}),
	})
	_, recs := readToEnd(t, lp, 20)
	for i, r := range recs {
		off := int64(i)
		wantValue, wantTime := fmt.Sprintf("legacy-%d", off), time.UnixMilli(legacyT0+1000*off)
		if i >= 10 {
			wantValue, wantTime = fmt.Sprintf(`{"b":1,"i":%d,`, i-10), time.UnixMilli(kbatchtest.FirstTimestamp)
		}
		if r.Offset != off || !strings.HasPrefix(string(r.Value), wantValue) || !r.Timestamp.Equal(wantTime) {
			t.Fatalf("record %d: offset %d, value %q, time %v; want %d, %q…, %v", i, r.Offset, r.Value, r.Timestamp, off, wantValue, wantTime)
		}
	}
}

// TestOnlyLegacySets: a partition holding only legacy sets, of every form
// (magic 0 uncompressed and gzip'd, magic 1 in snappy and in lz4 under
// LogAppendTime), is read to its end, every record with its offset and
// timestamp (none under magic 0), and then waits for more rather than
// fetching again at once.
func TestOnlyLegacySets(t *testing.T) {
	t.Parallel()
	const logAppend = 1_650_000_000_000
	c := startCluster(t, embedded.WithTopic("old", 1))
	produceBatches(t, c, "old", 1, 4, 5)
	lp := startLegacyProxy(t, c, "old", map[int64][]byte{
		0:  kbatchtest.Legacy(t, kbatchtest.LegacySpec{Magic: 0, Messages: legacyMsgs(0, 5, 0)}),
		5:  kbatchtest.Legacy(t, kbatchtest.LegacySpec{Magic: 0, Codec: kgo.GzipCompression(), Offset: 9, Messages: legacyMsgs(5, 5, 5)}),
		10: kbatchtest.Legacy(t, kbatchtest.LegacySpec{Magic: 1, Xerial: true, Offset: 14, Timestamp: legacyT0 + 14000, Messages: legacyMsgs(10, 5, 0)}),
		15: kbatchtest.Legacy(t, kbatchtest.LegacySpec{Magic: 1, Codec: kgo.Lz4Compression(), Offset: 19, Timestamp: logAppend, Attrs: 0x08,
			Messages: legacyMsgs(15, 5, 0)}),
	})
	col, recs := readToEnd(t, lp, 20)
	for i, r := range recs {
		off := int64(i)
		var want time.Time // magic 0: none
		switch {
		case off >= 15:
			want = time.UnixMilli(logAppend)
		case off >= 10:
			want = time.UnixMilli(legacyT0 + 1000*off)
		}
		if r.Offset != off || string(r.Value) != fmt.Sprintf("legacy-%d", off) || !r.Timestamp.Equal(want) || r.Timestamp.IsZero() != want.IsZero() {
			t.Fatalf("record %d: offset %d, value %q, time %v; want %d, legacy-%d, %v", i, r.Offset, r.Value, r.Timestamp, off, off, want)
		}
	}
	before := lp.count()
	col.pollFor(500 * time.Millisecond)
	if n := lp.count() - before; n > 20 { // FetchMaxWait is 100 ms: about 5
		t.Fatalf("%d fetches of the caught-up partition in 500 ms", n)
	}
}

// TestUndecodableLegacySetFailsPartition: a legacy set that cannot be
// decoded (a zstd wrapper: message sets have no zstd) fails its partition
// with an error naming the form, logged with the partition; the partition
// delivers nothing past it and is fetched again only after a backoff, not
// in a loop.
func TestUndecodableLegacySetFailsPartition(t *testing.T) {
	t.Parallel()
	c := startCluster(t, embedded.WithTopic("old", 1))
	produceBatches(t, c, "old", 1, 2, 5)
	lp := startLegacyProxy(t, c, "old", map[int64][]byte{
		0: kbatchtest.Legacy(t, kbatchtest.LegacySpec{Magic: 1, Codec: kgo.ZstdCompression(), Offset: 4, Messages: legacyMsgs(0, 5, 0)}),
	})
	core, logs := observer.New(zapcore.WarnLevel)
	col := newCollector(t, openSource(t, Config{Brokers: lp.Addrs(), Topics: []string{"old"}, Logger: zap.New(core)}))
	tp := record.TopicPartition{Topic: "old", Partition: 0}
	var failure error
	col.until("the partition failing", func() bool {
		for _, pf := range col.fetches {
			if pf.TopicPartition == tp && pf.Err != nil {
				failure = pf.Err
				return true
			}
		}
		return false
	})
	if !errors.Is(failure, kbatch.ErrCorrupt) || !strings.Contains(failure.Error(), "magic-1 message set at offset 4: compression codec 4") {
		t.Fatalf("error %v, want ErrCorrupt naming the magic-1 set and its codec", failure)
	}
	warned := logs.FilterMessageSnippet("fetch of partition failed").FilterField(zap.String("topic", "old")).FilterField(zap.Int32("partition", 0))
	if warned.Len() == 0 {
		t.Fatalf("no warning naming the partition; logged: %v", logs.All())
	}
	before := lp.count()
	col.pollFor(time.Second)
	if n := lp.count() - before; n > 40 { // RetryBackoff 20 ms, doubling up to 400 ms: about 8
		t.Fatalf("%d fetches of the failing partition in 1 s: it spins", n)
	}
	if len(col.records()) != 0 || col.pos[tp] != 0 {
		t.Fatalf("%d records delivered, position %d; want none past the set, position 0", len(col.records()), col.pos[tp])
	}
}

// TestNoProgressFailsPartition: an answer of whole batches that all end
// below the position, with nothing cut short after them, fails the
// partition and backs it off: fetched again at once, it would answer the
// same forever.
func TestNoProgressFailsPartition(t *testing.T) {
	src, err := New(Config{Brokers: []string{"127.0.0.1:1"}, Topics: []string{"stuck"}})
	if err != nil {
		t.Fatal(err)
	}
	f := newFetcher(src, []record.PartitionInfo{{TopicPartition: record.TopicPartition{Topic: "stuck"}, Start: 3, End: 6}})
	p := f.parts[0]
	raw := kbatchtest.Build(t, kbatchtest.Spec{ProducerID: -1, ProducerEpoch: -1, Records: []kmsg.Record{{Value: []byte("a")}, {OffsetDelta: 1}, {OffsetDelta: 2}}})
	pf, ok := f.parse(p, &fetchBlock{raw: raw, hwm: 6, lso: 6}, time.Now())
	if !ok || pf.Err == nil || !strings.Contains(pf.Err.Error(), "no progress") || p.pos != 3 || !p.failed || !p.retryAt.After(time.Now()) {
		t.Fatalf("ok %v, %+v, position %d, failed %v, retry at %v; want a failed partition at 3, backed off", ok, pf, p.pos, p.failed, p.retryAt)
	}
	// The same batch cut short after it is a limit too small: no failure.
	p.failed, p.retryAt = false, time.Time{}
	more := kbatchtest.Build(t, kbatchtest.Spec{First: 3, ProducerID: -1, ProducerEpoch: -1, Records: []kmsg.Record{{Value: []byte("b")}}})
	if pf, _ := f.parse(p, &fetchBlock{raw: append(raw, more[:20]...), hwm: 6, lso: 6}, time.Now()); pf.Err != nil || p.failed {
		t.Fatalf("a cut batch after one below the position: %+v", pf)
	}
}
