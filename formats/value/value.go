// Package value holds what every schema'd decoder shares: the Field a
// dotted path resolves to, and the JSON rendering helpers behind the rules
// in docs/sinks.md ("Schema'd values"), and Decoded, the interface every
// decoder's result satisfies. It imports only the standard library, so the
// engine can name its types without depending on the decoders.
//
// Invariants:
//
//  1. Every Append* function appends valid JSON and never fails: strings
//     are escaped as the sinks' envelope escapes them (no HTML escaping;
//     U+2028 and U+2029 escaped),
//     bytes that are not valid UTF-8 in a string become U+FFFD, non-finite
//     floats become the strings "NaN", "Infinity" and "-Infinity".
//  2. The rendering of a value is a pure function of the value: the same
//     record renders to the same bytes on every run.
package value

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Kind is what a decoded field holds.
type Kind int

// The kinds of a Field.
const (
	KindNull   Kind = iota
	KindTime        // a logical timestamp or date: Time is set
	KindString      // Text is the string
	KindNumber      // Text is the number's decimal text
	KindBool        // Text is "true" or "false"
	KindOther       // bytes, records, arrays, maps: Text is the rendered JSON (empty for a Protobuf list or map)
)

// Field is the value at a dotted path of a decoded record.
type Field struct {
	Kind Kind
	// Time is the instant of a logical timestamp or date (KindTime), in UTC.
	Time time.Time
	// Text is the field's text (see Kind); for KindTime, its RFC 3339 form.
	Text string
}

// SplitPath splits a dotted path ("meta.ts") into its names; it reports
// false for an empty path or an empty name.
func SplitPath(p string) ([]string, bool) {
	if p == "" {
		return nil, false
	}
	names := strings.Split(p, ".")
	for _, n := range names {
		if n == "" {
			return nil, false
		}
	}
	return names, true
}

// AppendString appends s as a JSON string.
func AppendString(b []byte, s string) []byte {
	b = append(b, '"')
	done := 0 // s[:done] is written
	for i, r := range s {
		var esc string
		switch {
		case r == '"':
			esc = `\"`
		case r == '\\':
			esc = `\\`
		case r == '\n':
			esc = `\n`
		case r == '\r':
			esc = `\r`
		case r == '\t':
			esc = `\t`
		case r < 0x20 || r == '\u2028' || r == '\u2029':
			esc = fmt.Sprintf(`\u%04x`, r)
		case r == utf8.RuneError:
			if _, size := utf8.DecodeRuneInString(s[i:]); size != 1 {
				continue // a real U+FFFD
			}
			esc = `\ufffd`
		default:
			continue
		}
		b = append(append(b, s[done:i]...), esc...)
		done = i + utf8.RuneLen(r)
		if r == utf8.RuneError {
			done = i + 1
		}
	}
	b = append(b, s[done:]...)
	return append(b, '"')
}

// AppendBytes appends raw as a JSON string of its standard base64 (with
// padding).
func AppendBytes(b []byte, raw []byte) []byte {
	b = append(b, '"')
	b = base64.StdEncoding.AppendEncode(b, raw)
	return append(b, '"')
}

// AppendFloat appends f as a JSON number as encoding/json and protojson
// write it (shortest form that reads back exactly at the given bit size;
// exponent form below 1e-6 and from 1e21), or a string for NaN and ±Inf.
func AppendFloat(b []byte, f float64, bits int) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, `"NaN"`...)
	case math.IsInf(f, 1):
		return append(b, `"Infinity"`...)
	case math.IsInf(f, -1):
		return append(b, `"-Infinity"`...)
	}
	format := byte('f')
	if a := math.Abs(f); a != 0 {
		if bits == 64 && (a < 1e-6 || a >= 1e21) || bits == 32 && (float32(a) < 1e-6 || float32(a) >= 1e21) {
			format = 'e'
		}
	}
	b = strconv.AppendFloat(b, f, format, -1, bits)
	if n := len(b); format == 'e' && n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
		b[n-2] = b[n-1] // e-07 → e-7
		b = b[:n-1]
	}
	return b
}

// AppendTime appends t in UTC as an RFC 3339 JSON string with exactly
// digits fractional-second digits (0, 3, 6 or 9).
func AppendTime(b []byte, t time.Time, digits int) []byte {
	b = append(b, '"')
	b = appendTimeText(b, t, digits)
	return append(b, '"')
}

func appendTimeText(b []byte, t time.Time, digits int) []byte {
	return t.UTC().AppendFormat(b, "2006-01-02T"+clockLayout(digits)+"Z07:00")
}

// clockLayout is the time layout of a clock with digits fraction digits.
func clockLayout(digits int) string {
	switch digits {
	case 3:
		return "15:04:05.000"
	case 6:
		return "15:04:05.000000"
	case 9:
		return "15:04:05.000000000"
	}
	return "15:04:05"
}

// TimeText is t in UTC as RFC 3339 with digits fractional digits.
func TimeText(t time.Time, digits int) string { return string(appendTimeText(nil, t, digits)) }

// AppendDate appends t's UTC date as a JSON string "YYYY-MM-DD" (an RFC 3339
// full-date).
func AppendDate(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = t.UTC().AppendFormat(b, "2006-01-02")
	return append(b, '"')
}

// AppendTimeOfDay appends d (since midnight, in [0, 24h)) as a JSON
// string "HH:MM:SS.fff" with digits (0, 3 or 6) fractional digits (an
// RFC 3339 partial-time).
func AppendTimeOfDay(b []byte, d time.Duration, digits int) []byte {
	b = append(b, '"')
	b = time.Unix(0, 0).UTC().Add(d).AppendFormat(b, clockLayout(digits))
	return append(b, '"')
}

// FormatUUID renders 16 bytes as a canonical 8-4-4-4-12 lowercase UUID.
func FormatUUID(g []byte) string {
	var s [36]byte
	hex.Encode(s[0:8], g[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], g[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], g[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], g[8:10])
	s[23] = '-'
	hex.Encode(s[24:36], g[10:16])
	return string(s[:])
}

// Decoded is one decoded key or value: what a decoder hands the engine.
type Decoded interface {
	// JSON is the value as JSON, for text sinks.
	JSON() []byte
	// SchemaID is the writer schema's registry id, 0 when there is none.
	SchemaID() int
	// Lookup returns the field at a split dotted path, false when absent.
	Lookup(path []string) (Field, bool)
}
