package harness

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// RawConsume is the ceiling: franz-go's consumer, configured as its users
// would (the client's defaults plus opts, which name the brokers and any
// TLS or SASL), polls every partition of topics from the start up to the
// end offsets listed first, counting records, with no decoding and no
// ordering.
func RawConsume(ctx context.Context, opts []kgo.Opt, topics []string) (int64, error) {
	return ConsumeToEnd(ctx, opts, topics, nil)
}

// ConsumeToEnd is RawConsume handing each fetched partition's records to
// each (nil: none), in the order the fetches bring them; it stops at each's
// first error. It returns how many records were fetched.
func ConsumeToEnd(ctx context.Context, opts []kgo.Opt, topics []string, each func(kgo.FetchTopicPartition) error) (int64, error) {
	cl, err := kgo.NewClient(append(opts[:len(opts):len(opts)], kgo.ConsumeTopics(topics...))...)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topics...)
	if err != nil {
		return 0, err
	}
	if err := ends.Error(); err != nil {
		return 0, err
	}
	left := map[string]map[int32]int64{} // partitions not read to their end
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			if left[o.Topic] == nil {
				left[o.Topic] = map[int32]int64{}
			}
			left[o.Topic][o.Partition] = o.Offset
		}
	})
	var n int64
	for len(left) > 0 {
		fs := cl.PollFetches(ctx)
		if errs := fs.Errors(); len(errs) > 0 {
			return n, fmt.Errorf("%s/%d: %w", errs[0].Topic, errs[0].Partition, errs[0].Err)
		}
		var err error
		fs.EachPartition(func(p kgo.FetchTopicPartition) {
			if err != nil {
				return
			}
			if each != nil {
				err = each(p)
			}
			n += int64(len(p.Records))
			if k := len(p.Records); k > 0 && p.Records[k-1].Offset+1 >= left[p.Topic][p.Partition] {
				delete(left[p.Topic], p.Partition)
				if len(left[p.Topic]) == 0 {
					delete(left, p.Topic)
				}
			}
		})
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
