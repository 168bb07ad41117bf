package signalbox

import (
	"errors"
	"fmt"

	"github.com/signalbox/signalbox/internal/decode"
	"github.com/signalbox/signalbox/internal/fielderr"
	"github.com/signalbox/signalbox/internal/jsonfield"
	"github.com/signalbox/signalbox/internal/topicpattern"
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

// compileInput validates in and compiles it (internal/decode).
func compileInput(in Input) (*decode.Decoder, error) {
	if err := in.Validate(); err != nil {
		return nil, fmt.Errorf("input %s: %w", fielderr.Quote(in.name()), err)
	}
	in = in.withDefaults()
	s := decode.Spec{Time: string(in.Time), TimeField: in.TimeField, TimeFormat: string(in.TimeFormat), Key: string(in.Key), KeyField: in.KeyField}
	if in.Decoder != nil {
		s.Decoder = in.Decoder
	}
	if in.KeyDecoder != nil {
		s.KeyDecoder = in.KeyDecoder
	}
	return decode.Compile(s), nil
}

// The accepted event-time range, in milliseconds since the Unix epoch: the
// years 0001 to 9999, what RFC 3339 can write (and every sink can store:
// PostgreSQL's timestamptz, a bulk sink's external version event_time·1000,
// a Kafka timestamp). An event time outside it, from any source (the Kafka
// timestamp, a field or header in any format), is malformed: the record goes
// to the dead-letter sink with the reason.
const (
	MinEventTime = decode.MinEventTime // 0001-01-01T00:00:00Z
	MaxEventTime = decode.MaxEventTime // 9999-12-31T23:59:59.999Z
)
