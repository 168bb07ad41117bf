package protobuf_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/signalbox/signalbox/formats/protobuf"
	"github.com/signalbox/signalbox/formats/value"
)

const commonProto = `syntax = "proto3";
package common.v1;
message Money { string currency = 1; int64 units = 2; }
`

const shopProto = `syntax = "proto3";
package shop.v1;
import "google/protobuf/timestamp.proto";
import "google/protobuf/duration.proto";
import "google/protobuf/wrappers.proto";
import "google/protobuf/struct.proto";
import "google/type/date.proto";
import "confluent/meta.proto";
import "confluent/type/decimal.proto";
import "common/v1/common.proto";

message Scalars {
  int32 i32 = 1; int64 i64 = 2; uint64 u64 = 3; double d = 4; float f = 5;
  bool b = 6; string s = 7; bytes raw = 8; sint64 z = 9; fixed64 fx = 10;
}
message Outer {
  message Inner { string name = 1; Inner child = 2; }
  enum Status { STATUS_UNSPECIFIED = 0; IN_STOCK = 1; SOLD = 2; }
  Inner inner = 1;
  repeated Inner items = 2;
  repeated int64 counts = 3;
  map<string, int32> stock = 4;
  map<int64, Inner> by_id = 5;
  oneof pick { string label = 6; int32 code = 7; }
  Status status = 8;
  common.v1.Money price = 9;
  string sku_id = 10;
}
message Wkt {
  google.protobuf.Timestamp at = 1;
  google.protobuf.Duration took = 2;
  google.protobuf.Int64Value maybe = 3;
  google.protobuf.StringValue note = 4;
  google.protobuf.Struct extra = 5;
  google.type.Date day = 6;
  confluent.type.Decimal amount = 7 [(confluent.field_meta).params = {key: "scale", value: "2"}];
  int64 at_ms = 8;
}
message Times {
  google.protobuf.Timestamp at = 1;
  google.protobuf.Duration took = 2;
  google.protobuf.Int64Value maybe = 3;
  google.protobuf.BytesValue raw = 4;
  optional int32 opt = 5;
  map<bool, string> flags = 6;
  map<sint64, Outer.Inner> nodes = 7;
  repeated Outer.Status statuses = 8;
  repeated double ds = 9;
  repeated fixed32 f32 = 10;
  optional string note = 11;
}
`

var refs = map[string]string{"common/v1/common.proto": commonProto}

// producer compiles the schema on its own and builds messages with
// dynamicpb, the way an independent producer would.
type producer struct{ file protoreflect.FileDescriptor }

func newProducer(t testing.TB) producer {
	t.Helper()
	srcs := map[string]string{"shop.proto": shopProto, "common/v1/common.proto": commonProto,
		// The producer has the confluent files the way Confluent's own build does.
		"confluent/meta.proto": `syntax = "proto3"; package confluent; import "google/protobuf/descriptor.proto";
message Meta { string doc = 1; map<string, string> params = 2; repeated string tags = 3; }
extend google.protobuf.FieldOptions { Meta field_meta = 1088; }`,
		"confluent/type/decimal.proto": `syntax = "proto3"; package confluent.type; message Decimal { bytes value = 1; uint32 precision = 2; int32 scale = 3; }`,
	}
	c := protocompile.Compiler{Resolver: protocompile.WithStandardImports(protocompile.CompositeResolver{
		&protocompile.SourceResolver{Accessor: protocompile.SourceAccessorFromMap(srcs)},
		protocompile.ResolverFunc(func(path string) (protocompile.SearchResult, error) {
			if path == "google/type/date.proto" {
				return protocompile.SearchResult{Source: strings.NewReader(`syntax = "proto3"; package google.type; message Date { int32 year = 1; int32 month = 2; int32 day = 3; }`)}, nil
			}
			return protocompile.SearchResult{}, protocompileNotFound(path)
		}),
	})}
	files, err := c.Compile(context.Background(), "shop.proto")
	if err != nil {
		t.Fatal(err)
	}
	return producer{files[0]}
}

type notFound string

func (n notFound) Error() string { return "not found: " + string(n) }

func protocompileNotFound(p string) error { return notFound(p) }

func (p producer) msg(name string) *dynamicpb.Message {
	md := p.file.Messages().ByName(protoreflect.Name(name))
	if md == nil {
		md = p.file.Messages().ByName("Outer").Messages().ByName(protoreflect.Name(name))
	}
	return dynamicpb.NewMessage(md)
}

func set(m protoreflect.Message, field string, v any) {
	fd := m.Descriptor().Fields().ByName(protoreflect.Name(field))
	switch x := v.(type) {
	case protoreflect.Message:
		m.Set(fd, protoreflect.ValueOfMessage(x))
	case protoreflect.EnumNumber:
		m.Set(fd, protoreflect.ValueOfEnum(x))
	default:
		m.Set(fd, protoreflect.ValueOf(v))
	}
}

func sub(m protoreflect.Message, field string) protoreflect.Message {
	return m.Mutable(m.Descriptor().Fields().ByName(protoreflect.Name(field))).Message()
}

func marshal(t testing.TB, m proto.Message) []byte {
	t.Helper()
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func compile(t testing.TB) *protobuf.Codec {
	t.Helper()
	c, err := protobuf.Compile(context.Background(), shopProto, refs)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// ts is an instant with nanoseconds, to show they survive.
var ts = time.Date(2024, 1, 15, 10, 30, 0, 123456789, time.UTC)

// TestConversionTable is the Protobuf half of the table in docs/sinks.md,
// "Schema'd values": common shapes against the documented JSON.
func TestConversionTable(t *testing.T) {
	p := newProducer(t)
	c := compile(t)
	cases := []struct {
		name    string
		indexes []int
		build   func() *dynamicpb.Message
		want    string
	}{
		{"scalars, 64-bit as strings", []int{0}, func() *dynamicpb.Message {
			m := p.msg("Scalars")
			set(m, "i32", int32(-1))
			set(m, "i64", int64(1)<<60)
			set(m, "u64", ^uint64(0))
			set(m, "d", 0.5)
			set(m, "f", float32(1.5))
			set(m, "b", true)
			set(m, "s", "x<")
			set(m, "raw", []byte{1, 2})
			set(m, "z", int64(-3))
			set(m, "fx", uint64(7))
			return m
		}, `{"i32":-1,"i64":"1152921504606846976","u64":"18446744073709551615","d":0.5,"f":1.5,"b":true,"s":"x<","raw":"AQI=","z":"-3","fx":"7"}`},
		{"zero values are present", []int{0}, func() *dynamicpb.Message { return p.msg("Scalars") },
			`{"i32":0,"i64":"0","u64":"0","d":0,"f":0,"b":false,"s":"","raw":"","z":"0","fx":"0"}`},
		{"nested, repeated, maps, oneof, enum, import", []int{1}, func() *dynamicpb.Message {
			m := p.msg("Outer")
			in := sub(m, "inner")
			set(in, "name", "a")
			set(sub(in, "child"), "name", "b")
			items := m.Mutable(m.Descriptor().Fields().ByName("items")).List()
			it := items.NewElement()
			set(it.Message(), "name", "i1")
			items.Append(it)
			counts := m.Mutable(m.Descriptor().Fields().ByName("counts")).List()
			counts.Append(protoreflect.ValueOfInt64(5))
			counts.Append(protoreflect.ValueOfInt64(-6))
			stock := m.Mutable(m.Descriptor().Fields().ByName("stock")).Map()
			stock.Set(protoreflect.ValueOfString("z").MapKey(), protoreflect.ValueOfInt32(1))
			stock.Set(protoreflect.ValueOfString("a").MapKey(), protoreflect.ValueOfInt32(0))
			byID := m.Mutable(m.Descriptor().Fields().ByName("by_id")).Map()
			e := byID.NewValue()
			set(e.Message(), "name", "seven")
			byID.Set(protoreflect.ValueOfInt64(7).MapKey(), e)
			set(m, "code", int32(42))
			set(m, "status", protoreflect.EnumNumber(2))
			pr := sub(m, "price")
			set(pr, "currency", "EUR")
			set(pr, "units", int64(12))
			set(m, "sku_id", "sku-1")
			return m
		}, `{"inner":{"name":"a","child":{"name":"b","child":null}},"items":[{"name":"i1","child":null}],"counts":["5","-6"],` +
			`"stock":{"a":0,"z":1},"by_id":{"7":{"name":"seven","child":null}},"code":42,"status":"SOLD","price":{"currency":"EUR","units":"12"},"sku_id":"sku-1"}`},
		{"nested message by index path", []int{1, 0}, func() *dynamicpb.Message {
			m := p.msg("Inner")
			set(m, "name", "deep")
			return m
		}, `{"name":"deep","child":null}`},
		{"well-known types", []int{2}, func() *dynamicpb.Message {
			m := p.msg("Wkt")
			at := sub(m, "at")
			set(at, "seconds", ts.Unix())
			set(at, "nanos", int32(ts.Nanosecond()))
			took := sub(m, "took")
			set(took, "seconds", int64(1))
			set(took, "nanos", int32(500000000))
			set(sub(m, "maybe"), "value", int64(9))
			fields := sub(m, "extra").Mutable(sub(m, "extra").Descriptor().Fields().ByName("fields")).Map()
			sv := fields.NewValue()
			set(sv.Message(), "string_value", "v")
			fields.Set(protoreflect.ValueOfString("k").MapKey(), sv)
			day := sub(m, "day")
			set(day, "year", int32(2024))
			set(day, "month", int32(2))
			set(day, "day", int32(29))
			amount := sub(m, "amount")
			set(amount, "value", []byte{0x30, 0x39})
			set(amount, "scale", int32(2))
			return m
		}, `{"at":"2024-01-15T10:30:00.123456789Z","took":"1.500s","maybe":"9","note":null,"extra":{"k":"v"},` +
			`"day":{"year":2024,"month":2,"day":29},"amount":{"value":"MDk=","precision":0,"scale":2},"at_ms":"0"}`},
	}
	cases = append(cases, struct {
		name    string
		indexes []int
		build   func() *dynamicpb.Message
		want    string
	}{"times, wrappers, optional, maps with other keys, packed", []int{3}, func() *dynamicpb.Message {
		m := p.msg("Times")
		at := sub(m, "at")
		set(at, "seconds", ts.Unix())
		set(at, "nanos", int32(120000000))
		took := sub(m, "took")
		set(took, "seconds", int64(-3))
		set(took, "nanos", int32(-5000))
		set(sub(m, "raw"), "value", []byte("hi"))
		set(m, "opt", int32(0))
		flags := m.Mutable(m.Descriptor().Fields().ByName("flags")).Map()
		flags.Set(protoreflect.ValueOfBool(true).MapKey(), protoreflect.ValueOfString("t\b"))
		flags.Set(protoreflect.ValueOfBool(false).MapKey(), protoreflect.ValueOfString("f"))
		nodes := m.Mutable(m.Descriptor().Fields().ByName("nodes")).Map()
		for _, k := range []int64{10, -2, 3} {
			e := nodes.NewValue()
			set(e.Message(), "name", strconv.FormatInt(k, 10))
			nodes.Set(protoreflect.ValueOfInt64(k).MapKey(), e)
		}
		st := m.Mutable(m.Descriptor().Fields().ByName("statuses")).List()
		st.Append(protoreflect.ValueOfEnum(1))
		st.Append(protoreflect.ValueOfEnum(7))
		ds := m.Mutable(m.Descriptor().Fields().ByName("ds")).List()
		ds.Append(protoreflect.ValueOfFloat64(1e21))
		ds.Append(protoreflect.ValueOfFloat64(1e-7))
		f32 := m.Mutable(m.Descriptor().Fields().ByName("f32")).List()
		f32.Append(protoreflect.ValueOfUint32(4000000000))
		return m
	}, `{"at":"2024-01-15T10:30:00.120Z","took":"-3.000005s","maybe":null,"raw":"aGk=","opt":0,"flags":{"false":"f","true":"t\b"},` +
		`"nodes":{"-2":{"name":"-2","child":null},"3":{"name":"3","child":null},"10":{"name":"10","child":null}},"statuses":["IN_STOCK",7],"ds":[1e+21,1e-7],"f32":[4000000000]}`})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := marshal(t, tc.build())
			v, err := c.Decode(tc.indexes, body)
			if err != nil {
				t.Fatal(err)
			}
			if got := string(v.JSON()); got != tc.want {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
			if ref, err := c.DecodeReference(tc.indexes, body); err != nil || string(ref) != tc.want {
				t.Fatalf("protojson path: %s %v", ref, err)
			}
			// Wkt holds a Struct, which only protojson renders.
			js, fast, err := c.Transcode(tc.indexes, body)
			if fast != (tc.indexes[0] != 2) || (fast && (err != nil || string(js) != tc.want)) {
				t.Fatalf("transcoder: fast=%v %s %v", fast, js, err)
			}
			if !json.Valid(v.JSON()) {
				t.Fatal("invalid JSON")
			}
		})
	}
}

func TestLookup(t *testing.T) {
	p := newProducer(t)
	c := compile(t)
	m := p.msg("Wkt")
	at := sub(m, "at")
	set(at, "seconds", ts.Unix())
	set(at, "nanos", int32(ts.Nanosecond()))
	set(sub(m, "maybe"), "value", int64(9))
	set(m, "at_ms", int64(1700000000000))
	v, err := c.Decode([]int{2}, marshal(t, m))
	if err != nil {
		t.Fatal(err)
	}
	o := p.msg("Outer")
	set(sub(sub(o, "inner"), "child"), "name", "leaf")
	stock := o.Mutable(o.Descriptor().Fields().ByName("stock")).Map()
	stock.Set(protoreflect.ValueOfString("a").MapKey(), protoreflect.ValueOfInt32(3))
	set(o, "status", protoreflect.EnumNumber(1))
	set(o, "sku_id", "sku-9")
	ov, err := c.Decode([]int{1}, marshal(t, o))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		v    *protobuf.Value
		path string
		want value.Field
	}{
		{v, "at", value.Field{Kind: value.KindTime, Time: ts, Text: "2024-01-15T10:30:00.123456789Z"}},
		{v, "at_ms", value.Field{Kind: value.KindNumber, Text: "1700000000000"}},
		{v, "atMs", value.Field{Kind: value.KindNumber, Text: "1700000000000"}},
		{v, "maybe", value.Field{Kind: value.KindNumber, Text: "9"}},
		{v, "note", value.Field{Kind: value.KindNull, Text: "null"}},
		{ov, "inner.child.name", value.Field{Kind: value.KindString, Text: "leaf"}},
		{ov, "stock.a", value.Field{Kind: value.KindNumber, Text: "3"}},
		{ov, "status", value.Field{Kind: value.KindString, Text: "IN_STOCK"}},
		{ov, "sku_id", value.Field{Kind: value.KindString, Text: "sku-9"}},
	} {
		path, _ := value.SplitPath(tc.path)
		got, ok := tc.v.Lookup(path)
		if !ok || got.Kind != tc.want.Kind || !got.Time.Equal(tc.want.Time) || got.Text != tc.want.Text {
			t.Errorf("%s: got %+v %v, want %+v", tc.path, got, ok, tc.want)
		}
	}
	for _, bad := range []string{"nope", "at.seconds.x", "stock.b", "inner.nope", "price.units"} {
		path, _ := value.SplitPath(bad)
		if got, ok := ov.Lookup(path); ok && bad != "price.units" {
			t.Errorf("%s: found %+v", bad, got)
		} else if bad == "price.units" && ok {
			t.Errorf("%s: found in an unset message: %+v", bad, got)
		}
	}
}

func TestBadBodiesAndIndexes(t *testing.T) {
	c := compile(t)
	for name, tc := range map[string]struct {
		indexes []int
		body    []byte
	}{
		"index past the file":           {[]int{9}, nil},
		"nested index past the message": {[]int{1, 5}, nil},
		"truncated varint":              {[]int{0}, []byte{0x08, 0xff}},
		"length past the end":           {[]int{0}, []byte{0x3a, 0x10, 'x'}},
		"invalid UTF-8 string":          {[]int{0}, []byte{0x3a, 0x01, 0xff}},
		"field number 0":                {[]int{0}, []byte{0x00, 0x01}},
		"stray end-group":               {[]int{0}, []byte{0x0c}},
	} {
		if v, err := c.Decode(tc.indexes, tc.body); err == nil {
			t.Errorf("%s: decoded %s", name, v.JSON())
		} else if !strings.HasPrefix(err.Error(), "protobuf: ") {
			t.Errorf("%s: error %q", name, err)
		}
	}
	if _, err := protobuf.Compile(context.Background(), `syntax = "proto3"; import "missing.proto"; message M { int32 a = 1; }`, nil); err == nil {
		t.Fatal("a schema with a missing import compiled")
	}
}

// TestMapKeyWrongWireTypeIsABadRecord: a map entry whose key comes again
// with another wire type makes proto.Unmarshal of a dynamic message panic;
// Decode reports a bad body instead.
func TestMapKeyWrongWireTypeIsABadRecord(t *testing.T) {
	c := compile(t)
	body := []byte{0x32, 0x05, 0x08, 0x30, 0x0a, 0x01, 0x30} // Times.flags: key 48, then key as bytes
	if v, err := c.Decode([]int{3}, body); err == nil || !strings.Contains(err.Error(), "malformed body") {
		t.Fatalf("got %v, %v", v, err)
	}
}
