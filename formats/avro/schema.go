package avro

import (
	"github.com/twmb/avro"

	"github.com/signalbox/signalbox/formats/value"
)

// The schema as Compile resolves it (tnode): names bound, each type's kind
// chosen, the fewest bytes a value takes. It only describes; the program
// compiled from it (program.go) reads, checks and renders.

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

// kind is how a value renders: its type, or its logical type.
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

// tnode is a schema node resolved for compiling the program.
type tnode struct {
	kind     kind
	size     int      // fixed
	scale    int      // decimal
	symbols  [][]byte // enum: each symbol as a JSON string
	names    []string // record field names, enum symbols
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

// compileT builds the resolved tree; named types are built once, so
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

// minEntry is the fewest bytes a map entry takes: its key's length, then
// its value.
func (t *tnode) minEntry() int {
	return 1 + max(t.items.minBytes, 0)
}
