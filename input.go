package signalbox

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"unsafe"

	"github.com/signalbox/signalbox/formats/value"
	"github.com/signalbox/signalbox/internal/fielderr"
	"github.com/signalbox/signalbox/internal/jsonfield"
	"github.com/signalbox/signalbox/internal/topicpattern"
	"github.com/signalbox/signalbox/record"
)

// TimeSource says where an input's event time comes from.
type TimeSource string

// The event-time sources.
const (
	TimeFromTimestamp TimeSource = "timestamp" // the Kafka record timestamp
	TimeFromField     TimeSource = "field"     // a JSON field of the value
	TimeFromHeader    TimeSource = "header"    // a record header
	TimeNone          TimeSource = "none"      // reference data: no event time
)

// TimeFormat says how a field or header encodes the event time.
type TimeFormat string

// The event-time formats.
const (
	FormatAuto    TimeFormat = "auto"    // numbers as unix_ms, strings as RFC 3339 or a number
	FormatUnixMs  TimeFormat = "unix_ms" // milliseconds since the epoch
	FormatUnixS   TimeFormat = "unix_s"  // seconds since the epoch (may be fractional)
	FormatUnixUs  TimeFormat = "unix_us"
	FormatUnixNs  TimeFormat = "unix_ns"
	FormatRFC3339 TimeFormat = "rfc3339"
)

// KeySource says where an input's ordering key comes from.
type KeySource string

// The key sources.
const (
	KeyFromKafka KeySource = "key"   // the Kafka record key (default)
	KeyFromField KeySource = "field" // a JSON field of the value
)

// Input describes how to decode the records of one topic.
type Input struct {
	// Topic is the input's name: the Kafka topic (or the file source's topic).
	Topic string
	// TopicPattern, set instead of Topic, is a regular expression (Go
	// syntax, matching the whole name): the input applies to every topic
	// whose name matches and that no Topic input names, each topic being
	// an input of its own. The source finds the topics (the Kafka source's
	// Config.TopicPatterns).
	TopicPattern string
	// Time is where the event time comes from. Default TimeFromTimestamp.
	Time TimeSource
	// TimeField is the dotted JSON path (Time = field) or the header name
	// (Time = header).
	TimeField string
	// TimeFormat is how the field or header encodes time. Default FormatAuto.
	TimeFormat TimeFormat
	// Key is where the ordering key comes from. Default KeyFromKafka.
	Key KeySource
	// KeyField is the dotted JSON path when Key = field.
	KeyField string
	// Decoder, when set, decodes the value (schema'd formats, see
	// ValueDecoder): TimeField and KeyField are then paths in the decoded
	// value, and the JSON sinks write the decoded JSON. Nil: the value is
	// JSON (or opaque bytes), as read today.
	Decoder ValueDecoder
	// KeyDecoder, when set, decodes the Kafka key: with Key = key the
	// ordering key is the decoded key's text, and the JSON sinks write the
	// decoded key. Nil: the key is its bytes.
	KeyDecoder ValueDecoder
}

// decoder is the compiled form of an Input.
type decoder struct {
	in        Input
	timePath  jsonfield.Path
	keyPath   jsonfield.Path
	timeless  bool
	needsJSON bool
	// the paths split for ValueDecoder lookups (Input.Decoder set)
	timeNames, keyNames []string
	// renderIngest: decode schema'd keys and values into their JSON at
	// ingest, once (decodeSchemad); set by NewPipeline.
	renderIngest bool
}

// The defaults of an Input's fields.
const (
	DefaultTimeSource = TimeFromTimestamp
	DefaultTimeFormat = FormatAuto
	DefaultKeySource  = KeyFromKafka
)

func (in Input) withDefaults() Input {
	if in.Time == "" {
		in.Time = DefaultTimeSource
	}
	if in.TimeFormat == "" {
		in.TimeFormat = DefaultTimeFormat
	}
	if in.Key == "" {
		in.Key = DefaultKeySource
	}
	return in
}

// Validate reports every problem with the input, each naming its field,
// joined in one error. A field that the input's Time or Key does not use
// (TimeField or TimeFormat with TimeFromTimestamp or TimeNone, KeyField with
// KeyFromKafka) is an error, not silently ignored: it is a setting that
// would do nothing, most likely a mistake about where the time or key comes
// from.
func (in Input) Validate() error {
	in, set := in.withDefaults(), in
	var errs []error
	bad := func(field, format string, args ...any) { errs = append(errs, fielderr.New(field, format, args...)) }
	switch {
	case in.Topic == "" && in.TopicPattern == "":
		bad("topic", "required (or topic_pattern)")
	case in.Topic != "" && in.TopicPattern != "":
		bad("topic_pattern", "set topic or topic_pattern, not both")
	case in.TopicPattern != "":
		if _, err := topicpattern.Compile(in.TopicPattern); err != nil {
			bad("topic_pattern", "%v", err)
		}
	}
	switch in.Time {
	case TimeFromTimestamp, TimeNone:
		if in.TimeField != "" {
			bad("time_field", "only used when time is field or header")
		}
		if set.TimeFormat != "" {
			bad("time_format", "only used when time is field or header")
		}
	case TimeFromField:
		if in.TimeField == "" {
			bad("time_field", "required when time is field")
		} else if _, err := jsonfield.ParsePath(in.TimeField); err != nil {
			bad("time_field", "%s is not a dotted JSON path such as meta.ts", fielderr.Quote(in.TimeField))
		}
	case TimeFromHeader:
		if in.TimeField == "" {
			bad("time_field", "required when time is header (the header name)")
		}
	default:
		bad("time", "%s is not one of timestamp, field, header, none", fielderr.Quote(string(in.Time)))
	}
	switch in.TimeFormat {
	case FormatAuto, FormatUnixMs, FormatUnixS, FormatUnixUs, FormatUnixNs, FormatRFC3339:
	default:
		bad("time_format", "%s is not one of auto, unix_ms, unix_s, unix_us, unix_ns, rfc3339", fielderr.Quote(string(in.TimeFormat)))
	}
	switch in.Key {
	case KeyFromKafka:
		if in.KeyField != "" {
			bad("key_field", "only used when key is field")
		}
	case KeyFromField:
		if in.KeyField == "" {
			bad("key_field", "required when key is field")
		} else if _, err := jsonfield.ParsePath(in.KeyField); err != nil {
			bad("key_field", "%s is not a dotted JSON path such as meta.id", fielderr.Quote(in.KeyField))
		}
	default:
		bad("key", "%s is not one of key, field", fielderr.Quote(string(in.Key)))
	}
	return errors.Join(errs...)
}

// name is how errors name the input: its topic, or /pattern/.
func (in Input) name() string {
	if in.TopicPattern != "" {
		return "/" + in.TopicPattern + "/"
	}
	return in.Topic
}

// topicPattern is a TopicPattern input, compiled.
type topicPattern struct {
	re  *regexp.Regexp
	dec *decoder
}

// decoderFor returns the decoder of topic: its Topic input, else the first
// TopicPattern input that matches, else the default (timestamp, key).
func (p *Pipeline) decoderFor(topic string) *decoder {
	if d := p.decoders[topic]; d != nil {
		return d
	}
	for _, tp := range p.patterns {
		if tp.re.MatchString(topic) {
			return tp.dec
		}
	}
	return p.fallback
}

func compileInput(in Input) (*decoder, error) {
	if err := in.Validate(); err != nil {
		return nil, fmt.Errorf("input %s: %w", fielderr.Quote(in.name()), err)
	}
	in = in.withDefaults()
	d := &decoder{in: in, timeless: in.Time == TimeNone}
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
	return d, nil
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

// decode fills r.EventTime, r.OrderKey and r.Timeless. The error text is the
// dead-letter reason, except a hold or the context's error from a
// ValueDecoder (classify). When the event time cannot be decoded the record
// is left Timeless (EventTime 0): a dead-lettered record then carries no
// event time rather than a wrong one (1970).
func (d *decoder) decode(ctx context.Context, r *record.Record) error {
	if d.in.Decoder != nil || d.in.KeyDecoder != nil {
		return d.decodeSchemad(ctx, r)
	}
	return d.decodeJSON(r)
}

// setTime fills r.Timeless and r.EventTime from the input's settings and
// the decoded time t (err: it could not be decoded), range-checked. A
// record without a good event time is left Timeless, at 0.
func (d *decoder) setTime(r *record.Record, t int64, err error) error {
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

// decodeJSON is decode for an input whose value is JSON (or opaque bytes).
func (d *decoder) decodeJSON(r *record.Record) error {
	var t int64
	var err error
	if !d.timeless {
		t, err = d.eventTime(r)
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
			v, err = d.field(r, d.keyPath)
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

// eventTime decodes r's event time in milliseconds, not yet range-checked.
func (d *decoder) eventTime(r *record.Record) (int64, error) {
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
	v, err := d.field(r, d.timePath)
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
// only), so validation never changes which records decode.
func (d *decoder) field(r *record.Record, path jsonfield.Path) (jsonfield.Value, error) {
	doc := jsonfield.Scan(r.Value, path)
	if !doc.Valid {
		return jsonfield.Get(r.Value, path)
	}
	r.ValueJSON = !doc.Multiline
	return doc.Field, doc.Err
}
