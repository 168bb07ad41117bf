package process

// Numbers on the fast path: the common JSON numbers read and written
// without strconv's general algorithms, with exactly strconv's results
// (TestNumbersAreStrconv).

import (
	"math"
	"strconv"
	"unsafe"
)

// pow10 holds the powers of ten that are exact doubles.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
	1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// maxExactDigits is the most decimal digits read or written without
// strconv: an integer of 15 digits is an exact double, and two decimals
// of at most 15 significant digits are never the same double (DBL_DIG).
const maxExactDigits = 15

// parseNumber is strconv.ParseFloat(raw, 64), ok when it has no error. A
// number of the form -?d+(.d+)? with at most 15 digits is m / 10^k for an
// integer m < 10^15 and k ≤ 15, both exact doubles, and one correctly
// rounded division is the correctly rounded result (Clinger's fast path).
func parseNumber(raw []byte) (float64, bool) {
	i, neg := 0, len(raw) > 0 && raw[0] == '-'
	if neg {
		i = 1
	}
	var m uint64
	digits, frac, point := 0, 0, false
	for ; i < len(raw); i++ {
		switch c := raw[i]; {
		case c >= '0' && c <= '9':
			m = m*10 + uint64(c-'0')
			digits++
			if point {
				frac++
			}
		case c == '.' && !point && digits > 0:
			point = true
		default:
			return parseFloat(raw)
		}
	}
	if digits == 0 || digits > maxExactDigits || (point && frac == 0) {
		return parseFloat(raw)
	}
	f := float64(m) / pow10[frac]
	if neg {
		f = -f
	}
	return f, true
}

func parseFloat(raw []byte) (float64, bool) {
	f, err := strconv.ParseFloat(unsafe.String(unsafe.SliceData(raw), len(raw)), 64)
	return f, err == nil
}

// appendShortFloat appends f as strconv.AppendFloat(dst, f, 'f', -1, 64)
// does when f is m / 10^k for an integer m of at most 15 digits (ok true;
// else dst unchanged and ok false): that decimal reads back as f, and no
// other of at most 15 digits does, so it is f's shortest representation.
// f is finite, nonzero, and at least 1e-6 in magnitude ('f' format).
func appendShortFloat(dst []byte, f float64) ([]byte, bool) {
	abs := math.Abs(f)
	for k := 0; k <= maxExactDigits; k++ {
		s := abs * pow10[k]
		if s >= 1e15 {
			break
		}
		r := math.Round(s)
		if r/pow10[k] != abs {
			continue
		}
		m := uint64(r)
		for k > 0 && m%10 == 0 {
			m /= 10
			k--
		}
		if f < 0 {
			dst = append(dst, '-')
		}
		p := uint64(pow10[k])
		dst = strconv.AppendUint(dst, m/p, 10)
		if k == 0 {
			return dst, true
		}
		dst = append(dst, '.')
		dst = append(dst, "000000000000000"[:k]...)
		for j, fr := len(dst)-1, m%p; fr > 0; j, fr = j-1, fr/10 {
			dst[j] = byte('0' + fr%10)
		}
		return dst, true
	}
	return dst, false
}
