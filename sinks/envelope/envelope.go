package envelope

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"slices"
	"strconv"
	"unsafe"

	"github.com/signalbox/signalbox/internal/jsonfield"
	"github.com/signalbox/signalbox/internal/jsonstr"
	"github.com/signalbox/signalbox/record"
)

// Append appends the JSON envelope of r to dst, without a trailing newline,
// and returns the extended slice.
func Append(dst []byte, r *record.Record) []byte { return appendEnvelope(dst, r, nil) }

// Encoder appends envelopes as Append does, and remembers, for the
// topic-partitions it last wrote, the envelope's start up to the offset's
// last three digits, and the last event-time second: a sink is handed
// records in event-time order, interleaved across a few partitions, so most
// records reuse both the quoted topic, the partition and the offset's
// leading digits, and the date, the time of day and most of event_time_ms.
// Its output is Append's, byte for byte. The zero Encoder is ready to use;
// it is not safe for concurrent use.
type Encoder struct {
	heads [headSlots]head
	// sec is the last second (floor of ms / 1000); when sn > 0, stamp[:sn]
	// is its "YYYY-MM-DDTHH:MM:SS." and stamp[sn:tn] its decimal digits,
	// which event_time_ms starts with when ms ≥ 1000.
	sec    int64
	stamp  [64]byte // the widest: a 10-character year, 17 characters of seconds
	sn, tn int
	// day is the day of sec (floor of ms / 86,400,000); when dn > 0,
	// stamp[:dn] is its "YYYY-MM-DDT".
	day int64
	dn  int
}

// headSlots is how many topic-partitions an Encoder remembers (a power of
// two): a pair of slots is chosen by the topic string's address and the
// partition, and the pair keeps its two most recent, so that a replay of a
// few dozen partitions rarely evicts one.
const headSlots = 256

// head is an envelope's start for one topic-partition: b[:pn] is
// `{"topic":<topic>,"partition":<partition>,"offset":`, and b[pn:] the
// decimal digits of hi, offset / 1000, of the last offset of at least 1000.
type head struct {
	topic string
	part  int32
	pn    int   // 0: the slot is empty
	hi    int64 // -1: b holds no digits after pn
	b     []byte
}

// Append appends the JSON envelope of r to dst, as the package's Append.
func (e *Encoder) Append(dst []byte, r *record.Record) []byte { return appendEnvelope(dst, r, e) }

// is reports whether h holds the start of r's topic-partition.
func (h *head) is(r *record.Record) bool {
	return h.pn > 0 && h.part == r.Partition && h.topic == r.Topic
}

// fill makes h hold the start of r's topic-partition, reusing its array.
func (h *head) fill(r *record.Record) {
	b := AppendString(append(h.b[:0], `{"topic":`...), r.Topic)
	b = strconv.AppendInt(append(b, `,"partition":`...), int64(r.Partition), 10)
	b = append(b, `,"offset":`...)
	*h = head{topic: r.Topic, part: r.Partition, pn: len(b), hi: -1, b: b}
}

// appendHead appends the envelope's start up to and including the offset,
// from e's memory of r's topic-partition when it has it.
func (e *Encoder) appendHead(dst []byte, r *record.Record) []byte {
	p := uint64(uintptr(unsafe.Pointer(unsafe.StringData(r.Topic))))
	i := ((p>>3 ^ uint64(uint32(r.Partition))) * 0x9e3779b97f4a7c15) >> (64 - 8) &^ 1
	h := &e.heads[i%headSlots]
	if !h.is(r) {
		if o := &e.heads[(i+1)%headSlots]; o.is(r) { // the pair's other slot
			*h, *o = *o, *h
		} else { // move the pair's first to its second slot, r's start in the first
			*h, *o = *o, *h
			h.fill(r)
		}
	}
	if r.Offset < 1000 { // no leading digits to share (or a negative offset)
		return strconv.AppendInt(append(dst, h.b[:h.pn]...), r.Offset, 10)
	}
	hi := r.Offset / 1000
	if hi != h.hi {
		h.b, h.hi = strconv.AppendInt(h.b[:h.pn], hi, 10), hi
	}
	return appendMillis(append(dst, h.b...), r.Offset-hi*1000)
}

// appendTimes appends event_time's member name and what the package's
// appendTimes does, with the second from e's memory when it is the last
// one's.
func (e *Encoder) appendTimes(dst []byte, ms int64) []byte {
	sec := floorDiv(ms, 1000)
	if e.sn == 0 || sec != e.sec {
		e.second(ms, sec)
	}
	f := ms - e.sec*1000
	if sec >= 1e9 && sec < 1e10 { // 2001-09-09 to 2286-11-20
		return e.appendFixed(dst, f)
	}
	milli := [3]byte{byte('0' + f/100), byte('0' + f/10%10), byte('0' + f%10)}
	dst = append(append(append(dst, etName...), e.stamp[:e.sn]...), milli[:]...)
	dst = append(dst, msName...)
	if ms < 1000 { // no leading digits of a second to share
		return strconv.AppendInt(dst, ms, 10)
	}
	return append(append(dst, e.stamp[e.sn:e.tn]...), milli[:]...)
}

// The widths of e.stamp's parts for a second from 2001-09-09 to
// 2286-11-20 (10⁹ to 10¹⁰ − 1): "YYYY-MM-DDTHH:MM:SS." and the second's
// 10 digits, with which event_time_ms starts.
const (
	fixedStamp  = 20
	fixedDigits = 10
)

// appendFixed is appendTimes for a millisecond f of e's second when that
// second's parts have the fixed widths: the second's parts, the member names and f's digits
// are moved into place as arrays, without a call to copy them (the most
// frequent case of a sink's most frequent member).
func (e *Encoder) appendFixed(dst []byte, f int64) []byte {
	const (
		stampAt  = len(etName)
		milliAt  = stampAt + fixedStamp
		digitsAt = milliAt + 3 + len(msName)
		n        = digitsAt + fixedDigits + 3
	)
	dst = slices.Grow(dst, n)
	t := (*[n]byte)(dst[len(dst) : len(dst)+n])
	*(*[len(etName)]byte)(t[:]) = etNameArray
	stamp := *(*[fixedStamp]byte)(e.stamp[:]) // through variables: moves, not a call
	*(*[fixedStamp]byte)(t[stampAt:]) = stamp
	m0, m1, m2 := byte('0'+f/100), byte('0'+f/10%10), byte('0'+f%10)
	t[milliAt], t[milliAt+1], t[milliAt+2] = m0, m1, m2
	*(*[len(msName)]byte)(t[milliAt+3:]) = msNameArray
	digits := *(*[fixedDigits]byte)(e.stamp[fixedStamp:])
	*(*[fixedDigits]byte)(t[digitsAt:]) = digits
	t[n-3], t[n-2], t[n-1] = m0, m1, m2
	return dst[:len(dst)+n]
}

// etName names event_time and opens its string; msName closes it and
// names event_time_ms. Their arrays are appendFixed's.
const (
	etName = `,"event_time":"`
	msName = `Z","event_time_ms":`
)

var (
	etNameArray = [len(etName)]byte([]byte(etName))
	msNameArray = [len(msName)]byte([]byte(msName))
)

// second makes e remember sec, the second of ms: its date (kept from the
// last second when of the same day), time of day and decimal digits.
func (e *Encoder) second(ms, sec int64) {
	days := floorDiv(ms, 86_400_000)
	if e.dn == 0 || days != e.day {
		e.day, e.dn = days, len(appendDate(e.stamp[:0], days))
	}
	b := appendClock(e.stamp[:e.dn], ms-days*86_400_000)
	b = b[:len(b)-4] // up to the '.', without the milliseconds and 'Z'
	e.sec, e.sn = sec, len(b)
	e.tn = len(strconv.AppendInt(b, sec, 10))
}

// appendTimes appends the event time's RFC 3339 form, the end of its
// string, and event_time_ms's member name and value.
func appendTimes(dst []byte, ms int64) []byte {
	dst = AppendTime(dst, ms)
	dst = append(dst, msName[1:]...)
	return strconv.AppendInt(dst, ms, 10)
}

// appendEnvelope is Append, through e's memory when e is not nil.
func appendEnvelope(dst []byte, r *record.Record, e *Encoder) []byte {
	if e != nil {
		dst = e.appendHead(dst, r)
	} else {
		dst = append(dst, `{"topic":`...)
		dst = AppendString(dst, r.Topic)
		dst = append(dst, `,"partition":`...)
		dst = strconv.AppendInt(dst, int64(r.Partition), 10)
		dst = append(dst, `,"offset":`...)
		dst = strconv.AppendInt(dst, r.Offset, 10)
	}
	switch {
	case r.DecodedKey != nil:
		dst = append(append(dst, `,"key":`...), r.DecodedKey...) // JSON from the input's decoder
	case r.Key == nil:
		dst = append(dst, `,"key":null`...)
	default:
		dst = appendText(dst, `,"key":`, `,"key_b64":"`, r.Key)
	}
	if !r.Timeless {
		if e != nil {
			dst = e.appendTimes(dst, r.EventTime)
		} else {
			dst = appendTimes(append(dst, etName...), r.EventTime)
		}
	}
	switch {
	case r.DecodedValue != nil:
		dst = append(append(dst, `,"value":`...), r.DecodedValue...) // JSON from the input's decoder
	case r.ValueJSON:
		dst = append(dst, `,"value":`...)
		dst = append(dst, r.Value...) // validated by the decoder (record.Record.ValueJSON)
	case r.Value == nil:
		dst = append(dst, `,"value":null`...) // a tombstone
	default:
		if d := jsonfield.Scan(r.Value, nil); d.Valid {
			dst = appendValue(append(dst, `,"value":`...), r.Value, d.Multiline)
		} else {
			dst = appendText(dst, `,"value":`, `,"value_b64":"`, r.Value)
		}
	}
	if r.ValueSchemaID != 0 {
		dst = strconv.AppendInt(append(dst, `,"schema_id":`...), int64(r.ValueSchemaID), 10)
	}
	if r.KeySchemaID != 0 {
		dst = strconv.AppendInt(append(dst, `,"key_schema_id":`...), int64(r.KeySchemaID), 10)
	}
	if r.Late {
		dst = append(dst, `,"late":true,"late_by_ms":`...)
		dst = strconv.AppendInt(dst, r.LateBy, 10)
	} else {
		dst = append(dst, `,"late":false`...)
	}
	if reason, ok := Reason(r); ok {
		dst = append(dst, `,"reason":`...)
		dst = AppendBytes(dst, reason)
	}
	return append(dst, '}')
}

// appendText appends name and b as a JSON string, or, when b is not valid
// UTF-8, b64name and b in base64 (invariant 3). The escaping loop finds
// invalid UTF-8 itself, so text costs what it always did.
func appendText(dst []byte, name, b64name string, b []byte) []byte {
	mark := len(dst)
	dst, ok := appendString(append(dst, name...), unsafe.String(unsafe.SliceData(b), len(b)))
	if !ok {
		return appendBase64(dst[:mark], b64name, b)
	}
	return dst
}

// appendBase64 appends b64name, which opens a string, and b in standard
// base64, closing the string.
func appendBase64(dst []byte, b64name string, b []byte) []byte {
	return append(base64.StdEncoding.AppendEncode(append(dst, b64name...), b), '"')
}

// Reason returns the value of the record's record.ReasonHeader header, if it
// has one (the last one wins).
func Reason(r *record.Record) ([]byte, bool) {
	for i := len(r.Headers) - 1; i >= 0; i-- {
		if r.Headers[i].Key == record.ReasonHeader {
			return r.Headers[i].Value, true
		}
	}
	return nil, false
}

// IsJSON reports whether v is embedded verbatim (or compacted) by
// AppendValue rather than encoded as a string: it is valid JSON and valid
// UTF-8 (jsonfield.Scan's verdict).
func IsJSON(v []byte) bool {
	return jsonfield.Scan(v, nil).Valid
}

// AppendValue appends the JSON that the envelope's value member holds for
// a payload v that is valid UTF-8: v itself when it is valid JSON
// (compacted if it spans lines), else v as a JSON string; null for a nil
// v. One jsonfield.Scan pass decides. ok is false, and dst is returned
// unchanged, when v is neither JSON nor valid UTF-8: the envelope then
// writes value_b64 instead.
func AppendValue(dst []byte, v []byte) (_ []byte, ok bool) {
	if v == nil {
		return append(dst, "null"...), true
	}
	d := jsonfield.Scan(v, nil)
	if d.Valid {
		return appendValue(dst, v, d.Multiline), true
	}
	out, ok := appendString(dst, unsafe.String(unsafe.SliceData(v), len(v)))
	if !ok {
		return dst, false
	}
	return out, true
}

// appendValue writes v, valid JSON, verbatim or compacted when multiline.
func appendValue(dst, v []byte, multiline bool) []byte {
	if !multiline {
		return append(dst, v...)
	}
	var b bytes.Buffer
	_ = json.Compact(&b, v) // cannot fail: v is valid JSON
	return append(dst, b.Bytes()...)
}

// AppendBytes appends b as a quoted JSON string (invariant 3).
func AppendBytes(dst []byte, b []byte) []byte {
	// Read-only view of b: AppendString never retains or mutates it.
	return AppendString(dst, unsafe.String(unsafe.SliceData(b), len(b)))
}

// AppendString appends s as a quoted JSON string (invariant 3).
func AppendString(dst []byte, s string) []byte {
	dst, _ = appendString(dst, s)
	return dst
}

// appendString is AppendString that also reports whether s was valid UTF-8
// (nothing was replaced by U+FFFD).
func appendString(dst []byte, s string) ([]byte, bool) { return jsonstr.Append(dst, s) }

// AppendTime appends the millisecond timestamp ms as RFC 3339 in UTC with
// exactly three fractional digits, e.g. 2026-11-30T05:13:24.123Z. Years
// outside 0000–9999 are written with as many digits as they need.
//
// It is calendar arithmetic rather than time.Time.AppendFormat because every
// record of the JSONL, bulk and PostgreSQL sinks goes through it, and the
// library call would add about a fifth to their encoding (figures:
// docs/bench.md, "Timestamps by calendar arithmetic").
// TestAppendTimeMatchesTimeFormat holds it to the library's output over
// years 1–9999.
func AppendTime(dst []byte, ms int64) []byte {
	days := floorDiv(ms, 86_400_000)
	return appendClock(appendDate(dst, days), ms-days*86_400_000)
}

// appendDate appends the date of the day days after 1970-01-01 and the 'T'.
func appendDate(dst []byte, days int64) []byte {
	y, m, d := civil(days)
	if y < 0 {
		dst = append(dst, '-')
		y = -y
	}
	if y < 1000 {
		dst = append(dst, "000"[:3-digits(y)+1]...)
	}
	dst = strconv.AppendInt(dst, y, 10)
	return append(dst, '-', byte('0'+m/10), byte('0'+m%10), '-', byte('0'+d/10), byte('0'+d%10), 'T')
}

// appendClock appends the time of day of rem milliseconds into a day
// ([0, 86,400,000)) and the 'Z'.
func appendClock(dst []byte, rem int64) []byte {
	h := rem / 3_600_000
	mi := rem / 60_000 % 60
	s := rem / 1000 % 60
	f := rem % 1000
	dst = append(dst,
		byte('0'+h/10), byte('0'+h%10), ':',
		byte('0'+mi/10), byte('0'+mi%10), ':',
		byte('0'+s/10), byte('0'+s%10), '.')
	return append(appendMillis(dst, f), 'Z')
}

// appendMillis appends f ([0, 1000)) as three digits.
func appendMillis(dst []byte, f int64) []byte {
	return append(dst, byte('0'+f/100), byte('0'+f/10%10), byte('0'+f%10))
}

func digits(y int64) int {
	switch {
	case y < 10:
		return 1
	case y < 100:
		return 2
	default:
		return 3
	}
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// civil converts days since 1970-01-01 to a proleptic Gregorian date
// (Howard Hinnant's civil_from_days).
func civil(z int64) (y, m, d int64) {
	z += 719468
	era := floorDiv(z, 146097)
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y = yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = doy - (153*mp+2)/5 + 1
	if mp < 10 {
		m = mp + 3
	} else {
		m = mp - 9
	}
	if m <= 2 {
		y++
	}
	return y, m, d
}
