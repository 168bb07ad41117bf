package kafka

import (
	"slices"
	"time"

	"github.com/signalbox/signalbox/record"
)

func timeOf(ms int64) time.Time { return time.UnixMilli(ms) }

func sortPartitions(ps []record.PartitionCheckpoint) {
	slices.SortFunc(ps, func(a, b record.PartitionCheckpoint) int { return a.TopicPartition.Compare(b.TopicPartition) })
}
