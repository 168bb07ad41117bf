package retry

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/signalbox/signalbox/record"
)

// Rejection is one record that a destination refused permanently, with the
// destination's reason (for example "postgres: 22P02: invalid input
// syntax for type json" or "bulk: item rejected with 400
// mapper_parsing_exception: ...").
type Rejection struct {
	Record record.Record
	Reason string
}

// RejectedError reports records that a destination refused for a reason
// that belongs to the record itself (bad data), not to the destination:
// retrying them can never succeed, and refusing them must not stop the
// stream. Make one with Rejected; find one with AsRejected.
//
// The call that returns it did not complete. The sink has dropped the
// rejected records and will never store them; the caller hands them to the
// dead-letter sink and repeats the call (for Write, with the rejected
// records removed from the batch). A Write that returns it accepted nothing
// of its batch.
type RejectedError struct {
	Rejections []Rejection
}

// Rejected returns a *RejectedError for rs, or nil when rs is empty.
func Rejected(rs ...Rejection) error {
	if len(rs) == 0 {
		return nil
	}
	return &RejectedError{Rejections: rs}
}

func (e *RejectedError) Error() string {
	r := &e.Rejections[0]
	msg := "record " + r.Record.Topic + "/" + strconv.Itoa(int(r.Record.Partition)) + "@" + strconv.FormatInt(r.Record.Offset, 10) + " rejected: " + r.Reason
	if n := len(e.Rejections); n > 1 {
		msg += fmt.Sprintf(" (and %d more)", n-1)
	}
	return msg
}

// AsRejected returns the *RejectedError carried by err (through wrapping),
// or nil.
func AsRejected(err error) *RejectedError {
	var e *RejectedError
	if errors.As(err, &e) {
		return e
	}
	return nil
}
