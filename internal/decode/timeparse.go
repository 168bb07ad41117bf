package decode

// An event time's text, from a JSON field or a header, to milliseconds
// since the epoch.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/signalbox/signalbox/internal/jsonfield"
)

// parseTime parses b in format f to milliseconds since the epoch.
func parseTime(b []byte, f string, isNumber bool) (int64, error) {
	if f == FormatAuto {
		f = FormatUnixMs
		if !isNumber && !looksNumeric(b) {
			f = FormatRFC3339
		}
	}
	if f == FormatRFC3339 {
		t, err := time.Parse(time.RFC3339Nano, string(b))
		if err != nil {
			return 0, fmt.Errorf("not RFC 3339: %q", truncate(b))
		}
		return t.UnixMilli(), nil
	}
	if n, ok := parseInt(b); ok {
		switch f {
		case FormatUnixS:
			return mulSat(n, 1000)
		case FormatUnixUs:
			return n / 1000, nil
		case FormatUnixNs:
			return n / 1e6, nil
		}
		return n, nil
	}
	x, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return 0, fmt.Errorf("not a number: %q", truncate(b))
	}
	scale := map[string]float64{FormatUnixS: 1000, FormatUnixMs: 1, FormatUnixUs: 1e-3, FormatUnixNs: 1e-6}[f]
	ms := x * scale
	if ms != ms || ms > 9e15 || ms < -9e15 {
		return 0, fmt.Errorf("out of range: %q", truncate(b))
	}
	return int64(ms), nil
}

// parseInt is strconv.ParseInt(b, 10, 64) without its generality on the
// hot path: at most 18 digits after an optional sign (they cannot
// overflow), read eight at a time when there are eight or more; anything
// else goes to strconv.
func parseInt(b []byte) (int64, bool) {
	d := b
	if len(d) > 0 && (d[0] == '-' || d[0] == '+') {
		d = d[1:]
	}
	if len(d) == 0 || len(d) > 18 {
		n, err := strconv.ParseInt(string(b), 10, 64)
		return n, err == nil
	}
	var n uint64
	if len(d) < 8 {
		for _, c := range d {
			if c-'0' > 9 {
				return 0, false
			}
			n = n*10 + uint64(c-'0')
		}
	} else {
		i := 0
		for ; i+8 <= len(d); i += 8 {
			v, ok := digits8(binary.LittleEndian.Uint64(d[i:]))
			if !ok {
				return 0, false
			}
			n = n*1e8 + v
		}
		if r := len(d) - i; r > 0 {
			// The last word, its bytes already read turned into leading
			// zeros.
			w := binary.LittleEndian.Uint64(d[len(d)-8:])
			read := uint64(1)<<(8*(8-r)) - 1
			v, ok := digits8(w&^read | zeros&read)
			if !ok {
				return 0, false
			}
			n = n*pow10[r] + v
		}
	}
	if b[0] == '-' {
		return -int64(n), true
	}
	return int64(n), true
}

// zeros is eight ASCII '0's as a little-endian word.
const zeros = 0x3030303030303030

var pow10 = [8]uint64{1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7}

// digits8 is the value of the eight ASCII decimal digits of w (the first
// in its low byte), or false if a byte is not a digit.
func digits8(w uint64) (uint64, bool) {
	if jsonfield.NonDigits(w) != 0 {
		return 0, false
	}
	w -= zeros
	w = w*10 + w>>8 // byte 2k: the value of digits 2k and 2k+1
	w = ((w&0x000000ff000000ff)*(100+1000000<<32) + (w>>16&0x000000ff000000ff)*(1+10000<<32)) >> 32
	return w, true
}

func mulSat(n, m int64) (int64, error) {
	if n > 9e15/m || n < -9e15/m {
		return 0, fmt.Errorf("out of range: %d", n)
	}
	return n * m, nil
}

func looksNumeric(b []byte) bool {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return false
	}
	return strings.IndexFunc(string(b), func(r rune) bool {
		return !(r >= '0' && r <= '9') && r != '.' && r != '-' && r != '+' && r != 'e' && r != 'E'
	}) < 0
}

func truncate(b []byte) string {
	if len(b) > 64 {
		return string(b[:64]) + "…"
	}
	return string(b)
}
