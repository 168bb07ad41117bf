package protobuf

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/bufbuild/protocompile"
	"github.com/bufbuild/protocompile/linker"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/signalbox/signalbox/formats/value"
)

// RecursionLimit bounds message nesting in a body.
const RecursionLimit = 100

// mainFile is the name the schema text is compiled under; references keep
// their own names, which are their import paths.
const mainFile = "signalbox/registry/schema.proto"

// Codec decodes bodies written with one schema.
type Codec struct {
	plans    map[protoreflect.FullName]*plan // every message of the file, for the transcoder
	file     protoreflect.FileDescriptor
	resolver linker.Resolver
	marshal  protojson.MarshalOptions
}

// Compile compiles text; references maps each import path to its text.
func Compile(ctx context.Context, text string, references map[string]string) (*Codec, error) {
	srcs := maps.Clone(confluentSources)
	maps.Copy(srcs, references)
	srcs[mainFile] = text
	c := protocompile.Compiler{
		Resolver: protocompile.WithStandardImports(protocompile.CompositeResolver{
			&protocompile.SourceResolver{Accessor: protocompile.SourceAccessorFromMap(srcs)},
			googleTypes,
		}),
	}
	files, err := c.Compile(ctx, mainFile)
	if err != nil {
		return nil, fmt.Errorf("protobuf: %w", err)
	}
	r := files.AsResolver()
	codec := &Codec{
		plans:    map[protoreflect.FullName]*plan{},
		file:     files[0],
		resolver: r,
		marshal:  protojson.MarshalOptions{UseProtoNames: true, EmitUnpopulated: true, Resolver: r},
	}
	var walk func(protoreflect.MessageDescriptors)
	walk = func(ms protoreflect.MessageDescriptors) {
		for i := range ms.Len() {
			codec.planFor(ms.Get(i), codec.plans)
			walk(ms.Get(i).Messages())
		}
	}
	walk(codec.file.Messages())
	markSlow(codec.plans)
	return codec, nil
}

// Message returns the message the index path names ([0] is the file's
// first message, [1, 0] the first nested message of the second).
func (c *Codec) Message(indexes []int) (protoreflect.MessageDescriptor, error) {
	if len(indexes) == 0 {
		indexes = []int{0}
	}
	msgs := c.file.Messages()
	var md protoreflect.MessageDescriptor
	for depth, i := range indexes {
		if i < 0 || i >= msgs.Len() {
			return nil, fmt.Errorf("protobuf: message index %v names no message (level %d has %d)", indexes, depth, msgs.Len())
		}
		md = msgs.Get(i)
		msgs = md.Messages()
	}
	return md, nil
}

// Value is one decoded body.
type Value struct {
	c    *Codec
	md   protoreflect.MessageDescriptor
	body []byte
	msg  protoreflect.Message // nil until a lookup needs it (transcoded values)
	json []byte
}

// JSON is the value rendered as JSON.
func (v *Value) JSON() []byte { return v.json }

// Decode decodes body as the message the index path names, and renders
// it: through the transcoder when the message's shapes allow, else (or
// when the transcoder declines the body) through dynamicpb and protojson.
func (c *Codec) Decode(indexes []int, body []byte) (*Value, error) {
	md, err := c.Message(indexes)
	if err != nil {
		return nil, err
	}
	if p := c.plans[md.FullName()]; p != nil && p.fast {
		if js, err := transcode(make([]byte, 0, 2*len(body)+16), body, p, 0); err == nil {
			return &Value{c: c, md: md, body: body, json: js}, nil
		}
	}
	return c.decodeReference(md, body)
}

// decodeReference is the dynamicpb/protojson path: the reference.
func (c *Codec) decodeReference(md protoreflect.MessageDescriptor, body []byte) (*Value, error) {
	msg, err := c.unmarshal(md, body)
	if err != nil {
		return nil, err
	}
	js, err := c.render(msg)
	if err != nil {
		return nil, fmt.Errorf("protobuf: %s: %w", md.FullName(), err)
	}
	var out bytes.Buffer
	out.Grow(len(js))
	if err := json.Compact(&out, js); err != nil {
		return nil, fmt.Errorf("protobuf: %s: %w", md.FullName(), err)
	}
	return &Value{c: c, md: md, body: body, msg: msg, json: out.Bytes()}, nil
}

// render runs protojson, turning a panic into an error.
func (c *Codec) render(msg protoreflect.Message) (_ []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("protojson: %v", r)
		}
	}()
	return c.marshal.Marshal(msg.Interface())
}

func (c *Codec) unmarshal(md protoreflect.MessageDescriptor, body []byte) (_ protoreflect.Message, err error) {
	// proto.Unmarshal of a dynamic message panics on some hostile bodies
	// (a map entry whose key comes again with another wire type): a bad
	// record, never a crash.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("protobuf: %s: malformed body: %v", md.FullName(), r)
		}
	}()
	msg := dynamicpb.NewMessage(md)
	opts := proto.UnmarshalOptions{DiscardUnknown: true, RecursionLimit: RecursionLimit, Resolver: c.resolver}
	if err := opts.Unmarshal(body, msg); err != nil {
		return nil, fmt.Errorf("protobuf: %s: %w", md.FullName(), err)
	}
	return msg, nil
}

// Lookup returns the field at path (message fields by .proto or JSON
// name, and string-keyed map entries), and false when there is none.
func (v *Value) Lookup(path []string) (value.Field, bool) {
	if v.msg == nil {
		if f, found, handled := v.c.lookupBinary(v.md, v.body, path); handled {
			return f, found
		}
		msg, err := v.c.unmarshal(v.md, v.body)
		if err != nil {
			return value.Field{}, false
		}
		v.msg = msg
	}
	m := v.msg
	for i := 0; i < len(path); i++ {
		fields := m.Descriptor().Fields()
		f := fields.ByName(protoreflect.Name(path[i]))
		if f == nil {
			f = fields.ByJSONName(path[i])
		}
		if f == nil {
			return value.Field{}, false
		}
		val := m.Get(f)
		if f.IsMap() && i+1 < len(path) {
			if f.MapKey().Kind() != protoreflect.StringKind {
				return value.Field{}, false
			}
			i++
			mk := protoreflect.ValueOfString(path[i]).MapKey()
			if !val.Map().Has(mk) {
				return value.Field{}, false
			}
			val, f = val.Map().Get(mk), f.MapValue()
		} else if i == len(path)-1 && f.Message() != nil && !f.IsList() && !f.IsMap() && !m.Has(f) {
			return value.Field{Kind: value.KindNull, Text: "null"}, true
		}
		if i == len(path)-1 {
			return v.leaf(val, f), true
		}
		if f.Message() == nil || f.IsList() || f.IsMap() || !m.Has(f) {
			return value.Field{}, false
		}
		m = val.Message()
	}
	return value.Field{}, false
}

func (x *Value) leaf(v protoreflect.Value, fd protoreflect.FieldDescriptor) value.Field {
	if fd.IsList() || fd.IsMap() {
		return value.Field{Kind: value.KindOther}
	}
	switch fd.Kind() {
	case protoreflect.StringKind:
		return value.Field{Kind: value.KindString, Text: v.String()}
	case protoreflect.BoolKind:
		return value.Field{Kind: value.KindBool, Text: strconv.FormatBool(v.Bool())}
	case protoreflect.EnumKind:
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			return value.Field{Kind: value.KindString, Text: string(ev.Name())}
		}
		return value.Field{Kind: value.KindNumber, Text: strconv.Itoa(int(v.Enum()))}
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return value.Field{Kind: value.KindNumber, Text: strconv.FormatInt(v.Int(), 10)}
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return value.Field{Kind: value.KindNumber, Text: strconv.FormatUint(v.Uint(), 10)}
	case protoreflect.FloatKind:
		return value.Field{Kind: value.KindNumber, Text: string(value.AppendFloat(nil, v.Float(), 32))}
	case protoreflect.DoubleKind:
		return value.Field{Kind: value.KindNumber, Text: string(value.AppendFloat(nil, v.Float(), 64))}
	case protoreflect.MessageKind, protoreflect.GroupKind:
		m := v.Message()
		switch name := m.Descriptor().FullName(); {
		case name == "google.protobuf.Timestamp":
			f := m.Descriptor().Fields()
			t := time.Unix(m.Get(f.ByName("seconds")).Int(), m.Get(f.ByName("nanos")).Int()).UTC()
			return value.Field{Kind: value.KindTime, Time: t, Text: t.Format(time.RFC3339Nano)}
		case strings.HasPrefix(string(name), "google.protobuf.") && strings.HasSuffix(string(name), "Value") && m.Descriptor().Fields().Len() == 1:
			f := m.Descriptor().Fields().Get(0)
			return x.leaf(m.Get(f), f)
		}
		if js, err := x.c.marshal.Marshal(m.Interface()); err == nil {
			var out bytes.Buffer
			if json.Compact(&out, js) == nil {
				return value.Field{Kind: value.KindOther, Text: out.String()}
			}
		}
	case protoreflect.BytesKind:
		return value.Field{Kind: value.KindOther, Text: string(value.AppendBytes(nil, v.Bytes()))}
	}
	return value.Field{Kind: value.KindOther}
}
