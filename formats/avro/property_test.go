package avro_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/signalbox/signalbox/formats/avro"
)

// TestTranscodeRandomSchemas: for random schemas (every type and logical
// type, nested records, arrays, maps, unions) and random bodies written
// with them, the transcoder (Decode, and Check then JSON) gives exactly
// the library path's bytes, and the same lookups of every field; where the
// library refuses a body (a time of day outside a day, a bad enum index),
// both refuse it.
func TestTranscodeRandomSchemas(t *testing.T) {
	schemas, bodies := 300, 30
	if testing.Short() {
		schemas = 60
	}
	decoded := 0
	defer func() {
		if !t.Failed() && decoded < schemas*bodies/3 {
			t.Errorf("only %d of %d bodies decoded: the generator tests too few values", decoded, schemas*bodies)
		}
	}()
	for seed := range uint64(schemas) {
		r := rand.New(rand.NewPCG(seed, 23))
		g := &gen{r: r}
		typ, enc := g.record(0)
		c, err := avro.Compile(typ, nil)
		if err != nil {
			t.Fatalf("seed %d: schema %s: %v", seed, typ, err)
		}
		for range bodies {
			body := enc(nil)
			if r.IntN(20) == 0 && len(body) > 0 { // now and then a truncated body
				body = body[:r.IntN(len(body))]
			}
			ref, rerr := c.DecodeReference(body)
			v, err := c.Decode(body)
			if (err == nil) != (rerr == nil) {
				t.Fatalf("seed %d: schema %s\nbody %x: transcoder err %v, library err %v (library JSON %s)", seed, typ, body, err, rerr, ref)
			}
			cv, cerr := c.Check(body)
			if fmt.Sprint(cerr) != fmt.Sprint(err) {
				t.Fatalf("seed %d: schema %s\nbody %x: Check err %v, Decode err %v", seed, typ, body, cerr, err)
			}
			if err != nil {
				continue
			}
			decoded++
			if !bytes.Equal(v.JSON(), ref) || !bytes.Equal(cv.JSON(), ref) {
				t.Fatalf("seed %d: schema %s\nbody %x:\ntranscoder %s\nchecked    %s\nlibrary    %s", seed, typ, body, v.JSON(), cv.JSON(), ref)
			}
			for _, name := range g.fields {
				p := []string{name}
				got, ok := v.Lookup(p)
				want, wok := c.LookupReference(body, p)
				if ok != wok || got.Kind != want.Kind || got.String() != want.String() || !got.Time.Equal(want.Time) {
					t.Fatalf("seed %d: schema %s\nLookup(%s): transcoder %+v %v, library %+v %v", seed, typ, name, got, ok, want, wok)
				}
			}
		}
	}
}

// gen writes a random schema and, with it, an encoder of random values.
type gen struct {
	r      *rand.Rand
	names  int
	fields []string // the top-level record's field names
	inMap  int      // > 0 while writing the type of a map's values
}

type encoder func(b []byte) []byte

func (g *gen) name() string {
	g.names++
	return fmt.Sprintf("N%d", g.names)
}

func zigzag(b []byte, v int64) []byte { return binary.AppendUvarint(b, uint64(v<<1)^uint64(v>>63)) }

func (g *gen) long() int64 {
	switch g.r.IntN(6) {
	case 0:
		return 0
	case 1:
		return []int64{math.MinInt64, math.MaxInt64, -1, 1}[g.r.IntN(4)]
	case 2:
		return g.r.Int64N(1 << 20)
	}
	return int64(g.r.Uint64())
}

func (g *gen) str() []byte {
	const alphabet = "aZ09 \"\\\n\t\x00\x1f/<>&é€\u2028\U0001F600"
	var b []byte
	for range g.r.IntN(12) {
		if g.r.IntN(40) == 0 {
			b = append(b, 0xff) // not UTF-8
			continue
		}
		rs := []rune(alphabet)
		b = append(b, string(rs[g.r.IntN(len(rs))])...)
	}
	return b
}

func (g *gen) raw(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(g.r.Uint32())
	}
	return b
}

func lenPrefixed(b, p []byte) []byte { return append(zigzag(b, int64(len(p))), p...) }

// typ is a random type at nesting depth d.
func (g *gen) typ(d int) (string, encoder) {
	k := g.r.IntN(24)
	if d >= 3 {
		k %= 14 // leaves only
	}
	switch k {
	case 0:
		return `"null"`, func(b []byte) []byte { return b }
	case 1:
		return `"boolean"`, func(b []byte) []byte { return append(b, byte(g.r.IntN(2))) }
	case 2:
		return `"int"`, func(b []byte) []byte { return zigzag(b, int64(int32(g.long()))) }
	case 3:
		return `"long"`, func(b []byte) []byte { return zigzag(b, g.long()) }
	case 4:
		return `"float"`, func(b []byte) []byte { return binary.LittleEndian.AppendUint32(b, g.r.Uint32()) }
	case 5:
		return `"double"`, func(b []byte) []byte { return binary.LittleEndian.AppendUint64(b, g.r.Uint64()) }
	case 6:
		return `"string"`, func(b []byte) []byte { return lenPrefixed(b, g.str()) }
	case 7:
		return `"bytes"`, func(b []byte) []byte { return lenPrefixed(b, g.raw(g.r.IntN(10))) }
	case 8:
		n := 1 + g.r.IntN(4)
		syms := make([]string, n)
		for i := range syms {
			syms[i] = fmt.Sprintf(`"S%d"`, i)
		}
		return fmt.Sprintf(`{"type":"enum","name":%q,"symbols":[%s]}`, g.name(), strings.Join(syms, ",")),
			func(b []byte) []byte {
				if g.r.IntN(30) == 0 {
					return zigzag(b, []int64{-1, int64(n)}[g.r.IntN(2)]) // out of range
				}
				return zigzag(b, int64(g.r.IntN(n)))
			}
	case 9:
		n := g.r.IntN(6)
		return fmt.Sprintf(`{"type":"fixed","name":%q,"size":%d}`, g.name(), n), func(b []byte) []byte { return append(b, g.raw(n)...) }
	case 10:
		lt := []string{"timestamp-millis", "timestamp-micros", "timestamp-nanos", "local-timestamp-millis", "local-timestamp-micros", "local-timestamp-nanos"}[g.r.IntN(6)]
		return fmt.Sprintf(`{"type":"long","logicalType":%q}`, lt), func(b []byte) []byte {
			if g.r.IntN(2) == 0 {
				return zigzag(b, g.r.Int64N(4e12)) // plausible milliseconds
			}
			return zigzag(b, g.long())
		}
	case 11:
		lt := []string{"date", "time-millis"}[g.r.IntN(2)]
		bad := g.inMap == 0
		return fmt.Sprintf(`{"type":"int","logicalType":%q}`, lt), func(b []byte) []byte {
			if bad && g.r.IntN(30) == 0 {
				return zigzag(b, int64(int32(g.long()))) // for time-millis, often outside a day
			}
			return zigzag(b, g.r.Int64N(86_400_000))
		}
	case 12:
		if bad := g.inMap == 0; g.r.IntN(2) == 0 {
			return `{"type":"long","logicalType":"time-micros"}`, func(b []byte) []byte {
				if bad && g.r.IntN(30) == 0 {
					return zigzag(b, g.long())
				}
				return zigzag(b, g.r.Int64N(86_400_000_000))
			}
		}
		return `{"type":"string","logicalType":"uuid"}`, func(b []byte) []byte { return lenPrefixed(b, g.str()) }
	case 13:
		switch g.r.IntN(4) {
		case 0:
			p := 1 + g.r.IntN(40)
			s := g.r.IntN(p + 1)
			return fmt.Sprintf(`{"type":"bytes","logicalType":"decimal","precision":%d,"scale":%d}`, p, s),
				func(b []byte) []byte { return lenPrefixed(b, g.raw(g.r.IntN(18))) }
		case 1:
			n := 1 + g.r.IntN(17)
			return fmt.Sprintf(`{"type":"fixed","name":%q,"size":%d,"logicalType":"decimal","precision":%d,"scale":%d}`, g.name(), n, 2*n, g.r.IntN(2*n+1)),
				func(b []byte) []byte { return append(b, g.raw(n)...) }
		case 2:
			return fmt.Sprintf(`{"type":"fixed","name":%q,"size":16,"logicalType":"uuid"}`, g.name()), func(b []byte) []byte { return append(b, g.raw(16)...) }
		}
		return fmt.Sprintf(`{"type":"fixed","name":%q,"size":12,"logicalType":"duration"}`, g.name()), func(b []byte) []byte { return append(b, g.raw(12)...) }
	case 14, 15, 16:
		return g.record(d + 1)
	case 17, 18:
		it, ie := g.typ(d + 1)
		return fmt.Sprintf(`{"type":"array","items":%s}`, it), func(b []byte) []byte {
			return blocks(g, b, func(b []byte) []byte { return ie(b) })
		}
	case 19, 20:
		g.inMap++
		vt, ve := g.typ(d + 1)
		g.inMap--
		return fmt.Sprintf(`{"type":"map","values":%s}`, vt), func(b []byte) []byte {
			return blocks(g, b, func(b []byte) []byte {
				k := []byte{byte('a' + g.r.IntN(4))} // few keys: repeats and disorder
				return ve(lenPrefixed(b, k))
			})
		}
	}
	return g.union(d)
}

// blocks writes an array or map body: a few blocks of items, some with the
// negative count and byte size form, then the 0 that ends it.
func blocks(g *gen, b []byte, item encoder) []byte {
	for range g.r.IntN(3) {
		n := g.r.IntN(4)
		if n == 0 {
			continue
		}
		var items []byte
		for range n {
			items = item(items)
		}
		if g.r.IntN(2) == 0 {
			b = zigzag(b, int64(n))
		} else {
			b = zigzag(zigzag(b, -int64(n)), int64(len(items)))
		}
		b = append(b, items...)
	}
	return append(b, 0)
}

// union is a union of null and up to two types of distinct kinds (no
// union directly in a union, as Avro requires).
func (g *gen) union(d int) (string, encoder) {
	types := []string{`"null"`}
	encs := []encoder{func(b []byte) []byte { return b }}
	seen := map[string]bool{}
	for range 1 + g.r.IntN(2) {
		t, e := g.typ(d + 1)
		kind := t
		if strings.HasPrefix(t, "{") {
			kind = strings.SplitN(t, ",", 2)[0] // {"type":"record" …: one of each complex kind
			if p := strings.TrimPrefix(kind, `{"type":`); strings.Contains(`"int""long""bytes""string"`, p) {
				kind = p // a logical type is of its underlying type's kind
			}
		}
		if t == `"null"` || seen[kind] || strings.HasPrefix(t, "[") {
			continue
		}
		seen[kind] = true
		types, encs = append(types, t), append(encs, e)
	}
	return "[" + strings.Join(types, ",") + "]", func(b []byte) []byte {
		i := g.r.IntN(len(types))
		return encs[i](zigzag(b, int64(i)))
	}
}

// record is a record of up to five random fields; the top-level one (d 0)
// lists its field names for the lookups.
func (g *gen) record(d int) (string, encoder) {
	n := g.r.IntN(6)
	if d == 0 {
		n++
	}
	fields := make([]string, n)
	encs := make([]encoder, n)
	for i := range n {
		t, e := g.typ(d + 1)
		name := fmt.Sprintf("f%d", i)
		if d == 0 {
			g.fields = append(g.fields, name)
		}
		fields[i], encs[i] = fmt.Sprintf(`{"name":%q,"type":%s}`, name, t), e
	}
	return fmt.Sprintf(`{"type":"record","name":%q,"fields":[%s]}`, g.name(), strings.Join(fields, ",")), func(b []byte) []byte {
		for _, e := range encs {
			b = e(b)
		}
		return b
	}
}
