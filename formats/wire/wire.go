package wire

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/signalbox/signalbox/formats/value"
	"github.com/signalbox/signalbox/record"
)

// The record headers that carry a schema id instead of the payload prefix.
const (
	ValueHeader = "__value_schema_id"
	KeyHeader   = "__key_schema_id"
)

// The magic bytes: 0 before a 4-byte id, 1 before a 16-byte GUID.
const (
	MagicID   byte = 0
	MagicGUID byte = 1
)

// MaxIndexes bounds the message-index array: a deeper path than this is no
// real .proto file (protoc limits nesting to 100) and is refused.
const MaxIndexes = 128

// ErrNotWire is matched (errors.Is) by every parse failure.
var ErrNotWire = errors.New("not in the schema registry wire format")

// Error says why bytes are not in the wire format.
type Error struct{ Reason string }

func (e *Error) Error() string { return ErrNotWire.Error() + ": " + e.Reason }

// Is makes errors.Is(err, ErrNotWire) true.
func (e *Error) Is(target error) bool { return target == ErrNotWire }

func bad(format string, args ...any) error { return &Error{Reason: fmt.Sprintf(format, args...)} }

// Frame is a parsed framing: which schema wrote the body, and the body.
type Frame struct {
	// ID is the schema id (from the prefix or a magic-0 header), or 0 when
	// the header carried a GUID.
	ID int
	// GUID is the schema GUID in its canonical text form
	// (8-4-4-4-12 lowercase hex), when the header carried one.
	GUID string
	// Indexes is the Protobuf message-index path ([0] is the file's first
	// message); nil for the other formats.
	Indexes []int
	// Body is the serialized value, aliasing the payload.
	Body []byte
	// FromHeader reports that the id came from a record header.
	FromHeader bool
}

// Parse reads the framing of payload. header is the value of the
// ValueHeader (or KeyHeader) record header and hasHeader whether the record
// carries one; protobuf says whether a message-index array follows the id.
func Parse(payload, header []byte, hasHeader, protobuf bool) (Frame, error) {
	src, where := payload, "payload"
	if hasHeader {
		src, where = header, "schema id header"
	}
	f, rest, err := parseID(src, where, hasHeader)
	if err != nil {
		return Frame{}, err
	}
	if protobuf {
		if f.Indexes, rest, err = parseIndexes(rest); err != nil {
			return Frame{}, err
		}
	}
	if !hasHeader {
		f.Body = rest
		return f, nil
	}
	if len(rest) != 0 {
		return Frame{}, bad("schema id header has %d trailing bytes", len(rest))
	}
	f.FromHeader = true
	f.Body = payload
	return f, nil
}

// parseID reads a magic byte and the id or GUID after it.
func parseID(b []byte, where string, guidOK bool) (Frame, []byte, error) {
	if len(b) == 0 {
		return Frame{}, nil, bad("%s is empty", where)
	}
	switch b[0] {
	case MagicID:
		id, rest, ok := PrefixID(b)
		if !ok {
			return Frame{}, nil, bad("%s is %d bytes, shorter than the 5-byte prefix", where, len(b))
		}
		return Frame{ID: id}, rest, nil
	case MagicGUID:
		if !guidOK {
			break
		}
		if len(b) < 17 {
			return Frame{}, nil, bad("%s is %d bytes, shorter than magic byte and GUID", where, len(b))
		}
		return Frame{GUID: value.FormatUUID(b[1:17])}, b[17:], nil
	}
	return Frame{}, nil, bad("%s starts with byte 0x%02x, not a magic byte", where, b[0])
}

// parseIndexes reads the message-index array.
func parseIndexes(b []byte) ([]int, []byte, error) {
	n, k := binary.Varint(b)
	if k <= 0 {
		return nil, nil, bad("message-index count is missing or malformed")
	}
	b = b[k:]
	if n == 0 {
		return []int{0}, b, nil
	}
	if n < 0 || n > MaxIndexes || n > int64(len(b)) {
		return nil, nil, bad("message-index count %d is out of range", n)
	}
	idx := make([]int, n)
	for i := range idx {
		v, k := binary.Varint(b)
		if k <= 0 {
			return nil, nil, bad("message index %d is missing or malformed", i)
		}
		if v < 0 || v > 1<<31-1 {
			return nil, nil, bad("message index %d is %d", i, v)
		}
		idx[i] = int(v)
		b = b[k:]
	}
	return idx, b, nil
}

// PrefixID reads the 5-byte prefix (magic byte 0, then the schema id)
// at the head of b, and false when b does not start with one.
func PrefixID(b []byte) (id int, rest []byte, ok bool) {
	if len(b) < 5 || b[0] != MagicID {
		return 0, nil, false
	}
	return int(binary.BigEndian.Uint32(b[1:5])), b[5:], true
}

// Header returns the value of the last header named name (Kafka keeps
// repeats; the last one is the producer's final word) and whether there is one.
func Header(headers []record.Header, name string) ([]byte, bool) {
	for i := len(headers) - 1; i >= 0; i-- {
		if headers[i].Key == name {
			return headers[i].Value, true
		}
	}
	return nil, false
}
