package kafka

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/signalbox/signalbox/embedded"
	"github.com/signalbox/signalbox/internal/kbatch"
	"github.com/signalbox/signalbox/internal/kbatch/kbatchtest"
	"github.com/signalbox/signalbox/record"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	benchTopic      = "bench"
	benchPartitions = 3
	benchRecords    = 300_000
)

// benchAuths are the authentications the read benchmarks run with: none,
// and SASL/SCRAM-SHA-256 (the one fetch path serves both).
var benchAuths = []string{"plaintext", SASLScramSHA256}

var (
	benchMu       sync.Mutex
	benchClusters = map[string]*embedded.Cluster{}
)

// benchSASL is the source's SASL configuration for auth.
func benchSASL(auth string) SASL {
	if auth == "plaintext" {
		return SASL{}
	}
	return SASL{Mechanism: auth, User: "bench", Password: "bench-secret"}
}

// benchData starts one cluster per authentication for all benchmarks and
// fills benchTopic with benchRecords records of 100-byte values.
func benchData(b *testing.B, auth string) *embedded.Cluster {
	benchMu.Lock()
	defer benchMu.Unlock()
	if c := benchClusters[auth]; c != nil {
		return c
	}
	opts := []embedded.Option{embedded.WithTopic(benchTopic, benchPartitions)}
	if sasl := benchSASL(auth); sasl.Mechanism != "" {
		opts = append(opts, embedded.WithUser(sasl.Mechanism, sasl.User, sasl.Password))
	}
	c, err := embedded.Start(opts...)
	if err != nil {
		b.Fatal(err)
	}
	value := make([]byte, 100)
	rs := make([]*kgo.Record, benchRecords)
	for i := range rs {
		rs[i] = &kgo.Record{Topic: benchTopic, Partition: int32(i % benchPartitions),
			Key: fmt.Appendf(nil, "item-%d", i%1000), Value: value}
	}
	if err := c.Produce(context.Background(), rs...); err != nil {
		b.Fatal(err)
	}
	benchClusters[auth] = c
	return c
}

// BenchmarkSourcePoll reads the whole topic through the Source per
// iteration, without authentication and with SCRAM-SHA-256, and reports
// records/s and allocations:
//
//	go test -run '^$' -bench 'SourcePoll|RawFranzGo' -benchmem ./sources/kafka/
func BenchmarkSourcePoll(b *testing.B) {
	benchRead(b, func(b *testing.B, c *embedded.Cluster, auth string) int {
		s, err := New(Config{Brokers: c.Addrs(), Topics: []string{benchTopic}, SASL: benchSASL(auth)})
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		if err := s.Open(context.Background()); err != nil {
			b.Fatal(err)
		}
		n := 0
		for n < benchRecords {
			f, err := s.Poll(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			for i := range f.Partitions {
				n += len(f.Partitions[i].Records)
			}
		}
		return n
	})
}

// BenchmarkRawFranzGo reads the same topic with franz-go's own consumer
// (read_committed, authenticated the same way), for the ratio against
// BenchmarkSourcePoll.
func BenchmarkRawFranzGo(b *testing.B) {
	benchRead(b, func(b *testing.B, c *embedded.Cluster, auth string) int {
		cl, err := kgo.NewClient(append(c.ClientOptions(), kgo.ConsumeTopics(benchTopic),
			kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
		if err != nil {
			b.Fatal(err)
		}
		defer cl.Close()
		n := 0
		for n < benchRecords {
			fs := cl.PollFetches(context.Background())
			if err := fs.Err0(); err != nil {
				b.Fatal(err)
			}
			n += fs.NumRecords()
		}
		return n
	})
}

// benchRead runs read, which reads the whole topic once and returns how
// many records it read, b.N times per authentication, and reports
// records/s and allocations.
func benchRead(b *testing.B, read func(b *testing.B, c *embedded.Cluster, auth string) int) {
	for _, auth := range benchAuths {
		b.Run(auth, func(b *testing.B) {
			c := benchData(b, auth)
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			total := 0
			for range b.N {
				total += read(b, c, auth)
			}
			b.ReportMetric(float64(total)/time.Since(start).Seconds(), "records/s")
		})
	}
}

// BenchmarkAppendBatch is the conversion of one decoded batch of 1000
// records into the source's records (per record):
//
//	go test -run '^$' -bench AppendBatch -benchmem ./sources/kafka/
func BenchmarkAppendBatch(b *testing.B) {
	batch := kbatch.Batch{FirstOffset: 1000, FirstTimestamp: 1_764_479_604_123, MaxTimestamp: 1_764_479_605_123}
	val := []byte(`{"item":"i-042","ts":1764479604123,"kind":"view","pad":"abcdefghijklmnopqrstuvwxyzabcdefghijklmn"}`)
	for i := range 1000 {
		batch.Records = append(batch.Records, kbatch.Record{OffsetDelta: int32(i), TimestampDelta: int64(i), Key: []byte("i-042"), Value: val})
	}
	recs := make([]record.Record, 0, len(batch.Records))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += len(batch.Records) {
		clear(recs)
		recs, _ = batch.AppendTo(recs[:0], "events-00", 1, 0)
	}
}

// benchBatchRecords returns n records shaped as a replay's: a key of ten
// or so bytes, a 100-byte JSON value, 10 ms apart.
func benchBatchRecords(n int) []kmsg.Record {
	rs := make([]kmsg.Record, n)
	for i := range rs {
		rs[i] = kmsg.Record{TimestampDelta64: int64(i) * 10, OffsetDelta: int32(i), Key: fmt.Appendf(nil, "item-%d", i*7919%1000),
			Value: fmt.Appendf(nil, `{"item":"i-%03d","ts":%d,"kind":"view","pad":"abcdefghijklmnopqrstuvwxyzabcdefghijklmn"}`, i%1000, 1764479604123+10*i)}
	}
	return rs
}

// BenchmarkParse measures a partition answer of one 1 MiB producer batch
// (about 7,000 records), uncompressed and compressed by franz-go's
// producer, from the raw bytes to the source's records (per record), the
// records' array given back as the engine does:
//
//	go test -run '^$' -bench Parse -benchmem ./sources/kafka/
func BenchmarkParse(b *testing.B) {
	const n = 7000
	rs := benchBatchRecords(n)
	for _, c := range []struct {
		name  string
		codec kgo.CompressionCodec
	}{{"none", kgo.NoCompression()}, {"snappy", kgo.SnappyCompression()}, {"lz4", kgo.Lz4Compression()}, {"zstd", kgo.ZstdCompression()}, {"gzip", kgo.GzipCompression()}} {
		b.Run(c.name, func(b *testing.B) {
			raw := kbatchtest.Build(b, kbatchtest.Spec{Codec: c.codec, ProducerID: -1, ProducerEpoch: -1, Records: rs})
			src, err := New(Config{Brokers: []string{"127.0.0.1:1"}, Topics: []string{"bench"}})
			if err != nil {
				b.Fatal(err)
			}
			tp := record.TopicPartition{Topic: "bench"}
			f := newFetcher(src, []record.PartitionInfo{{TopicPartition: tp, End: n}})
			p := f.parts[0]
			blk := &fetchBlock{raw: raw, hwm: n, lso: n}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i += n {
				p.pos = 0
				pf, _ := f.parse(p, blk, time.Now())
				if len(pf.Records) != n {
					b.Fatalf("%d records, want %d", len(pf.Records), n)
				}
				src.Recycle(pf.Records)
			}
		})
	}
}
