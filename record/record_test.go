package record

import (
	"reflect"
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

// TestRecordPacked: Record's fields leave no padding but the struct's tail,
// under its alignment: the engine copies, clears and the collector scans
// every record, so a field added in the wrong place costs every record.
func TestRecordPacked(t *testing.T) {
	rt := reflect.TypeFor[Record]()
	fields := uintptr(0)
	for f := range rt.Fields() {
		fields += f.Type.Size()
	}
	align := uintptr(rt.Align())
	if packed := (fields + align - 1) / align * align; rt.Size() != packed {
		t.Fatalf("record.Record is %d bytes, its fields %d: order them so that it is %d", rt.Size(), fields, packed)
	}
}
