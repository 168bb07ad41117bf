package avro

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/big"
	"slices"
	"strconv"
	"time"
	"unsafe"

	"github.com/twmb/avro"

	"github.com/signalbox/signalbox/formats/value"
)

// The program's render walk (program.go): it reads with the program's
// reads, as check does, and appends the JSON of what they return by the
// rules of doc.go invariant 2; it reads nothing itself.

// render reads the value of o at b[pos:] as check does, at nesting depth,
// appends its JSON to dst, and returns the position after it.
func (o *op) render(dst, b []byte, pos, depth int) ([]byte, int, error) {
	switch o.code {
	case oRecord:
		if depth >= maxDepth {
			return nil, 0, tErr(tooDeep)
		}
		dst = append(dst, '{')
		var err error
		for i := range o.rec.ops {
			if dst, pos, err = o.rec.ops[i].render(append(dst, o.rec.keys[i]...), b, pos, depth+1); err != nil {
				return nil, 0, err
			}
		}
		return append(dst, '}'), pos, nil
	case oUnion:
		a, pos, err := o.alt(b, pos, depth)
		if err != nil {
			return nil, 0, err
		}
		return a.render(dst, b, pos, depth+1)
	case oArray, oMap:
		return o.renderBlocks(dst, b, pos, depth)
	}
	v, start, end, err := o.read(b, pos)
	if err != nil {
		return nil, 0, err
	}
	// The leaf's JSON, from what read returned: v, and the value's bytes
	// b[start:end].
	switch o.kind {
	case kNull:
		return append(dst, "null"...), end, nil
	case kBool:
		if v == 1 { // only 1 is true, as in Java's reader and the library
			return append(dst, "true"...), end, nil
		}
		return append(dst, "false"...), end, nil
	case kInt, kLong:
		return strconv.AppendInt(dst, v, 10), end, nil
	case kFloat:
		return value.AppendFloat(dst, float64(math.Float32frombits(binary.LittleEndian.Uint32(b[start:end]))), 32), end, nil
	case kDouble:
		return value.AppendFloat(dst, math.Float64frombits(binary.LittleEndian.Uint64(b[start:end])), 64), end, nil
	case kString:
		return value.AppendString(dst, unsafeString(b[start:end])), end, nil
	case kBytes, kFixed:
		return value.AppendBytes(dst, b[start:end]), end, nil
	case kUUIDFixed:
		return value.AppendString(dst, value.FormatUUID(b[start:end])), end, nil
	case kDuration:
		le := binary.LittleEndian
		return appendDuration(dst, le.Uint32(b[start:]), le.Uint32(b[start+4:]), le.Uint32(b[start+8:])), end, nil
	case kEnum:
		return append(dst, o.t.symbols[v]...), end, nil
	case kDate:
		return value.AppendDate(dst, time.Unix(v*86400, 0)), end, nil
	case kTimeMillis:
		return value.AppendTimeOfDay(dst, time.Duration(v)*time.Millisecond, 3), end, nil
	case kTimeMicros:
		return value.AppendTimeOfDay(dst, time.Duration(v)*time.Microsecond, 6), end, nil
	case kTsMillis, kTsMicros, kTsNanos:
		tm, digits := tsTime(o.kind, v)
		return value.AppendTime(dst, tm, digits), end, nil
	case kDecimalBytes, kDecimalFixed:
		dst = append(dst, '"')
		dst = appendDecimal(dst, b[start:end], o.t.scale)
		return append(dst, '"'), end, nil
	case kBigDecimal:
		u, scale, _ := bigDecimalParts(b[start:end]) // read checked it
		return value.AppendString(dst, decimalText(bigDecimal(u, scale), o.t.node)), end, nil
	}
	return dst, end, nil
}

// renderBlocks renders an array's or a map's blocks at b[pos:], as
// checkBlocks reads them: the items, or the entries with their keys sorted
// (of repeated keys the last wins, as in the decoded map).
func (o *op) renderBlocks(dst, b []byte, pos, depth int) ([]byte, int, error) {
	if depth >= maxDepth {
		return nil, 0, tErr(tooDeep)
	}
	start := len(dst)
	if o.code == oArray {
		dst = append(dst, '[')
	} else {
		dst = append(dst, '{')
	}
	var entries []entry // a map's
	var total int64
	first := true
	for {
		n, rest, err := blockCount(b[pos:], o.n, &total)
		if err != nil {
			return nil, 0, err
		}
		if pos = at(b, rest); n == 0 {
			break
		}
		for ; n > 0; n-- {
			if !first {
				dst = append(dst, ',')
			}
			first = false
			var e entry
			if o.code == oMap {
				if e.keyStart, e.keyEnd, err = bytesAt(b, pos); err != nil {
					return nil, 0, err
				}
				pos, e.start = e.keyEnd, len(dst)
				dst = append(value.AppendString(dst, unsafeString(b[e.keyStart:e.keyEnd])), ':')
			}
			if dst, pos, err = o.item.render(dst, b, pos, depth+1); err != nil {
				return nil, 0, err
			}
			if o.code == oMap {
				e.end = len(dst)
				entries = append(entries, e)
			}
		}
	}
	if o.code == oArray {
		return append(dst, ']'), pos, nil
	}
	return sortEntries(dst, b, start, entries), pos, nil
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

// tsTime is the time a timestamp of kind k holds, and the digits of its
// fraction.
func tsTime(k kind, v int64) (time.Time, int) {
	switch k {
	case kTsMicros:
		return time.UnixMicro(v), 6
	case kTsNanos:
		return time.Unix(0, v), 9
	}
	return time.UnixMilli(v), 3
}

// entry is a rendered map entry: its key, b[keyStart:keyEnd] in the body,
// and its JSON, `"key":value`, at dst[start:end].
type entry struct{ keyStart, keyEnd, start, end int }

// sortEntries closes the map rendered at dst[start:] (its '{', then its
// entries with commas between them) with its keys sorted; of repeated
// keys the last wins, as in the decoded map.
func sortEntries(dst, b []byte, start int, es []entry) []byte {
	key := func(e entry) []byte { return b[e.keyStart:e.keyEnd] }
	compare := func(x, y entry) int { return bytes.Compare(key(x), key(y)) }
	ordered := true // strictly: no repeated key
	for i := 1; i < len(es) && ordered; i++ {
		ordered = compare(es[i-1], es[i]) < 0
	}
	if ordered { // the common case: as rendered
		return append(dst, '}')
	}
	rendered := slices.Clone(dst[start:])
	slices.SortStableFunc(es, compare)
	dst = append(dst[:start], '{')
	wrote := false
	for i, e := range es {
		if i+1 < len(es) && compare(es[i+1], e) == 0 {
			continue // a later entry has the same key
		}
		if wrote {
			dst = append(dst, ',')
		}
		wrote = true
		dst = append(dst, rendered[e.start-start:e.end-start]...)
	}
	return append(dst, '}')
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

// bigDecimal is the value of a big-decimal's parts (bigDecimalParts): the
// two's-complement unscaled bytes u, over 10^scale.
func bigDecimal(u []byte, scale int64) *big.Rat {
	i := new(big.Int).SetBytes(u)
	if len(u) > 0 && u[0]&0x80 != 0 {
		i.Sub(i, new(big.Int).Lsh(big.NewInt(1), uint(8*len(u))))
	}
	r := new(big.Rat).SetInt(i)
	pow := new(big.Int).Exp(big.NewInt(10), big.NewInt(abs(scale)), nil)
	if scale > 0 {
		return r.Quo(r, new(big.Rat).SetInt(pow))
	}
	return r.Mul(r, new(big.Rat).SetInt(pow))
}

// decimalText is r exactly, with the schema's scale (or, for big-decimal,
// the fewest digits that are exact).
func decimalText(r *big.Rat, n *avro.SchemaNode) string {
	if n.LogicalType == "decimal" {
		return r.FloatString(n.Scale)
	}
	if r.IsInt() {
		return r.FloatString(0)
	}
	// A big-decimal's denominator is 2^a·5^b: max(a, b) digits are exact.
	// a and b are found from bit lengths, not by dividing b times: a scale
	// of 65536 would take seconds.
	twos := r.Denom().TrailingZeroBits()
	d := new(big.Int).Rsh(r.Denom(), twos) // 5^b
	fives := 0
	if d.BitLen() > 1 {
		// 5^b has floor(b·log2 5)+1 bits: this is b or b-1.
		fives = int(float64(d.BitLen()-1) / math.Log2(5))
		five := big.NewInt(5)
		for p := new(big.Int).Exp(five, big.NewInt(int64(fives)), nil); p.Cmp(d) < 0; p.Mul(p, five) {
			fives++
		}
	}
	return r.FloatString(max(int(twos), fives))
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
