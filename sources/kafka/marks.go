package kafka

import (
	"context"
	"strconv"
	"strings"

	"github.com/signalbox/signalbox/record"
)

// markPrefix starts the metadata of an offset committed with a release mark
// (signalbox.MarkCommitter); the mark follows in decimal milliseconds.
const markPrefix = "signalbox mark="

// markMeta is the commit metadata for tp: its mark, or "" without one.
func markMeta(marks map[record.TopicPartition]int64, tp record.TopicPartition) string {
	m, ok := marks[tp]
	if !ok {
		return ""
	}
	return markPrefix + strconv.FormatInt(m, 10)
}

// parseMark reads a mark from commit metadata; ok is false for metadata
// that holds none (another client's, or a commit without a mark).
func parseMark(meta string) (mark int64, ok bool) {
	s, found := strings.CutPrefix(meta, markPrefix)
	if !found {
		return 0, false
	}
	m, err := strconv.ParseInt(s, 10, 64)
	return m, err == nil
}

// setMarks copies the committed marks into infos.
func setMarks(infos []record.PartitionInfo, marks map[record.TopicPartition]int64) {
	for i := range infos {
		if m, ok := marks[infos[i].TopicPartition]; ok {
			infos[i].Mark, infos[i].Marked = m, true
		}
	}
}

// CommitMarks commits offsets as Commit does, each with its partition's
// release mark in the commit's metadata; a later assignment of the
// partition reports the mark in record.PartitionInfo (design G7).
func (s *Source) CommitMarks(ctx context.Context, offsets, marks map[record.TopicPartition]int64) error {
	if s.group == nil || len(offsets) == 0 {
		return nil
	}
	return s.group.commit(ctx, offsets, marks)
}
