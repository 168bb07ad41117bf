package embedded

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DelayFetches makes topic slow to connect: for d from now, every fetch
// request that names the topic is answered without it (no records, no
// offsets, as if the broker had not got to it yet), while the request's
// other topics are served normally. Afterwards fetches of the topic are
// served as usual. stop ends the delay early.
//
// Fetches that use an incremental fetch session (KIP-227, e.g. franz-go's
// consumer) are delayed as a whole instead, since a session must see every
// partition; sessionless fetches (signalbox's source) are filtered.
func (c *Cluster) DelayFetches(topic string, d time.Duration) (stop func()) {
	var deadline atomic.Int64
	deadline.Store(time.Now().Add(d).UnixNano())
	id := c.topicID(topic)
	c.kf.ControlKey(int16(kmsg.Fetch), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.kf.KeepControl()
		left := time.Until(time.Unix(0, deadline.Load()))
		if left <= 0 {
			c.kf.DropControl()
			return nil, nil, false
		}
		req := kreq.(*kmsg.FetchRequest)
		named := func(t kmsg.FetchRequestTopic) bool {
			if req.Version >= 13 {
				return id != [16]byte{} && t.TopicID == id
			}
			return t.Topic == topic
		}
		if req.Version >= 7 && req.SessionEpoch >= 0 {
			for _, t := range req.Topics {
				if named(t) {
					c.kf.SleepControl(func() { time.Sleep(left) })
					break
				}
			}
			return nil, nil, false
		}
		kept := req.Topics[:0]
		for _, t := range req.Topics {
			if !named(t) {
				kept = append(kept, t)
			}
		}
		req.Topics = kept
		return nil, nil, false
	})
	return func() { deadline.Store(0) }
}

// topicID looks the topic's ID up (zero if unknown), to recognise fetches
// that name topics by ID.
func (c *Cluster) topicID(topic string) [16]byte {
	cl, err := c.adminClient()
	if err != nil {
		return [16]byte{}
	}
	req := kmsg.NewPtrMetadataRequest()
	t := kmsg.NewMetadataRequestTopic()
	t.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || len(resp.Topics) == 0 {
		return [16]byte{}
	}
	return resp.Topics[0].TopicID
}

// FailFetches fails every fetch of topic's partitions with
// UNKNOWN_SERVER_ERROR until the given time, then lets them through. stop
// ends the failures early.
func (c *Cluster) FailFetches(topic string, until time.Time) (stop func()) {
	h := c.kf.Fault(kfakeFetchFault(topic, until))
	t := time.AfterFunc(time.Until(until), h.Remove)
	c.onClose(func() { t.Stop() })
	return func() { t.Stop(); h.Remove() }
}

func kfakeFetchFault(topic string, until time.Time) kfake.Fault {
	return kfake.Fault{
		Keys:  []kmsg.Key{kmsg.Fetch},
		Topic: topic,
		Err:   kerr.UnknownServerError,
		Count: -1,
		When:  func(kmsg.Request) bool { return time.Now().Before(until) },
	}
}
