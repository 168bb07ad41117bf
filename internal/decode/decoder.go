package decode

// An input's compiled form: its event time and ordering key, from JSON
// values, headers, the Kafka timestamp, or a ValueDecoder's decoded value
// (schemad.go here).

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"unsafe"

	"github.com/signalbox/signalbox/formats/value"
	"github.com/signalbox/signalbox/internal/jsonfield"
	"github.com/signalbox/signalbox/record"
)

// Where an event time and a key come from, and how a time is written: the
// job file's names, as the root package's TimeSource, TimeFormat and
// KeySource constants spell them (TestSpecNamesMatchInput).
const (
	TimeFromTimestamp = "timestamp"
	TimeFromField     = "field"
	TimeFromHeader    = "header"
	TimeNone          = "none"

	FormatAuto    = "auto"
	FormatUnixMs  = "unix_ms"
	FormatUnixS   = "unix_s"
	FormatUnixUs  = "unix_us"
	FormatUnixNs  = "unix_ns"
	FormatRFC3339 = "rfc3339"

	KeyFromKafka = "key"
	KeyFromField = "field"
)

// Spec is a validated input with its defaults filled in (the root
// package's Input).
type Spec struct {
	Time, TimeField, TimeFormat string
	Key, KeyField               string
	Decoder, KeyDecoder         ValueDecoder
}

// Decoder is the compiled form of a Spec. It is safe for concurrent use
// except SetRenderIngest, which is set before any record is decoded.
type Decoder struct {
	in        Spec
	timePath  jsonfield.Path
	keyPath   jsonfield.Path
	timeless  bool
	needsJSON bool
	// the paths split for ValueDecoder lookups (Spec.Decoder set)
	timeNames, keyNames []string
	// renderIngest: decode schema'd keys and values into their JSON as
	// they are read, once (decodeSchemad).
	renderIngest bool
}

// Compile compiles a validated Spec.
func Compile(in Spec) *Decoder {
	d := &Decoder{in: in, timeless: in.Time == TimeNone}
	if in.Time == TimeFromField {
		d.timePath, _ = jsonfield.ParsePath(in.TimeField)
		d.needsJSON = true
	}
	if in.Key == KeyFromField {
		d.keyPath, _ = jsonfield.ParsePath(in.KeyField)
		d.needsJSON = true
	}
	if in.Decoder != nil {
		d.needsJSON = false
		d.timeNames, _ = value.SplitPath(in.TimeField)
		d.keyNames, _ = value.SplitPath(in.KeyField)
	}
	return d
}

// Timeless reports whether the input's records have no event time.
func (d *Decoder) Timeless() bool { return d.timeless }

// NeedsJSON reports whether decoding scans the value as JSON (a time or
// key field), which marks a valid one record.Record.ValueJSON already.
func (d *Decoder) NeedsJSON() bool { return d.needsJSON }

// SetRenderIngest makes a schema'd input render its key and value into
// their JSON as they are read (decodeSchemad), when a sink wants it and
// nothing can change the record afterwards.
func (d *Decoder) SetRenderIngest(on bool) { d.renderIngest = on && d.Schemad() }

// Set finds a topic's Decoder: its topic's, else the first pattern's that
// matches, else the fallback (the Kafka timestamp and key).
type Set struct {
	byTopic  map[string]*Decoder
	patterns []pattern
	fallback *Decoder
}

type pattern struct {
	re  *regexp.Regexp
	dec *Decoder
}

// NewSet returns a Set with only the fallback.
func NewSet() *Set {
	return &Set{byTopic: map[string]*Decoder{}, fallback: Compile(Spec{Time: TimeFromTimestamp, TimeFormat: FormatAuto, Key: KeyFromKafka})}
}

// Add adds d for topic.
func (s *Set) Add(topic string, d *Decoder) { s.byTopic[topic] = d }

// AddPattern adds d for the topics re matches, after those added before.
func (s *Set) AddPattern(re *regexp.Regexp, d *Decoder) {
	s.patterns = append(s.patterns, pattern{re, d})
}

// For returns topic's Decoder.
func (s *Set) For(topic string) *Decoder {
	if d := s.byTopic[topic]; d != nil {
		return d
	}
	for _, p := range s.patterns {
		if p.re.MatchString(topic) {
			return p.dec
		}
	}
	return s.fallback
}

// Each calls fn for every Decoder added (not the fallback).
func (s *Set) Each(fn func(*Decoder)) {
	for _, d := range s.byTopic {
		fn(d)
	}
	for _, p := range s.patterns {
		fn(p.dec)
	}
}

// The accepted event-time range, in milliseconds since the Unix epoch: the
// years 0001 to 9999, what RFC 3339 can write (and every sink can store:
// PostgreSQL's timestamptz, a bulk sink's external version event_time·1000,
// a Kafka timestamp). An event time outside it, from any source (the Kafka
// timestamp, a field or header in any format), is malformed: the record goes
// to the dead-letter sink with the reason.
const (
	MinEventTime int64 = -62135596800000 // 0001-01-01T00:00:00Z
	MaxEventTime int64 = 253402300799999 // 9999-12-31T23:59:59.999Z
)

// Decode fills r.EventTime, r.OrderKey and r.Timeless. The error text is the
// dead-letter reason, except a hold or the context's error from a
// ValueDecoder (classify). When the event time cannot be decoded the record
// is left Timeless (EventTime 0): a dead-lettered record then carries no
// event time rather than a wrong one (1970).
func (d *Decoder) Decode(ctx context.Context, r *record.Record) error {
	if d.in.Decoder != nil || d.in.KeyDecoder != nil {
		return d.decodeSchemad(ctx, r)
	}
	return d.decodeJSON(r, nil)
}

// Members is what DecodeMembers records of a value: the spans of its
// top-level object's members, and whether they are all of them
// (jsonfield.ScanMembers' ok).
type Members struct {
	Spans []jsonfield.Span
	OK    bool
}

// DecodeMembers is Decode that also records, in m, the members of the
// value's top-level object when decoding scans the value (NeedsJSON: a
// time or key field): m.Spans is reset, then filled, and m.OK reports
// that they are all the members of a valid object (jsonfield.ScanMembers;
// false when the value was not scanned). The scan is the one Decode makes:
// the members cost no second pass.
func (d *Decoder) DecodeMembers(ctx context.Context, r *record.Record, m *Members) error {
	m.Spans, m.OK = m.Spans[:0], false
	if d.in.Decoder != nil || d.in.KeyDecoder != nil {
		return d.decodeSchemad(ctx, r)
	}
	return d.decodeJSON(r, m)
}

// setTime fills r.Timeless and r.EventTime from the input's settings and
// the decoded time t (err: it could not be decoded), range-checked. A
// record without a good event time is left Timeless, at 0.
func (d *Decoder) setTime(r *record.Record, t int64, err error) error {
	r.Timeless = d.timeless
	if d.timeless {
		return nil
	}
	if err == nil && (t < MinEventTime || t > MaxEventTime) {
		err = fmt.Errorf("event time %d ms is outside the accepted range [%d, %d] (years 0001 to 9999)", t, MinEventTime, MaxEventTime)
	}
	if err != nil {
		r.Timeless, r.EventTime = true, 0
		return err
	}
	r.EventTime = t
	return nil
}

// decodeJSON is decode for an input whose value is JSON (or opaque bytes),
// recording the value's members in m when it scans the value (m nil: not
// asked).
func (d *Decoder) decodeJSON(r *record.Record, m *Members) error {
	var t int64
	var err error
	if !d.timeless {
		t, err = d.eventTime(r, m)
	}
	if err := d.setTime(r, t, err); err != nil {
		return err
	}
	switch d.in.Key {
	case KeyFromField:
		if r.Value == nil {
			return fmt.Errorf("tombstone: no value to read the key field %q from", d.in.KeyField)
		}
		var v jsonfield.Value
		var err error
		if d.in.Time == TimeFromField {
			v, err = jsonfield.Get(r.Value, d.keyPath) // the time field's scan validated the value
		} else {
			v, err = d.field(r, d.keyPath, m)
		}
		if err != nil {
			return fmt.Errorf("key field %q: %w", d.in.KeyField, err)
		}
		if r.OrderKey, err = v.Text(); err != nil {
			return fmt.Errorf("key field %q: %w", d.in.KeyField, err)
		}
	default:
		// No copy: a source never rewrites a delivered record's bytes
		// (record.Record.OrderKey).
		r.OrderKey = unsafe.String(unsafe.SliceData(r.Key), len(r.Key))
	}
	return nil
}

// eventTime decodes r's event time in milliseconds, not yet range-checked
// (m: as field's).
func (d *Decoder) eventTime(r *record.Record, m *Members) (int64, error) {
	switch d.in.Time {
	case TimeFromTimestamp:
		if r.Timestamp.IsZero() {
			return 0, errors.New("event time: record has no timestamp")
		}
		return r.Timestamp.UnixMilli(), nil
	case TimeFromHeader:
		for _, h := range r.Headers {
			if h.Key == d.in.TimeField {
				t, err := parseTime(h.Value, d.in.TimeFormat, false)
				if err != nil {
					return 0, fmt.Errorf("event time header %q: %w", d.in.TimeField, err)
				}
				return t, nil
			}
		}
		return 0, fmt.Errorf("event time header %q: missing", d.in.TimeField)
	}
	if r.Value == nil {
		return 0, fmt.Errorf("tombstone: no value to read the event time field %q from", d.in.TimeField)
	}
	v, err := d.field(r, d.timePath, m)
	if err != nil {
		return 0, fmt.Errorf("event time field %q: %w", d.in.TimeField, err)
	}
	raw, quoted := v.Raw, false
	switch v.Kind {
	case jsonfield.String:
		raw, quoted = raw[1:len(raw)-1], true
	case jsonfield.Number:
	default:
		return 0, fmt.Errorf("event time field %q: not a number or string", d.in.TimeField)
	}
	t, err := parseTime(raw, d.in.TimeFormat, !quoted)
	if err != nil {
		return 0, fmt.Errorf("event time field %q: %w", d.in.TimeField, err)
	}
	return t, nil
}

// field finds path in r's value like jsonfield.Get, in one pass that also
// validates the whole value: a valid value on one line is marked
// record.Record.ValueJSON, so that a sink embedding it does not scan it
// again. An invalid value gets Get's answer (it reads up to the field
// only), so validation never changes which records decode. With m, the
// pass records the value's members too (jsonfield.ScanMembers).
func (d *Decoder) field(r *record.Record, path jsonfield.Path, m *Members) (jsonfield.Value, error) {
	var doc jsonfield.Doc
	if m != nil {
		doc, m.Spans, m.OK = jsonfield.ScanMembers(r.Value, path, m.Spans)
	} else {
		doc = jsonfield.Scan(r.Value, path)
	}
	if !doc.Valid {
		return jsonfield.Get(r.Value, path)
	}
	r.ValueJSON = !doc.Multiline
	return doc.Field, doc.Err
}
