package kafka

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/signalbox/signalbox/embedded"
	"github.com/signalbox/signalbox/internal/kbatch"
	"github.com/signalbox/signalbox/record"
	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	benchTopic      = "bench"
	benchPartitions = 3
	benchRecords    = 300_000
)

var (
	benchOnce    sync.Once
	benchCluster *embedded.Cluster
	benchErr     error
)

// benchData starts one cluster for all benchmarks and fills benchTopic with
// benchRecords records of 100-byte values.
func benchData(b *testing.B) *embedded.Cluster {
	benchOnce.Do(func() {
		benchCluster, benchErr = embedded.Start(embedded.WithTopic(benchTopic, benchPartitions))
		if benchErr != nil {
			return
		}
		value := make([]byte, 100)
		rs := make([]*kgo.Record, benchRecords)
		for i := range rs {
			rs[i] = &kgo.Record{Topic: benchTopic, Partition: int32(i % benchPartitions),
				Key: fmt.Appendf(nil, "item-%d", i%1000), Value: value}
		}
		benchErr = benchCluster.Produce(context.Background(), rs...)
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchCluster
}

// BenchmarkSourcePoll reads the whole topic through the Source per
// iteration and reports records/s.
func BenchmarkSourcePoll(b *testing.B) {
	c := benchData(b)
	b.ResetTimer()
	start := time.Now()
	total := 0
	for range b.N {
		s, err := New(Config{Brokers: c.Addrs(), Topics: []string{benchTopic}})
		if err != nil {
			b.Fatal(err)
		}
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
		total += n
		_ = s.Close()
	}
	b.ReportMetric(float64(total)/time.Since(start).Seconds(), "records/s")
}

// BenchmarkRawSarama reads the same topic with sarama's own high-level
// consumer (read_committed, one PartitionConsumer per partition), for the
// ratio against BenchmarkSourcePoll.
func BenchmarkRawSarama(b *testing.B) {
	c := benchData(b)
	b.ResetTimer()
	start := time.Now()
	total := 0
	for range b.N {
		sc := sarama.NewConfig()
		sc.Version = sarama.V2_8_0_0
		sc.Consumer.IsolationLevel = sarama.ReadCommitted
		sc.Consumer.Fetch.Default = 8 << 20
		sc.Consumer.MaxWaitTime = 500 * time.Millisecond
		consumer, err := sarama.NewConsumer(c.Addrs(), sc)
		if err != nil {
			b.Fatal(err)
		}
		var (
			wg sync.WaitGroup
			mu sync.Mutex
		)
		for p := range int32(benchPartitions) {
			pc, err := consumer.ConsumePartition(benchTopic, p, sarama.OffsetOldest)
			if err != nil {
				b.Fatal(err)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				want := benchRecords / benchPartitions
				n := 0
				for range pc.Messages() {
					if n++; n == want {
						break
					}
				}
				mu.Lock()
				total += n
				mu.Unlock()
				_ = pc.Close()
			}()
		}
		wg.Wait()
		_ = consumer.Close()
	}
	b.ReportMetric(float64(total)/time.Since(start).Seconds(), "records/s")
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
	p := &partState{tp: record.TopicPartition{Topic: "events-00", Partition: 1}}
	recs := make([]record.Record, 0, len(batch.Records))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += len(batch.Records) {
		clear(recs)
		recs = appendBatch(recs[:0], p, &batch)
	}
}
