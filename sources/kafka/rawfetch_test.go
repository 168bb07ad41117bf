package kafka

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
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
// its records, over the raw transport or sarama's.
func drain(t *testing.T, cfg Config, viaSarama bool) map[record.TopicPartition][]record.Record {
	t.Helper()
	src := openSource(t, cfg, func(s *Source) { s.saramaFetch = viaSarama })
	if src.useRaw() == viaSarama {
		t.Fatalf("useRaw %v with saramaFetch %v", src.useRaw(), viaSarama)
	}
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

// TestRawTransportMatchesSarama reads the same topics over both fetch
// transports and compares them record for record, and both with what was
// produced: every compression codec, headers, null and present keys,
// committed and aborted transactions under both isolation levels, and
// partitions read a few hundred bytes at a time.
func TestRawTransportMatchesSarama(t *testing.T) {
	codecs := map[string]kgo.CompressionCodec{
		"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(), "snappy": kgo.SnappyCompression(),
		"lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression(),
	}
	opts := []embedded.Option{embedded.WithTopic("tx", 1)}
	for name := range codecs {
		opts = append(opts, embedded.WithTopic("codec-"+name, 2))
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
				cfg := Config{Brokers: c.Addrs(), Topics: topics, Isolation: iso, PartitionMaxBytes: maxBytes}
				raw, viaSarama := drain(t, cfg, false), drain(t, cfg, true)
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
					}{{"raw", raw[tp]}, {"sarama", viaSarama[tp]}} {
						if err := sameRecords(got.recs, exp); err != nil {
							t.Errorf("%s transport, %v: %v", got.name, tp, err)
						}
					}
					if err := sameTransport(raw[tp], viaSarama[tp]); err != nil {
						t.Errorf("%v: raw and sarama transports differ: %v", tp, err)
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
// one-partition topic and returns an open source on it, a fetcher of the
// partition (not running) and the fetcher's raw connection to the leader.
func rawFetcher(t *testing.T, topic string, batches, n int) (*Source, *fetcher, *sarama.Broker, *rawConn) {
	t.Helper()
	c := startCluster(t, embedded.WithTopic(topic, 1))
	for i := range batches {
		mustProduce(t, c, transportRecords(topic, 0, n, fmt.Sprint("b", i))...)
	}
	src := openSource(t, Config{Brokers: c.Addrs(), Topics: []string{topic}})
	tp := record.TopicPartition{Topic: topic, Partition: 0}
	f := newFetcher(src, []record.PartitionInfo{{TopicPartition: tp, End: int64(batches * n)}})
	t.Cleanup(f.closeConns)
	b, err := src.leader(tp)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := f.rawConnTo(src.ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	return src, f, b, conn
}

// A raw answer whose last batch is cut off (a broker may fill a response
// up to the byte limit mid-batch): the complete batches are delivered, the
// position stops before the cut batch, and an answer holding only a cut
// batch asks for more bytes next time.
func TestRawTruncatedTrailingBatch(t *testing.T) {
	// The partition's raw batches (three produce calls, three batches),
	// fetched over the raw transport.
	src, f, _, conn := rawFetcher(t, "cut", 3, 10)
	info := []record.PartitionInfo{{TopicPartition: f.parts[0].tp, End: 30}}
	f.parts[0].maxBytes = 1 << 20
	resp, err := f.roundTrip(conn, f.parts)
	if err != nil {
		t.Fatal(err)
	}
	raw := resp.Topics[0].Partitions[0].RecordBatches
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

// A broken raw connection fails the fetch of its partitions (no evidence,
// backed off) and is dropped; the next fetch redials and delivers.
func TestRawConnectionErrorRedials(t *testing.T) {
	_, f, b, conn := rawFetcher(t, "drop", 1, 5)
	_ = conn.conn.Close() // the connection breaks under the fetcher
	pfs := f.fetch(bg, f.parts)
	if len(pfs) != 1 || pfs[0].Err == nil || pfs[0].End != -1 || len(pfs[0].Records) > 0 {
		t.Fatalf("fetch on a broken connection: %+v, want one failed partition without evidence", pfs)
	}
	if !f.parts[0].failed || f.parts[0].retryAt.IsZero() || len(f.conns) != 0 {
		t.Fatalf("after the failure: failed %v, retryAt %v, %d connections; want failed, backed off, none",
			f.parts[0].failed, f.parts[0].retryAt, len(f.conns))
	}
	pfs = f.fetch(bg, f.parts)
	if len(pfs) != 1 || pfs[0].Err != nil || len(pfs[0].Records) != 5 || pfs[0].End != 5 {
		t.Fatalf("fetch after redial: %+v, want the 5 records and end 5", pfs)
	}
	if f.conns[b.ID()] == nil || f.conns[b.ID()] == conn {
		t.Fatal("no new connection after the failure")
	}
}

// A fetcher's raw connections close when it stops because its partitions
// were dropped (the source lives on), and when the source closes.
func TestRawConnectionsClose(t *testing.T) {
	src, f, b, conn := rawFetcher(t, "cl", 1, 5)
	tp := f.parts[0].tp
	closed := func(what string, conn *rawConn) {
		t.Helper()
		_ = conn.conn.SetReadDeadline(time.Now().Add(hangGuard))
		if _, err := conn.conn.Read(make([]byte, 1)); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("%s: reading the connection: %v, want net.ErrClosed", what, err)
		}
	}

	// run uses conn, the connection to the leader in f's map.
	out := make(chan item, 100)
	done := make(chan struct{})
	go func() { defer close(done); f.run(src.ctx, out) }()
	<-out // it fetched
	f.drop([]record.TopicPartition{tp})
	<-done
	closed("after its partitions were dropped", conn)

	f = newFetcher(src, []record.PartitionInfo{{TopicPartition: tp, End: 5}})
	conn, err := f.rawConnTo(src.ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	closed("after the source closed", conn)
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

// answerOnce replaces conn's connection with one whose broker reads one
// request and writes answer(its correlation id) back.
func answerOnce(conn *rawConn, answer func(corr []byte) []byte) {
	_ = conn.conn.Close()
	client, server := net.Pipe()
	conn.conn = client
	go func() {
		defer server.Close()
		var hdr [12]byte // size, api key, version, correlation id
		if _, err := io.ReadFull(server, hdr[:]); err != nil {
			return
		}
		if _, err := io.CopyN(io.Discard, server, int64(binary.BigEndian.Uint32(hdr[:]))-8); err != nil {
			return
		}
		_, _ = server.Write(answer(hdr[8:]))
	}()
}

// A raw answer with a top-level error code fails every partition it was
// for with that error (no evidence), as sarama's transport does; the
// connection, which works, is kept.
func TestRawResponseErrorCode(t *testing.T) {
	_, f, b, conn := rawFetcher(t, "toperr", 1, 1)
	answerOnce(conn, func(corr []byte) []byte {
		resp := kmsg.NewPtrFetchResponse()
		resp.Version = fetchVersion
		resp.ErrorCode = int16(sarama.ErrFetchSessionIDNotFound)
		body := resp.AppendTo(append([]byte(nil), corr...))
		return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
	})
	pfs := f.fetch(bg, f.parts)
	if len(pfs) != 1 || !errors.Is(pfs[0].Err, sarama.ErrFetchSessionIDNotFound) || pfs[0].End != -1 || !f.parts[0].failed {
		t.Fatalf("fetch answered with a top-level error: %+v, want one failed partition with %v", pfs, sarama.ErrFetchSessionIDNotFound)
	}
	if f.conns[b.ID()] != conn {
		t.Error("the connection was dropped after a well-formed error answer")
	}
}

// A response whose size prefix exceeds maxResponseBytes fails the fetch of
// its partitions with an error naming the size and the limit, without
// allocating it, and the connection is dropped.
func TestRawResponseTooLarge(t *testing.T) {
	_, f, _, conn := rawFetcher(t, "huge", 1, 1)
	answerOnce(conn, func(corr []byte) []byte {
		return append(binary.BigEndian.AppendUint32(nil, maxResponseBytes+1), corr...)
	})
	pfs := f.fetch(bg, f.parts)
	if len(pfs) != 1 || pfs[0].Err == nil || pfs[0].End != -1 {
		t.Fatalf("fetch answered with an oversized response: %+v, want one failed partition without evidence", pfs)
	}
	if msg := pfs[0].Err.Error(); !strings.Contains(msg, fmt.Sprint(maxResponseBytes+1)) || !strings.Contains(msg, fmt.Sprint(maxResponseBytes)) {
		t.Errorf("error %q does not name the size and the limit", msg)
	}
	if len(f.conns) != 0 {
		t.Errorf("%d connections after the failure, want the broken one dropped", len(f.conns))
	}
}

// A raw answer whose batch is corrupt fails its partition (no evidence,
// backed off) with kbatch's error, and the position does not move.
func TestRawCorruptBatchFailsPartition(t *testing.T) {
	_, f, _, _ := rawFetcher(t, "bad", 1, 5)
	raw := kbatchtest.Build(t, kbatchtest.Spec{ProducerID: -1, ProducerEpoch: -1, Records: []kmsg.Record{{Value: []byte("v")}}})
	raw[len(raw)-1] ^= 1 // the CRC no longer matches
	p := f.parts[0]
	pf, ok := f.parse(p, &fetchBlock{raw: raw, hwm: 1, lso: 1}, time.Now())
	if !ok || !errors.Is(pf.Err, kbatch.ErrCorrupt) || pf.End != -1 || len(pf.Records) != 0 || p.pos != 0 || !p.failed {
		t.Fatalf("corrupt batch: ok %v, %+v, position %d, failed %v; want a failed partition (ErrCorrupt) at position 0",
			ok, pf, p.pos, p.failed)
	}
}

// Ending the fetcher's context interrupts a raw fetch in flight: it
// returns the context's error (which fetch reports as stopping, not as a
// failed partition) and the connection is closed and dropped.
func TestRawFetchInterruptedByContext(t *testing.T) {
	_, f, _, _ := rawFetcher(t, "stall", 1, 1)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	asked := make(chan net.Conn, 1)
	go func() { // a broker that reads the request and never answers
		c, err := ln.Accept()
		if err != nil {
			return
		}
		var hdr [4]byte
		_, _ = io.ReadFull(c, hdr[:])
		asked <- c
	}()
	stalled := sarama.NewBroker(ln.Addr().String())
	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	type result struct {
		blocks map[record.TopicPartition]*fetchBlock
		err    error
	}
	done := make(chan result, 1)
	go func() {
		blocks, err := f.fetchRaw(ctx, stalled, f.parts)
		done <- result{blocks, err}
	}()
	server := <-asked
	defer server.Close()
	if len(f.conns) != 2 { // the leader's (rawFetcher) and the stalled broker's
		t.Fatalf("%d connections during the fetch, want 2", len(f.conns))
	}
	cancel()
	var r result
	select {
	case r = <-done:
	case <-time.After(hangGuard): // under the connection's own deadline
		t.Fatal("the fetch was not interrupted by its context")
	}
	if !errors.Is(r.err, context.Canceled) || r.blocks != nil {
		t.Fatalf("interrupted fetch: %v, %v; want context.Canceled and no answer", r.blocks, r.err)
	}
	if f.conns[stalled.ID()] != nil || len(f.conns) != 1 {
		t.Fatalf("%d connections after the interrupted fetch, want the stalled one dropped", len(f.conns))
	}
	_ = server.SetReadDeadline(time.Now().Add(hangGuard))
	if _, err := io.Copy(io.Discard, server); err != nil {
		t.Fatalf("the broker's side: %v, want the connection closed (EOF)", err)
	}
}

// A response whose delivered batches are all compressed leaves its buffer
// to its connection for the next response (nothing delivered aliases it);
// one with an uncompressed batch does not. The records of every answer,
// read after all of them, are still what was produced. (Reusing a buffer
// that records alias is also what TestRawTransportMatchesSarama's
// uncompressed topic catches: a later response overwrites their bytes.)
func TestRawReusesUnaliasedResponse(t *testing.T) {
	for _, tc := range []struct {
		name  string
		codec kgo.CompressionCodec
		reuse bool
	}{{"snappy", kgo.SnappyCompression(), true}, {"none", kgo.NoCompression(), false}} {
		t.Run(tc.name, func(t *testing.T) {
			c := startCluster(t, embedded.WithTopic("reuse", 1))
			var exp []*kgo.Record
			for i := range 3 {
				recs := transportRecords("reuse", 0, 20, fmt.Sprint("b", i))
				produceCodec(t, c, tc.codec, recs)
				exp = append(exp, recs...)
			}
			src := openSource(t, Config{Brokers: c.Addrs(), Topics: []string{"reuse"}})
			tp := record.TopicPartition{Topic: "reuse", Partition: 0}
			f := newFetcher(src, []record.PartitionInfo{{TopicPartition: tp, End: int64(len(exp))}})
			t.Cleanup(f.closeConns)
			var got []record.Record
			for fetches := 0; len(got) < len(exp) && fetches < 20; fetches++ {
				f.parts[0].maxBytes = 1 // an answer of one batch
				for _, pf := range f.fetch(bg, f.parts) {
					got = append(got, pf.Records...)
				}
				for _, conn := range f.conns {
					if kept := conn.spare != nil; kept != tc.reuse {
						t.Fatalf("after fetch %d the connection keeps the response buffer: %v, want %v", fetches+1, kept, tc.reuse)
					}
				}
			}
			if err := sameRecords(got, exp); err != nil {
				t.Fatal(err)
			}
		})
	}
}
