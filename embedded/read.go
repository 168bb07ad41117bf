package embedded

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// ReadUpTo returns the values of partition 0 of topic, from its start, that
// a consumer with isolation level iso sees before a sentinel record it
// appends: so it waits until every record written before the call is
// readable at that level (under read_committed, records of open or aborted
// transactions are not). Sentinels of earlier calls are left out. The topic
// should have one partition: on others it reads what arrives meanwhile.
func (c *Cluster) ReadUpTo(ctx context.Context, topic string, iso kgo.IsolationLevel) ([][]byte, error) {
	cl, err := kgo.NewClient(append(c.ClientOptions(), kgo.ConsumeTopics(topic),
		kgo.FetchIsolationLevel(iso), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	const prefix = "embedded.ReadUpTo sentinel "
	sentinel := fmt.Sprintf("%s%d", prefix, time.Now().UnixNano())
	if err := c.Produce(ctx, Record(topic, 0, "", sentinel)); err != nil {
		return nil, err
	}
	var vals [][]byte
	for done := false; !done; {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			return nil, err
		}
		fs.EachRecord(func(r *kgo.Record) {
			switch v := string(r.Value); {
			case done:
			case v == sentinel:
				done = true
			case len(v) >= len(prefix) && v[:len(prefix)] == prefix: // an earlier call's
			default:
				vals = append(vals, r.Value)
			}
		})
	}
	return vals, nil
}
