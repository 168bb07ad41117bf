package durable

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/signalbox/signalbox/timers"
)

// Key layout of the store. Every key starts with a one-byte prefix, so the
// parked records and the metadata live in disjoint ranges:
//
//	'M' 0x00 name           metadata: format version, checkpoint
//	'B' 0x00 name           checkpoint blobs (opaque, e.g. late counters)
//	'P' pos                 one parked record; pos as below
//
// pos is, in this order (store invariant 1: bytes.Compare of two encodings
// agrees with Less of the positions):
//
//	EventTime  8 bytes big-endian, sign bit flipped
//	Key        escaped string, then 0x00 0x01
//	Input      escaped string, then 0x00 0x01
//	Partition  4 bytes big-endian, sign bit flipped
//	Offset     8 bytes big-endian, sign bit flipped
//
// Escaping writes 0x00 as 0x00 0xFF. The terminator 0x00 0x01 sorts below
// both an escaped 0x00 (0x00 0xFF) and any other byte, so a string sorts
// before all of its extensions, and the encoding is prefix-free.
const (
	prefixMeta   = 'M'
	prefixBlob   = 'B'
	prefixParked = 'P'
)

var (
	keyFormat     = []byte{prefixMeta, 0, 'f', 'o', 'r', 'm', 'a', 't'}
	keyCheckpoint = []byte{prefixMeta, 0, 'c', 'h', 'e', 'c', 'k', 'p', 'o', 'i', 'n', 't'}
	// parkedLower and parkedUpper bound the parked range.
	parkedLower = []byte{prefixParked}
	parkedUpper = []byte{prefixParked + 1}
	blobLower   = []byte{prefixBlob, 0}
	blobUpper   = []byte{prefixBlob, 1}
)

func blobKey(name string) []byte {
	return append([]byte{prefixBlob, 0}, name...)
}

const (
	escape     = 0x00
	escapedNul = 0xFF
	terminator = 0x01
)

// errBadKey is wrapped into ErrCorrupt by the store.
var errBadKey = errors.New("malformed parked key")

// appendPosKey appends the parked-record key of p to dst.
func appendPosKey(dst []byte, p timers.Pos) []byte {
	dst = append(dst, prefixParked)
	dst = binary.BigEndian.AppendUint64(dst, uint64(p.EventTime)^(1<<63))
	dst = appendEscaped(dst, p.Key)
	dst = appendEscaped(dst, p.Input)
	dst = binary.BigEndian.AppendUint32(dst, uint32(p.Partition)^(1<<31))
	dst = binary.BigEndian.AppendUint64(dst, uint64(p.Offset)^(1<<63))
	return dst
}

// appendTimeBound appends the smallest parked key whose event time is t: every
// key of a record with event time < t sorts before it, every other after or
// equal.
func appendTimeBound(dst []byte, t int64) []byte {
	dst = append(dst, prefixParked)
	return binary.BigEndian.AppendUint64(dst, uint64(t)^(1<<63))
}

func appendEscaped(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if s[i] == escape {
			dst = append(dst, escape, escapedNul)
		} else {
			dst = append(dst, s[i])
		}
	}
	return append(dst, escape, terminator)
}

// decodePosKey is the inverse of appendPosKey. It rejects anything
// appendPosKey cannot produce, so decode(k) re-encodes to exactly k.
func decodePosKey(k []byte) (timers.Pos, error) {
	var p timers.Pos
	if len(k) < 1+8 || k[0] != prefixParked {
		return p, fmt.Errorf("%w: %x", errBadKey, k)
	}
	p.EventTime = int64(binary.BigEndian.Uint64(k[1:]) ^ (1 << 63))
	rest := k[9:]
	var ok bool
	if p.Key, rest, ok = cutEscaped(rest); !ok {
		return p, fmt.Errorf("%w: key string: %x", errBadKey, k)
	}
	if p.Input, rest, ok = cutEscaped(rest); !ok {
		return p, fmt.Errorf("%w: input string: %x", errBadKey, k)
	}
	if len(rest) != 4+8 {
		return p, fmt.Errorf("%w: coordinates: %x", errBadKey, k)
	}
	p.Partition = int32(binary.BigEndian.Uint32(rest) ^ (1 << 31))
	p.Offset = int64(binary.BigEndian.Uint64(rest[4:]) ^ (1 << 63))
	return p, nil
}

// cutEscaped decodes one escaped string from the front of b.
func cutEscaped(b []byte) (s string, rest []byte, ok bool) {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != escape {
			out = append(out, b[i])
			continue
		}
		if i+1 == len(b) {
			return "", nil, false
		}
		switch b[i+1] {
		case terminator:
			return string(out), b[i+2:], true
		case escapedNul:
			out = append(out, escape)
			i++
		default:
			return "", nil, false
		}
	}
	return "", nil, false
}

// keySuccessor returns the smallest key greater than k: k followed by 0x00,
// appended to k (it may use k's spare capacity). It is the exclusive end
// that makes a DeleteRange cover k itself.
func keySuccessor(k []byte) []byte {
	return append(k, 0)
}

// The value of a parked key is uvarint(generation) followed by the record's
// record.AppendBinary encoding; see Store invariant 4 for the generation.
func appendGen(dst []byte, gen uint64) []byte {
	return binary.AppendUvarint(dst, gen)
}

func cutGen(v []byte) (gen uint64, rest []byte, err error) {
	gen, n := binary.Uvarint(v)
	if n <= 0 {
		return 0, nil, errors.New("malformed generation")
	}
	return gen, v[n:], nil
}

// The checkpoint value is 8 bytes big-endian generation, then
// record.AppendCheckpoint.
const genLen = 8
