// Package value holds what every schema'd decoder shares: the Field a
// dotted path resolves to, and the JSON rendering helpers behind the rules
// in docs/sinks.md ("Schema'd values"), and Decoded, the interface every
// decoder's result satisfies. It imports only the standard library and
// internal/jsonstr (the envelope's string escaping), so the
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
	"encoding/binary"
	"encoding/hex"
	"math"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/signalbox/signalbox/internal/jsonstr"
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
	// Text is the field's text (see Kind). For KindTime it may be empty,
	// so that reading an event time formats nothing: String then renders
	// Time with Digits.
	Text string
	// Digits is how String renders an empty KindTime Text: RFC 3339 with
	// 0, 3, 6 or 9 fractional digits, or DigitsDate for a date.
	Digits int
}

// DigitsDate makes a KindTime Field's String its date ("2006-01-02").
const DigitsDate = -1

// String is the field's text: Text, or for a KindTime field with no Text
// its RFC 3339 form.
func (f Field) String() string {
	if f.Kind != KindTime || f.Text != "" {
		return f.Text
	}
	if f.Digits == DigitsDate {
		var buf [24]byte
		b := AppendDate(buf[:0], f.Time)
		return string(b[1 : len(b)-1])
	}
	return TimeText(f.Time, f.Digits)
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

// AppendString appends s as a JSON string, escaped as the envelope escapes
// it (package jsonstr). A string of printable ASCII with no quote or
// backslash, the common case, is copied whole.
func AppendString(b []byte, s string) []byte {
	if plain(s) {
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	b, _ = jsonstr.Append(b, s)
	return b
}

// plain reports whether every byte of s is ASCII from 0x20 up, neither '"'
// nor '\\': nothing in it needs escaping. It tests eight bytes at a time.
func plain(s string) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	i := 0
	for ; i+8 <= len(s); i += 8 {
		x := binary.LittleEndian.Uint64([]byte(s[i : i+8]))
		q, bs := x^(ones*'"'), x^(ones*'\\')
		// a byte >= 0x80; a byte < 0x20; a zero byte in q or bs
		// (haszero: (v - 0x01…) & ^v & 0x80…, exact for whether one exists).
		if (x|((x-ones*0x20)&^x)|((q-ones)&^q)|((bs-ones)&^bs))&highs != 0 {
			return false
		}
	}
	for ; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' {
			return false
		}
	}
	return true
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
	days, sec := floorDiv(t.Unix(), 86400)
	y, m, d := civilCached(days)
	if y < 0 || y > 9999 {
		return t.UTC().AppendFormat(b, "2006-01-02T"+clockLayout(digits)+"Z07:00")
	}
	b = appendYMD(b, y, m, d)
	b = append(b, 'T')
	b = appendClock(b, sec, int64(t.Nanosecond()), digits)
	return append(b, 'Z')
}

// floorDiv is a divided by b (b > 0) rounded down, and the remainder in [0, b).
func floorDiv(a, b int64) (q, r int64) {
	q, r = a/b, a%b
	if r < 0 {
		q, r = q-1, r+b
	}
	return q, r
}

// civil is the proleptic Gregorian date days after 1970-01-01
// (H. Hinnant's days-to-civil).
func civil(days int64) (y, m, d int64) {
	z := days + 719468
	era, _ := floorDiv(z, 146097)
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = doy - (153*mp+2)/5 + 1
	m = mp + 3
	if m > 12 {
		m -= 12
	}
	y = yoe + era*400
	if m <= 2 {
		y++
	}
	return y, m, d
}

// lastDay caches civil's answer for the last day it was asked about, packed:
// the day + dayBias (23 bits), then year (14 bits), month (4) and day (5),
// and a set bit. Records of a stream mostly share their day.
var lastDay atomic.Uint64

const dayBias = 1 << 22 // days of years 0 to 9999 lie within ±dayBias

// civilCached is civil, from lastDay when it is the same day.
func civilCached(days int64) (y, m, d int64) {
	if days <= -dayBias || days >= dayBias {
		return civil(days)
	}
	key := uint64(days+dayBias) << 24
	if c := lastDay.Load(); c&^(1<<24-1) == key|1<<47 {
		return int64(c >> 9 & (1<<14 - 1)), int64(c >> 5 & 15), int64(c & 31)
	}
	y, m, d = civil(days)
	if y >= 0 && y <= 9999 {
		lastDay.Store(1<<47 | key | uint64(y)<<9 | uint64(m)<<5 | uint64(d))
	}
	return y, m, d
}

// appendYMD appends "YYYY-MM-DD" for a year in [0, 9999].
func appendYMD(b []byte, y, m, d int64) []byte {
	b = append(b, byte('0'+y/1000), byte('0'+y/100%10), byte('0'+y/10%10), byte('0'+y%10), '-')
	b = append(b, byte('0'+m/10), byte('0'+m%10), '-')
	return append(b, byte('0'+d/10), byte('0'+d%10))
}

// twoDigits holds "00" to "99".
const twoDigits = "00010203040506070809101112131415161718192021222324252627282930313233343536373839404142434445464748495051525354555657585960616263646566676869707172737475767778798081828384858687888990919293949596979899"

// appendClock appends "HH:MM:SS" for sec seconds into a day, then a point
// and the first digits (0, 3, 6 or 9) of the nanoseconds ns, truncated as
// time.Format does.
func appendClock(b []byte, sec, ns int64, digits int) []byte {
	h, mi, s := sec/3600, sec/60%60, sec%60
	b = append(b, twoDigits[2*h], twoDigits[2*h+1], ':', twoDigits[2*mi], twoDigits[2*mi+1], ':', twoDigits[2*s], twoDigits[2*s+1])
	if digits != 3 && digits != 6 && digits != 9 {
		return b
	}
	switch digits { // constant divisors: the compiler multiplies
	case 3:
		ns /= 1_000_000
	case 6:
		ns /= 1_000
	}
	var frac [10]byte
	frac[0] = '.'
	for i := digits; i > 0; i-- {
		frac[i] = byte('0' + ns%10)
		ns /= 10
	}
	return append(b, frac[:digits+1]...)
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
func TimeText(t time.Time, digits int) string {
	var buf [40]byte
	return string(appendTimeText(buf[:0], t, digits))
}

// AppendDate appends t's UTC date as a JSON string "YYYY-MM-DD" (an RFC 3339
// full-date).
func AppendDate(b []byte, t time.Time) []byte {
	b = append(b, '"')
	days, _ := floorDiv(t.Unix(), 86400)
	if y, m, d := civil(days); y >= 0 && y <= 9999 {
		b = appendYMD(b, y, m, d)
	} else {
		b = t.UTC().AppendFormat(b, "2006-01-02")
	}
	return append(b, '"')
}

// AppendTimeOfDay appends d (since midnight, in [0, 24h)) as a JSON
// string "HH:MM:SS.fff" with digits (0, 3 or 6) fractional digits (an
// RFC 3339 partial-time).
func AppendTimeOfDay(b []byte, d time.Duration, digits int) []byte {
	b = append(b, '"')
	if d >= 0 && d < 24*time.Hour {
		b = appendClock(b, int64(d/time.Second), int64(d%time.Second), digits)
	} else {
		b = time.Unix(0, 0).UTC().Add(d).AppendFormat(b, clockLayout(digits))
	}
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
