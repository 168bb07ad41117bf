package avro

import (
	"slices"
	"time"

	"github.com/signalbox/signalbox/formats/value"
)

// Lookup returns the field at path (record fields and map keys, through
// unions), and false when there is none. It walks the body again with the
// program, only checking what precedes the field, and reads the field
// with it. A timestamp or date's Text is left empty (Field.String renders
// it): reading an event time formats nothing.
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
			if pos, err = o.rec.check(b, pos, 1, idx); err != nil {
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
					if pos, err = o.item.check(b, end, 1); err != nil {
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
	if k := o.kind; k == kTsMillis || k == kTsMicros || k == kTsNanos { // an event time: the common case
		n, _, _, err := o.read(b, pos)
		if err != nil {
			return value.Field{}, false
		}
		tm, digits := tsTime(k, n)
		return value.Field{Kind: value.KindTime, Time: tm.UTC(), Digits: digits}, true
	}
	return o.field(b, pos)
}

// branch reads union indexes until o is a concrete type.
func (o *op) branch(b []byte, pos int) (*op, int, bool) {
	var err error
	for o.code == oUnion {
		if o, pos, err = o.alt(b, pos, 1); err != nil {
			return nil, 0, false
		}
	}
	return o, pos, true
}

// field is the value of o (not a union) at b[pos:] as a Field (a
// timestamp: Lookup).
func (o *op) field(b []byte, pos int) (value.Field, bool) {
	switch o.code {
	case oRecord, oArray, oMap:
		js, _, err := o.render(nil, b, pos, 1)
		if err != nil {
			return value.Field{}, false
		}
		return value.Field{Kind: value.KindOther, Text: string(js)}, true
	}
	v, start, end, err := o.read(b, pos)
	if err != nil {
		return value.Field{}, false
	}
	switch o.kind {
	case kDate:
		return value.Field{Kind: value.KindTime, Time: time.Unix(v*86400, 0).UTC(), Digits: value.DigitsDate}, true
	case kNull:
		return value.Field{Kind: value.KindNull, Text: "null"}, true
	case kString:
		return value.Field{Kind: value.KindString, Text: string(b[start:end])}, true
	case kEnum:
		return value.Field{Kind: value.KindString, Text: o.t.names[v]}, true
	case kUUIDFixed:
		return value.Field{Kind: value.KindString, Text: value.FormatUUID(b[start:end])}, true
	}
	js, _, err := o.render(nil, b, pos, 1)
	if err != nil {
		return value.Field{}, false
	}
	switch o.kind {
	case kBool:
		return value.Field{Kind: value.KindBool, Text: string(js)}, true
	case kInt, kLong, kFloat, kDouble:
		if js[0] != '"' { // not NaN or an infinity
			return value.Field{Kind: value.KindNumber, Text: string(js)}, true
		}
	}
	return value.Field{Kind: value.KindOther, Text: string(js)}, true
}
