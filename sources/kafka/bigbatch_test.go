package kafka

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/signalbox/signalbox/internal/kbatch/kbatchtest"

	"github.com/signalbox/signalbox/embedded"
	"github.com/signalbox/signalbox/record"
)

// produceBatches writes batches batches of n records to each partition of
// topic, one record batch per call and partition, uncompressed: each record
// is about 90 bytes in the log, and batches of the same n are of the same
// size. It builds the batches itself (kbatchtest) and sends them in raw
// Produce requests, because a producer client's batches are not what it
// was given: kgo cuts a call's records in two when it learns the topic's
// partitions while Flush drains them, and the timestamp deltas it writes
// (varints, one byte below 64 ms, two above) make a batch built slowly
// larger than one of the same records built fast; the tests size fetches
// by batches. It returns batches, the batches written to each partition.
func produceBatches(t *testing.T, c *embedded.Cluster, topic string, partitions int32, batches, n int) int {
	t.Helper()
	vs := kversion.Stable()
	vs.SetMaxKeyVersion(kmsg.Produce.Int16(), 12) // v13 names topics by id
	cl, err := kgo.NewClient(append(c.ClientOptions(), kgo.MaxVersions(vs))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for b := range batches {
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 30_000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		for p := range partitions {
			rs := make([]kmsg.Record, n)
			for i := range rs {
				rs[i].OffsetDelta = int32(i)
				rs[i].Value = []byte(fmt.Sprintf(`{"b":%d,"i":%d,"pad":%q}`, b, i, strings.Repeat("x", 60)))
			}
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Partition = p
			rp.Records = kbatchtest.Build(t, kbatchtest.Spec{ProducerID: -1, ProducerEpoch: -1, Records: rs})
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(bg, cl)
		if err != nil {
			t.Fatal(err)
		}
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
					t.Fatalf("produce to %s[%d]: %v", rt.Topic, rp.Partition, err)
				}
			}
		}
	}
	return batches
}

// TestFetchSizedToWholeBatches: when one producer batch holds many more
// records than PartitionMaxRecords, a partition's byte limit is never sized
// below its batches: a broker answers whole batches only, and leaves a
// batch larger than the limit out of the answer (kfake) or cuts it
// (Kafka) unless its partition comes first. So every fetch, once the
// first answers have shown the batches' size, carries a batch of every
// partition, instead of one partition's in turn.
func TestFetchSizedToWholeBatches(t *testing.T) {
	const parts, batches, n = 3, 6, 1000 // a batch of about 90 KB: more than a first fetch's 16 KiB
	c := startCluster(t, embedded.WithTopic("big", parts))
	written := produceBatches(t, c, "big", parts, batches, n)
	src := openSource(t, Config{Brokers: c.Addrs(), Topics: []string{"big"}, PartitionMaxRecords: 20})
	var infos []record.PartitionInfo
	for p := range int32(parts) {
		infos = append(infos, record.PartitionInfo{TopicPartition: record.TopicPartition{Topic: "big", Partition: p}, End: batches * n})
	}
	f := newFetcher(src, infos)
	var rounds []int // partitions with records, per fetch
	for done := 0; done < parts && len(rounds) < 10*batches; {
		got := 0
		for _, pf := range f.fetch(bg, f.parts) {
			if pf.Err != nil {
				t.Fatal(pf.Err)
			}
			if len(pf.Records) > 0 {
				got++
				if len(pf.Records) > n {
					t.Fatalf("%v: %d records in one answer, want one batch (%d)", pf.TopicPartition, len(pf.Records), n)
				}
			}
		}
		done = 0
		for _, p := range f.parts {
			if p.pos == batches*n {
				done++
			}
		}
		rounds = append(rounds, got)
	}
	// The first fetches may find the limits too small (the batches' size is
	// unknown yet); after them, every partition advances in every fetch.
	if len(rounds) > written+2 {
		t.Fatalf("%d fetches to read %d batches per partition (partitions with records per fetch: %v); want at most %d",
			len(rounds), written, rounds, written+2)
	}
	for _, p := range f.parts {
		if p.maxBytes < 80<<10 {
			t.Errorf("%v: byte limit %d, below one batch of %d records", p.tp, p.maxBytes, n)
		}
	}
}

// TestFetchSizedAfterSmallBatch: a small batch between big ones (a
// producer flushes whatever it has) does not make the next answer several
// big batches, nor leave the next big batch out: it is answered alone when
// its successor does not fit, and the next limit is sized from the bytes
// answered, never below that batch. So
// after the first answers every fetch carries one batch of every partition.
func TestFetchSizedAfterSmallBatch(t *testing.T) {
	const parts, n, small = 3, 1000, 5 // big batches of about 90 KB, small ones of about 500 bytes
	c := startCluster(t, embedded.WithTopic("mixed", parts))
	batches := produceBatches(t, c, "mixed", parts, 2, n)
	batches += produceBatches(t, c, "mixed", parts, 1, small)
	batches += produceBatches(t, c, "mixed", parts, 4, n)
	const end = 6*n + small
	src := openSource(t, Config{Brokers: c.Addrs(), Topics: []string{"mixed"}, PartitionMaxRecords: 20})
	var infos []record.PartitionInfo
	for p := range int32(parts) {
		infos = append(infos, record.PartitionInfo{TopicPartition: record.TopicPartition{Topic: "mixed", Partition: p}, End: end})
	}
	f := newFetcher(src, infos)
	var sizes [][]int // records per partition answer, per fetch
	for done := 0; done < parts; {
		if len(sizes) == 4*batches {
			t.Fatalf("%d fetches and not at the end (records per answer, per fetch: %v)", len(sizes), sizes)
		}
		var got []int
		for _, pf := range f.fetch(bg, f.parts) {
			if pf.Err != nil {
				t.Fatal(pf.Err)
			}
			if len(pf.Records) > n {
				t.Fatalf("%v: %d records in one answer, want one batch (%d); before: %v", pf.TopicPartition, len(pf.Records), n, sizes)
			}
			got = append(got, len(pf.Records))
		}
		sizes = append(sizes, got)
		done = 0
		for _, p := range f.parts {
			if p.pos == end {
				done++
			}
		}
	}
	// The first fetches may find the limits too small (the batches' size is
	// unknown yet); after them, every partition advances in every fetch.
	if len(sizes) > batches+2 {
		t.Fatalf("%d fetches to read %d batches per partition (records per answer, per fetch: %v); want at most %d",
			len(sizes), batches, sizes, batches+2)
	}
}

// TestLargestBatch reads batch lengths from the headers, a cut batch's
// included.
func TestLargestBatch(t *testing.T) {
	batch := func(n int) []byte {
		b := make([]byte, 12+n)
		b[8], b[9], b[10], b[11] = byte(n>>24), byte(n>>16), byte(n>>8), byte(n)
		return b
	}
	raw := append(append(batch(100), batch(300)...), batch(200)...)
	if got := largestBatch(raw); got != 312 {
		t.Errorf("largest of 112, 312, 212: %d", got)
	}
	cut := append(batch(100), batch(5000)[:40]...)
	if got := largestBatch(cut); got != 5012 {
		t.Errorf("a cut batch of 5012 bytes after one of 112: %d", got)
	}
	if got := largestBatch(batch(10)[:8]); got != 0 {
		t.Errorf("less than a header: %d, want 0", got)
	}
}

// TestHandledGate: once the caller reports handled records (Handled), a
// partition that an answer of whole batches, far more records than
// PartitionMaxRecords, left behind its end is not fetched again until that
// answer is reported handled, so that a pause the caller makes on handling
// it comes before the partition's next answer. Answers of the usual size
// are not held (TestHandledGateSparesUsualAnswers).
func TestHandledGate(t *testing.T) {
	t.Parallel()
	const batches, n = 4, 1000 // one batch per answer (about 90 KB each)
	c := startCluster(t, embedded.WithTopic("gate", 1))
	produceBatches(t, c, "gate", 1, batches, n)
	tp := record.TopicPartition{Topic: "gate", Partition: 0}
	col := openAssigned(t, 1, Config{Brokers: c.Addrs(), Topics: []string{"gate"}, PartitionMaxRecords: n / 10},
		func(s *Source) { s.handled.wait = hangGuard; s.Handled() })
	records := func() int {
		k := 0
		for _, pf := range col.fetches {
			k += len(pf.Records)
		}
		return k
	}
	col.until("first records", func() bool { return records() > 0 })
	for got := records(); got < batches*n; got = records() {
		col.pollFor(300 * time.Millisecond)
		if now := records(); now != got {
			t.Fatalf("%d records before Handled, %d after polling on: the partition was fetched again before its records were handled", got, now)
		}
		col.src.Handled(tp)
		col.until("the next records", func() bool { return records() > got })
	}
	// At its end a partition is not held: a live answer is not delayed.
	if _, held := col.src.handled.holds(tp, time.Now()); held {
		t.Fatal("a partition at its end offset is held")
	}
}

// TestRecordPoolBoundsRecords: the pool keeps at most poolRecords records
// of room in all, however few arrays that is: with big producer batches an
// answer's array holds thousands of records, and poolArrays of them idle
// would take more memory than the parked records.
func TestRecordPoolBoundsRecords(t *testing.T) {
	var p recordPool
	const big = 8750 // one 1 MiB batch of small records, a quarter to spare
	for range poolArrays {
		p.put(make([]record.Record, 0, big))
	}
	room := 0
	for _, a := range p.free {
		room += cap(a)
	}
	if room > poolRecords || room != p.room {
		t.Fatalf("the pool keeps room for %d records (counted %d), want at most %d", room, p.room, poolRecords)
	}
	if len(p.free) == 0 {
		t.Fatal("the pool kept nothing")
	}
	b := p.get(big * 4 / 5)
	if cap(b) != big || p.room != room-big {
		t.Fatalf("get: capacity %d and room %d left, want a pooled array of %d and %d left", cap(b), p.room, big, room-big)
	}
	p.put(make([]record.Record, 0, poolRecords+1)) // larger than the whole pool
	if p.room != room-big {
		t.Fatalf("an array larger than the pool was kept: room %d", p.room)
	}
}

// TestHandledGateSparesUsualAnswers: answers of about PartitionMaxRecords
// records keep flowing without Handled, as a replay of small batches needs.
func TestHandledGateSparesUsualAnswers(t *testing.T) {
	const batches, n = 4, 1000
	c := startCluster(t, embedded.WithTopic("usual", 1))
	produceBatches(t, c, "usual", 1, batches, n)
	col := openAssigned(t, 1, Config{Brokers: c.Addrs(), Topics: []string{"usual"}, PartitionMaxRecords: n},
		func(s *Source) { s.handled.wait = hangGuard; s.Handled() })
	col.until("every record, none reported handled", func() bool {
		k := 0
		for _, pf := range col.fetches {
			k += len(pf.Records)
		}
		return k == batches*n
	})
}

// TestFirstFetchAboutOneBatch: a partition's first answer, before the
// fetcher knows the records' size, holds about one 16 KiB batch of small
// records, not the many batches a larger first limit would (each partition's
// first answer is held at start-up, before anything can be released).
func TestFirstFetchAboutOneBatch(t *testing.T) {
	const parts, batches, n = 2, 20, 100 // batches of about 10 KB
	c := startCluster(t, embedded.WithTopic("small", parts))
	produceBatches(t, c, "small", parts, batches, n)
	src := openSource(t, Config{Brokers: c.Addrs(), Topics: []string{"small"}})
	var infos []record.PartitionInfo
	for p := range int32(parts) {
		infos = append(infos, record.PartitionInfo{TopicPartition: record.TopicPartition{Topic: "small", Partition: p}, End: batches * n})
	}
	f := newFetcher(src, infos)
	got := map[int32]int{}
	for _, pf := range f.fetch(bg, f.parts) {
		if pf.Err != nil {
			t.Fatal(pf.Err)
		}
		got[pf.Partition] = len(pf.Records)
	}
	for p := range int32(parts) {
		if got[p] == 0 || got[p] > 2*n {
			t.Errorf("partition %d: %d records in its first answer, want 1 to %d (one or two batches of %d)", p, got[p], 2*n, n)
		}
	}
}
