package avro

import (
	"encoding/binary"
	"math"
	"time"

	"github.com/signalbox/signalbox/formats/value"
)

// The program: a schema compiled once (Compile) into ops, and every read
// of a body, written once: read reads and checks a leaf, alt a union's
// branch, blockCount and bytesAt an array's or a map's blocks and keys.
// Two walks run the program with those reads, in the same order (doc.go
// invariant 4). check (Check, and Lookup up to its field) renders nothing
// and allocates nothing; a record is a flat list of its fields' ops, run in
// a loop that takes the common leaves (strings, bytes, longs, ints,
// booleans, fixed sizes, null) inline when read would take them in one
// step, and calls out for the rest. render (Decode, AppendJSON) appends
// each value's JSON as it reads it (render.go).
//
// The walks are two because one walk with a render mode cost the check
// path 15% (BenchmarkCheck/event) to 27% (inventory) more instructions,
// measured: the renderer's state stays live through the record loop. The
// reads, where two walks could disagree, are shared.

type opcode uint8

const (
	oNull         opcode = iota
	oBool                // one byte
	oInt                 // int, date: a varint within 32 bits
	oLong                // long, timestamps
	oEnum                // an int below n
	oTimeMillis          // an int within a day
	oTimeMicros          // a long within a day
	oFixed               // n bytes: float, double, fixed, uuid, duration
	oBytes               // string, bytes: a length, then as many bytes
	oDecimalBytes        // bytes of at most 32 KiB
	oDecimalFixed        // n bytes, refused beyond 32 KiB
	oBigDecimal          // bytes holding the unscaled bytes and the scale
	oRecord              // rec's fields, one level deeper
	oUnion               // a branch index, then that branch
	oArray               // blocks of items
	oMap                 // blocks of keys and items
)

// op is one compiled type: code says how it reads, kind how it renders.
type op struct {
	code opcode
	kind kind
	n    int    // oFixed, oDecimalFixed: size; oEnum: symbols; oArray, oMap: fewest bytes per item or entry
	rec  *prog  // oRecord
	item *op    // oArray, oMap: the items or values
	alts []op   // oUnion: the branches
	t    *tnode // what the op was compiled from: enum symbols, a decimal's scale
}

// prog is a compiled record: its fields in order.
type prog struct {
	ops   []op
	names []string
	keys  [][]byte // rendered before each field: `"name":`, after a comma from the second on
}

// compileOp compiles t; each record becomes one prog, shared by every
// reference to it (recursive schemas make cycles through progs).
func compileOp(t *tnode, progs map[*tnode]*prog) op {
	o := op{t: t, kind: t.kind}
	switch t.kind {
	case kNull:
		o.code = oNull
	case kBool:
		o.code = oBool
	case kInt, kDate:
		o.code = oInt
	case kEnum:
		o.code, o.n = oEnum, len(t.symbols)
	case kLong, kTsMillis, kTsMicros, kTsNanos:
		o.code = oLong
	case kTimeMillis:
		o.code = oTimeMillis
	case kTimeMicros:
		o.code = oTimeMicros
	case kFloat:
		o.code, o.n = oFixed, 4
	case kDouble:
		o.code, o.n = oFixed, 8
	case kFixed:
		o.code, o.n = oFixed, t.size
	case kUUIDFixed:
		o.code, o.n = oFixed, 16
	case kDuration:
		o.code, o.n = oFixed, 12
	case kString, kBytes:
		o.code = oBytes
	case kDecimalBytes:
		o.code = oDecimalBytes
	case kDecimalFixed:
		o.code, o.n = oDecimalFixed, t.size
	case kBigDecimal:
		o.code = oBigDecimal
	case kRecord:
		o.code = oRecord
		p, ok := progs[t]
		if !ok {
			p = &prog{names: t.names, ops: make([]op, len(t.fields)), keys: make([][]byte, len(t.fields))}
			progs[t] = p // before the fields: a field may refer back to it
			for i, f := range t.fields {
				p.ops[i] = compileOp(f, progs)
				if i > 0 {
					p.keys[i] = []byte{','}
				}
				p.keys[i] = append(value.AppendString(p.keys[i], t.names[i]), ':')
			}
		}
		o.rec = p
	case kUnion:
		o.code = oUnion
		o.alts = make([]op, len(t.branches))
		for i, b := range t.branches {
			o.alts[i] = compileOp(b, progs)
		}
	case kArray, kMap:
		o.code, o.n = oArray, t.items.minBytes
		if t.kind == kMap {
			o.code, o.n = oMap, t.minEntry()
		}
		item := compileOp(t.items, progs)
		o.item = &item
	}
	return o
}

type tErr string

func (e tErr) Error() string { return "avro: " + string(e) }

var errShort = tErr("body ends inside a value")

func readLong(src []byte) (int64, []byte, error) {
	u, n := binary.Uvarint(src)
	if n <= 0 {
		if n == 0 {
			return 0, nil, errShort
		}
		return 0, nil, tErr("varint overflows 64 bits")
	}
	return int64(u>>1) ^ -int64(u&1), src[n:], nil
}

func readInt(src []byte) (int32, []byte, error) {
	v, rest, err := readLong(src)
	if err != nil {
		return 0, nil, err
	}
	if v < math.MinInt32 || v > math.MaxInt32 {
		return 0, nil, tErr("int out of range")
	}
	return int32(v), rest, nil
}

func readBytes(src []byte) ([]byte, []byte, error) {
	n, src, err := readLong(src)
	if err != nil {
		return nil, nil, err
	}
	if n < 0 || n > int64(len(src)) {
		return nil, nil, errShort
	}
	return src[:n], src[n:], nil
}

// at is the position in b of rest, a suffix of b.
func at(b, rest []byte) int { return len(b) - len(rest) }

// longAt reads the varint at b[pos:] as readLong does.
func longAt(b []byte, pos int) (int64, int, error) {
	if pos < len(b) && b[pos] < 0x80 {
		u := uint64(b[pos])
		return int64(u>>1) ^ -int64(u&1), pos + 1, nil
	}
	v, rest, err := readLong(b[pos:])
	if err != nil {
		return 0, 0, err
	}
	return v, at(b, rest), nil
}

// bytesAt reads past the length-prefixed bytes at b[pos:], as readBytes
// does, and returns their start and end.
func bytesAt(b []byte, pos int) (int, int, error) {
	if pos < len(b) && b[pos] < 0x80 && b[pos]&1 == 0 { // a length below 64
		start, n := pos+1, int(b[pos]>>1)
		if n > len(b)-start {
			return 0, 0, errShort
		}
		return start, start + n, nil
	}
	s, rest, err := readBytes(b[pos:])
	if err != nil {
		return 0, 0, err
	}
	return at(b, rest) - len(s), at(b, rest), nil
}

// blockCount reads an array or map block header and checks its count
// against the bytes left (doc.go invariant 1).
func blockCount(src []byte, minItem int, total *int64) (int64, []byte, error) {
	n, src, err := readLong(src)
	if err != nil {
		return 0, nil, err
	}
	if n < 0 {
		if n == math.MinInt64 {
			return 0, nil, tErr("block count out of range")
		}
		n = -n
		// The block's byte size only helps a reader that skips it; like
		// the library and Java's reader, read it and go on.
		if _, src, err = readLong(src); err != nil {
			return 0, nil, err
		}
	}
	switch {
	case minItem > 0:
		if n > int64(len(src))/int64(minItem) {
			return 0, nil, errShort
		}
	case minItem == 0:
		if n > maxZeroByteItems-*total {
			return 0, nil, tErr(zeroByteItemsExceed)
		}
	default:
		if n > max(int64(len(src)), maxZeroByteItems-*total) {
			return 0, nil, errShort
		}
	}
	*total += n
	return n, src, nil
}

// bigDecimalParts checks a big-decimal payload and splits it into the
// unscaled bytes and the scale, allocating nothing.
func bigDecimalParts(p []byte) ([]byte, int64, error) {
	u, p, err := readBytes(p)
	if err != nil {
		return nil, 0, err
	}
	if len(u) > maxDecimalUnscaled {
		return nil, 0, tErr("big-decimal longer than 32 KiB")
	}
	scale, p, err := readLong(p)
	if err != nil {
		return nil, 0, err
	}
	if len(p) != 0 {
		return nil, 0, tErr("big-decimal has bytes after its scale")
	}
	if scale > maxBigDecimalScale || scale < -maxBigDecimalScale {
		return nil, 0, tErr("big-decimal scale out of range")
	}
	return u, scale, nil
}

// read reads and checks the leaf value of o at b[pos:]: the one place each
// leaf is read. It returns what rendering needs, v (the number an int,
// long, boolean, enum or time of day holds) and the value's bytes
// b[start:end] (a string's or bytes' without their length), and end, the
// position after the value.
func (o *op) read(b []byte, pos int) (v int64, start, end int, err error) {
	switch o.code {
	case oNull:
		return 0, pos, pos, nil
	case oBool:
		if pos >= len(b) {
			return 0, 0, 0, errShort
		}
		return int64(b[pos]), pos, pos + 1, nil
	case oInt, oEnum:
		i, rest, err := readInt(b[pos:])
		switch {
		case err != nil:
			return 0, 0, 0, err
		case o.code == oEnum && (i < 0 || int(i) >= o.n):
			return 0, 0, 0, tErr("enum index out of range")
		}
		return int64(i), pos, at(b, rest), nil
	case oLong:
		v, end, err := longAt(b, pos)
		return v, pos, end, err
	case oTimeMillis:
		i, rest, err := readInt(b[pos:])
		switch {
		case err != nil:
			return 0, 0, 0, err
		case i < 0 || i >= int32(24*time.Hour/time.Millisecond):
			return 0, 0, 0, tErr("time-millis outside a day")
		}
		return int64(i), pos, at(b, rest), nil
	case oTimeMicros:
		v, end, err := longAt(b, pos)
		switch {
		case err != nil:
			return 0, 0, 0, err
		case v < 0 || v >= int64(24*time.Hour/time.Microsecond):
			return 0, 0, 0, tErr("time-micros outside a day")
		}
		return v, pos, end, nil
	case oFixed:
		if o.n > len(b)-pos {
			return 0, 0, 0, errShort
		}
		return 0, pos, pos + o.n, nil
	case oBytes:
		start, end, err := bytesAt(b, pos)
		return 0, start, end, err
	case oDecimalBytes:
		start, end, err := bytesAt(b, pos)
		switch {
		case err != nil:
			return 0, 0, 0, err
		case end-start > maxDecimalUnscaled:
			return 0, 0, 0, tErr("decimal longer than 32 KiB")
		}
		return 0, start, end, nil
	case oDecimalFixed:
		switch {
		case o.n > len(b)-pos:
			return 0, 0, 0, errShort
		case o.n > maxDecimalUnscaled:
			return 0, 0, 0, tErr("decimal longer than 32 KiB")
		}
		return 0, pos, pos + o.n, nil
	case oBigDecimal:
		start, end, err := bytesAt(b, pos)
		if err != nil {
			return 0, 0, 0, err
		}
		if _, _, err := bigDecimalParts(b[start:end]); err != nil {
			return 0, 0, 0, err
		}
		return 0, start, end, nil
	}
	return 0, 0, 0, tErr("unknown schema kind")
}

// alt reads a union's branch index at b[pos:], at nesting depth, and
// returns that branch and the position of its value.
func (o *op) alt(b []byte, pos, depth int) (*op, int, error) {
	if depth >= maxDepth {
		return nil, 0, tErr(tooDeep)
	}
	i, pos, err := longAt(b, pos)
	if err != nil {
		return nil, 0, err
	}
	if i < 0 || i >= int64(len(o.alts)) {
		return nil, 0, tErr("union index out of range")
	}
	return &o.alts[i], pos, nil
}

// check checks the value of o at b[pos:], at nesting depth (0 for the
// body), and returns the position after it. It renders nothing and
// allocates nothing.
func (o *op) check(b []byte, pos, depth int) (int, error) {
	switch o.code {
	case oRecord:
		if depth >= maxDepth {
			return 0, tErr(tooDeep)
		}
		return o.rec.check(b, pos, depth+1, len(o.rec.ops))
	case oUnion:
		a, pos, err := o.alt(b, pos, depth)
		if err != nil {
			return 0, err
		}
		return a.check(b, pos, depth+1)
	case oArray, oMap:
		return o.checkBlocks(b, pos, depth)
	}
	_, _, end, err := o.read(b, pos)
	return end, err
}

// check checks the values of p's first end fields from b[pos:], each at
// depth. The common leaves are read inline, the shapes read takes in one
// step (a short length, a one-byte varint, a null or short string
// branch); anything else goes to check, and so to read.
func (p *prog) check(b []byte, pos, depth, end int) (int, error) {
	var err error
	for i := range p.ops[:end] {
		o := &p.ops[i]
		switch o.code {
		case oNull:
			continue
		case oBytes:
			if pos < len(b) && b[pos] < 0x80 && b[pos]&1 == 0 { // a length below 64
				n := int(b[pos] >> 1)
				if n > len(b)-pos-1 {
					return 0, errShort
				}
				pos += 1 + n
				continue
			}
		case oLong:
			if pos < len(b) {
				if c := b[pos]; c < 0x80 {
					pos++
					continue
				}
				if _, n := binary.Uvarint(b[pos:]); n > 0 {
					pos += n
					continue
				}
			}
		case oInt:
			if pos < len(b) && b[pos] < 0x80 {
				pos++
				continue
			}
		case oBool:
			if pos < len(b) {
				pos++
				continue
			}
		case oFixed:
			if o.n <= len(b)-pos {
				pos += o.n
				continue
			}
		case oUnion: // a nullable field: null, or a short string or bytes
			if depth < maxDepth && pos < len(b) && b[pos] < 0x80 && b[pos]&1 == 0 && int(b[pos]>>1) < len(o.alts) {
				switch a := &o.alts[b[pos]>>1]; a.code {
				case oNull:
					pos++
					continue
				case oBytes:
					if pos+1 < len(b) && b[pos+1] < 0x80 && b[pos+1]&1 == 0 && int(b[pos+1]>>1) <= len(b)-pos-2 {
						pos += 2 + int(b[pos+1]>>1)
						continue
					}
				}
			}
		}
		if pos, err = o.check(b, pos, depth); err != nil {
			return 0, err
		}
	}
	return pos, nil
}

// checkBlocks checks an array's or a map's blocks at b[pos:].
func (o *op) checkBlocks(b []byte, pos, depth int) (int, error) {
	if depth >= maxDepth {
		return 0, tErr(tooDeep)
	}
	var total int64
	for {
		n, rest, err := blockCount(b[pos:], o.n, &total)
		if err != nil {
			return 0, err
		}
		if pos = at(b, rest); n == 0 {
			return pos, nil
		}
		for ; n > 0; n-- {
			if o.code == oMap {
				if _, pos, err = bytesAt(b, pos); err != nil {
					return 0, err
				}
			}
			if pos, err = o.item.check(b, pos, depth+1); err != nil {
				return 0, err
			}
		}
	}
}
