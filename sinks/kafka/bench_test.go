package kafka_test

import (
	"bytes"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/signalbox/signalbox/sinks/kafka"
	"github.com/signalbox/signalbox/sinks/sinktest"
)

// BenchmarkProduce measures producing to an in-process kfake broker over
// TCP: batches of 500 records of about 150 bytes, 64 keys, 6 partitions,
// a Flush (in transactional mode a commit) every 20,000 records. Reports
// records/s; the broker shares the machine, so compare runs side by side.
func BenchmarkProduce(b *testing.B) {
	for _, txn := range []string{"", "bench"} {
		b.Run("transactional_id="+txn, func(b *testing.B) {
			c, err := kfake.NewCluster(kfake.Ports(0), kfake.SeedTopics(6, "out"))
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			recs := sinktest.Records(0, 20_000, 64)
			pad := bytes.Repeat([]byte("x"), 120)
			for i := range recs {
				recs[i].Value = append(recs[i].Value, pad...)
			}
			s := kafka.New(kafka.Config{Brokers: c.ListenAddrs(), Topic: "out", TransactionalID: txn})
			if err := s.Open(ctx); err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			b.ReportAllocs()
			b.ResetTimer()
			for done := 0; done < b.N; {
				n := min(b.N-done, len(recs))
				for i := 0; i < n; i += 500 {
					if err := s.Write(ctx, recs[i:min(i+500, n)]); err != nil {
						b.Fatal(err)
					}
				}
				if err := s.Flush(ctx); err != nil {
					b.Fatal(err)
				}
				done += n
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}
