package record

import (
	"slices"
	"testing"
)

func TestTopicPartitionCompare(t *testing.T) {
	tps := []TopicPartition{{"b", 0}, {"a", 10}, {"a", 2}, {"b", -1}}
	slices.SortFunc(tps, TopicPartition.Compare)
	want := []TopicPartition{{"a", 2}, {"a", 10}, {"b", -1}, {"b", 0}}
	if !slices.Equal(tps, want) {
		t.Fatalf("sorted %v, want %v", tps, want)
	}
	if c := (TopicPartition{"a", 1}).Compare(TopicPartition{"a", 1}); c != 0 {
		t.Fatalf("equal partitions compare %d", c)
	}
}
