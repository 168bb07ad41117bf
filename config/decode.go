package config

import (
	"fmt"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"
)

// nodeDecoder decodes a yaml.Node tree into the Job structs by their yaml
// tags. It records the line of every path it meets and reports, as
// FieldErrors, unknown keys and values of the wrong kind; it decodes
// everything else, so that Validate can report the rest.
type nodeDecoder struct {
	lines map[string]int
	errs  Errors
}

func (d *nodeDecoder) bad(n *yaml.Node, path, format string, args ...any) {
	d.errs = append(d.errs, &FieldError{Path: path, Line: n.Line, Msg: fmt.Sprintf(format, args...)})
}

// decode decodes n into v, the field at path.
func (d *nodeDecoder) decode(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return // the zero value: the default
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
		d.mapping(n, v, path)
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

// mapping decodes the keys of the mapping n into the struct v. Merge keys
// (<<) are applied first, so that the mapping's own keys override them, as
// in YAML.
func (d *nodeDecoder) mapping(n *yaml.Node, v reflect.Value, path string) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i]; k.Tag == "!!merge" {
			m := n.Content[i+1]
			if m.Kind == yaml.AliasNode {
				m = m.Alias
			}
			srcs := []*yaml.Node{m}
			if m.Kind == yaml.SequenceNode {
				srcs = m.Content
			}
			for _, src := range srcs {
				d.decode(src, v, path)
			}
		}
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if k.Tag == "!!merge" {
			continue
		}
		p := k.Value
		if path != "" {
			p = path + "." + k.Value
		}
		d.lines[p] = k.Line
		f, ok := fieldByTag(v, k.Value)
		if !ok {
			d.bad(k, p, "unknown field")
			continue
		}
		d.decode(val, f, p)
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
