package protobuf

import (
	"cmp"
	"encoding/base64"
	"errors"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/signalbox/signalbox/formats/value"
)

// The transcoder reads the Protobuf binary of the common shapes (proto3
// scalars, enums, nested and repeated messages, maps, oneofs, Timestamp,
// Duration and the wrappers) and appends exactly what protojson, compacted,
// would write, without building a dynamic message. Anything else — other
// syntaxes and well-known types, groups, a singular message written twice
// (which merges), nesting past the recursion limit, a value protojson
// refuses — returns errSlow and the record takes the dynamicpb/protojson
// path, the reference FuzzTranscode checks the transcoder against.

var errSlow = errors.New("protobuf: not on the transcoder's path")

type wkt uint8

const (
	wktNone wkt = iota
	wktTimestamp
	wktDuration
	wktWrapper
)

// pfield is one field of a plan.
type pfield struct {
	fd     protoreflect.FieldDescriptor
	key    []byte // `"name":`
	msg    *plan  // message (or map value message) fields
	oneof  bool   // a member of a oneof (proto3 optional included)
	packed bool   // a repeated scalar that may come packed
}

// plan is a message compiled for the transcoder.
type plan struct {
	md     protoreflect.MessageDescriptor
	fields []pfield
	byNum  map[protowire.Number]int
	byName map[string]int // .proto and JSON names
	wkt    wkt
	fast   bool
}

func (c *Codec) planFor(md protoreflect.MessageDescriptor, memo map[protoreflect.FullName]*plan) *plan {
	if p, ok := memo[md.FullName()]; ok {
		return p
	}
	p := &plan{md: md, byNum: map[protowire.Number]int{}, byName: map[string]int{}, fast: true}
	memo[md.FullName()] = p
	switch name := md.FullName(); {
	case name == "google.protobuf.Timestamp":
		p.wkt = wktTimestamp
	case name == "google.protobuf.Duration":
		p.wkt = wktDuration
	case strings.HasPrefix(string(name), "google.protobuf.") && strings.HasSuffix(string(name), "Value") &&
		name != "google.protobuf.Value" && name != "google.protobuf.ListValue":
		p.wkt = wktWrapper
	case strings.HasPrefix(string(name), "google.protobuf."):
		p.fast = false // Any, Struct, Value, FieldMask, Empty…: protojson's own forms
	}
	if md.ParentFile().Syntax() != protoreflect.Proto3 {
		p.fast = false
	}
	fds := md.Fields()
	for i := range fds.Len() {
		fd := fds.Get(i)
		f := pfield{fd: fd, oneof: fd.ContainingOneof() != nil}
		f.key = append(value.AppendString(nil, fd.TextName()), ':')
		switch {
		case fd.Kind() == protoreflect.GroupKind:
			p.fast = false
		case fd.IsMap():
			if mv := fd.MapValue(); mv.Kind() == protoreflect.MessageKind {
				f.msg = c.planFor(mv.Message(), memo)
			}
		case fd.Kind() == protoreflect.MessageKind:
			f.msg = c.planFor(fd.Message(), memo)
		case fd.Kind() == protoreflect.EnumKind && fd.Enum().FullName() == "google.protobuf.NullValue":
			p.fast = false
		}
		f.packed = fd.IsList() && fd.Kind() != protoreflect.StringKind && fd.Kind() != protoreflect.BytesKind && fd.Kind() != protoreflect.MessageKind
		p.byNum[fd.Number()] = len(p.fields)
		if _, ok := p.byName[fd.JSONName()]; !ok {
			p.byName[fd.JSONName()] = len(p.fields)
		}
		p.byName[string(fd.Name())] = len(p.fields) // the .proto name wins, as in the dynamic lookup
		p.fields = append(p.fields, f)
	}
	return p
}

// markSlow spreads "not fast" to every plan that reaches a slow one.
func markSlow(plans map[protoreflect.FullName]*plan) {
	for changed := true; changed; {
		changed = false
		for _, p := range plans {
			if !p.fast {
				continue
			}
			for _, f := range p.fields {
				if f.msg != nil && !f.msg.fast {
					p.fast, changed = false, true
					break
				}
			}
		}
	}
}

// seen is where a field's values sit in the body: the last one for a
// singular field, every one for a repeated field or map.
type seen struct {
	n    int // occurrences
	last occ
	all  []occ
}

type occ struct {
	typ  protowire.Type
	v    uint64 // varint and fixed values
	data []byte // length-delimited contents
}

// transcode appends the JSON of one message of plan p read from b.
func transcode(dst, b []byte, p *plan, depth int) ([]byte, error) {
	if depth > RecursionLimit-1 {
		return nil, errSlow
	}
	var stack [16]seen
	var found []seen
	if len(p.fields) <= len(stack) {
		found = stack[:len(p.fields)]
	} else {
		found = make([]seen, len(p.fields))
	}
	lastOneof := map[protoreflect.OneofDescriptor]int{}
	for len(b) > 0 {
		num, o, rest, err := consumeField(b)
		if err != nil {
			return nil, err
		}
		b = rest
		typ := o.typ
		i, ok := p.byNum[num]
		if !ok || !wireTypeFits(p.fields[i], typ) {
			continue // unknown, or the wrong wire type: proto.Unmarshal drops it too
		}
		f := &p.fields[i]
		if typ == protowire.BytesType && f.fd.Kind() == protoreflect.StringKind && !utf8.Valid(o.data) {
			return nil, errSlow // proto.Unmarshal checks every occurrence, not only the last
		}
		s := &found[i]
		s.n++
		if f.fd.IsList() || f.fd.IsMap() {
			s.all = append(s.all, o)
			continue
		}
		if s.n > 1 && f.msg != nil {
			return nil, errSlow // a singular message written twice merges
		}
		s.last = o
		if f.oneof {
			od := f.fd.ContainingOneof()
			if prev, ok := lastOneof[od]; ok && prev != i {
				if p.fields[prev].msg != nil && found[prev].n > 0 {
					return nil, errSlow // a dropped message is still parsed by proto.Unmarshal
				}
				found[prev] = seen{} // the last member written is the one set
			}
			lastOneof[od] = i
		}
	}
	switch p.wkt {
	case wktTimestamp, wktDuration:
		return appendTime(dst, p, found)
	case wktWrapper:
		f := &p.fields[0]
		return appendSingular(dst, f, found[0].last, found[0].n > 0, depth)
	}
	dst = append(dst, '{')
	first := true
	for i := range p.fields {
		f, s := &p.fields[i], &found[i]
		if f.oneof && s.n == 0 {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = append(dst, f.key...)
		var err error
		switch {
		case f.fd.IsMap():
			dst, err = appendMap(dst, f, s.all, depth)
		case f.fd.IsList():
			dst, err = appendList(dst, f, s.all, depth)
		default:
			dst, err = appendSingular(dst, f, s.last, s.n > 0, depth)
		}
		if err != nil {
			return nil, err
		}
	}
	return append(dst, '}'), nil
}

// consumeField reads one field's tag and value from b; groups and field
// numbers past the maximum are left to proto.Unmarshal (errSlow).
func consumeField(b []byte) (protowire.Number, occ, []byte, error) {
	num, typ, n := protowire.ConsumeTag(b)
	if n < 0 {
		return 0, occ{}, nil, protowire.ParseError(n)
	}
	if num > protowire.MaxValidNumber {
		return 0, occ{}, nil, errSlow
	}
	b = b[n:]
	o := occ{typ: typ}
	switch typ {
	case protowire.VarintType:
		o.v, n = protowire.ConsumeVarint(b)
	case protowire.Fixed32Type:
		var v uint32
		v, n = protowire.ConsumeFixed32(b)
		o.v = uint64(v)
	case protowire.Fixed64Type:
		o.v, n = protowire.ConsumeFixed64(b)
	case protowire.BytesType:
		o.data, n = protowire.ConsumeBytes(b)
	default:
		return 0, occ{}, nil, errSlow
	}
	if n < 0 {
		return 0, occ{}, nil, protowire.ParseError(n)
	}
	return num, o, b[n:], nil
}

// wireTypeFits reports whether typ is a wire type proto.Unmarshal accepts
// for f.
func wireTypeFits(f pfield, typ protowire.Type) bool {
	want := kindType(f.fd.Kind())
	return typ == want || (f.packed && typ == protowire.BytesType)
}

func kindType(k protoreflect.Kind) protowire.Type {
	switch k {
	case protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind, protoreflect.FloatKind:
		return protowire.Fixed32Type
	case protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind, protoreflect.DoubleKind:
		return protowire.Fixed64Type
	case protoreflect.StringKind, protoreflect.BytesKind, protoreflect.MessageKind:
		return protowire.BytesType
	}
	return protowire.VarintType
}

// appendSingular appends a singular field's value (its default when absent).
func appendSingular(dst []byte, f *pfield, o occ, present bool, depth int) ([]byte, error) {
	if f.msg != nil {
		if !present {
			return append(dst, "null"...), nil
		}
		return transcode(dst, o.data, f.msg, depth+1)
	}
	return appendScalar(dst, f.fd.Kind(), f.fd, o, present)
}

func appendScalar(dst []byte, k protoreflect.Kind, fd protoreflect.FieldDescriptor, o occ, present bool) ([]byte, error) {
	v := o.v
	switch k {
	case protoreflect.BoolKind:
		return strconv.AppendBool(dst, v != 0), nil
	case protoreflect.Int32Kind, protoreflect.Sfixed32Kind:
		return strconv.AppendInt(dst, int64(int32(v)), 10), nil
	case protoreflect.Sint32Kind:
		return strconv.AppendInt(dst, int64(int32(protowire.DecodeZigZag(v&math.MaxUint32))), 10), nil
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return strconv.AppendUint(dst, uint64(uint32(v)), 10), nil
	case protoreflect.Int64Kind, protoreflect.Sfixed64Kind:
		dst = append(dst, '"')
		return append(strconv.AppendInt(dst, int64(v), 10), '"'), nil
	case protoreflect.Sint64Kind:
		dst = append(dst, '"')
		return append(strconv.AppendInt(dst, protowire.DecodeZigZag(v), 10), '"'), nil
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		dst = append(dst, '"')
		return append(strconv.AppendUint(dst, v, 10), '"'), nil
	case protoreflect.FloatKind:
		return value.AppendFloat(dst, float64(math.Float32frombits(uint32(v))), 32), nil
	case protoreflect.DoubleKind:
		return value.AppendFloat(dst, math.Float64frombits(v), 64), nil
	case protoreflect.StringKind:
		if !utf8.Valid(o.data) {
			return nil, errSlow // proto.Unmarshal names the field in its error
		}
		return appendProtoString(dst, o.data), nil
	case protoreflect.BytesKind:
		dst = append(dst, '"')
		dst = base64.StdEncoding.AppendEncode(dst, o.data)
		return append(dst, '"'), nil
	case protoreflect.EnumKind:
		n := protoreflect.EnumNumber(int32(v))
		if ev := fd.Enum().Values().ByNumber(n); ev != nil {
			return appendProtoString(dst, []byte(ev.Name())), nil
		}
		return strconv.AppendInt(dst, int64(n), 10), nil
	}
	return nil, errSlow
}

// appendList appends a repeated field, unpacking packed runs.
func appendList(dst []byte, f *pfield, all []occ, depth int) ([]byte, error) {
	dst = append(dst, '[')
	first := true
	sep := func() {
		if !first {
			dst = append(dst, ',')
		}
		first = false
	}
	k := f.fd.Kind()
	for _, o := range all {
		if f.packed && o.typ == protowire.BytesType {
			for b := o.data; len(b) > 0; {
				var e occ
				var n int
				switch kindType(k) {
				case protowire.VarintType:
					e.v, n = protowire.ConsumeVarint(b)
				case protowire.Fixed32Type:
					var v uint32
					v, n = protowire.ConsumeFixed32(b)
					e.v = uint64(v)
				case protowire.Fixed64Type:
					e.v, n = protowire.ConsumeFixed64(b)
				}
				if n < 0 {
					return nil, protowire.ParseError(n)
				}
				b = b[n:]
				sep()
				var err error
				if dst, err = appendScalar(dst, k, f.fd, e, true); err != nil {
					return nil, err
				}
			}
			continue
		}
		sep()
		var err error
		if dst, err = appendSingular(dst, f, o, true, depth); err != nil {
			return nil, err
		}
	}
	return append(dst, ']'), nil
}

type entry struct {
	key  occ
	val  occ
	hasV bool
}

// appendMap appends a map field with its keys in protojson's order; of
// repeated keys the last wins.
func appendMap(dst []byte, f *pfield, all []occ, depth int) ([]byte, error) {
	kfd, vfd := f.fd.MapKey(), f.fd.MapValue()
	entries := make([]entry, 0, len(all))
	for _, o := range all {
		var e entry
		e.key.typ = kindType(kfd.Kind())
		for b := o.data; len(b) > 0; {
			num, x, rest, err := consumeField(b)
			if err != nil {
				return nil, err
			}
			b = rest
			typ := x.typ
			if typ == protowire.BytesType && (num == 1 && kfd.Kind() == protoreflect.StringKind || num == 2 && vfd.Kind() == protoreflect.StringKind) && !utf8.Valid(x.data) {
				return nil, errSlow
			}
			switch {
			case num == 1 && typ != kindType(kfd.Kind()):
				return nil, errSlow // proto.Unmarshal mishandles this one: let it decide
			case num == 1:
				e.key = x
			case num == 2 && typ == kindType(vfd.Kind()):
				if e.hasV && vfd.Kind() == protoreflect.MessageKind {
					return nil, errSlow // a message value written twice merges
				}
				e.val, e.hasV = x, true
			}
		}
		if kfd.Kind() == protoreflect.StringKind && !utf8.Valid(e.key.data) {
			return nil, errSlow
		}
		entries = append(entries, e)
	}
	keyText := func(e entry) string {
		js, _ := appendScalar(nil, kfd.Kind(), kfd, e.key, true)
		if kfd.Kind() == protoreflect.StringKind {
			return string(e.key.data)
		}
		return strings.Trim(string(js), `"`)
	}
	type kv struct {
		text string
		num  int64
		unum uint64
		e    entry
	}
	kvs := make([]kv, 0, len(entries))
	for _, e := range entries {
		x := kv{text: keyText(e), e: e}
		switch kfd.Kind() {
		case protoreflect.BoolKind:
			x.unum = min(e.key.v, 1)
		case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
			x.unum = uint64(uint32(e.key.v))
		case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
			x.unum = e.key.v
		case protoreflect.StringKind:
		default:
			x.num, _ = strconv.ParseInt(x.text, 10, 64)
		}
		kvs = append(kvs, x)
	}
	// Of repeated keys the last wins: keep the last of each, then sort.
	n := len(kvs)
	slices.Reverse(kvs)
	kvs = slices.CompactFunc(sortStable(kvs, func(a, b kv) int {
		if c := cmp.Compare(a.num, b.num); c != 0 {
			return c
		}
		if c := cmp.Compare(a.unum, b.unum); c != 0 {
			return c
		}
		return strings.Compare(a.text, b.text)
	}), func(a, b kv) bool { return a.text == b.text })
	if len(kvs) != n && vfd.Kind() == protoreflect.MessageKind {
		return nil, errSlow // a dropped message value is still parsed by proto.Unmarshal
	}
	dst = append(dst, '{')
	for i, x := range kvs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendProtoString(dst, []byte(x.text))
		dst = append(dst, ':')
		var err error
		if vfd.Kind() == protoreflect.MessageKind {
			if !x.e.hasV {
				x.e.val.data = nil
			}
			dst, err = transcode(dst, x.e.val.data, f.msg, depth+1)
		} else {
			dst, err = appendScalar(dst, vfd.Kind(), vfd, x.e.val, x.e.hasV)
		}
		if err != nil {
			return nil, err
		}
	}
	return append(dst, '}'), nil
}

func sortStable[T any](s []T, c func(a, b T) int) []T {
	slices.SortStableFunc(s, c)
	return s
}

// appendTime appends a Timestamp or Duration as protojson does, or
// errSlow for values protojson refuses.
func appendTime(dst []byte, p *plan, found []seen) ([]byte, error) {
	var secs int64
	var nanos int32
	for i, f := range p.fields {
		if found[i].n == 0 {
			continue
		}
		switch f.fd.Number() {
		case 1:
			secs = int64(found[i].last.v)
		case 2:
			nanos = int32(found[i].last.v)
		}
	}
	if p.wkt == wktTimestamp {
		if secs < -62135596800 || secs > 253402300799 || nanos < 0 || nanos >= 1e9 {
			return nil, errSlow
		}
		x := time.Unix(secs, int64(nanos)).UTC().AppendFormat(nil, "2006-01-02T15:04:05.000000000")
		x = trimFraction(x)
		dst = append(dst, '"')
		dst = append(dst, x...)
		return append(dst, 'Z', '"'), nil
	}
	if secs < -315576000000 || secs > 315576000000 || nanos <= -1e9 || nanos >= 1e9 || (secs > 0 && nanos < 0) || (secs < 0 && nanos > 0) {
		return nil, errSlow
	}
	dst = append(dst, '"')
	if secs < 0 || nanos < 0 {
		dst = append(dst, '-')
		secs, nanos = -secs, -nanos
	}
	x := strconv.AppendInt(nil, secs, 10)
	x = append(x, '.')
	frac := strconv.AppendInt(nil, int64(nanos), 10)
	for range 9 - len(frac) {
		x = append(x, '0')
	}
	x = trimFraction(append(x, frac...))
	dst = append(dst, x...)
	return append(dst, 's', '"'), nil
}

// trimFraction keeps 0, 3, 6 or 9 fraction digits, as protojson does.
func trimFraction(x []byte) []byte {
	for range 2 {
		if len(x) >= 3 && string(x[len(x)-3:]) == "000" {
			x = x[:len(x)-3]
		}
	}
	if len(x) >= 4 && string(x[len(x)-4:]) == ".000" {
		x = x[:len(x)-4]
	}
	return x
}

// appendProtoString escapes s as protojson does (\b and \f short, other
// controls as \u00XX, nothing else); s is valid UTF-8.
func appendProtoString(dst, s []byte) []byte {
	dst = append(dst, '"')
	done := 0
	for i, c := range s {
		if c >= ' ' && c != '"' && c != '\\' {
			continue
		}
		dst = append(append(dst, s[done:i]...), '\\')
		switch c {
		case '"', '\\':
			dst = append(dst, c)
		case '\b':
			dst = append(dst, 'b')
		case '\f':
			dst = append(dst, 'f')
		case '\n':
			dst = append(dst, 'n')
		case '\r':
			dst = append(dst, 'r')
		case '\t':
			dst = append(dst, 't')
		default:
			dst = append(dst, 'u')
			dst = append(dst, "0000"[1+(bits.Len32(uint32(c))-1)/4:]...)
			dst = strconv.AppendUint(dst, uint64(c), 16)
		}
		done = i + 1
	}
	dst = append(dst, s[done:]...)
	return append(dst, '"')
}
