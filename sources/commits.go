package sources

import (
	"context"
	"maps"
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
