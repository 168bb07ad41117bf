package retry

import (
	"errors"
	"fmt"

	"github.com/signalbox/signalbox/record"
)

// FencedError is returned by a CheckpointSink's FlushCheckpoint when another
// member owns Partitions now (it claimed them after this one did): the sink
// stored nothing of them (their records and checkpoint rows were rolled
// back or aborted and are dropped; the owner re-reads them from the last
// checkpoint), and committed the rest of the call unless Partitions lists
// every partition of the checkpoint. It is neither retried nor fatal: the
// engine skips the offset commit of Partitions and goes on.
type FencedError struct {
	Partitions []record.TopicPartition
	Err        error
}

// Fenced returns a *FencedError for partitions, caused by err.
func Fenced(err error, partitions ...record.TopicPartition) error {
	return &FencedError{Partitions: partitions, Err: err}
}

func (e *FencedError) Error() string {
	return fmt.Sprintf("fenced: %d partition(s) owned by another member: %v", len(e.Partitions), e.Err)
}

func (e *FencedError) Unwrap() error { return e.Err }

// AsFenced returns the *FencedError in err's chain, or nil.
func AsFenced(err error) *FencedError {
	var e *FencedError
	if errors.As(err, &e) {
		return e
	}
	return nil
}
