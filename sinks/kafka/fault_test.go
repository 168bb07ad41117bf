package kafka_test

import (
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// newCluster starts a kfake cluster over TCP with topics of 3 partitions.
func newCluster(t *testing.T, topics ...string) *kfake.Cluster {
	c, err := kfake.NewCluster(kfake.Ports(0), kfake.SeedTopics(3, topics...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// refuse makes c answer every request of key with answer(request), from
// now until heal is called; the cluster then handles them again.
func refuse(c *kfake.Cluster, key kmsg.Key, answer func(kmsg.Request) kmsg.Response) (heal func()) {
	var healed atomic.Bool
	c.ControlKey(int16(key), func(req kmsg.Request) (kmsg.Response, error, bool) {
		if healed.Load() {
			c.DropControl()
			return nil, nil, false
		}
		c.KeepControl()
		return answer(req), nil, true
	})
	return func() { healed.Store(true) }
}

// produceError answers a Produce request with err for every partition.
func produceError(err *kerr.Error) func(kmsg.Request) kmsg.Response {
	return func(kr kmsg.Request) kmsg.Response {
		req := kr.(*kmsg.ProduceRequest)
		resp := req.ResponseKind().(*kmsg.ProduceResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewProduceResponseTopic()
			st.Topic, st.TopicID = rt.Topic, rt.TopicID
			for _, rp := range rt.Partitions {
				sp := kmsg.NewProduceResponseTopicPartition()
				sp.Partition, sp.ErrorCode, sp.BaseOffset = rp.Partition, err.Code, -1
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp
	}
}

// offsetCommitError answers a TxnOffsetCommit request with err for every
// partition.
func offsetCommitError(err *kerr.Error) func(kmsg.Request) kmsg.Response {
	return func(kr kmsg.Request) kmsg.Response {
		req := kr.(*kmsg.TxnOffsetCommitRequest)
		resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewTxnOffsetCommitResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
				sp.Partition, sp.ErrorCode = rp.Partition, err.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp
	}
}
