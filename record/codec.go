package record

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"
	"unsafe"
)

// ErrMalformed is returned by DecodeBinary when its input is not a record
// written by AppendBinary: truncated, trailing bytes, an unknown format
// version or an impossible length. It never surfaces as a panic.
var ErrMalformed = errors.New("record: malformed binary record")

// codecVersion is the first byte of every encoded record. A decoder refuses
// any other value, so the format can evolve without misreading old bytes.
const codecVersion = 1

// checkpointVersion is the first byte of every encoded checkpoint. Version 1
// had no per-partition watermark; version 2 adds PartitionCheckpoint.Watermark
// after the Replaying byte. DecodeCheckpoint refuses version 1 rather than
// misread it.
const checkpointVersion = 2

// flag bits of the second byte.
const (
	flagTimeless  = 1 << 0
	flagLate      = 1 << 1
	flagTimestamp = 1 << 2 // Timestamp is not the zero time
	flagsKnown    = flagTimeless | flagLate | flagTimestamp
)

// AppendBinary appends a compact binary encoding of every field of r to dst
// and returns the extended slice. DecodeBinary reads it back.
//
// The encoding preserves the difference between a nil and an empty Key,
// Value or header value (Kafka distinguishes a null key from an empty one).
// A Headers slice of length zero decodes as nil. Timestamp keeps its instant
// (seconds and nanoseconds), not its location or monotonic reading.
func AppendBinary(dst []byte, r *Record) []byte {
	var flags byte
	if r.Timeless {
		flags |= flagTimeless
	}
	if r.Late {
		flags |= flagLate
	}
	if !r.Timestamp.IsZero() {
		flags |= flagTimestamp
	}
	dst = append(dst, codecVersion, flags)
	dst = appendString(dst, r.Topic)
	dst = binary.AppendVarint(dst, int64(r.Partition))
	dst = binary.AppendVarint(dst, r.Offset)
	dst = appendNullable(dst, r.Key)
	dst = appendNullable(dst, r.Value)
	dst = binary.AppendUvarint(dst, uint64(len(r.Headers)))
	for _, h := range r.Headers {
		dst = appendString(dst, h.Key)
		dst = appendNullable(dst, h.Value)
	}
	if flags&flagTimestamp != 0 {
		dst = binary.AppendVarint(dst, r.Timestamp.Unix())
		dst = binary.AppendUvarint(dst, uint64(r.Timestamp.Nanosecond()))
	}
	dst = binary.AppendVarint(dst, r.EventTime)
	dst = appendString(dst, r.OrderKey)
	dst = binary.AppendVarint(dst, r.LateBy)
	return dst
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// appendNullable writes len+1, or 0 for nil.
func appendNullable(dst, b []byte) []byte {
	if b == nil {
		return append(dst, 0)
	}
	dst = binary.AppendUvarint(dst, uint64(len(b))+1)
	return append(dst, b...)
}

// DecodeBinary overwrites *r with the record encoded in src, which must hold
// exactly one encoding written by AppendBinary. On error it returns an error
// wrapping ErrMalformed and *r is unspecified.
//
// The decoded Key, Value, header values and strings (Topic, OrderKey,
// header keys) alias src, so that decoding allocates nothing: the caller
// must not modify src while r is in use, nor ever after if it keeps the
// strings (copy src first if it is a reused buffer).
func DecodeBinary(src []byte, r *Record) error {
	d := decoder{buf: src, alias: true}
	d.version(codecVersion)
	flags := d.byte()
	if flags&^flagsKnown != 0 && d.err == nil {
		return fmt.Errorf("%w: unknown flags %#x", ErrMalformed, flags)
	}
	*r = Record{Timeless: flags&flagTimeless != 0, Late: flags&flagLate != 0}
	r.Topic = d.string()
	r.Partition = d.int32()
	r.Offset = d.varint()
	r.Key = d.nullable()
	r.Value = d.nullable()
	// Each header takes at least two bytes, which bounds the allocation.
	if n := d.uvarint(); n > 0 && d.err == nil {
		if n > uint64(len(d.buf)/2) {
			return fmt.Errorf("%w: %d headers in %d bytes", ErrMalformed, n, len(d.buf))
		}
		r.Headers = make([]Header, n)
		for i := range r.Headers {
			r.Headers[i].Key = d.string()
			r.Headers[i].Value = d.nullable()
		}
	}
	if flags&flagTimestamp != 0 {
		sec := d.varint()
		nsec := d.uvarint()
		if nsec >= uint64(time.Second) && d.err == nil {
			return fmt.Errorf("%w: timestamp nanoseconds %d", ErrMalformed, nsec)
		}
		r.Timestamp = time.Unix(sec, int64(nsec))
	}
	r.EventTime = d.varint()
	r.OrderKey = d.string()
	r.LateBy = d.varint()
	return d.end()
}

// decoder reads from buf; after the first error every read returns a zero
// value and err keeps that first error.
type decoder struct {
	buf   []byte
	err   error
	alias bool // strings alias buf instead of copying it
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: truncated or invalid %s", ErrMalformed, what)
	}
	d.buf = nil
}

// version reads and checks the format version byte.
func (d *decoder) version(want byte) {
	if v := d.byte(); v != want && d.err == nil {
		d.err = fmt.Errorf("%w: format version %d, want %d", ErrMalformed, v, want)
		d.buf = nil
	}
}

// end returns the first error, or an error when bytes are left over.
func (d *decoder) end() error {
	if d.err == nil && len(d.buf) != 0 {
		d.err = fmt.Errorf("%w: %d trailing bytes", ErrMalformed, len(d.buf))
	}
	return d.err
}

func (d *decoder) byte() byte {
	if len(d.buf) == 0 {
		d.fail("header")
		return 0
	}
	b := d.buf[0]
	d.buf = d.buf[1:]
	return b
}

// took consumes the n bytes a varint decoder read; n ≤ 0 means it failed.
func (d *decoder) took(n int) bool {
	if n <= 0 {
		d.fail("varint")
		return false
	}
	d.buf = d.buf[n:]
	return true
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.buf)
	if !d.took(n) {
		return 0
	}
	return v
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.buf)
	if !d.took(n) {
		return 0
	}
	return v
}

func (d *decoder) int32() int32 {
	v := d.varint()
	if v < math.MinInt32 || v > math.MaxInt32 {
		d.fail("partition")
		return 0
	}
	return int32(v)
}

// bytes returns the next n bytes, aliasing buf.
func (d *decoder) bytes(n uint64) []byte {
	if n > uint64(len(d.buf)) {
		d.fail("length")
		return nil
	}
	b := d.buf[:n:n]
	d.buf = d.buf[n:]
	return b
}

func (d *decoder) string() string {
	n := d.uvarint()
	b := d.bytes(n)
	if d.alias && len(b) > 0 {
		return unsafe.String(unsafe.SliceData(b), len(b))
	}
	return string(b)
}

func (d *decoder) nullable() []byte {
	n := d.uvarint()
	if n == 0 || d.err != nil {
		return nil
	}
	return d.bytes(n - 1)
}

// AppendCheckpoint appends a binary encoding of cp to dst and returns the
// extended slice. DecodeCheckpoint reads it back.
func AppendCheckpoint(dst []byte, cp *Checkpoint) []byte {
	dst = append(dst, checkpointVersion)
	dst = binary.AppendVarint(dst, cp.Watermark)
	dst = binary.AppendUvarint(dst, uint64(len(cp.Partitions)))
	for i := range cp.Partitions {
		p := &cp.Partitions[i]
		dst = appendString(dst, p.Topic)
		dst = binary.AppendVarint(dst, int64(p.Partition))
		dst = binary.AppendVarint(dst, p.Low)
		dst = binary.AppendVarint(dst, p.Position)
		dst = binary.AppendVarint(dst, p.End)
		var replaying byte
		if p.Replaying {
			replaying = 1
		}
		dst = append(dst, replaying)
		dst = binary.AppendVarint(dst, p.Watermark)
	}
	return dst
}

// DecodeCheckpoint overwrites *cp with the checkpoint encoded in src, which
// must hold exactly one encoding written by AppendCheckpoint. On error it
// returns an error wrapping ErrMalformed; an encoding of the earlier format
// without per-partition watermarks is refused that way too. A checkpoint
// without partitions decodes with a nil Partitions slice.
func DecodeCheckpoint(src []byte, cp *Checkpoint) error {
	d := decoder{buf: src}
	d.version(checkpointVersion)
	*cp = Checkpoint{Watermark: d.varint()}
	// Each partition takes at least seven bytes, which bounds the allocation.
	if n := d.uvarint(); n > 0 && d.err == nil {
		if n > uint64(len(d.buf)/7) {
			return fmt.Errorf("%w: %d partitions in %d bytes", ErrMalformed, n, len(d.buf))
		}
		cp.Partitions = make([]PartitionCheckpoint, n)
		for i := range cp.Partitions {
			p := &cp.Partitions[i]
			p.Topic = d.string()
			p.Partition = d.int32()
			p.Low = d.varint()
			p.Position = d.varint()
			p.End = d.varint()
			switch d.byte() {
			case 0:
			case 1:
				p.Replaying = true
			default:
				d.fail("phase")
			}
			p.Watermark = d.varint()
		}
	}
	return d.end()
}
