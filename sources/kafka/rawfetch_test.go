package kafka

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/signalbox/signalbox/embedded"
	"github.com/signalbox/signalbox/internal/kbatch"
	"github.com/signalbox/signalbox/internal/kbatch/kbatchtest"
	"github.com/signalbox/signalbox/record"
)

// tsBase is the CreateTime of the first record the transport tests
// produce; record i of a produce call is tsBase + i ms.
var tsBase = time.UnixMilli(1_700_000_000_000)

// produced is what the transport tests wrote to one partition, in offset
// order, with whether each record is in an aborted transaction.
type produced struct {
	recs    []*kgo.Record
	aborted []bool
}

func transportRecords(topic string, partition int32, n int, prefix string) []*kgo.Record {
	out := make([]*kgo.Record, n)
	for i := range out {
		r := &kgo.Record{Topic: topic, Partition: partition, Timestamp: tsBase.Add(time.Duration(i) * time.Millisecond),
			Value: []byte(fmt.Sprintf(`{"%s":%d,"pad":"%s"}`, prefix, i, bytes.Repeat([]byte("x"), i%40)))}
		if i%3 != 0 {
			r.Key = []byte(fmt.Sprintf("k%d", i%7))
		}
		if i%2 == 0 {
			r.Headers = []kgo.RecordHeader{{Key: "trace", Value: []byte(prefix)}, {Key: "n", Value: []byte(fmt.Sprint(i))}}
		}
		out[i] = r
	}
	return out
}

// produceCodec writes recs with a producer compressing with codec, in
// several produce calls so that each partition gets several batches.
func produceCodec(t *testing.T, c *embedded.Cluster, codec kgo.CompressionCodec, recs []*kgo.Record) {
	t.Helper()
	cl, err := kgo.NewClient(append(c.ClientOptions(), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(codec))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for chunk := range slices.Chunk(recs, 40) {
		if err := cl.ProduceSync(bg, chunk...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

// drain reads every assigned partition to its end snapshot and returns
// its records.
func drain(t *testing.T, cfg Config) map[record.TopicPartition][]record.Record {
	t.Helper()
	src := openSource(t, cfg)
	col := newCollector(t, src)
	col.until("caught up", col.caughtUp)
	out := map[record.TopicPartition][]record.Record{}
	for _, pf := range col.fetches {
		if pf.Err != nil {
			t.Fatalf("%v: fetch failed: %v", pf.TopicPartition, pf.Err)
		}
		out[pf.TopicPartition] = append(out[pf.TopicPartition], pf.Records...)
	}
	_ = src.Close()
	return out
}

// consumed reads topics with franz-go's own consumer until it has counts
// records of each partition: the reference the source's transport is
// compared with.
func consumed(t *testing.T, c *embedded.Cluster, iso string, topics []string, counts map[record.TopicPartition]int) map[record.TopicPartition][]record.Record {
	t.Helper()
	level := kgo.ReadCommitted()
	if iso == ReadUncommitted {
		level = kgo.ReadUncommitted()
	}
	cl, err := kgo.NewClient(append(c.ClientOptions(), kgo.ConsumeTopics(topics...), kgo.FetchIsolationLevel(level),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	out := map[record.TopicPartition][]record.Record{}
	done := func() bool {
		for tp, n := range counts {
			if len(out[tp]) < n {
				return false
			}
		}
		return true
	}
	ctx, cancel := context.WithTimeout(bg, hangGuard)
	defer cancel()
	for !done() {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("franz-go's consumer: %v", err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			tp := record.TopicPartition{Topic: r.Topic, Partition: r.Partition}
			rec := record.Record{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value, Timestamp: r.Timestamp}
			for _, h := range r.Headers {
				rec.Headers = append(rec.Headers, record.Header{Key: h.Key, Value: h.Value})
			}
			out[tp] = append(out[tp], rec)
		})
	}
	return out
}

// TestTransportMatchesFranzGo reads the same topics through the source's
// fetch transport and franz-go's own consumer and compares them record for
// record, and both with what was produced: every compression codec,
// headers, null and present keys, committed and aborted transactions under
// both isolation levels, and partitions read a few hundred bytes at a
// time; without authentication and with SASL/SCRAM-SHA-256, which take the
// one transport.
func TestTransportMatchesFranzGo(t *testing.T) {
	for _, auth := range []string{"plaintext", SASLScramSHA256} {
		t.Run(auth, func(t *testing.T) { transportMatches(t, auth) })
	}
}

func transportMatches(t *testing.T, auth string) {
	codecs := map[string]kgo.CompressionCodec{
		"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(), "snappy": kgo.SnappyCompression(),
		"lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression(),
	}
	opts := []embedded.Option{embedded.WithTopic("tx", 1)}
	for name := range codecs {
		opts = append(opts, embedded.WithTopic("codec-"+name, 2))
	}
	var sasl SASL
	if auth != "plaintext" {
		sasl = SASL{Mechanism: auth, User: "alice", Password: "s3cret"}
		opts = append(opts, embedded.WithUser(auth, sasl.User, sasl.Password))
	}
	c := startCluster(t, opts...)
	want := map[record.TopicPartition]*produced{}
	add := func(tp record.TopicPartition, rs []*kgo.Record, aborted bool) {
		if want[tp] == nil {
			want[tp] = &produced{}
		}
		for _, r := range rs {
			want[tp].recs = append(want[tp].recs, r)
			want[tp].aborted = append(want[tp].aborted, aborted)
		}
	}
	topics := []string{"tx"}
	for name, codec := range codecs {
		topic := "codec-" + name
		topics = append(topics, topic)
		for p := range int32(2) {
			rs := transportRecords(topic, p, 150, name)
			produceCodec(t, c, codec, rs)
			add(record.TopicPartition{Topic: topic, Partition: p}, rs, false)
		}
	}
	// One transactional producer aborts, commits, aborts: after the first
	// abort marker its committed records must be delivered again.
	tx := record.TopicPartition{Topic: "tx", Partition: 0}
	txcl, err := kgo.NewClient(append(c.ClientOptions(), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.TransactionalID("transport-test"))...)
	if err != nil {
		t.Fatal(err)
	}
	defer txcl.Close()
	steps := []struct {
		prefix string
		txn    bool
		commit bool
		n      int
	}{{"plain", false, false, 5}, {"aborted", true, false, 4}, {"committed", true, true, 6}, {"aborted2", true, false, 3}, {"tail", false, false, 2}}
	for _, s := range steps {
		rs := transportRecords("tx", 0, s.n, s.prefix)
		if !s.txn {
			mustProduce(t, c, rs...)
			add(tx, rs, false)
			continue
		}
		if err := txcl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := txcl.ProduceSync(bg, rs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if err := txcl.EndTransaction(bg, kgo.TransactionEndTry(s.commit)); err != nil {
			t.Fatal(err)
		}
		add(tx, rs, !s.commit)
	}

	for _, iso := range []string{ReadCommitted, ReadUncommitted} {
		for _, maxBytes := range []int32{0, 512} {
			t.Run(fmt.Sprintf("%s/partition-max-bytes=%d", iso, maxBytes), func(t *testing.T) {
				cfg := Config{Brokers: c.Addrs(), Topics: topics, Isolation: iso, PartitionMaxBytes: maxBytes, SASL: sasl}
				raw := drain(t, cfg)
				counts := map[record.TopicPartition]int{}
				for tp, p := range want {
					for _, aborted := range p.aborted {
						if !aborted || iso == ReadUncommitted {
							counts[tp]++
						}
					}
				}
				viaFranz := consumed(t, c, iso, topics, counts)
				for tp, p := range want {
					var exp []*kgo.Record
					for i, r := range p.recs {
						if !p.aborted[i] || iso == ReadUncommitted {
							exp = append(exp, r)
						}
					}
					for _, got := range []struct {
						name string
						recs []record.Record
					}{{"source", raw[tp]}, {"franz-go", viaFranz[tp]}} {
						if err := sameRecords(got.recs, exp); err != nil {
							t.Errorf("%s transport, %v: %v", got.name, tp, err)
						}
					}
					if err := sameTransport(raw[tp], viaFranz[tp]); err != nil {
						t.Errorf("%v: the source and franz-go's consumer differ: %v", tp, err)
					}
				}
			})
		}
	}
}

// sameRecords checks got against what was produced: key (null or not),
// value, headers and CreateTime, with strictly increasing offsets.
func sameRecords(got []record.Record, exp []*kgo.Record) error {
	if len(got) != len(exp) {
		return fmt.Errorf("%d records, want %d", len(got), len(exp))
	}
	for i, r := range got {
		e := exp[i]
		if i > 0 && r.Offset <= got[i-1].Offset {
			return fmt.Errorf("record %d: offset %d after %d", i, r.Offset, got[i-1].Offset)
		}
		if !bytes.Equal(r.Key, e.Key) || (r.Key == nil) != (e.Key == nil) || !bytes.Equal(r.Value, e.Value) ||
			!r.Timestamp.Equal(e.Timestamp) || len(r.Headers) != len(e.Headers) {
			return fmt.Errorf("record %d: key %q value %q at %v with %d headers, want key %q value %q at %v with %d headers",
				i, r.Key, r.Value, r.Timestamp, len(r.Headers), e.Key, e.Value, e.Timestamp, len(e.Headers))
		}
		for j, h := range r.Headers {
			if h.Key != e.Headers[j].Key || !bytes.Equal(h.Value, e.Headers[j].Value) {
				return fmt.Errorf("record %d header %d: %q=%q, want %q=%q", i, j, h.Key, h.Value, e.Headers[j].Key, e.Headers[j].Value)
			}
		}
	}
	return nil
}

// sameTransport compares the two transports' records field by field.
func sameTransport(a, b []record.Record) error {
	if len(a) != len(b) {
		return fmt.Errorf("%d records, %d", len(a), len(b))
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Topic != y.Topic || x.Partition != y.Partition || x.Offset != y.Offset || !bytes.Equal(x.Key, y.Key) ||
			(x.Key == nil) != (y.Key == nil) || !bytes.Equal(x.Value, y.Value) || !x.Timestamp.Equal(y.Timestamp) ||
			!slices.EqualFunc(x.Headers, y.Headers, func(h, k record.Header) bool { return h.Key == k.Key && bytes.Equal(h.Value, k.Value) }) {
			return fmt.Errorf("record %d: %+v vs %+v", i, x, y)
		}
	}
	return nil
}

// rawFetcher produces batches produce calls of n records each to a new
// one-partition topic and returns the cluster, an open source on it, a
// fetcher of the partition (not running) and the partition's leader.
func rawFetcher(t *testing.T, topic string, batches, n int) (*embedded.Cluster, *Source, *fetcher, int32) {
	t.Helper()
	c := startCluster(t, embedded.WithTopic(topic, 1))
	for i := range batches {
		mustProduce(t, c, transportRecords(topic, 0, n, fmt.Sprint("b", i))...)
	}
	src := openSource(t, Config{Brokers: c.Addrs(), Topics: []string{topic}})
	tp := record.TopicPartition{Topic: topic, Partition: 0}
	f := newFetcher(src, []record.PartitionInfo{{TopicPartition: tp, End: int64(batches * n)}})
	id, err := src.leader(tp)
	if err != nil {
		t.Fatal(err)
	}
	return c, src, f, id
}

// A raw answer whose last batch is cut off (a broker may fill a response
// up to the byte limit mid-batch): the complete batches are delivered, the
// position stops before the cut batch, and an answer holding only a cut
// batch asks for more bytes next time.
func TestRawTruncatedTrailingBatch(t *testing.T) {
	// The partition's raw batches (three produce calls, three batches).
	_, src, f, id := rawFetcher(t, "cut", 3, 10)
	info := []record.PartitionInfo{{TopicPartition: f.parts[0].tp, End: 30}}
	f.parts[0].maxBytes = 1 << 20
	blocks, err := f.fetchFrom(bg, id, f.parts)
	if err != nil {
		t.Fatal(err)
	}
	raw := blocks[f.parts[0].tp].raw
	first := 12 + int(binary.BigEndian.Uint32(raw[8:]))
	second := first + 12 + int(binary.BigEndian.Uint32(raw[first+8:]))

	for _, tc := range []struct {
		cut      int
		wantRecs int
		wantPos  int64
	}{{len(raw), 30, 30}, {second + 20, 20, 20}, {first - 1, 0, 0}} {
		f := newFetcher(src, info)
		p := f.parts[0]
		asked := p.maxBytes
		pf, _ := f.parse(p, &fetchBlock{raw: raw[:tc.cut], hwm: 30, lso: 30}, time.Now())
		if len(pf.Records) != tc.wantRecs || p.pos != tc.wantPos || pf.Err != nil {
			t.Errorf("cut at %d of %d: %d records, position %d, err %v; want %d records, position %d",
				tc.cut, len(raw), len(pf.Records), p.pos, pf.Err, tc.wantRecs, tc.wantPos)
		}
		if tc.wantRecs == 0 && p.maxBytes <= asked {
			t.Errorf("cut at %d: byte limit %d after %d; want it to grow (the first batch did not fit)", tc.cut, p.maxBytes, asked)
		}
	}
}

// A connection that breaks under a fetch fails the fetch of its partitions
// (no evidence, backed off); the next fetch reconnects and delivers.
func TestRawConnectionErrorRedials(t *testing.T) {
	c, _, f, _ := rawFetcher(t, "drop", 1, 5)
	c.Kfake().ControlKey(int16(kmsg.Fetch), func(kmsg.Request) (kmsg.Response, error, bool) {
		return nil, errors.New("connection dropped"), true // the broker closes the connection
	})
	pfs := f.fetch(bg, f.parts)
	if len(pfs) != 1 || pfs[0].Err == nil || pfs[0].End != -1 || len(pfs[0].Records) > 0 {
		t.Fatalf("fetch on a broken connection: %+v, want one failed partition without evidence", pfs)
	}
	if !f.parts[0].failed || f.parts[0].retryAt.IsZero() {
		t.Fatalf("after the failure: failed %v, retryAt %v; want failed, backed off", f.parts[0].failed, f.parts[0].retryAt)
	}
	// kgo may hand the next request to the dying connection before it has
	// noticed the death ("the broker connection has died"); the fetcher
	// retries after its backoff, and so does this test, until a redialled
	// connection answers.
	for deadline := time.Now().Add(hangGuard); ; time.Sleep(10 * time.Millisecond) {
		pfs = f.fetch(bg, f.parts)
		if len(pfs) != 1 || pfs[0].Err == nil || time.Now().After(deadline) ||
			!strings.Contains(pfs[0].Err.Error(), "connection has died") {
			break
		}
	}
	if len(pfs) != 1 || pfs[0].Err != nil || len(pfs[0].Records) != 5 || pfs[0].End != 5 {
		t.Fatalf("fetch after reconnecting: %+v, want the 5 records and end 5", pfs)
	}
}

// Once the source is closed, a fetch fails at once: its connections are
// the client's, closed with it.
func TestRawConnectionsClose(t *testing.T) {
	_, src, f, id := rawFetcher(t, "cl", 1, 5)
	if _, err := f.fetchFrom(bg, id, f.parts); err != nil {
		t.Fatal(err)
	}
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(bg, hangGuard)
	defer cancel()
	if _, err := f.fetchFrom(ctx, id, f.parts); !errors.Is(err, kgo.ErrClientClosed) {
		t.Fatalf("fetch after Close: %v, want kgo.ErrClientClosed", err)
	}
}

// A batch with the LogAppendTime attribute gives every record the batch's
// MaxTimestamp (the broker's append time), not FirstTimestamp + its delta.
// (Over TCP kfake cannot serve one: it stamps the batch's timestamps
// without recomputing its CRC, which both transports then reject.)
func TestParseLogAppendTime(t *testing.T) {
	src, err := New(Config{Brokers: []string{"127.0.0.1:1"}, Topics: []string{"lat"}})
	if err != nil {
		t.Fatal(err)
	}
	tp := record.TopicPartition{Topic: "lat"}
	var rs []kmsg.Record
	for i := range 4 {
		rs = append(rs, kmsg.Record{TimestampDelta64: int64(i), OffsetDelta: int32(i), Value: []byte(fmt.Sprint("v", i))})
	}
	for _, attrs := range []int16{0, 0x08} {
		raw := kbatchtest.Build(t, kbatchtest.Spec{Attrs: attrs, ProducerID: -1, ProducerEpoch: -1, Records: rs})
		f := newFetcher(src, []record.PartitionInfo{{TopicPartition: tp, End: 4}})
		pf, _ := f.parse(f.parts[0], &fetchBlock{raw: raw, hwm: 4, lso: 4}, time.Now())
		if len(pf.Records) != 4 {
			t.Fatalf("attributes %#x: %d records, want 4", attrs, len(pf.Records))
		}
		for i, r := range pf.Records {
			want := int64(kbatchtest.FirstTimestamp + i)
			if attrs != 0 {
				want = kbatchtest.MaxTimestamp
			}
			if r.Timestamp.UnixMilli() != want {
				t.Errorf("attributes %#x, record %d: timestamp %d ms, want %d", attrs, i, r.Timestamp.UnixMilli(), want)
			}
		}
	}
}

// An answer with a top-level error code fails every partition it was for
// with that error (no evidence); the connection, which works, serves the
// next fetch.
func TestRawResponseErrorCode(t *testing.T) {
	c, _, f, _ := rawFetcher(t, "toperr", 1, 1)
	c.Kfake().ControlKey(int16(kmsg.Fetch), func(req kmsg.Request) (kmsg.Response, error, bool) {
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		resp.ErrorCode = kerr.FetchSessionIDNotFound.Code
		return resp, nil, true
	})
	pfs := f.fetch(bg, f.parts)
	if len(pfs) != 1 || !errors.Is(pfs[0].Err, kerr.FetchSessionIDNotFound) || pfs[0].End != -1 || !f.parts[0].failed {
		t.Fatalf("fetch answered with a top-level error: %+v, want one failed partition with %v", pfs, kerr.FetchSessionIDNotFound)
	}
	pfs = f.fetch(bg, f.parts)
	if len(pfs) != 1 || pfs[0].Err != nil || len(pfs[0].Records) != 1 {
		t.Fatalf("fetch after the error answer: %+v, want the record", pfs)
	}
}

// A raw answer whose batch is corrupt fails its partition (no evidence,
// backed off) with kbatch's error, and the position does not move.
func TestRawCorruptBatchFailsPartition(t *testing.T) {
	_, _, f, _ := rawFetcher(t, "bad", 1, 5)
	raw := kbatchtest.Build(t, kbatchtest.Spec{ProducerID: -1, ProducerEpoch: -1, Records: []kmsg.Record{{Value: []byte("v")}}})
	raw[len(raw)-1] ^= 1 // the CRC no longer matches
	p := f.parts[0]
	pf, ok := f.parse(p, &fetchBlock{raw: raw, hwm: 1, lso: 1}, time.Now())
	if !ok || !errors.Is(pf.Err, kbatch.ErrCorrupt) || pf.End != -1 || len(pf.Records) != 0 || p.pos != 0 || !p.failed {
		t.Fatalf("corrupt batch: ok %v, %+v, position %d, failed %v; want a failed partition (ErrCorrupt) at position 0",
			ok, pf, p.pos, p.failed)
	}
}

// Ending the fetcher's context interrupts a fetch in flight: it returns
// the context's error (which fetch reports as stopping, not as a failed
// partition).
func TestRawFetchInterruptedByContext(t *testing.T) {
	c, _, f, id := rawFetcher(t, "stall", 1, 1)
	release := make(chan struct{})
	defer close(release)
	asked := make(chan struct{}, 1)
	kf := c.Kfake()
	kf.ControlKey(int16(kmsg.Fetch), func(kmsg.Request) (kmsg.Response, error, bool) {
		asked <- struct{}{}
		kf.SleepControl(func() { <-release }) // a broker that never answers
		return nil, nil, false
	})
	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	type result struct {
		blocks map[record.TopicPartition]*fetchBlock
		err    error
	}
	done := make(chan result, 1)
	go func() {
		blocks, err := f.fetchFrom(ctx, id, f.parts)
		done <- result{blocks, err}
	}()
	<-asked
	cancel()
	var r result
	select {
	case r = <-done:
	case <-time.After(hangGuard):
		t.Fatal("the fetch was not interrupted by its context")
	}
	if !errors.Is(r.err, context.Canceled) || r.blocks != nil {
		t.Fatalf("interrupted fetch: %v, %v; want context.Canceled and no answer", r.blocks, r.err)
	}
	if pfs := f.fetch(ctx, f.parts); len(pfs) != 0 {
		t.Fatalf("fetch on an ended context: %+v, want nothing reported (stopping)", pfs)
	}
}

// An answer with a batch whose CRC holds but whose records do not decode
// fails its partition with no records and the position unmoved, wherever
// the batch is: after records to deliver, below the position (already
// consumed), or aborted (read_committed), though none of its records would
// be delivered.
func TestRawMalformedRecordsFailPartition(t *testing.T) {
	rs := func(n int) []kmsg.Record {
		out := make([]kmsg.Record, n)
		for i := range out {
			out[i] = kmsg.Record{OffsetDelta: int32(i), Value: []byte("v")}
		}
		return out
	}
	// malformed claims one record more than the batch holds, its CRC fixed.
	malformed := func(spec kbatchtest.Spec) []byte {
		raw := kbatchtest.Build(t, spec)
		binary.BigEndian.PutUint32(raw[57:], binary.BigEndian.Uint32(raw[57:])+1)
		binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
		return raw
	}
	good := func(first int64) []byte {
		return kbatchtest.Build(t, kbatchtest.Spec{First: first, ProducerID: -1, ProducerEpoch: -1, Records: rs(3)})
	}
	for _, tc := range []struct {
		name      string
		raw       []byte
		pos       int64
		isolation string
		aborted   []abortedTxn
	}{
		{"after records", append(good(0), malformed(kbatchtest.Spec{First: 3, ProducerID: -1, ProducerEpoch: -1, Records: rs(3)})...), 0, ReadUncommitted, nil},
		{"consumed", append(malformed(kbatchtest.Spec{First: 0, ProducerID: -1, ProducerEpoch: -1, Records: rs(3)}), good(3)...), 3, ReadUncommitted, nil},
		{"aborted", append(malformed(kbatchtest.Spec{First: 0, Attrs: 0x10, ProducerID: 7, Records: rs(3)}), good(3)...), 0, ReadCommitted, []abortedTxn{{7, 0}}},
	} {
		src, err := New(Config{Brokers: []string{"127.0.0.1:1"}, Topics: []string{"mal"}, Isolation: tc.isolation})
		if err != nil {
			t.Fatal(err)
		}
		f := newFetcher(src, []record.PartitionInfo{{TopicPartition: record.TopicPartition{Topic: "mal"}, Start: tc.pos, End: 6}})
		p := f.parts[0]
		pf, ok := f.parse(p, &fetchBlock{raw: tc.raw, hwm: 6, lso: 6, aborted: tc.aborted}, time.Now())
		if !ok || !errors.Is(pf.Err, kbatch.ErrCorrupt) || len(pf.Records) != 0 || p.pos != tc.pos || !p.failed {
			t.Errorf("%s: ok %v, %+v, position %d, failed %v; want a failed partition (ErrCorrupt) at position %d",
				tc.name, ok, pf, p.pos, p.failed, tc.pos)
		}
	}
}
