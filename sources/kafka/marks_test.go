package kafka

import (
	"math"
	"testing"

	"github.com/signalbox/signalbox/record"
)

func TestMarkMetadata(t *testing.T) {
	tp := record.TopicPartition{Topic: "orders", Partition: 2}
	for _, m := range []int64{0, 1_700_000_000_123, -5, math.MinInt64, math.MaxInt64} {
		meta := markMeta(map[record.TopicPartition]int64{tp: m}, tp)
		if got, ok := parseMark(meta); !ok || got != m {
			t.Errorf("mark %d: metadata %q reads back as %d, %v", m, meta, got, ok)
		}
	}
	if meta := markMeta(nil, tp); meta != "" {
		t.Errorf("no mark: metadata %q, want empty", meta)
	}
	for _, meta := range []string{"", "signalbox mark=", "signalbox mark=12x", "{\"position\":3}", "SIGNALBOX MARK=1", "signalbox mark=99999999999999999999"} {
		if m, ok := parseMark(meta); ok {
			t.Errorf("metadata %q read as mark %d", meta, m)
		}
	}
}

// FuzzParseMark: commit metadata is any client's text; only what markMeta
// writes reads back as a mark, and always as the mark it wrote.
func FuzzParseMark(f *testing.F) {
	for _, s := range []string{"", "signalbox mark=0", "signalbox mark=-9223372036854775808", "signalbox mark=+1", "x"} {
		f.Add(s)
	}
	tp := record.TopicPartition{Topic: "t"}
	f.Fuzz(func(t *testing.T, meta string) {
		m, ok := parseMark(meta)
		if !ok {
			return
		}
		if again, ok := parseMark(markMeta(map[record.TopicPartition]int64{tp: m}, tp)); !ok || again != m {
			t.Fatalf("%q: mark %d does not round-trip (%d, %v)", meta, m, again, ok)
		}
	})
}
