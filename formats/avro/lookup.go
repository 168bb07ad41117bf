package avro

import (
	"slices"
	"time"

	"github.com/signalbox/signalbox/formats/value"
)

// Lookup returns the field at path (record fields and map keys, through
// unions), and false when there is none. It walks the body again, skipping
// what precedes the field unrendered. A timestamp or date's Text is left
// empty (Field.String renders it): reading an event time formats nothing.
func (v *Value) Lookup(path []string) (value.Field, bool) {
	t, src := v.c.t, v.body
	var ok bool
	for _, name := range path {
		if t, src, ok = resolveUnion(t, src); !ok {
			return value.Field{}, false
		}
		switch t.kind {
		case kRecord:
			idx := slices.Index(t.names, name)
			if idx < 0 {
				return value.Field{}, false
			}
			for i := range idx {
				var err error
				if src, err = skip(src, t.fields[i], 1); err != nil {
					return value.Field{}, false
				}
			}
			t = t.fields[idx]
		case kMap:
			var found []byte // of repeated keys the last wins, as in the JSON
			var total int64
			for {
				n, rest, err := blockCount(src, t.minEntry(), &total)
				if err != nil {
					return value.Field{}, false
				}
				if src = rest; n == 0 {
					break
				}
				for ; n > 0; n-- {
					k, rest, err := readBytes(src)
					if err != nil {
						return value.Field{}, false
					}
					if string(k) == name {
						found = rest
					}
					if src, err = skip(rest, t.items, 1); err != nil {
						return value.Field{}, false
					}
				}
			}
			if found == nil {
				return value.Field{}, false
			}
			t, src = t.items, found
		default:
			return value.Field{}, false
		}
	}
	if t, src, ok = resolveUnion(t, src); !ok {
		return value.Field{}, false
	}
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
	case kTsMillis, kTsMicros, kTsNanos:
		n, _, err := readLong(src)
		if err != nil {
			return value.Field{}, false
		}
		tm, digits := tsTime(t.kind, n)
		return value.Field{Kind: value.KindTime, Time: tm.UTC(), Digits: digits}, true
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

// resolveUnion reads union indexes until t is a concrete type.
func resolveUnion(t *tnode, src []byte) (*tnode, []byte, bool) {
	for t.kind == kUnion {
		i, rest, err := readLong(src)
		if err != nil || i < 0 || i >= int64(len(t.branches)) {
			return nil, nil, false
		}
		t, src = t.branches[i], rest
	}
	return t, src, true
}
