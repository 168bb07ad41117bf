package kafka

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/signalbox/signalbox/embedded"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/sources/sourcetest"
)

// TestConformance runs the source conformance suite against the Kafka
// source, over TCP against the embedded cluster, with and without a
// consumer group, without authentication and with SASL/SCRAM-SHA-256.
func TestConformance(t *testing.T) {
	for _, auth := range []string{"plaintext", SASLScramSHA256} {
		for _, group := range []string{"", "conformance-group"} {
			name := auth + "/group=" + group
			if group == "" {
				name = auth + "/no group"
			}
			t.Run(name, func(t *testing.T) { conformance(t, auth, group) })
		}
	}
}

func conformance(t *testing.T, auth, group string) {
	sourcetest.Run(t, func(t *testing.T, d sourcetest.Data) sourcetest.Target {
		parts := map[string]int32{}
		var rs []*kgo.Record
		for tp, values := range d {
			parts[tp.Topic] = max(parts[tp.Topic], tp.Partition+1)
			for _, v := range values {
				rs = append(rs, &kgo.Record{Topic: tp.Topic, Partition: tp.Partition, Value: []byte(v)})
			}
		}
		var opts []embedded.Option
		var topics []string
		for topic, n := range parts {
			opts = append(opts, embedded.WithTopic(topic, n))
			topics = append(topics, topic)
		}
		var sasl SASL
		if auth != "plaintext" {
			sasl = SASL{Mechanism: auth, User: "alice", Password: "s3cret"}
			opts = append(opts, embedded.WithUser(auth, sasl.User, sasl.Password))
		}
		c := startCluster(t, opts...)
		mustProduce(t, c, rs...)
		src, err := New(Config{Brokers: c.Addrs(), Topics: topics, Group: group, SASL: sasl,
			FetchMaxWait: 20e6, RetryBackoff: 20e6})
		if err != nil {
			t.Fatal(err)
		}
		tg := sourcetest.Target{Source: src}
		if group != "" {
			tg.Committed = func(t *testing.T) map[record.TopicPartition]int64 {
				cl, err := kgo.NewClient(c.ClientOptions()...)
				if err != nil {
					t.Fatal(err)
				}
				defer cl.Close()
				resp, err := kadm.NewClient(cl).FetchOffsets(context.Background(), group)
				if err != nil {
					t.Fatal(err)
				}
				out := map[record.TopicPartition]int64{}
				resp.Each(func(o kadm.OffsetResponse) {
					out[record.TopicPartition{Topic: o.Topic, Partition: o.Partition}] = o.At
				})
				return out
			}
		}
		return tg
	})
}
