package avro

import (
	"encoding/binary"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/twmb/avro"

	"github.com/signalbox/signalbox/formats/value"
)

// The transcoder reads Avro binary and appends JSON in one pass, with no
// intermediate value: the hot path. Decoding through the library into a
// generic value and rendering that (render) is its reference; the two are
// checked against each other (FuzzTranscode).

// Limits, the same as the library's, so both refuse the same bodies.
const (
	maxDepth            = 1000
	maxZeroByteItems    = 4 << 10
	maxDecimalUnscaled  = 32 << 10
	maxBigDecimalScale  = 1 << 16
	minBytesUnknown     = -1
	tooDeep             = "nesting deeper than 1000"
	zeroByteItemsExceed = "more than 4096 zero-byte items"
)

type kind uint8

const (
	kNull kind = iota
	kBool
	kInt
	kLong
	kFloat
	kDouble
	kString
	kBytes
	kFixed
	kEnum
	kArray
	kMap
	kRecord
	kUnion
	kDate
	kTimeMillis
	kTimeMicros
	kTsMillis
	kTsMicros
	kTsNanos
	kDecimalBytes
	kDecimalFixed
	kBigDecimal
	kUUIDFixed
	kDuration
)

// tnode is a schema node compiled for the transcoder.
type tnode struct {
	kind     kind
	size     int      // fixed
	scale    int      // decimal
	symbols  [][]byte // enum: each symbol as a JSON string
	names    []string // record field names, enum symbols
	keys     [][]byte // record: `"name":` per field
	fields   []*tnode // record
	items    *tnode   // array, map values
	branches []*tnode // union
	minBytes int      // the fewest bytes a value takes (for block bounds)
	node     *avro.SchemaNode
}

// primitiveKinds maps the types with no children to their kind.
var primitiveKinds = map[string]kind{
	"null": kNull, "boolean": kBool, "int": kInt, "long": kLong, "float": kFloat,
	"double": kDouble, "string": kString, "bytes": kBytes, "fixed": kFixed,
}

// logicalKinds maps a type and its logical type to the kind that renders
// it; a pair not listed renders as the underlying type.
var logicalKinds = map[[2]string]kind{
	{"int", "date"}:                    kDate,
	{"int", "time-millis"}:             kTimeMillis,
	{"long", "time-micros"}:            kTimeMicros,
	{"long", "timestamp-millis"}:       kTsMillis,
	{"long", "local-timestamp-millis"}: kTsMillis,
	{"long", "timestamp-micros"}:       kTsMicros,
	{"long", "local-timestamp-micros"}: kTsMicros,
	{"long", "timestamp-nanos"}:        kTsNanos,
	{"long", "local-timestamp-nanos"}:  kTsNanos,
	{"bytes", "decimal"}:               kDecimalBytes,
	{"bytes", "big-decimal"}:           kBigDecimal,
	{"fixed", "decimal"}:               kDecimalFixed,
	{"fixed", "uuid"}:                  kUUIDFixed, // when 16 bytes
	{"fixed", "duration"}:              kDuration,  // when 12 bytes
}

// compileT builds the transcoder's tree; named types are built once, so
// recursive schemas make cycles.
func (c *Codec) compileT(n *avro.SchemaNode, named map[string]*tnode) *tnode {
	n = c.deref(n)
	switch n.Type {
	case "record", "error", "enum", "fixed":
		if t, ok := named[fullName(n)]; ok {
			return t
		}
	}
	t := &tnode{node: n, kind: primitiveKinds[n.Type]}
	if k, ok := logicalKinds[[2]string{n.Type, n.LogicalType}]; ok {
		t.kind = k
	}
	switch n.Type {
	case "bytes":
		t.scale = n.Scale // decimal
	case "fixed":
		t.size, t.scale = n.Size, n.Scale
		if (t.kind == kUUIDFixed && n.Size != 16) || (t.kind == kDuration && n.Size != 12) {
			t.kind = kFixed
		}
		named[fullName(n)] = t
	case "enum":
		t.kind = kEnum
		named[fullName(n)] = t
		for _, s := range n.Symbols {
			t.symbols = append(t.symbols, value.AppendString(nil, s))
		}
		t.names = n.Symbols
	case "array", "map":
		t.kind = kArray
		items := n.Items
		if n.Type == "map" {
			t.kind, items = kMap, n.Values
		}
		t.items = c.compileT(items, named)
	case "record", "error":
		t.kind = kRecord
		named[fullName(n)] = t
		for i := range n.Fields {
			f := &n.Fields[i]
			t.names = append(t.names, f.Name)
			t.keys = append(t.keys, append(value.AppendString(nil, f.Name), ':'))
			t.fields = append(t.fields, c.compileT(&f.Type, named))
		}
	case "union":
		t.kind = kUnion
		for i := range n.Branches {
			t.branches = append(t.branches, c.compileT(&n.Branches[i], named))
		}
	}
	return t
}

// setMinBytes fills minBytes bottom-up; a cycle's members start unknown.
func setMinBytes(t *tnode, seen map[*tnode]bool) int {
	if seen[t] {
		return t.minBytes
	}
	seen[t] = true
	t.minBytes = minBytesUnknown
	m := 0
	switch t.kind {
	case kNull:
	case kBool:
		m = 1
	case kFloat:
		m = 4
	case kDouble:
		m = 8
	case kFixed, kDecimalFixed, kUUIDFixed, kDuration:
		m = t.size
	case kRecord:
		for _, f := range t.fields {
			fm := setMinBytes(f, seen)
			if fm == minBytesUnknown {
				m = minBytesUnknown
				break
			}
			m += fm
		}
	case kArray, kMap:
		setMinBytes(t.items, seen)
		m = 1
	case kUnion:
		m = 1
		for _, b := range t.branches {
			setMinBytes(b, seen)
		}
	default:
		m = 1 // every varint and length prefix takes a byte
	}
	t.minBytes = m
	return m
}

type tErr string

func (e tErr) Error() string { return "avro: " + string(e) }

var errShort = tErr("body ends inside a value")

func readLong(src []byte) (int64, []byte, error) {
	u, n := binary.Uvarint(src)
	if n <= 0 {
		if n == 0 {
			return 0, nil, errShort
		}
		return 0, nil, tErr("varint overflows 64 bits")
	}
	return int64(u>>1) ^ -int64(u&1), src[n:], nil
}

func readInt(src []byte) (int32, []byte, error) {
	v, rest, err := readLong(src)
	if err != nil {
		return 0, nil, err
	}
	if v < math.MinInt32 || v > math.MaxInt32 {
		return 0, nil, tErr("int out of range")
	}
	return int32(v), rest, nil
}

// readTimeOfDay reads a time-millis (k kTimeMillis) or time-micros, which
// must lie within a day, and the digits of its fraction.
func readTimeOfDay(src []byte, k kind) (time.Duration, int, []byte, error) {
	if k == kTimeMillis {
		v, rest, err := readInt(src)
		switch {
		case err != nil:
			return 0, 0, nil, err
		case v < 0 || v >= int32(24*time.Hour/time.Millisecond):
			return 0, 0, nil, tErr("time-millis outside a day")
		}
		return time.Duration(v) * time.Millisecond, 3, rest, nil
	}
	v, rest, err := readLong(src)
	switch {
	case err != nil:
		return 0, 0, nil, err
	case v < 0 || v >= int64(24*time.Hour/time.Microsecond):
		return 0, 0, nil, tErr("time-micros outside a day")
	}
	return time.Duration(v) * time.Microsecond, 6, rest, nil
}

func readBytes(src []byte) ([]byte, []byte, error) {
	n, src, err := readLong(src)
	if err != nil {
		return nil, nil, err
	}
	if n < 0 || n > int64(len(src)) {
		return nil, nil, errShort
	}
	return src[:n], src[n:], nil
}

// transcode appends the JSON of the value of t at the head of src.
func transcode(b, src []byte, t *tnode, depth int) ([]byte, []byte, error) {
	switch t.kind {
	case kNull:
		return append(b, "null"...), src, nil
	case kBool:
		if len(src) == 0 {
			return nil, nil, errShort
		}
		if src[0] == 1 { // only 1 is true, as in Java's reader and the library
			return append(b, "true"...), src[1:], nil
		}
		return append(b, "false"...), src[1:], nil
	case kInt:
		v, rest, err := readInt(src)
		return strconv.AppendInt(b, int64(v), 10), rest, err
	case kLong:
		v, rest, err := readLong(src)
		return strconv.AppendInt(b, v, 10), rest, err
	case kFloat:
		if len(src) < 4 {
			return nil, nil, errShort
		}
		return value.AppendFloat(b, float64(math.Float32frombits(binary.LittleEndian.Uint32(src))), 32), src[4:], nil
	case kDouble:
		if len(src) < 8 {
			return nil, nil, errShort
		}
		return value.AppendFloat(b, math.Float64frombits(binary.LittleEndian.Uint64(src)), 64), src[8:], nil
	case kString:
		s, rest, err := readBytes(src)
		if err != nil {
			return nil, nil, err
		}
		return value.AppendString(b, unsafeString(s)), rest, nil
	case kBytes:
		s, rest, err := readBytes(src)
		if err != nil {
			return nil, nil, err
		}
		return value.AppendBytes(b, s), rest, nil
	case kFixed:
		if len(src) < t.size {
			return nil, nil, errShort
		}
		return value.AppendBytes(b, src[:t.size]), src[t.size:], nil
	case kUUIDFixed:
		if len(src) < 16 {
			return nil, nil, errShort
		}
		return value.AppendString(b, value.FormatUUID(src[:16])), src[16:], nil
	case kDuration:
		if len(src) < 12 {
			return nil, nil, errShort
		}
		le := binary.LittleEndian
		return appendDuration(b, le.Uint32(src), le.Uint32(src[4:]), le.Uint32(src[8:])), src[12:], nil
	case kEnum:
		i, rest, err := readInt(src)
		if err != nil {
			return nil, nil, err
		}
		if i < 0 || int(i) >= len(t.symbols) {
			return nil, nil, tErr("enum index out of range")
		}
		return append(b, t.symbols[i]...), rest, nil
	case kDate:
		v, rest, err := readInt(src)
		if err != nil {
			return nil, nil, err
		}
		return value.AppendDate(b, time.Unix(int64(v)*86400, 0)), rest, nil
	case kTimeMillis, kTimeMicros:
		d, digits, rest, err := readTimeOfDay(src, t.kind)
		if err != nil {
			return nil, nil, err
		}
		return value.AppendTimeOfDay(b, d, digits), rest, nil
	case kTsMillis, kTsMicros, kTsNanos:
		v, rest, err := readLong(src)
		if err != nil {
			return nil, nil, err
		}
		tm, digits := tsTime(t.kind, v)
		return value.AppendTime(b, tm, digits), rest, nil
	case kDecimalBytes, kDecimalFixed:
		raw, rest, err := decimalRaw(src, t)
		if err != nil {
			return nil, nil, err
		}
		b = append(b, '"')
		b = appendDecimal(b, raw, t.scale)
		return append(b, '"'), rest, nil
	case kBigDecimal:
		payload, rest, err := readBytes(src)
		if err != nil {
			return nil, nil, err
		}
		r, err := bigDecimal(payload)
		if err != nil {
			return nil, nil, err
		}
		return value.AppendString(b, decimalText(r, t.node)), rest, nil
	case kRecord:
		if depth >= maxDepth {
			return nil, nil, tErr(tooDeep)
		}
		b = append(b, '{')
		for i, f := range t.fields {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, t.keys[i]...)
			var err error
			if b, src, err = transcode(b, src, f, depth+1); err != nil {
				return nil, nil, err
			}
		}
		return append(b, '}'), src, nil
	case kUnion:
		if depth >= maxDepth {
			return nil, nil, tErr(tooDeep)
		}
		i, rest, err := readLong(src)
		if err != nil {
			return nil, nil, err
		}
		if i < 0 || i >= int64(len(t.branches)) {
			return nil, nil, tErr("union index out of range")
		}
		return transcode(b, rest, t.branches[i], depth+1)
	case kArray:
		return transcodeArray(b, src, t, depth)
	case kMap:
		return transcodeMap(b, src, t, depth)
	}
	return nil, nil, tErr("unknown schema kind")
}

// appendDuration appends a duration as an object of its three counts.
func appendDuration(b []byte, months, days, millis uint32) []byte {
	b = append(b, `{"months":`...)
	b = strconv.AppendUint(b, uint64(months), 10)
	b = append(b, `,"days":`...)
	b = strconv.AppendUint(b, uint64(days), 10)
	b = append(b, `,"milliseconds":`...)
	b = strconv.AppendUint(b, uint64(millis), 10)
	return append(b, '}')
}

func tsTime(k kind, v int64) (time.Time, int) {
	switch k {
	case kTsMicros:
		return time.UnixMicro(v), 6
	case kTsNanos:
		return time.Unix(0, v), 9
	}
	return time.UnixMilli(v), 3
}

// blockCount reads an array or map block header and checks its count
// against the bytes left (doc.go invariant 1).
func blockCount(src []byte, minItem int, total *int64) (int64, []byte, error) {
	n, src, err := readLong(src)
	if err != nil {
		return 0, nil, err
	}
	if n < 0 {
		if n == math.MinInt64 {
			return 0, nil, tErr("block count out of range")
		}
		n = -n
		// The block's byte size only helps a reader that skips it; like
		// the library and Java's reader, read it and go on.
		if _, src, err = readLong(src); err != nil {
			return 0, nil, err
		}
	}
	switch {
	case minItem > 0:
		if n > int64(len(src))/int64(minItem) {
			return 0, nil, errShort
		}
	case minItem == 0:
		if n > maxZeroByteItems-*total {
			return 0, nil, tErr(zeroByteItemsExceed)
		}
	default:
		if n > max(int64(len(src)), maxZeroByteItems-*total) {
			return 0, nil, errShort
		}
	}
	*total += n
	return n, src, nil
}

func transcodeArray(b, src []byte, t *tnode, depth int) ([]byte, []byte, error) {
	if depth >= maxDepth {
		return nil, nil, tErr(tooDeep)
	}
	b = append(b, '[')
	var total int64
	first := true
	for {
		n, rest, err := blockCount(src, t.items.minBytes, &total)
		if err != nil {
			return nil, nil, err
		}
		src = rest
		if n == 0 {
			return append(b, ']'), src, nil
		}
		for ; n > 0; n-- {
			if !first {
				b = append(b, ',')
			}
			first = false
			if b, src, err = transcode(b, src, t.items, depth+1); err != nil {
				return nil, nil, err
			}
		}
	}
}

// minEntry is the fewest bytes a map entry takes: its key's length, then
// its value.
func (t *tnode) minEntry() int {
	return 1 + max(t.items.minBytes, 0)
}

type span struct {
	key        string
	start, end int
}

// transcodeMap writes the entries with their keys sorted; of repeated
// keys the last wins, as in the decoded map.
func transcodeMap(b, src []byte, t *tnode, depth int) ([]byte, []byte, error) {
	if depth >= maxDepth {
		return nil, nil, tErr(tooDeep)
	}
	start := len(b)
	var spans []span
	var total int64
	for {
		n, rest, err := blockCount(src, t.minEntry(), &total)
		if err != nil {
			return nil, nil, err
		}
		src = rest
		if n == 0 {
			break
		}
		for ; n > 0; n-- {
			k, rest, err := readBytes(src)
			if err != nil {
				return nil, nil, err
			}
			s := span{key: string(k), start: len(b)}
			b = value.AppendString(b, s.key)
			b = append(b, ':')
			if b, src, err = transcode(b, rest, t.items, depth+1); err != nil {
				return nil, nil, err
			}
			s.end = len(b)
			spans = append(spans, s)
		}
	}
	if len(spans) == 0 {
		return append(b, "{}"...), src, nil
	}
	sorted := slices.IsSortedFunc(spans, func(x, y span) int { return strings.Compare(x.key, y.key) })
	if sorted {
		for i := 1; i < len(spans); i++ {
			if spans[i].key == spans[i-1].key {
				sorted = false
			}
		}
	}
	if sorted { // the common case: rewrite in place with the separators
		entries := slices.Clone(b[start:])
		b = append(b[:start], '{')
		for i, s := range spans {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, entries[s.start-start:s.end-start]...)
		}
		return append(b, '}'), src, nil
	}
	entries := slices.Clone(b[start:])
	slices.SortStableFunc(spans, func(x, y span) int { return strings.Compare(x.key, y.key) })
	b = append(b[:start], '{')
	wrote := false
	for i, s := range spans {
		if i+1 < len(spans) && spans[i+1].key == s.key {
			continue // a later entry has the same key
		}
		if wrote {
			b = append(b, ',')
		}
		wrote = true
		b = append(b, entries[s.start-start:s.end-start]...)
	}
	return append(b, '}'), src, nil
}

// decimalRaw reads the unscaled bytes of a decimal.
func decimalRaw(src []byte, t *tnode) (raw, rest []byte, err error) {
	if t.kind == kDecimalFixed {
		if len(src) < t.size {
			return nil, nil, errShort
		}
		raw, rest = src[:t.size], src[t.size:]
	} else if raw, rest, err = readBytes(src); err != nil {
		return nil, nil, err
	}
	if len(raw) > maxDecimalUnscaled {
		return nil, nil, tErr("decimal longer than 32 KiB")
	}
	return raw, rest, nil
}

// appendDecimal appends the two's-complement big-endian unscaled value raw
// with scale digits after the point.
func appendDecimal(b, raw []byte, scale int) []byte {
	var digits []byte
	neg := len(raw) > 0 && raw[0]&0x80 != 0
	if len(raw) <= 8 {
		var u uint64
		for _, c := range raw {
			u = u<<8 | uint64(c)
		}
		if neg {
			u |= ^uint64(0) << (8 * uint(len(raw))) // sign-extend
			v := int64(u)
			digits = strconv.AppendUint(nil, uint64(-v), 10) // -MinInt64 wraps to itself as uint64: exact
		} else {
			digits = strconv.AppendUint(nil, u, 10)
		}
	} else {
		i := new(big.Int).SetBytes(raw)
		if neg {
			i.Sub(i, new(big.Int).Lsh(big.NewInt(1), uint(8*len(raw))))
			i.Neg(i)
		}
		digits = i.Append(nil, 10)
	}
	if neg {
		b = append(b, '-')
	}
	if scale <= 0 {
		b = append(b, digits...)
		for range -scale {
			b = append(b, '0')
		}
		return b
	}
	if len(digits) <= scale {
		b = append(b, '0', '.')
		for range scale - len(digits) {
			b = append(b, '0')
		}
		return append(b, digits...)
	}
	b = append(b, digits[:len(digits)-scale]...)
	b = append(b, '.')
	return append(b, digits[len(digits)-scale:]...)
}

// bigDecimal parses a big-decimal payload: the unscaled bytes, then the scale.
func bigDecimal(p []byte) (*big.Rat, error) {
	u, scale, err := bigDecimalParts(p)
	if err != nil {
		return nil, err
	}
	i := new(big.Int).SetBytes(u)
	if len(u) > 0 && u[0]&0x80 != 0 {
		i.Sub(i, new(big.Int).Lsh(big.NewInt(1), uint(8*len(u))))
	}
	r := new(big.Rat).SetInt(i)
	pow := new(big.Int).Exp(big.NewInt(10), big.NewInt(abs(scale)), nil)
	if scale > 0 {
		return r.Quo(r, new(big.Rat).SetInt(pow)), nil
	}
	return r.Mul(r, new(big.Rat).SetInt(pow)), nil
}

// bigDecimalParts checks a big-decimal payload and splits it into the
// unscaled bytes and the scale, allocating nothing.
func bigDecimalParts(p []byte) ([]byte, int64, error) {
	u, p, err := readBytes(p)
	if err != nil {
		return nil, 0, err
	}
	if len(u) > maxDecimalUnscaled {
		return nil, 0, tErr("big-decimal longer than 32 KiB")
	}
	scale, p, err := readLong(p)
	if err != nil {
		return nil, 0, err
	}
	if len(p) != 0 {
		return nil, 0, tErr("big-decimal has bytes after its scale")
	}
	if scale > maxBigDecimalScale || scale < -maxBigDecimalScale {
		return nil, 0, tErr("big-decimal scale out of range")
	}
	return u, scale, nil
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// unsafeString views s as a string for appending; it never escapes.
func unsafeString(s []byte) string {
	if len(s) == 0 {
		return ""
	}
	return unsafe.String(&s[0], len(s))
}
