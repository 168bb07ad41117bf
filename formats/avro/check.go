package avro

import (
	"encoding/binary"
	"slices"
	"time"

	"github.com/signalbox/signalbox/formats/value"
)

// The check program: a schema compiled once (Compile) into ops that
// validate a body and find a field in it without rendering anything or
// allocating. A record is a flat list of its fields' ops, run in a loop
// that checks the common leaves (strings, bytes, longs, ints, booleans,
// fixed sizes, null) inline; the rest call out. It refuses exactly the
// bodies transcode refuses, with the same error at the same place
// (FuzzCheck): the same reads in the same order, the same limits.

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

// op is one compiled type.
type op struct {
	code opcode
	n    int    // oFixed, oDecimalFixed: size; oEnum: symbols; oArray, oMap: fewest bytes per item or entry
	rec  *prog  // oRecord
	item *op    // oArray, oMap: the items or values
	alts []op   // oUnion: the branches
	t    *tnode // what the op was compiled from: Lookup renders with it
}

// prog is a compiled record: its fields in order.
type prog struct {
	ops   []op
	names []string
}

// compileOp compiles t; each record becomes one prog, shared by every
// reference to it (recursive schemas make cycles through progs).
func compileOp(t *tnode, progs map[*tnode]*prog) op {
	o := op{t: t}
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
			p = &prog{names: t.names, ops: make([]op, len(t.fields))}
			progs[t] = p // before the fields: a field may refer back to it
			for i, f := range t.fields {
				p.ops[i] = compileOp(f, progs)
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

// run checks the value of o at b[pos:], at nesting depth (transcode's
// depth), and returns the position after it.
func (o *op) run(b []byte, pos, depth int) (int, error) {
	switch o.code {
	case oNull:
		return pos, nil
	case oBool:
		if pos >= len(b) {
			return 0, errShort
		}
		return pos + 1, nil
	case oInt, oEnum:
		v, rest, err := readInt(b[pos:])
		switch {
		case err != nil:
			return 0, err
		case o.code == oEnum && (v < 0 || int(v) >= o.n):
			return 0, tErr("enum index out of range")
		}
		return at(b, rest), nil
	case oLong:
		_, pos, err := longAt(b, pos)
		return pos, err
	case oTimeMillis, oTimeMicros:
		k := kTimeMillis
		if o.code == oTimeMicros {
			k = kTimeMicros
		}
		_, _, rest, err := readTimeOfDay(b[pos:], k)
		if err != nil {
			return 0, err
		}
		return at(b, rest), nil
	case oFixed:
		if o.n > len(b)-pos {
			return 0, errShort
		}
		return pos + o.n, nil
	case oBytes:
		_, end, err := bytesAt(b, pos)
		return end, err
	case oDecimalBytes:
		start, end, err := bytesAt(b, pos)
		switch {
		case err != nil:
			return 0, err
		case end-start > maxDecimalUnscaled:
			return 0, tErr("decimal longer than 32 KiB")
		}
		return end, nil
	case oDecimalFixed:
		switch {
		case o.n > len(b)-pos:
			return 0, errShort
		case o.n > maxDecimalUnscaled:
			return 0, tErr("decimal longer than 32 KiB")
		}
		return pos + o.n, nil
	case oBigDecimal:
		start, end, err := bytesAt(b, pos)
		if err != nil {
			return 0, err
		}
		if _, _, err := bigDecimalParts(b[start:end]); err != nil {
			return 0, err
		}
		return end, nil
	case oRecord:
		if depth >= maxDepth {
			return 0, tErr(tooDeep)
		}
		return o.rec.fields(b, pos, depth+1, len(o.rec.ops))
	case oUnion:
		if depth >= maxDepth {
			return 0, tErr(tooDeep)
		}
		i, pos, err := longAt(b, pos)
		if err != nil {
			return 0, err
		}
		if i < 0 || i >= int64(len(o.alts)) {
			return 0, tErr("union index out of range")
		}
		return o.alts[i].run(b, pos, depth+1)
	case oArray, oMap:
		return o.blocks(b, pos, depth)
	}
	return 0, tErr("unknown schema kind")
}

// fields checks the values of p's first end fields from b[pos:], each at
// depth: the common leaves inline, the rest through run.
func (p *prog) fields(b []byte, pos, depth, end int) (int, error) {
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
		if pos, err = o.run(b, pos, depth); err != nil {
			return 0, err
		}
	}
	return pos, nil
}

// blocks checks an array's or a map's blocks at b[pos:], as
// transcodeArray and transcodeMap read them.
func (o *op) blocks(b []byte, pos, depth int) (int, error) {
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
			if pos, err = o.item.run(b, pos, depth+1); err != nil {
				return 0, err
			}
		}
	}
}

// Lookup returns the field at path (record fields and map keys, through
// unions), and false when there is none. It walks the body again with the
// check program, skipping what precedes the field. A timestamp or date's
// Text is left empty (Field.String renders it): reading an event time
// formats nothing.
func (v *Value) Lookup(path []string) (value.Field, bool) {
	o, b, pos := &v.c.op, v.body, 0
	var ok bool
	var err error
	for _, name := range path {
		if o, pos, ok = o.branch(b, pos); !ok {
			return value.Field{}, false
		}
		switch o.code {
		case oRecord:
			idx := slices.Index(o.rec.names, name)
			if idx < 0 {
				return value.Field{}, false
			}
			if pos, err = o.rec.fields(b, pos, 1, idx); err != nil {
				return value.Field{}, false
			}
			o = &o.rec.ops[idx]
		case oMap:
			found := -1 // of repeated keys the last wins, as in the JSON
			var total int64
			for {
				n, rest, err := blockCount(b[pos:], o.n, &total)
				if err != nil {
					return value.Field{}, false
				}
				if pos = at(b, rest); n == 0 {
					break
				}
				for ; n > 0; n-- {
					start, end, err := bytesAt(b, pos)
					if err != nil {
						return value.Field{}, false
					}
					if string(b[start:end]) == name {
						found = end
					}
					if pos, err = o.item.run(b, end, 1); err != nil {
						return value.Field{}, false
					}
				}
			}
			if found < 0 {
				return value.Field{}, false
			}
			o, pos = o.item, found
		default:
			return value.Field{}, false
		}
	}
	if o, pos, ok = o.branch(b, pos); !ok {
		return value.Field{}, false
	}
	if k := o.t.kind; k == kTsMillis || k == kTsMicros || k == kTsNanos { // an event time: the common case
		n, _, err := longAt(b, pos)
		if err != nil {
			return value.Field{}, false
		}
		tm, digits := tsTime(k, n)
		return value.Field{Kind: value.KindTime, Time: tm.UTC(), Digits: digits}, true
	}
	return o.t.field(b[pos:])
}

// branch reads union indexes until o is a concrete type.
func (o *op) branch(b []byte, pos int) (*op, int, bool) {
	for o.code == oUnion {
		i, next, err := longAt(b, pos)
		if err != nil || i < 0 || i >= int64(len(o.alts)) {
			return nil, 0, false
		}
		o, pos = &o.alts[i], next
	}
	return o, pos, true
}

// field is the value of t at the head of src as a Field (a timestamp:
// Lookup).
func (t *tnode) field(src []byte) (value.Field, bool) {
	switch t.kind {
	case kNull:
		return value.Field{Kind: value.KindNull, Text: "null"}, true
	case kString:
		s, _, err := readBytes(src)
		if err != nil {
			return value.Field{}, false
		}
		return value.Field{Kind: value.KindString, Text: string(s)}, true
	case kEnum:
		i, _, err := readInt(src)
		if err != nil || i < 0 || int(i) >= len(t.names) {
			return value.Field{}, false
		}
		return value.Field{Kind: value.KindString, Text: t.names[i]}, true
	case kUUIDFixed:
		if len(src) < 16 {
			return value.Field{}, false
		}
		return value.Field{Kind: value.KindString, Text: value.FormatUUID(src[:16])}, true
	case kDate:
		d, _, err := readInt(src)
		if err != nil {
			return value.Field{}, false
		}
		return value.Field{Kind: value.KindTime, Time: time.Unix(int64(d)*86400, 0).UTC(), Digits: value.DigitsDate}, true
	}
	js, _, err := transcode(nil, src, t, 1)
	if err != nil {
		return value.Field{}, false
	}
	switch t.kind {
	case kBool:
		return value.Field{Kind: value.KindBool, Text: string(js)}, true
	case kInt, kLong, kFloat, kDouble:
		if js[0] != '"' {
			return value.Field{Kind: value.KindNumber, Text: string(js)}, true
		}
	}
	return value.Field{Kind: value.KindOther, Text: string(js)}, true
}
