package avro

import (
	"fmt"
	"strings"
	"sync"

	"github.com/twmb/avro"
)

// Codec decodes bodies written with one schema.
type Codec struct {
	schema *avro.Schema // for the tests' reference path (reference_test.go)
	root   *avro.SchemaNode
	named  map[string]*avro.SchemaNode // full name → definition
	// refs maps each name reference left in the tree (a recursive one, or
	// one carrying attributes of its own) to the definition it names, as
	// resolved in its scope (resolve).
	refs map[*avro.SchemaNode]*avro.SchemaNode
	op   op // the program (program.go)
}

// Compile parses text, after the schemas it references (dependencies
// first, as registry.Schema.References lists them). Every name reference
// must resolve (doc.go invariant 6), or Compile fails naming it.
func Compile(text string, references []string) (*Codec, error) {
	var cache avro.SchemaCache
	for i, r := range references {
		if _, err := cache.Parse(r); err != nil {
			return nil, fmt.Errorf("avro: reference %d: %w", i+1, err)
		}
	}
	s, err := cache.Parse(text)
	if err != nil {
		return nil, fmt.Errorf("avro: %w", err)
	}
	c := &Codec{schema: s, root: s.Root().ExpandReferences(), named: map[string]*avro.SchemaNode{}, refs: map[*avro.SchemaNode]*avro.SchemaNode{}}
	c.index(c.root) // the tree holds every definition, a referenced schema's too
	if err := c.resolve(c.root, ""); err != nil {
		return nil, err
	}
	t := c.compileT(c.root, map[string]*tnode{})
	setMinBytes(t, map[*tnode]bool{})
	c.op = compileOp(t, map[*tnode]*prog{})
	return c, nil
}

// fullName is a named type's full name: a dotted name is one already (a
// leading dot names the null namespace), else the resolved namespace, which
// the library fills in for every named type, qualifies it.
func fullName(n *avro.SchemaNode) string {
	if strings.Contains(n.Name, ".") {
		return strings.TrimPrefix(n.Name, ".")
	}
	if n.Namespace == "" {
		return n.Name
	}
	return n.Namespace + "." + n.Name
}

// namespaceOf is the namespace a full name sets for what it contains.
func namespaceOf(full string) string {
	if i := strings.LastIndexByte(full, '.'); i >= 0 {
		return full[:i]
	}
	return ""
}

func (c *Codec) index(n *avro.SchemaNode) {
	switch n.Type {
	case "record", "error", "enum", "fixed":
		if _, ok := c.named[fullName(n)]; ok {
			return
		}
		c.named[fullName(n)] = n
		for i := range n.Fields {
			c.index(&n.Fields[i].Type)
		}
	case "array":
		c.index(n.Items)
	case "map":
		c.index(n.Values)
	case "union":
		for i := range n.Branches {
			c.index(&n.Branches[i])
		}
	}
}

// structural reports whether a node's type is a definition rather than a
// name reference.
func structural(typ string) bool {
	switch typ {
	case "null", "boolean", "int", "long", "float", "double", "bytes", "string",
		"record", "error", "enum", "fixed", "array", "map", "union":
		return true
	}
	return false
}

// resolve binds every name reference under n, in namespace scope ns, to
// its definition (c.refs), as the specification resolves names: a dotted
// name is a full name (a leading dot: the null namespace); a short one
// means the type of that name in the enclosing namespace, else in the null
// namespace (as Java and the parsing library look it up). A named type's
// full name sets the namespace of what it contains. A name that resolves
// to nothing fails the schema, never a record.
func (c *Codec) resolve(n *avro.SchemaNode, ns string) error {
	switch n.Type {
	case "record", "error":
		inner := namespaceOf(fullName(n))
		for i := range n.Fields {
			if err := c.resolve(&n.Fields[i].Type, inner); err != nil {
				return err
			}
		}
	case "array":
		return c.resolve(n.Items, ns)
	case "map":
		return c.resolve(n.Values, ns)
	case "union":
		for i := range n.Branches {
			if err := c.resolve(&n.Branches[i], ns); err != nil {
				return err
			}
		}
	default:
		if structural(n.Type) {
			return nil
		}
		d := c.lookup(n.Type, ns)
		if d == nil {
			if ns != "" && !strings.Contains(n.Type, ".") {
				return fmt.Errorf("avro: type %q is not defined (looked up as %q and %q)", n.Type, ns+"."+n.Type, n.Type)
			}
			return fmt.Errorf("avro: type %q is not defined", strings.TrimPrefix(n.Type, "."))
		}
		c.refs[n] = d
	}
	return nil
}

// lookup finds the definition name means in namespace scope ns (resolve).
func (c *Codec) lookup(name, ns string) *avro.SchemaNode {
	if strings.Contains(name, ".") {
		return c.named[strings.TrimPrefix(name, ".")]
	}
	if ns != "" {
		if d, ok := c.named[ns+"."+name]; ok {
			return d
		}
	}
	return c.named[name]
}

// deref returns the definition a name reference points at (resolve bound
// every one at Compile), or n itself when it is a definition.
func (c *Codec) deref(n *avro.SchemaNode) *avro.SchemaNode {
	if d, ok := c.refs[n]; ok {
		return d
	}
	return n
}

// Value is one decoded body. The zero Value is none; a Value is used by
// pointer (its JSON may render on first use).
type Value struct {
	c    *Codec
	body []byte
	json []byte
}

// JSON is the value rendered as JSON. A Value from Check renders on the
// first call; it is not safe for concurrent use until then.
func (v *Value) JSON() []byte {
	if v.json == nil {
		out, err := v.c.render1(v.body)
		if err != nil { // unreachable: Check accepted the body, with the program that renders it
			return []byte("null")
		}
		v.json = out
	}
	return v.json
}

// Check checks body as Decode does, with the same program and errors,
// without rendering it: the Value's Lookup reads the fields asked for, and
// its JSON renders on demand.
func (c *Codec) Check(body []byte) (Value, error) {
	end, err := c.op.check(body, 0, 0)
	if err != nil {
		return Value{}, err
	}
	if end != len(body) {
		return Value{}, fmt.Errorf("avro: %d bytes left after the value", len(body)-end)
	}
	return Value{c: c, body: body}, nil
}

// Decode checks body and renders it, in one pass of the program.
func (c *Codec) Decode(body []byte) (Value, error) {
	out, err := c.render1(body)
	if err != nil {
		return Value{}, err
	}
	return Value{c: c, body: body, json: out}, nil
}

// AppendJSON appends the JSON of body to dst, in one pass; on error dst
// is returned as it was.
func (c *Codec) AppendJSON(dst, body []byte) ([]byte, error) {
	out, end, err := c.op.render(dst, body, 0, 0)
	if err != nil {
		return dst, err
	}
	if end != len(body) {
		return dst, fmt.Errorf("avro: %d bytes left after the value", len(body)-end)
	}
	return out, nil
}

// slabs hold the JSON of many values back to back: a value renders at the
// end of a slab and keeps that piece, exactly sized and capped (appending to
// it never writes into the slab), so that rendering allocates once per
// slab, not once per value. Pieces rendered one after the other belong to
// records read one after the other, which the engine releases at about the
// same time; a slab stays reachable while any of its pieces does.
var slabs = sync.Pool{New: func() any { return new([]byte) }}

// The slab size, and the largest body rendered into one (a larger one gets
// a slice of its own).
const (
	slabSize    = 16 << 10
	slabMaxBody = 1 << 10
)

// render1 is body's JSON in a slice of its own (capped at its length).
func (c *Codec) render1(body []byte) ([]byte, error) {
	if len(body) > slabMaxBody {
		out, err := c.AppendJSON(make([]byte, 0, 2*len(body)+16), body)
		if err != nil {
			return nil, err
		}
		return out[:len(out):len(out)], nil
	}
	sp := slabs.Get().(*[]byte)
	defer slabs.Put(sp)
	slab := *sp
	if cap(slab)-len(slab) < 4*len(body)+64 { // a value rarely renders larger: start a new slab
		slab = make([]byte, 0, slabSize)
	}
	start := len(slab)
	out, err := c.AppendJSON(slab, body)
	switch {
	case err != nil:
		*sp = slab
		return nil, err
	case cap(out) != cap(slab): // it did not fit: out is a new array; the slab stays as it was
		*sp = slab
		return append(make([]byte, 0, len(out)-start), out[start:]...), nil
	}
	*sp = out
	return out[start:len(out):len(out)], nil
}
