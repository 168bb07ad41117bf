package record

import (
	"errors"
	"fmt"
)

// GroupMember is the consumer-group membership under which partitions were
// assigned: a sink that commits offsets in its own transaction sends it
// with them, so that the group coordinator refuses the commit once the
// member has been fenced (a later generation exists).
type GroupMember struct {
	Group      string
	Generation int32
	MemberID   string
	InstanceID string // group.instance.id, empty when the member is dynamic
}

// ErrCommitSkipped is what a CommitSkippedError matches with errors.Is.
var ErrCommitSkipped = errors.New("offset commit skipped")

// CommitSkippedError is returned by a source's Commit when it did not commit
// the offsets of Partitions because this member does not own them now
// (between two group sessions, or a rebalance gave them to another member):
// their owner re-reads from the last commit. The other offsets were
// committed.
type CommitSkippedError struct {
	Partitions []TopicPartition
	Reason     string
}

func (e *CommitSkippedError) Error() string {
	return fmt.Sprintf("offset commit of %d partition(s) skipped: %s", len(e.Partitions), e.Reason)
}

// Is makes errors.Is(err, ErrCommitSkipped) hold.
func (e *CommitSkippedError) Is(target error) bool { return target == ErrCommitSkipped }
