package protobuf_test

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/signalbox/signalbox/formats/value"
)

// FuzzTranscode: whenever the transcoder takes a body, the dynamicpb and
// protojson path takes it too and writes the same bytes; Decode never
// panics and fails exactly when that path fails.
func FuzzTranscode(f *testing.F) {
	p := newProducer(f)
	m := p.msg("Times")
	set(sub(m, "at"), "seconds", int64(1700000000))
	set(sub(m, "took"), "nanos", int32(5))
	set(m, "opt", int32(3))
	flags := m.Mutable(m.Descriptor().Fields().ByName("flags")).Map()
	flags.Set(protoreflect.ValueOfBool(true).MapKey(), protoreflect.ValueOfString("x"))
	nodes := m.Mutable(m.Descriptor().Fields().ByName("nodes")).Map()
	e := nodes.NewValue()
	set(e.Message(), "name", "n")
	nodes.Set(protoreflect.ValueOfInt64(-4).MapKey(), e)
	m.Mutable(m.Descriptor().Fields().ByName("ds")).List().Append(protoreflect.ValueOfFloat64(0.5))
	f.Add(marshal(f, m), uint8(3))
	o := p.msg("Outer")
	set(sub(sub(o, "inner"), "child"), "name", "c")
	set(o, "label", "l")
	set(o, "status", protoreflect.EnumNumber(2))
	o.Mutable(o.Descriptor().Fields().ByName("counts")).List().Append(protoreflect.ValueOfInt64(-1))
	f.Add(marshal(f, o), uint8(1))
	s := p.msg("Scalars")
	set(s, "s", "é\x01")
	set(s, "f", float32(-0.25))
	f.Add(marshal(f, s), uint8(0))
	c := compile(f)
	paths := [][]int{{0}, {1}, {1, 0}, {3}}
	lookups := [][]string{
		{"i32", "i64", "u64", "d", "f", "b", "s", "raw", "z", "fx", "nope"},
		{"inner.child.name", "inner.name", "inner.child.child", "status", "sku_id", "skuId", "price.units", "label", "code", "counts", "stock.a"},
		{"name", "child", "child.name"},
		{"at", "took", "maybe", "raw", "opt", "note", "flags", "nodes", "ds"},
	}
	f.Fuzz(func(t *testing.T, body []byte, which uint8) {
		idx := paths[int(which)%len(paths)]
		ref, rerr := c.DecodeReference(idx, body)
		js, fast, err := c.Transcode(idx, body)
		if !fast {
			t.Fatalf("message %v is not on the transcoder's path", idx)
		}
		if err == nil && (rerr != nil || !bytes.Equal(js, ref)) {
			t.Fatalf("transcoder %s\nprotojson  %s (%v)", js, ref, rerr)
		}
		v, derr := c.Decode(idx, body)
		if (derr == nil) != (rerr == nil) || (derr == nil && !bytes.Equal(v.JSON(), ref)) {
			t.Fatalf("Decode %v, protojson path %v", derr, rerr)
		}
		if derr != nil {
			return
		}
		for _, path := range lookups[int(which)%len(paths)] {
			p, _ := value.SplitPath(path)
			got, ok := v.Lookup(p)
			want, wok := c.LookupDynamic(idx, body, p)
			if ok != wok || got.Kind != want.Kind || got.Text != want.Text || !got.Time.Equal(want.Time) {
				t.Fatalf("Lookup(%s): %+v %v, dynamic %+v %v", path, got, ok, want, wok)
			}
		}
	})
}
