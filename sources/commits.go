package sources

import (
	"context"
	"maps"
	"strconv"
	"strings"
	"sync"

	"github.com/signalbox/signalbox/record"
)

// Commits remembers committed offsets in memory. Sources without a consumer
// group (files, scripts) embed it to implement Commit; tests read Committed.
// It is safe for concurrent use.
type Commits struct {
	mu   sync.Mutex
	offs map[record.TopicPartition]int64
}

// Commit records offsets; it never fails.
func (c *Commits) Commit(_ context.Context, offsets map[record.TopicPartition]int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.offs == nil {
		c.offs = map[record.TopicPartition]int64{}
	}
	maps.Copy(c.offs, offsets)
	return nil
}

// Committed returns a copy of the last committed offset of each partition.
func (c *Commits) Committed() map[record.TopicPartition]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.offs)
}

// metaPrefix starts the commit metadata EncodeCheckpoint writes; anything
// else (another consumer's metadata, an offset reset's empty string) is not
// a signalbox checkpoint.
const metaPrefix = "signalbox/1 "

// EncodeCheckpoint renders the part of pc that a restart needs to skip
// what was emitted — Low, Position and Watermark — as the metadata string of
// an offset commit: "signalbox/1 <low> <position> <watermark>", decimal.
// A Kafka broker keeps up to offset.metadata.max.bytes (default 4096) per
// partition; this is at most 72 bytes.
func EncodeCheckpoint(pc record.PartitionCheckpoint) string {
	b := make([]byte, 0, 72)
	b = append(b, metaPrefix...)
	b = strconv.AppendInt(b, pc.Low, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, pc.Position, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, pc.Watermark, 10)
	return string(b)
}

// DecodeCheckpoint reads the metadata EncodeCheckpoint wrote for tp, whose
// committed offset is committed. It reports false for metadata that is not
// a signalbox checkpoint, is malformed, says Position < Low, or whose Low is
// not the committed offset (the offset was moved by something else since):
// the restart then skips nothing, which may duplicate but never loses.
func DecodeCheckpoint(tp record.TopicPartition, committed int64, meta string) (record.PartitionCheckpoint, bool) {
	rest, ok := strings.CutPrefix(meta, metaPrefix)
	if !ok {
		return record.PartitionCheckpoint{}, false
	}
	f := strings.Split(rest, " ")
	if len(f) != 3 {
		return record.PartitionCheckpoint{}, false
	}
	var v [3]int64
	for i, s := range f {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || strconv.FormatInt(n, 10) != s { // canonical only: one encoding per checkpoint
			return record.PartitionCheckpoint{}, false
		}
		v[i] = n
	}
	pc := record.PartitionCheckpoint{TopicPartition: tp, Low: v[0], Position: v[1], Watermark: v[2]}
	if pc.Low != committed || pc.Position < pc.Low {
		return record.PartitionCheckpoint{}, false
	}
	return pc, true
}
