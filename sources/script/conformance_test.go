package script_test

import (
	"testing"

	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/sources/script"
	"github.com/signalbox/signalbox/sources/sourcetest"
)

func TestConformance(t *testing.T) {
	sourcetest.Run(t, func(t *testing.T, d sourcetest.Data) sourcetest.Target {
		var parts []script.Partition
		for tp, values := range d {
			p := script.Partition{TopicPartition: tp}
			for i, v := range values {
				p.Records = append(p.Records, record.Record{Topic: tp.Topic, Partition: tp.Partition, Offset: int64(i), Value: []byte(v)})
			}
			parts = append(parts, p)
		}
		src := script.New(1, 4, parts...)
		return sourcetest.Target{Source: src, Committed: func(*testing.T) map[record.TopicPartition]int64 { return src.Committed() }}
	})
}
