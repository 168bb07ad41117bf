package avro_test

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	hamba "github.com/hamba/avro/v2"

	"github.com/signalbox/signalbox/formats/avro"
)

// The schemas of the name-resolution tests (testdata/names): a record that
// refers to itself by its short name inside a namespace (audit.Ev), Apache
// Avro's interop schema (its recursive Node named "Node" inside
// org.apache.avro), and a schema of dotted and cross-namespace names,
// short names that two namespaces both define (Tier), a dotted nested name
// (x.y.Z) that sets the namespace of its contents, and every Avro type and
// logical type that hamba/avro writes.
var nameSchemas = []string{"audit_ev.avsc", "interop.avsc", "cross.avsc"}

// TestNamesAgainstIndependentEncoder: for each schema of nameSchemas, 400
// random valid values written by hamba/avro (an encoder independent of the
// decoder under test), their arrays and maps then re-blocked at random into
// blocks of positive counts and of negative counts with byte sizes (a form
// hamba does not write, but reads back, which checks the re-blocking): every
// body compiles, checks and decodes, and renders exactly the JSON the
// value's own rendering by docs/sinks.md gives, as does hamba's decoding
// of the same body.
func TestNamesAgainstIndependentEncoder(t *testing.T) {
	const values = 400
	for _, file := range nameSchemas {
		t.Run(file, func(t *testing.T) {
			text, err := os.ReadFile("testdata/names/" + file)
			if err != nil {
				t.Fatal(err)
			}
			hs, err := hamba.Parse(string(text))
			if err != nil {
				t.Fatal(err)
			}
			c, err := avro.Compile(string(text), nil)
			if err != nil {
				t.Fatalf("compile: %v", err)
			}
			negBlocks := 0
			for seed := range uint64(values) {
				g := &valueGen{r: rand.New(rand.NewPCG(seed, 34))}
				v := g.value(hs, 0)
				want := renderWant(t, hs, v)
				body, err := hamba.Marshal(hs, v)
				if err != nil {
					t.Fatalf("seed %d: hamba marshal: %v", seed, err)
				}
				rb := &reblocker{r: g.r}
				out, rest := rb.copy(hs, body, nil)
				if len(rest) != 0 {
					t.Fatalf("seed %d: the re-blocker left %d bytes", seed, len(rest))
				}
				negBlocks += rb.negative
				var back any
				if err := hamba.Unmarshal(hs, out, &back); err != nil {
					t.Fatalf("seed %d: hamba cannot read the re-blocked body: %v", seed, err)
				}
				if got := renderWant(t, hs, back); got != want {
					t.Fatalf("seed %d: hamba reads back\n%s\nwant\n%s", seed, got, want)
				}
				for name, b := range map[string][]byte{"hamba's body": body, "re-blocked body": out} {
					d, err := c.Decode(b)
					if err != nil {
						t.Fatalf("seed %d, %s %x: Decode: %v\nvalue %s", seed, name, b, err, want)
					}
					if err := sameJSON(d.JSON(), []byte(want)); err != nil {
						t.Fatalf("seed %d, %s: %v\ngot  %s\nwant %s", seed, name, err, d.JSON(), want)
					}
					ch, err := c.Check(b)
					if err != nil || !bytes.Equal(ch.JSON(), d.JSON()) {
						t.Fatalf("seed %d, %s: Check %v, JSON %s, Decode's %s", seed, name, err, ch.JSON(), d.JSON())
					}
				}
			}
			if negBlocks < values/4 {
				t.Fatalf("only %d blocks of the negative-count form in %d values", negBlocks, values)
			}
		})
	}
}

// TestUnresolvedNamesFailCompile: a reference that names no type in scope
// fails Compile, naming it, whether short (looked up in the enclosing
// namespace) or dotted (a full name: "audit.Ev" is not "Ev" of the null
// namespace).
func TestUnresolvedNamesFailCompile(t *testing.T) {
	for _, s := range []string{
		`{"type":"record","name":"Ev","namespace":"audit","fields":[{"name":"next","type":["null","Evt"]}]}`,
		`{"type":"record","name":"Ev","fields":[{"name":"next","type":["null","audit.Ev"]}]}`,
		`{"type":"record","name":"a.Ev","fields":[{"name":"k","type":{"type":"enum","name":"K","symbols":["X"]}},{"name":"k2","type":"b.K"}]}`,
	} {
		if _, err := avro.Compile(s, nil); err == nil || !strings.Contains(err.Error(), "avro: ") {
			t.Errorf("%s compiled (%v)", s, err)
		}
	}
}

// valueGen makes random values of a hamba schema, in the Go types hamba
// marshals; deep recursion ends at null branches and empty arrays and maps.
type valueGen struct{ r *rand.Rand }

func (g *valueGen) value(s hamba.Schema, depth int) any {
	if ref, ok := s.(*hamba.RefSchema); ok {
		s = ref.Schema()
	}
	switch s := s.(type) {
	case *hamba.NullSchema:
		return nil
	case *hamba.RecordSchema:
		m := map[string]any{}
		for _, f := range s.Fields() {
			m[f.Name()] = g.value(f.Type(), depth+1)
		}
		return m
	case *hamba.EnumSchema:
		return s.Symbols()[g.r.IntN(len(s.Symbols()))]
	case *hamba.ArraySchema:
		items := []any{}
		for range g.count(depth) {
			items = append(items, g.value(s.Items(), depth+1))
		}
		return items
	case *hamba.MapSchema:
		m := map[string]any{}
		for range g.count(depth) {
			m[string(g.str(4))] = g.value(s.Values(), depth+1)
		}
		return m
	case *hamba.UnionSchema:
		types := s.Types()
		i := g.r.IntN(len(types))
		if n := slices.IndexFunc(types, func(b hamba.Schema) bool { return b.Type() == hamba.Null }); n >= 0 && (depth > 6 || g.r.IntN(3) == 0) {
			i = n
		}
		if types[i].Type() == hamba.Null {
			return nil
		}
		return map[string]any{branchName(types[i]): g.value(types[i], depth+1)}
	case *hamba.FixedSchema:
		if l := s.Logical(); l != nil {
			switch l.Type() {
			case hamba.Decimal:
				d := l.(*hamba.DecimalLogicalSchema)
				return g.decimal(d.Precision(), d.Scale())
			case hamba.Duration:
				return hamba.LogicalDuration{Months: g.r.Uint32(), Days: g.r.Uint32(), Milliseconds: g.r.Uint32()}
			}
		}
		a := reflect.New(reflect.ArrayOf(s.Size(), reflect.TypeFor[byte]())).Elem()
		for i := range s.Size() {
			a.Index(i).SetUint(uint64(g.r.Uint32() & 0xff))
		}
		return a.Interface()
	case *hamba.PrimitiveSchema:
		return g.primitive(s)
	}
	panic(fmt.Sprintf("no values of %T", s))
}

// count is how many items an array or map gets: fewer deeper down.
func (g *valueGen) count(depth int) int {
	if depth > 6 {
		return 0
	}
	return g.r.IntN(5 - depth/2)
}

var baseTime = time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC)

func (g *valueGen) instant(unit time.Duration) time.Time {
	span := time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC).Sub(baseTime) / time.Second
	return baseTime.Add(time.Duration(g.r.Int64N(int64(span))) * time.Second).Add(time.Duration(g.r.Int64N(int64(time.Second/unit))) * unit)
}

func (g *valueGen) primitive(s *hamba.PrimitiveSchema) any {
	if l := s.Logical(); l != nil {
		switch l.Type() {
		case hamba.Date:
			return g.instant(time.Second).Truncate(24 * time.Hour)
		case hamba.TimeMillis:
			return time.Duration(g.r.Int64N(86_400_000)) * time.Millisecond
		case hamba.TimeMicros:
			return time.Duration(g.r.Int64N(86_400_000_000)) * time.Microsecond
		case hamba.TimestampMillis, hamba.LocalTimestampMillis:
			return g.instant(time.Millisecond)
		case hamba.TimestampMicros, hamba.LocalTimestampMicros:
			return g.instant(time.Microsecond)
		case hamba.Decimal:
			d := l.(*hamba.DecimalLogicalSchema)
			return g.decimal(d.Precision(), d.Scale())
		case hamba.UUID:
			b := make([]byte, 16)
			for i := range b {
				b[i] = byte(g.r.Uint32())
			}
			return fmt.Sprintf("%x-%x-%x-%x-%x", b[:4], b[4:6], b[6:8], b[8:10], b[10:])
		}
	}
	switch s.Type() {
	case hamba.Boolean:
		return g.r.IntN(2) == 0
	case hamba.Int:
		return int32(g.long())
	case hamba.Long:
		return g.long()
	case hamba.Float:
		for {
			f := []float32{0, -0.5, 1.5, math.MaxFloat32, math.SmallestNonzeroFloat32, math.Float32frombits(g.r.Uint32())}[g.r.IntN(6)]
			if !math.IsNaN(float64(f)) && !math.IsInf(float64(f), 0) {
				return f
			}
		}
	case hamba.Double:
		for {
			f := []float64{0, 0.1, -1e300, math.MaxFloat64, math.SmallestNonzeroFloat64, math.Float64frombits(g.r.Uint64())}[g.r.IntN(6)]
			if !math.IsNaN(f) && !math.IsInf(f, 0) {
				return f
			}
		}
	case hamba.String:
		return string(g.str(12))
	case hamba.Bytes:
		b := make([]byte, g.r.IntN(20))
		for i := range b {
			b[i] = byte(g.r.Uint32())
		}
		return b
	}
	panic(fmt.Sprintf("no values of %s", s.Type()))
}

func (g *valueGen) long() int64 {
	switch g.r.IntN(4) {
	case 0:
		return []int64{0, -1, 1, math.MinInt64, math.MaxInt64, math.MinInt32, math.MaxInt32}[g.r.IntN(7)]
	case 1:
		return g.r.Int64N(1<<20) - 1<<19
	}
	return int64(g.r.Uint64())
}

func (g *valueGen) str(n int) []rune {
	const alphabet = "aZ09 \"\\\n\t\x00\x1f/<>&é€\u2028\U0001F600"
	rs, out := []rune(alphabet), []rune{}
	for range g.r.IntN(n) {
		out = append(out, rs[g.r.IntN(len(rs))])
	}
	return out
}

// decimal is a random decimal of at most precision digits, scale of them
// after the point.
func (g *valueGen) decimal(precision, scale int) *big.Rat {
	digits := g.r.IntN(precision + 1)
	u := new(big.Int)
	for range digits {
		u.Mul(u, big.NewInt(10)).Add(u, big.NewInt(g.r.Int64N(10)))
	}
	if g.r.IntN(2) == 0 {
		u.Neg(u)
	}
	return new(big.Rat).SetFrac(u, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil))
}

// branchName is the union branch name hamba's generic values use.
func branchName(s hamba.Schema) string {
	if ref, ok := s.(*hamba.RefSchema); ok {
		s = ref.Schema()
	}
	if n, ok := s.(hamba.NamedSchema); ok {
		return n.FullName()
	}
	if p, ok := s.(*hamba.PrimitiveSchema); ok && p.Logical() != nil {
		return string(p.Type()) + "." + string(p.Logical().Type())
	}
	return string(s.Type())
}

// renderWant renders v, a value of s in hamba's generic Go types, as
// docs/sinks.md ("Schema'd values") says, written here apart from the
// decoder under test.
func renderWant(t *testing.T, s hamba.Schema, v any) string {
	t.Helper()
	var b strings.Builder
	if err := render(&b, s, v); err != nil {
		t.Fatalf("rendering %v: %v", v, err)
	}
	return b.String()
}

func render(b *strings.Builder, s hamba.Schema, v any) error {
	if ref, ok := s.(*hamba.RefSchema); ok {
		s = ref.Schema()
	}
	str := func(x string) {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(x)
		b.WriteString(strings.TrimSuffix(buf.String(), "\n"))
	}
	switch s := s.(type) {
	case *hamba.UnionSchema:
		if v == nil {
			b.WriteString("null")
			return nil
		}
		if m, ok := v.(map[string]any); ok && len(m) == 1 {
			for name, inner := range m {
				for _, br := range s.Types() {
					if branchName(br) == name {
						return render(b, br, inner)
					}
				}
			}
		}
		if ts := s.Types(); len(ts) == 2 && ts[0].Type() == hamba.Null {
			return render(b, ts[1], v) // hamba reads some nullable unions as the plain value
		}
		return fmt.Errorf("union value %T %v", v, v)
	case *hamba.RecordSchema:
		m := v.(map[string]any)
		b.WriteByte('{')
		for i, f := range s.Fields() {
			if i > 0 {
				b.WriteByte(',')
			}
			str(f.Name())
			b.WriteByte(':')
			if err := render(b, f.Type(), m[f.Name()]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
		return nil
	case *hamba.ArraySchema:
		b.WriteByte('[')
		for i, x := range v.([]any) {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := render(b, s.Items(), x); err != nil {
				return err
			}
		}
		b.WriteByte(']')
		return nil
	case *hamba.MapSchema:
		m := v.(map[string]any)
		keys := slices.Sorted(func(yield func(string) bool) {
			for k := range m {
				if !yield(k) {
					return
				}
			}
		})
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			str(k)
			b.WriteByte(':')
			if err := render(b, s.Values(), m[k]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
		return nil
	}
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case int: // hamba reads an int so
		b.WriteString(strconv.Itoa(x))
	case int32:
		b.WriteString(strconv.FormatInt(int64(x), 10))
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case float32:
		b.WriteString(strconv.FormatFloat(float64(x), 'g', -1, 32))
	case float64:
		b.WriteString(strconv.FormatFloat(x, 'g', -1, 64))
	case string:
		str(x)
	case []byte:
		str(base64.StdEncoding.EncodeToString(x))
	case *big.Rat:
		scale := 0
		switch l := s.(hamba.LogicalTypeSchema).Logical().(type) {
		case *hamba.DecimalLogicalSchema:
			scale = l.Scale()
		}
		str(x.FloatString(scale))
	case time.Time:
		layout := map[hamba.LogicalType]string{
			hamba.Date: "2006-01-02", hamba.TimestampMillis: "2006-01-02T15:04:05.000Z", hamba.LocalTimestampMillis: "2006-01-02T15:04:05.000Z",
			hamba.TimestampMicros: "2006-01-02T15:04:05.000000Z", hamba.LocalTimestampMicros: "2006-01-02T15:04:05.000000Z",
		}[s.(hamba.LogicalTypeSchema).Logical().Type()]
		str(x.UTC().Format(layout))
	case time.Duration:
		day := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC).Add(x)
		if s.(hamba.LogicalTypeSchema).Logical().Type() == hamba.TimeMicros {
			str(day.Format("15:04:05.000000"))
		} else {
			str(day.Format("15:04:05.000"))
		}
	case hamba.LogicalDuration:
		fmt.Fprintf(b, `{"months":%d,"days":%d,"milliseconds":%d}`, x.Months, x.Days, x.Milliseconds)
	default:
		if rv := reflect.ValueOf(v); rv.Kind() == reflect.Array { // fixed
			raw := make([]byte, rv.Len())
			reflect.Copy(reflect.ValueOf(raw), rv)
			str(base64.StdEncoding.EncodeToString(raw))
			return nil
		}
		return fmt.Errorf("%T %v of %s", v, v, s.Type())
	}
	return nil
}

// sameJSON compares two JSON texts token by token: the same structure, keys
// in the same order, the same strings, and numbers of the same value.
func sameJSON(got, want []byte) error {
	dg, dw := json.NewDecoder(bytes.NewReader(got)), json.NewDecoder(bytes.NewReader(want))
	dg.UseNumber()
	dw.UseNumber()
	for i := 0; ; i++ {
		tg, eg := dg.Token()
		tw, ew := dw.Token()
		if errors.Is(eg, io.EOF) && errors.Is(ew, io.EOF) {
			return nil
		}
		if eg != nil || ew != nil {
			return fmt.Errorf("token %d: %v / %v", i, eg, ew)
		}
		ng, okg := tg.(json.Number)
		nw, okw := tw.(json.Number)
		if okg && okw {
			fg, _, errg := big.ParseFloat(string(ng), 10, 1100, big.ToNearestEven)
			fw, _, errw := big.ParseFloat(string(nw), 10, 1100, big.ToNearestEven)
			if errg != nil || errw != nil || fg.Cmp(fw) != 0 {
				return fmt.Errorf("token %d: number %s, want %s", i, ng, nw)
			}
			continue
		}
		if tg != tw {
			return fmt.Errorf("token %d: %v, want %v", i, tg, tw)
		}
	}
}

// reblocker copies an Avro body of a hamba schema, writing every array and
// map again as a random run of blocks, each of a positive count or of a
// negative count and the block's byte size (the specification's two forms).
type reblocker struct {
	r        *rand.Rand
	negative int // blocks written in the negative-count form
}

func readVarint(in []byte) (int64, []byte) {
	u, n := binary.Uvarint(in)
	if n <= 0 {
		panic("bad varint")
	}
	return int64(u>>1) ^ -int64(u&1), in[n:]
}

func appendVarint(b []byte, v int64) []byte {
	return binary.AppendUvarint(b, uint64(v<<1)^uint64(v>>63))
}

// copy appends the value of s at the start of in to out, and returns out
// and the rest of in.
func (rb *reblocker) copy(s hamba.Schema, in, out []byte) ([]byte, []byte) {
	if ref, ok := s.(*hamba.RefSchema); ok {
		s = ref.Schema()
	}
	take := func(n int) ([]byte, []byte) { return append(out, in[:n]...), in[n:] }
	switch s := s.(type) {
	case *hamba.RecordSchema:
		for _, f := range s.Fields() {
			out, in = rb.copy(f.Type(), in, out)
		}
		return out, in
	case *hamba.UnionSchema:
		i, rest := readVarint(in)
		return rb.copy(s.Types()[i], rest, appendVarint(out, i))
	case *hamba.ArraySchema, *hamba.MapSchema:
		var items [][]byte
		for {
			n, rest := readVarint(in)
			in = rest
			if n == 0 {
				break
			}
			if n < 0 {
				n = -n
				_, in = readVarint(in) // the byte size
			}
			for range n {
				var item []byte
				if m, ok := s.(*hamba.MapSchema); ok {
					k, rest := readVarint(in)
					item, in = append(appendVarint(nil, k), rest[:k]...), rest[k:]
					item, in = rb.copy(m.Values(), in, item)
				} else {
					item, in = rb.copy(s.(*hamba.ArraySchema).Items(), in, nil)
				}
				items = append(items, item)
			}
		}
		for len(items) > 0 {
			n := 1 + rb.r.IntN(len(items))
			block := bytes.Join(items[:n], nil)
			items = items[n:]
			if rb.r.IntN(2) == 0 {
				out = appendVarint(out, int64(n))
			} else {
				out = appendVarint(appendVarint(out, -int64(n)), int64(len(block)))
				rb.negative++
			}
			out = append(out, block...)
		}
		return append(out, 0), in
	case *hamba.FixedSchema:
		return take(s.Size())
	case *hamba.EnumSchema:
		_, rest := readVarint(in)
		return take(len(in) - len(rest))
	case *hamba.NullSchema:
		return out, in
	}
	switch s.Type() {
	case hamba.Boolean:
		return take(1)
	case hamba.Int, hamba.Long:
		_, rest := readVarint(in)
		return take(len(in) - len(rest))
	case hamba.Float:
		return take(4)
	case hamba.Double:
		return take(8)
	case hamba.String, hamba.Bytes:
		n, rest := readVarint(in)
		return take(len(in) - len(rest) + int(n))
	}
	panic(fmt.Sprintf("cannot copy %s", s.Type()))
}

// TestRecursiveTypeOfAReference: a recursive type defined in a referenced
// schema (another registry subject), named by its short name from a record
// of the same namespace, resolves to that definition, which the library
// does not expand into the referencing schema's tree.
func TestRecursiveTypeOfAReference(t *testing.T) {
	const node = `{"type":"record","name":"Node","namespace":"tree","fields":[{"name":"v","type":"int"},{"name":"kids","type":{"type":"array","items":"Node"}}]}`
	c, err := avro.Compile(`{"type":"record","name":"Forest","namespace":"tree","fields":[{"name":"roots","type":{"type":"array","items":"Node"}},{"name":"top","type":["null","Node"]}]}`, []string{node})
	if err != nil {
		t.Fatal(err)
	}
	inlined := hamba.MustParse(`{"type":"record","name":"Forest","namespace":"tree","fields":[{"name":"roots","type":{"type":"array","items":` + node + `}},{"name":"top","type":["null","Node"]}]}`)
	for seed := range uint64(300) {
		g := &valueGen{r: rand.New(rand.NewPCG(seed, 35))}
		v := g.value(inlined, 0)
		body, err := hamba.Marshal(inlined, v)
		if err != nil {
			t.Fatal(err)
		}
		d, err := c.Decode(body)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if err := sameJSON(d.JSON(), []byte(renderWant(t, inlined, v))); err != nil {
			t.Fatalf("seed %d: %v: %s", seed, err, d.JSON())
		}
	}
}

// FuzzNames: on any body of a schema of testdata/names, the program's
// render and check walks and the library path agree (FuzzTranscode's property), so
// names resolve alike on every path; seeded with hamba's bodies, each of
// which must decode.
func FuzzNames(f *testing.F) {
	var codecs []*avro.Codec
	for i, file := range nameSchemas {
		text, err := os.ReadFile("testdata/names/" + file)
		if err != nil {
			f.Fatal(err)
		}
		c, err := avro.Compile(string(text), nil)
		if err != nil {
			f.Fatal(err)
		}
		codecs = append(codecs, c)
		hs := hamba.MustParse(string(text))
		for seed := range uint64(4) {
			g := &valueGen{r: rand.New(rand.NewPCG(seed, 36))}
			body, err := hamba.Marshal(hs, g.value(hs, 0))
			if err != nil {
				f.Fatal(err)
			}
			if _, err := c.Decode(body); err != nil { // a valid body, as the independent encoder wrote it
				f.Fatalf("%s: seed %d: %v", file, seed, err)
			}
			f.Add(uint8(i), body)
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		c := codecs[int(which)%len(codecs)]
		ref, rerr := c.DecodeReference(body)
		v, err := c.Decode(body)
		if (err == nil) != (rerr == nil) {
			t.Fatalf("transcoder %v, library %v %s", err, rerr, ref)
		}
		if err == nil && !bytes.Equal(v.JSON(), ref) {
			t.Fatalf("transcoder %s\nlibrary    %s", v.JSON(), ref)
		}
		cv, cerr := c.Check(body)
		if fmt.Sprint(cerr) != fmt.Sprint(err) || err == nil && !bytes.Equal(cv.JSON(), v.JSON()) {
			t.Fatalf("Check %v, Decode %v", cerr, err)
		}
	})
}
