package protobuf

import (
	"math"
	"strconv"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/signalbox/signalbox/formats/value"
)

// lookupBinary resolves path on a transcoded body without building a
// message: singular fields through singular messages, Timestamps and
// wrappers at the end. handled is false for what it leaves to the dynamic
// message (lists, maps, oneofs, a message written twice, a plain message
// at the end).
func (c *Codec) lookupBinary(md protoreflect.MessageDescriptor, b []byte, path []string) (f value.Field, found, handled bool) {
	p := c.plans[md.FullName()]
	if p == nil || !p.fast {
		return value.Field{}, false, false
	}
	for i, name := range path {
		fi, ok := p.byName[name]
		if !ok {
			return value.Field{}, false, true
		}
		pf := &p.fields[fi]
		if pf.fd.IsList() || pf.fd.IsMap() || pf.oneof {
			return value.Field{}, false, false
		}
		o, n := lastOccurrence(b, pf)
		if n < 0 {
			return value.Field{}, false, false
		}
		if i < len(path)-1 {
			if pf.msg == nil || n == 0 {
				return value.Field{}, false, true
			}
			if n > 1 {
				return value.Field{}, false, false // merged messages
			}
			p, b = pf.msg, o.data
			continue
		}
		if pf.msg == nil {
			return scalarField(pf.fd, o), true, true
		}
		if n == 0 {
			return value.Field{Kind: value.KindNull, Text: "null"}, true, true
		}
		if n > 1 {
			return value.Field{}, false, false
		}
		switch pf.msg.wkt {
		case wktTimestamp:
			secs, nanos, ok := timeParts(o.data, pf.msg)
			if !ok {
				return value.Field{}, false, false
			}
			t := time.Unix(secs, nanos).UTC()
			return value.Field{Kind: value.KindTime, Time: t, Text: t.Format(time.RFC3339Nano)}, true, true
		case wktWrapper:
			inner := &pf.msg.fields[0]
			io, in := lastOccurrence(o.data, inner)
			if in < 0 {
				return value.Field{}, false, false
			}
			return scalarField(inner.fd, io), true, true
		}
		return value.Field{}, false, false
	}
	return value.Field{}, false, true
}

// lastOccurrence finds the last value of f in the message bytes b and how
// many there are (-1 when b does not parse).
func lastOccurrence(b []byte, f *pfield) (occ, int) {
	var last occ
	count := 0
	for len(b) > 0 {
		num, o, rest, err := consumeField(b)
		if err != nil {
			return occ{}, -1
		}
		b = rest
		if num == f.fd.Number() && wireTypeFits(*f, o.typ) {
			last = o
			count++
		}
	}
	return last, count
}

func timeParts(b []byte, p *plan) (int64, int64, bool) {
	var secs, nanos int64
	for i := range p.fields {
		o, n := lastOccurrence(b, &p.fields[i])
		if n < 0 {
			return 0, 0, false
		}
		switch p.fields[i].fd.Number() {
		case 1:
			secs = int64(o.v)
		case 2:
			nanos = int64(int32(o.v))
		}
	}
	return secs, nanos, true
}

// scalarField is the Field of a scalar (its default when absent), as the
// dynamic message's leaf gives it.
func scalarField(fd protoreflect.FieldDescriptor, o occ) value.Field {
	v := o.v
	switch fd.Kind() {
	case protoreflect.StringKind:
		return value.Field{Kind: value.KindString, Text: string(o.data)}
	case protoreflect.BoolKind:
		return value.Field{Kind: value.KindBool, Text: strconv.FormatBool(v != 0)}
	case protoreflect.EnumKind:
		n := protoreflect.EnumNumber(int32(v))
		if ev := fd.Enum().Values().ByNumber(n); ev != nil {
			return value.Field{Kind: value.KindString, Text: string(ev.Name())}
		}
		return value.Field{Kind: value.KindNumber, Text: strconv.Itoa(int(n))}
	case protoreflect.Int32Kind, protoreflect.Sfixed32Kind:
		return value.Field{Kind: value.KindNumber, Text: strconv.FormatInt(int64(int32(v)), 10)}
	case protoreflect.Sint32Kind:
		return value.Field{Kind: value.KindNumber, Text: strconv.FormatInt(int64(int32(protowire.DecodeZigZag(v&math.MaxUint32))), 10)}
	case protoreflect.Int64Kind, protoreflect.Sfixed64Kind:
		return value.Field{Kind: value.KindNumber, Text: strconv.FormatInt(int64(v), 10)}
	case protoreflect.Sint64Kind:
		return value.Field{Kind: value.KindNumber, Text: strconv.FormatInt(protowire.DecodeZigZag(v), 10)}
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return value.Field{Kind: value.KindNumber, Text: strconv.FormatUint(uint64(uint32(v)), 10)}
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return value.Field{Kind: value.KindNumber, Text: strconv.FormatUint(v, 10)}
	case protoreflect.FloatKind:
		return value.Field{Kind: value.KindNumber, Text: string(value.AppendFloat(nil, float64(math.Float32frombits(uint32(v))), 32))}
	case protoreflect.DoubleKind:
		return value.Field{Kind: value.KindNumber, Text: string(value.AppendFloat(nil, math.Float64frombits(v), 64))}
	case protoreflect.BytesKind:
		return value.Field{Kind: value.KindOther, Text: string(value.AppendBytes(nil, o.data))}
	}
	return value.Field{Kind: value.KindOther}
}
