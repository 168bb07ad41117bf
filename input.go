package signalbox

// Input: how a topic's records are decoded (event time, ordering key), its
// validation and compiled form (internal/decode); the ValueDecoder contract
// of schema'd formats, and rendering their JSON for the sinks.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/signalbox/signalbox/formats/value"
	"github.com/signalbox/signalbox/internal/decode"
	"github.com/signalbox/signalbox/internal/fielderr"
	"github.com/signalbox/signalbox/internal/jsonfield"
	"github.com/signalbox/signalbox/internal/topicpattern"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/retry"
	"go.uber.org/zap"
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

// ValueDecoder decodes the key or value of a record in a schema'd format
// (Input.Decoder, Input.KeyDecoder). *formats.Decoder implements it.
//
// DecodeValue is called from the poller goroutine at ingest, where the
// record's JSON is kept with it for the sinks when some sink wants JSON and
// no Transform may change the record; otherwise ingest calls CheckValue
// (when the decoder is a ValueChecker), and DecodeValue runs again on the
// engine goroutine when the record is handed to a sink that wants JSON, as
// it does for a record restored from a durable store. It must be safe for
// concurrent use, and decode the same bytes to the same result every time.
// Its error is one of:
//   - retry.IsRetryable: the decoder could not answer (a schema registry
//     down): the record is held, with the records after it in its
//     partition, and tried again with backoff; the partition holds the
//     watermark meanwhile, as one that has not delivered;
//   - the context's error (ctx is done), or a retry.IsFatal one: Run stops;
//   - anything else: the record is bad, and goes to the dead-letter sink
//     with the error's text as the reason.
type ValueDecoder interface {
	DecodeValue(ctx context.Context, payload []byte, headers []record.Header) (value.Decoded, error)
}

// ValueChecker is implemented by a ValueDecoder that can check a payload
// and read its fields without rendering it (*formats.Decoder): at ingest
// of a record whose JSON is not wanted there (every sink writes original
// bytes, or a Transform runs; see ValueDecoder), where only the event time
// and key fields are read, the engine calls CheckValue instead of
// DecodeValue. CheckValue must fail exactly where DecodeValue fails, with
// the same error, and its value must look up and render as DecodeValue's.
type ValueChecker interface {
	CheckValue(ctx context.Context, payload []byte, headers []record.Header) (value.Decoded, error)
}

// ValueReleaser is implemented by a ValueDecoder that reuses the values it
// returns (*formats.Decoder): the engine hands each back with ReleaseValue
// once it has read its fields and taken its JSON, and uses it no more.
type ValueReleaser interface {
	ReleaseValue(v value.Decoded)
}

// embedsValueJSON reports whether some sink trusts record.Record.ValueJSON
// (SinkInfo.EmbedsValueJSON).
func embedsValueJSON(sinks []SinkInfo) bool {
	return slices.ContainsFunc(sinks, func(s SinkInfo) bool { return s.EmbedsValueJSON })
}

// bytesOnly reports whether every sink writes only original bytes
// (SinkInfo.BytesOnly), so that none needs a record's decoded JSON.
func bytesOnly(sinks []SinkInfo) bool {
	return len(sinks) > 0 && !slices.ContainsFunc(sinks, func(s SinkInfo) bool { return !s.BytesOnly })
}

// renderOut is render for a record on its way to the sinks, called by the
// engine (engine.Config.Render) on its goroutine for a record of dec's
// input, unless it was rendered at
// ingest (rendered). A record that was checked at ingest decodes again from
// the decoder's cache; only one restored from a durable store after a
// restart, or changed by a Transform, may need the registry, and while the
// registry cannot answer the engine waits here, with backoff (holding,
// never skipping; a fatal error stops the run). dead is the dead-letter
// reason of a record that cannot be decoded.
func (p *Pipeline) renderOut(ctx context.Context, dec *decode.Decoder, rec *record.Record) (dead string, err error) {
	if dec.Rendered(rec) {
		return "", nil
	}
	var h *decode.HoldError
	if err = dec.Render(ctx, rec); errors.As(err, &h) { // the retry policy only once the first try is held
		var logged time.Time
		logWait := func(attempt int, err error, _ time.Duration) { // the engine waits: say so, at most every holdLogEvery
			if now := time.Now(); now.Sub(logged) >= holdLogEvery { // wall time: a log rate limit
				logged = now
				p.cfg.logger.Warn("schema'd record cannot be decoded for the sinks yet: release waits, retrying",
					zap.String("topic", rec.Topic), zap.Int32("partition", rec.Partition), zap.Int64("offset", rec.Offset),
					zap.Int("attempt", attempt), zap.Error(err))
			}
		}
		err = retry.Policy{MaxElapsed: -1, OnRetry: logWait}.Do(ctx, func(ctx context.Context) error {
			if err := dec.Render(ctx, rec); errors.As(err, &h) {
				return retry.Retryable(err)
			} else {
				return err
			}
		})
	}
	switch {
	case err == nil:
		return "", nil
	case ctx.Err() != nil || retry.IsFatal(err):
		return "", cmp.Or(ctx.Err(), err)
	}
	return err.Error(), nil
}

// setRenderIngest makes every schema'd input render its keys and values at
// ingest when a sink wants their JSON and no Transform can change a record
// after that (it runs on the engine goroutine, after ingest): the one pass
// that checks a value then also renders it, off the engine goroutine.
func (p *Pipeline) setRenderIngest() {
	on := p.schemad && p.cfg.transform == nil
	p.decoders.Each(func(d *decode.Decoder) { d.SetRenderIngest(on) })
}
