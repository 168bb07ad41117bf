package process

// A map's result as JSON (invariant 5 of doc.go).

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"

	"github.com/signalbox/signalbox/internal/jsonstr"
)

// maxDepth bounds the nesting of a rendered value.
const maxDepth = 1000

// AppendJSON appends v as one line of JSON: a map as an object with its
// keys sorted by their bytes (a key must be a string), a list as an array,
// a double or int as a number (a double as encoding/json writes a float64;
// NaN and infinities are an error), a string, bool or null as itself,
// bytes as a base64 string (standard, padded), a timestamp as an RFC 3339
// string in UTC, a duration as seconds with an "s" suffix ("1.5s"). An
// object read from the record's value and passed through unchanged keeps
// its members in the input's order.
func AppendJSON(dst []byte, v ref.Val) ([]byte, error) {
	return appendJSON(dst, v, 0)
}

func appendJSON(dst []byte, v ref.Val, depth int) ([]byte, error) {
	if depth > maxDepth {
		return dst, fmt.Errorf("nested more than %d levels", maxDepth)
	}
	switch v := v.(type) {
	case types.String:
		dst, _ = jsonstr.Append(dst, string(v))
		return dst, nil
	case types.Double:
		return appendFloat(dst, float64(v))
	case types.Int:
		return strconv.AppendInt(dst, int64(v), 10), nil
	case types.Uint:
		return strconv.AppendUint(dst, uint64(v), 10), nil
	case types.Bool:
		return strconv.AppendBool(dst, bool(v)), nil
	case types.Null:
		return append(dst, "null"...), nil
	case types.Bytes:
		dst = append(dst, '"')
		return append(base64.StdEncoding.AppendEncode(dst, v), '"'), nil
	case types.Timestamp:
		dst = append(dst, '"')
		return append(v.UTC().AppendFormat(dst, time.RFC3339Nano), '"'), nil
	case types.Duration:
		dst = append(dst, '"')
		return append(strconv.AppendFloat(dst, v.Seconds(), 'f', -1, 64), 's', '"'), nil
	case *types.Err:
		return dst, v
	case *jsonObject:
		// Unchanged (CEL values are immutable): its own bytes, members in
		// the input's order, whether or not an expression converted it.
		if e, ok := v.full.(errMapper); ok {
			return dst, e.err.(*types.Err)
		}
		return appendRaw(dst, v.raw)
	case traits.Mapper:
		return appendMap(dst, v, depth)
	case traits.Lister:
		dst = append(dst, '[')
		n := int(v.Size().(types.Int))
		for i := 0; i < n; i++ {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = appendJSON(dst, v.Get(types.Int(i)), depth+1); err != nil {
				return dst, err
			}
		}
		return append(dst, ']'), nil
	}
	return dst, fmt.Errorf("a %s cannot be rendered as JSON", v.Type().TypeName())
}

func appendMap(dst []byte, m traits.Mapper, depth int) ([]byte, error) {
	type member struct {
		k string
		v ref.Val
	}
	var small [8]member
	members := small[:0]
	for it := m.Iterator(); it.HasNext() == types.True; {
		k := it.Next()
		s, ok := k.(types.String)
		if !ok {
			return dst, fmt.Errorf("a JSON object's keys are strings, not %s (%v)", k.Type().TypeName(), k)
		}
		members = append(members, member{string(s), m.Get(k)})
	}
	slices.SortFunc(members, func(a, b member) int { return strings.Compare(a.k, b.k) })
	dst = append(dst, '{')
	for i, mb := range members {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst, _ = jsonstr.Append(dst, mb.k)
		dst = append(dst, ':')
		var err error
		if dst, err = appendJSON(dst, mb.v, depth+1); err != nil {
			return dst, err
		}
	}
	return append(dst, '}'), nil
}

// appendRaw appends a valid JSON document on one line.
func appendRaw(dst []byte, raw []byte) ([]byte, error) {
	if bytes.IndexByte(raw, '\n') < 0 && bytes.IndexByte(raw, '\r') < 0 { // IndexAny goes byte by byte
		return append(dst, raw...), nil
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return dst, err
	}
	return append(dst, b.Bytes()...), nil
}

// appendFloat writes f as encoding/json writes a float64.
func appendFloat(dst []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return dst, fmt.Errorf("%v is not a JSON number", f)
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	if format == 'f' && f != 0 {
		if out, ok := appendShortFloat(dst, f); ok {
			return out, nil
		}
	}
	n := len(dst)
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// 1e-07 → 1e-7, as encoding/json
		if s := string(dst[n:]); strings.Contains(s, "e-0") {
			dst = append(dst[:n], strings.Replace(s, "e-0", "e-", 1)...)
		}
	}
	return dst, nil
}
