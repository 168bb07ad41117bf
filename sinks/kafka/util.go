package kafka

import (
	"cmp"
	"slices"
	"time"

	"github.com/signalbox/signalbox/record"
)

func timeOf(ms int64) time.Time { return time.UnixMilli(ms) }

func sortPartitions(ps []record.PartitionCheckpoint) {
	slices.SortFunc(ps, func(a, b record.PartitionCheckpoint) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
}
