package avro

// The reference path the program's render and check walks are tested
// against (TestTranscodeRandomSchemas, FuzzTranscode, FuzzNames): the
// library decodes a body into a generic value, which render turns into JSON
// by the same rules. Test files only: production decodes with the program
// (program.go).

import (
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/avro"

	"github.com/signalbox/signalbox/formats/value"
)

// decodeReference decodes body through the library into a generic value
// and renders that: the reference the transcoder is checked against.
func (c *Codec) decodeReference(body []byte) (any, []byte, error) {
	var tree any
	rest, err := c.schema.Decode(body, &tree, avro.TaggedUnions(), avro.TagLogicalTypes())
	if err != nil {
		return nil, nil, fmt.Errorf("avro: %w", err)
	}
	if len(rest) != 0 {
		return nil, nil, fmt.Errorf("avro: %d bytes left after the value", len(rest))
	}
	out, err := c.render(make([]byte, 0, 2*len(body)+16), c.root, tree)
	if err != nil {
		return nil, nil, err
	}
	return tree, out, nil
}

var errShape = errors.New("avro: decoded value does not match its schema")

func shape(n *avro.SchemaNode, v any) error {
	return fmt.Errorf("%w: %s holds %T", errShape, n.Type, v)
}

// branch finds the union branch a tagged value belongs to.
func (c *Codec) branch(n *avro.SchemaNode, v any) (*avro.SchemaNode, any, error) {
	if v == nil {
		for i := range n.Branches {
			if n.Branches[i].Type == "null" {
				return &n.Branches[i], nil, nil
			}
		}
		return nil, nil, shape(n, v)
	}
	m, ok := v.(map[string]any)
	if !ok || len(m) != 1 {
		return nil, nil, shape(n, v)
	}
	for tag, inner := range m {
		for i := range n.Branches {
			b := c.deref(&n.Branches[i])
			if branchTag(b) == tag || branchTag(b)+"."+b.LogicalType == tag {
				return b, inner, nil
			}
		}
		return nil, nil, fmt.Errorf("%w: union has no branch %q", errShape, tag)
	}
	panic("unreachable")
}

func branchTag(n *avro.SchemaNode) string {
	switch n.Type {
	case "record", "error", "enum", "fixed":
		return fullName(n)
	}
	return n.Type
}

// render appends v, decoded with schema n, as JSON (doc.go invariant 2).
func (c *Codec) render(b []byte, n *avro.SchemaNode, v any) ([]byte, error) {
	n = c.deref(n)
	if n.Type == "union" {
		bn, inner, err := c.branch(n, v)
		if err != nil {
			return nil, err
		}
		return c.render(b, bn, inner)
	}
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case bool:
		return strconv.AppendBool(b, x), nil
	case int32:
		return strconv.AppendInt(b, int64(x), 10), nil
	case int64:
		return strconv.AppendInt(b, x, 10), nil
	case float32:
		return value.AppendFloat(b, float64(x), 32), nil
	case float64:
		return value.AppendFloat(b, x, 64), nil
	case string:
		return value.AppendString(b, x), nil
	case []byte:
		return value.AppendBytes(b, x), nil
	case [16]byte: // fixed(16) uuid
		return value.AppendString(b, value.FormatUUID(x[:])), nil
	case *big.Rat:
		return value.AppendString(b, decimalText(x, n)), nil
	case time.Time:
		switch n.LogicalType {
		case "date":
			return value.AppendDate(b, x), nil
		case "time-millis", "time-micros":
			d := x.Sub(x.Truncate(24 * time.Hour))
			return c.render(b, n, d)
		}
		return value.AppendTime(b, x, timeDigits(n.LogicalType)), nil
	case time.Duration:
		if x < 0 || x >= 24*time.Hour {
			return nil, fmt.Errorf("%w: %s outside a day", errShape, n.LogicalType)
		}
		if n.LogicalType == "time-micros" {
			return value.AppendTimeOfDay(b, x, 6), nil
		}
		return value.AppendTimeOfDay(b, x, 3), nil
	case avro.Duration:
		return appendDuration(b, x.Months, x.Days, x.Milliseconds), nil
	case []any:
		if n.Type != "array" {
			return nil, shape(n, v)
		}
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = c.render(b, n.Items, e); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	case map[string]any:
		switch n.Type {
		case "record", "error":
			b = append(b, '{')
			for i := range n.Fields {
				f := &n.Fields[i]
				if i > 0 {
					b = append(b, ',')
				}
				b = value.AppendString(b, f.Name)
				b = append(b, ':')
				var err error
				if b, err = c.render(b, &f.Type, x[f.Name]); err != nil {
					return nil, err
				}
			}
			return append(b, '}'), nil
		case "map":
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			b = append(b, '{')
			for i, k := range keys {
				if i > 0 {
					b = append(b, ',')
				}
				b = value.AppendString(b, k)
				b = append(b, ':')
				var err error
				if b, err = c.render(b, n.Values, x[k]); err != nil {
					return nil, err
				}
			}
			return append(b, '}'), nil
		}
	}
	return nil, shape(n, v)
}

func timeDigits(logical string) int {
	switch logical {
	case "timestamp-micros", "local-timestamp-micros":
		return 6
	case "timestamp-nanos", "local-timestamp-nanos":
		return 9
	}
	return 3
}

// lookupReference is Lookup on the library's generic value.
func (c *Codec) lookupReference(tree any, path []string) (value.Field, bool) {
	n, x := c.root, tree
	for _, name := range path {
		var ok bool
		if n, x, ok = c.step(n, x); !ok {
			return value.Field{}, false
		}
		m, isMap := x.(map[string]any)
		if !isMap {
			return value.Field{}, false
		}
		switch n.Type {
		case "record", "error":
			var f *avro.SchemaField
			for i := range n.Fields {
				if n.Fields[i].Name == name {
					f = &n.Fields[i]
				}
			}
			if f == nil {
				return value.Field{}, false
			}
			n, x = &f.Type, m[name]
		case "map":
			if x, ok = m[name]; !ok {
				return value.Field{}, false
			}
			n = n.Values
		default:
			return value.Field{}, false
		}
	}
	n, x, ok := c.step(n, x)
	if !ok {
		return value.Field{}, false
	}
	switch t := x.(type) {
	case nil:
		return value.Field{Kind: value.KindNull, Text: "null"}, true
	case time.Time:
		switch n.LogicalType {
		case "date":
			return value.Field{Kind: value.KindTime, Time: t.UTC(), Digits: value.DigitsDate}, true
		case "time-millis", "time-micros":
		default:
			return value.Field{Kind: value.KindTime, Time: t.UTC(), Digits: timeDigits(n.LogicalType)}, true
		}
	case string:
		return value.Field{Kind: value.KindString, Text: t}, true
	case [16]byte:
		return value.Field{Kind: value.KindString, Text: value.FormatUUID(t[:])}, true
	case bool:
		return value.Field{Kind: value.KindBool, Text: strconv.FormatBool(t)}, true
	}
	js, err := c.render(nil, n, x)
	if err != nil {
		return value.Field{}, false
	}
	switch x.(type) {
	case int32, int64, float32, float64:
		if js[0] != '"' {
			return value.Field{Kind: value.KindNumber, Text: string(js)}, true
		}
	}
	return value.Field{Kind: value.KindOther, Text: string(js)}, true
}

// step resolves references and unions down to a concrete node and value.
func (c *Codec) step(n *avro.SchemaNode, x any) (*avro.SchemaNode, any, bool) {
	n = c.deref(n)
	for n.Type == "union" {
		var err error
		if n, x, err = c.branch(n, x); err != nil {
			return nil, nil, false
		}
		n = c.deref(n)
	}
	return n, x, true
}
