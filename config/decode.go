package config

import (
	"fmt"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"
)

// MaxNodes bounds the YAML nodes a job file may expand to, each alias and
// merge key counted once per use with everything it stands for. A real job
// has a few hundred; an alias or merge-key bomb ("billion laughs") of a few
// hundred bytes expands to billions, so the expansion is measured (on the
// node graph, in time and memory linear in the file) before anything is
// decoded, and refused beyond the bound.
const MaxNodes = 100_000

// MaxDepth bounds how deep a job file's nodes nest once aliases and merge
// keys are expanded. A real job nests six levels deep.
const MaxDepth = 64

// measure is the size (in nodes) and depth of a node once expanded; both
// saturate at maxMeasure, so that a bomb's sums never overflow.
type measure struct{ size, depth int }

const maxMeasure = 1 << 40

// expansion measures the expanded document on its node graph, memoized per
// node, so that measuring a bomb costs no more than reading it.
type expansion struct {
	memo map[*yaml.Node]measure
	busy map[*yaml.Node]bool // on the current path: an alias to one is a cycle
	err  *FieldError
}

// measure returns n's expanded size and depth; e.err is set on an alias
// that refers to a node containing it.
func (e *expansion) measure(n *yaml.Node) measure {
	if m, ok := e.memo[n]; ok {
		return m
	}
	if n.Kind == yaml.AliasNode {
		if n.Alias == nil || e.busy[n.Alias] {
			if e.err == nil {
				e.err = &FieldError{Line: n.Line, Msg: fmt.Sprintf("alias *%s refers to a node that contains it", n.Value)}
			}
			return measure{maxMeasure, maxMeasure}
		}
		return e.measure(n.Alias)
	}
	e.busy[n] = true
	m := measure{size: 1}
	for _, c := range n.Content {
		cm := e.measure(c)
		m.size = min(m.size+cm.size, maxMeasure)
		m.depth = max(m.depth, cm.depth)
	}
	m.depth = min(m.depth+1, maxMeasure)
	delete(e.busy, n)
	e.memo[n] = m
	return m
}

// checkExpansion refuses a document that expands beyond MaxNodes or
// MaxDepth, or holds an alias cycle, naming the line of the alias (or node)
// to blame: the outermost alias on the heaviest (or deepest) path.
func checkExpansion(root *yaml.Node) *FieldError {
	e := &expansion{memo: map[*yaml.Node]measure{}, busy: map[*yaml.Node]bool{}}
	m := e.measure(root)
	if e.err != nil {
		return e.err
	}
	over := func(m measure) bool { return m.size > MaxNodes }
	what := fmt.Sprintf("beyond %d YAML nodes (the most a job file may hold)", MaxNodes)
	if m.size <= MaxNodes {
		if m.depth <= MaxDepth {
			return nil
		}
		over = func(m measure) bool { return m.depth > MaxDepth }
		what = fmt.Sprintf("beyond %d levels deep (the most a job file may nest)", MaxDepth)
	}
	n := root
	for n.Kind != yaml.AliasNode {
		var next *yaml.Node
		for _, c := range n.Content {
			if over(e.measure(c)) && (next == nil || e.measure(c).size > e.measure(next).size) {
				next = c
			}
		}
		if next == nil { // no alias to blame: the file itself is that large
			return &FieldError{Line: n.Line, Msg: "what starts here takes the job file " + what + " once every alias and merge key is expanded"}
		}
		n = next
	}
	return &FieldError{Line: n.Line, Msg: fmt.Sprintf("alias *%s expands the job file %s once every alias and merge key is expanded: an alias or merge-key bomb?", n.Value, what)}
}

// nodeDecoder decodes a yaml.Node tree into the Job structs by their yaml
// tags. It records the line of every path it meets and reports, as
// FieldErrors, unknown keys, duplicate keys and values of the wrong kind;
// it decodes everything else, so that Validate can report the rest. It
// runs on a document checkExpansion accepted, so it visits at most
// MaxNodes nodes (nodes counts them).
type nodeDecoder struct {
	lines map[string]int
	errs  Errors
	nodes int
}

func (d *nodeDecoder) bad(n *yaml.Node, path, format string, args ...any) {
	d.errs = append(d.errs, &FieldError{Path: path, Line: n.Line, Msg: fmt.Sprintf(format, args...)})
}

// decode decodes n into v, the field at path.
func (d *nodeDecoder) decode(n *yaml.Node, v reflect.Value, path string) {
	d.nodes++
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return // the zero value: the default
	}
	if a, ok := v.Addr().Interface().(*Aggregates); ok {
		d.decodeAggregates(n, a, path) // in the file's order
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		d.decode(n, p.Elem(), path)
		v.Set(p)
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			d.bad(n, path, "want a mapping of keys to values, got %s", describe(n))
			return
		}
		if s, ok := v.Addr().Interface().(*Sink); ok {
			u := reflect.New(sinkUnion).Elem()
			d.mapping(n, u, path, map[string]bool{})
			s.take(u)
			return
		}
		d.mapping(n, v, path, map[string]bool{})
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			d.bad(n, path, "want a list, got %s", describe(n))
			return
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, c := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			d.lines[p] = c.Line
			if c.Kind == yaml.ScalarNode && c.Tag == "!!null" {
				d.bad(c, p, "an empty entry")
				continue
			}
			d.decode(c, s.Index(i), p)
		}
		v.Set(s)
	default: // a scalar field: string, bool or int
		if n.Kind != yaml.ScalarNode || n.Decode(v.Addr().Interface()) != nil {
			d.bad(n, path, "want %s, got %s", kindName(v.Kind()), describe(n))
		}
	}
}

// mapping decodes the keys of the mapping n into the struct v, skipping the
// keys in set and adding those it decodes. As in YAML 1.1, a mapping's own
// keys override the ones its merge keys (<<) bring, and of the mappings
// merged from a list, an earlier one's keys override a later one's; a key
// is taken whole, never merged with another value for it. A key that
// appears twice in one mapping (<< included) is an error naming both lines.
func (d *nodeDecoder) mapping(n *yaml.Node, v reflect.Value, path string, set map[string]bool) {
	own := map[string]*yaml.Node{}
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		p := k.Value
		if path != "" {
			p = path + "." + k.Value
		}
		if first, dup := own[k.Value]; dup && k.Kind == yaml.ScalarNode {
			d.bad(k, p, "set twice in one mapping, at lines %d and %d", first.Line, k.Line)
			continue
		}
		own[k.Value] = k
		if k.Tag == "!!merge" {
			merges = append(merges, val)
			continue
		}
		if set[k.Value] {
			continue
		}
		set[k.Value] = true
		d.lines[p] = k.Line
		f, ok := fieldByTag(v, k.Value)
		if !ok {
			d.bad(k, p, "unknown field%s", didYouMean(k.Value, knownKeys(v, n)))
			continue
		}
		d.decode(val, f, p)
	}
	for _, m := range merges {
		d.nodes++
		if m.Kind == yaml.AliasNode {
			m = m.Alias
		}
		srcs := []*yaml.Node{m}
		if m.Kind == yaml.SequenceNode {
			srcs = m.Content
		}
		for _, src := range srcs {
			d.nodes++
			if src.Kind == yaml.AliasNode {
				src = src.Alias
			}
			if src.Kind != yaml.MappingNode {
				d.bad(src, path, "a merge key (<<) takes a mapping or a list of mappings, got %s", describe(src))
				continue
			}
			d.mapping(src, v, path, set)
		}
	}
}

// fieldByTag returns the field of the struct v whose yaml tag is key.
func fieldByTag(v reflect.Value, key string) (reflect.Value, bool) {
	t := v.Type()
	for i := range t.NumField() {
		if tag, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); tag == key && t.Field(i).IsExported() {
			return v.Field(i), true
		}
	}
	return reflect.Value{}, false
}

// describe names what the node holds, for an error message.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	v := n.Value
	if len(v) > 40 {
		v = v[:40] + "…"
	}
	return fmt.Sprintf("%q", v)
}

func kindName(k reflect.Kind) string {
	switch k {
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "an integer"
	}
	return "a single value (a string)"
}
