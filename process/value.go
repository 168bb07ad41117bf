package process

// The JSON model of `value`: a top-level object is read lazily (jsonObject:
// a field read scans the raw bytes with internal/jsonfield and converts
// that field only); everything else, and an object that is iterated,
// compared or measured, is converted whole (decodeJSON), with the same
// rules: object → map(string, dyn), array → list(dyn), number → double,
// string, bool, null. At every level the first member of a name wins, as
// in the lazy reads.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"unsafe"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"

	"github.com/signalbox/signalbox/internal/jsonfield"
)

// jsonValue is the CEL value of a JSON document that is known to be valid
// (jsonfield.Scan): a lazy object for an object, the whole conversion
// otherwise.
func jsonValue(doc []byte) ref.Val {
	if isObject(doc) {
		return &jsonObject{raw: doc}
	}
	return convertDoc(doc)
}

// isObject reports whether the valid JSON document doc is an object.
func isObject(doc []byte) bool {
	i := 0
	for i < len(doc) && (doc[i] == ' ' || doc[i] == '\t' || doc[i] == '\n' || doc[i] == '\r') {
		i++
	}
	return i < len(doc) && doc[i] == '{'
}

// fieldValue converts one field read from a lazy object.
func fieldValue(v jsonfield.Value) ref.Val {
	switch v.Kind {
	case jsonfield.String:
		s, err := v.Text()
		if err != nil {
			return types.NewErr("value: %v", err)
		}
		return types.String(s)
	case jsonfield.Number:
		f, err := strconv.ParseFloat(unsafe.String(unsafe.SliceData(v.Raw), len(v.Raw)), 64)
		if err != nil {
			return types.NewErr("value: number %s: %v", v.Raw, err)
		}
		return types.Double(f)
	case jsonfield.Bool:
		return types.Bool(v.Raw[0] == 't')
	case jsonfield.Null:
		return types.NullValue
	case jsonfield.Object:
		return &jsonObject{raw: v.Raw}
	}
	return convertDoc(v.Raw)
}

// convertDoc converts a whole document.
func convertDoc(doc []byte) ref.Val {
	d := json.NewDecoder(bytes.NewReader(doc))
	d.UseNumber()
	v, err := decodeJSON(d)
	if err != nil {
		return types.NewErr("value: %v", err)
	}
	return types.DefaultTypeAdapter.NativeToValue(v)
}

// decodeJSON reads one value from d: map[string]any (first member of a
// name wins), []any, float64, string, bool or nil.
func decodeJSON(d *json.Decoder) (any, error) {
	t, err := d.Token()
	if err != nil {
		return nil, err
	}
	switch t := t.(type) {
	case json.Delim:
		switch t {
		case '{':
			m := map[string]any{}
			for d.More() {
				k, err := d.Token()
				if err != nil {
					return nil, err
				}
				v, err := decodeJSON(d)
				if err != nil {
					return nil, err
				}
				if _, dup := m[k.(string)]; !dup {
					m[k.(string)] = v
				}
			}
			_, err = d.Token()
			return m, err
		case '[':
			l := []any{}
			for d.More() {
				v, err := decodeJSON(d)
				if err != nil {
					return nil, err
				}
				l = append(l, v)
			}
			_, err = d.Token()
			return l, err
		}
		return nil, errors.New("unexpected " + t.String())
	case json.Number:
		return strconv.ParseFloat(t.String(), 64)
	case nil:
		return nil, nil
	}
	if t == io.EOF {
		return nil, io.ErrUnexpectedEOF
	}
	return t, nil // string, bool
}

// jsonObject is a JSON object read lazily: Find scans raw for one member.
// What needs every member (iteration, size, equality, conversion) converts
// it whole, once.
type jsonObject struct {
	raw  []byte
	full traits.Mapper // the whole conversion, once it was needed
}

var (
	_ traits.Mapper = (*jsonObject)(nil)
	_ traits.Sizer  = (*jsonObject)(nil)
)

func (o *jsonObject) whole() traits.Mapper {
	if o.full == nil {
		v := convertDoc(o.raw)
		m, ok := v.(traits.Mapper)
		if !ok {
			return errMapper{v}
		}
		o.full = m
	}
	return o.full
}

// Find looks up one member.
func (o *jsonObject) Find(key ref.Val) (ref.Val, bool) {
	k, ok := key.(types.String)
	if !ok {
		return nil, false // a JSON object has string keys only
	}
	if o.full != nil {
		return o.full.Find(key)
	}
	seg := [1][]byte{unsafe.Slice(unsafe.StringData(string(k)), len(k))}
	v, err := jsonfield.Get(o.raw, seg[:])
	switch {
	case errors.Is(err, jsonfield.ErrNotFound):
		return nil, false
	case err != nil:
		return types.NewErr("value: %v", err), true
	}
	return fieldValue(v), true
}

// Get is Find, with an error for a missing key.
func (o *jsonObject) Get(key ref.Val) ref.Val {
	v, found := o.Find(key)
	if !found {
		return types.NewErr("no such key: %v", key)
	}
	return v
}

func (o *jsonObject) Contains(key ref.Val) ref.Val {
	_, found := o.Find(key)
	return types.Bool(found)
}

func (o *jsonObject) Size() ref.Val             { return o.whole().Size() }
func (o *jsonObject) Iterator() traits.Iterator { return o.whole().Iterator() }
func (o *jsonObject) Equal(other ref.Val) ref.Val {
	return o.whole().Equal(other)
}
func (o *jsonObject) ConvertToNative(t reflect.Type) (any, error) {
	return o.whole().ConvertToNative(t)
}
func (o *jsonObject) ConvertToType(t ref.Type) ref.Val { return o.whole().ConvertToType(t) }
func (o *jsonObject) Type() ref.Type                   { return types.MapType }
func (o *jsonObject) Value() any                       { return o.whole().Value() }

// errMapper carries a conversion error through the traits.Mapper methods.
type errMapper struct{ err ref.Val }

func (e errMapper) Find(ref.Val) (ref.Val, bool) { return e.err, true }
func (e errMapper) Get(ref.Val) ref.Val          { return e.err }
func (e errMapper) Contains(ref.Val) ref.Val     { return e.err }
func (e errMapper) Size() ref.Val                { return e.err }
func (e errMapper) Iterator() traits.Iterator {
	return types.NewStringList(types.DefaultTypeAdapter, nil).Iterator()
}
func (e errMapper) Equal(ref.Val) ref.Val                     { return e.err }
func (e errMapper) ConvertToNative(reflect.Type) (any, error) { return nil, fmt.Errorf("%v", e.err) }
func (e errMapper) ConvertToType(ref.Type) ref.Val            { return e.err }
func (e errMapper) Type() ref.Type                            { return types.MapType }
func (e errMapper) Value() any                                { return e.err.Value() }
