package keyed

// StateCodec: the encoding of a State for a durable Store.

import (
	"encoding/binary"
	"errors"
	"math"
	"unsafe"
)

// StateCodec encodes and decodes the State of Windows (a durable Store's
// codec). Decode(Append(nil, s)) equals s.
type StateCodec struct{}

var errState = errors.New("keyed: corrupt window state")

// Append appends the encoding of s to b: the number of windows, then each
// window's start, end, and slots (count, then n, f, raw, t, seq each).
func (StateCodec) Append(b []byte, s State) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	for _, w := range s {
		b = binary.AppendVarint(b, w.start)
		b = binary.AppendVarint(b, w.end)
		b = binary.AppendUvarint(b, uint64(len(w.slots)))
		for i := range w.slots {
			sl := &w.slots[i]
			b = binary.AppendVarint(b, sl.n)
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(sl.f))
			b = binary.AppendUvarint(b, uint64(len(sl.raw)))
			b = append(b, sl.raw...)
			b = binary.AppendVarint(b, sl.t)
			b = binary.AppendVarint(b, sl.seq)
		}
	}
	return b
}

// Decode decodes a State that Append encoded. The State does not alias b.
func (StateCodec) Decode(b []byte) (State, error) {
	d := decoder{b: b}
	n := d.uvarint()
	if n > uint64(len(b)) {
		return nil, errState
	}
	s := make(State, 0, n)
	for range n {
		w := &window{start: d.varint(), end: d.varint()}
		k := d.uvarint()
		if k > uint64(len(d.b)) {
			return nil, errState
		}
		w.slots = make([]slot, k)
		for i := range w.slots {
			sl := &w.slots[i]
			sl.n = d.varint()
			sl.f = math.Float64frombits(d.uint64())
			if raw := d.bytes(d.uvarint()); len(raw) > 0 {
				sl.raw = append([]byte(nil), raw...)
			}
			sl.t, sl.seq = d.varint(), d.varint()
		}
		s = append(s, w)
	}
	if d.bad || len(d.b) > 0 {
		return nil, errState
	}
	return s, nil
}

// Size is the memory s takes, about: what a durable Store's cache counts
// against its budget.
func (StateCodec) Size(s State) int {
	n := int(unsafe.Sizeof(s)) + len(s)*int(unsafe.Sizeof(&window{})+unsafe.Sizeof(window{}))
	for _, w := range s {
		n += len(w.slots) * int(unsafe.Sizeof(slot{}))
		for i := range w.slots {
			n += cap(w.slots[i].raw)
		}
	}
	return n
}

// decoder reads what StateCodec.Append wrote; bad is set, and every read
// returns zero, once the input is short or malformed.
type decoder struct {
	b   []byte
	bad bool
}

func (d *decoder) uvarint() uint64 { return next(d, binary.Uvarint) }
func (d *decoder) varint() int64   { return next(d, binary.Varint) }

// next reads one varint with f (binary.Uvarint or binary.Varint).
func next[T uint64 | int64](d *decoder, f func([]byte) (T, int)) T {
	v, n := f(d.b)
	if n <= 0 {
		d.bad, d.b = true, nil
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) uint64() uint64 {
	if len(d.b) < 8 {
		d.bad, d.b = true, nil
		return 0
	}
	v := binary.LittleEndian.Uint64(d.b)
	d.b = d.b[8:]
	return v
}

func (d *decoder) bytes(n uint64) []byte {
	if n > uint64(len(d.b)) {
		d.bad, d.b = true, nil
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}
