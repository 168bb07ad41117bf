package signalbox

// Schema'd keys and values: the decoder hook of an Input, and what the
// engine does with its answers (a bad record, a hold, the context's end).

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
	"unsafe"

	"go.uber.org/zap"

	"github.com/signalbox/signalbox/formats/value"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/retry"
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

// release hands v back to vd when vd reuses its values.
func release(vd ValueDecoder, v value.Decoded) {
	if r, ok := vd.(ValueReleaser); ok && v != nil {
		r.ReleaseValue(v)
	}
}

// check is vd's CheckValue when it has one, else its DecodeValue.
func check(ctx context.Context, vd ValueDecoder, payload []byte, headers []record.Header) (value.Decoded, error) {
	if c, ok := vd.(ValueChecker); ok {
		return c.CheckValue(ctx, payload, headers)
	}
	return vd.DecodeValue(ctx, payload, headers)
}

// holdError marks a record that a ValueDecoder could not decode yet.
type holdError struct{ err error }

func (e *holdError) Error() string { return "held: " + e.err.Error() }
func (e *holdError) Unwrap() error { return e.err }

// classify turns a ValueDecoder's error into the record's fate: a
// *holdError, the context's error (ctx is done), or the dead-letter reason
// (what names the payload: "key" or "" for the value), unless retry.IsFatal.
func classify(ctx context.Context, err error, what string) error {
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case retry.IsRetryable(err) && !retry.IsFatal(err), errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return &holdError{err: err}
	case what != "":
		return fmt.Errorf("%s: %w", what, err)
	}
	return err
}

// decodeSchemad is decode for an input with a Decoder or a KeyDecoder.
// With d.renderIngest the key and value are decoded and rendered here, in
// one pass each, and their JSON travels with the record (renderOut then has
// nothing to do); otherwise they are only checked (ValueChecker), and
// rendered at release if a sink wants JSON.
func (d *decoder) decodeSchemad(ctx context.Context, r *record.Record) error {
	var val, key value.Decoded
	var err error
	if d.in.KeyDecoder != nil {
		defer func() { release(d.in.KeyDecoder, key) }()
		if key, err = d.read(ctx, d.in.KeyDecoder, r.Key, r.Headers); err != nil {
			r.Timeless, r.EventTime = true, 0
			return classify(ctx, err, "key")
		}
	}
	if d.in.Decoder == nil {
		if err := d.decodeJSON(r); err != nil {
			return err
		}
	} else {
		defer func() { release(d.in.Decoder, val) }()
		if val, err = d.read(ctx, d.in.Decoder, r.Value, r.Headers); err != nil {
			r.Timeless, r.EventTime = true, 0
			return classify(ctx, err, "")
		}
		if err := d.fromDecoded(r, val); err != nil {
			return err
		}
	}
	if key != nil && d.in.Key == KeyFromKafka {
		r.OrderKey = keyText(key)
	}
	if d.renderIngest {
		if key != nil {
			r.DecodedKey, r.KeySchemaID = key.JSON(), int32(key.SchemaID())
		}
		if val != nil {
			r.DecodedValue, r.ValueSchemaID = val.JSON(), int32(val.SchemaID())
		}
	}
	return nil
}

// read is how decodeSchemad reads a payload: DecodeValue when it renders at
// ingest, else check.
func (d *decoder) read(ctx context.Context, vd ValueDecoder, payload []byte, headers []record.Header) (value.Decoded, error) {
	if d.renderIngest {
		return vd.DecodeValue(ctx, payload, headers)
	}
	return check(ctx, vd, payload, headers)
}

// fromDecoded fills r's event time and ordering key from its decoded value.
func (d *decoder) fromDecoded(r *record.Record, val value.Decoded) error {
	var t int64
	var err error
	if !d.timeless {
		t, err = d.decodedTime(r, val)
	}
	if err := d.setTime(r, t, err); err != nil {
		return err
	}
	if d.in.Key != KeyFromField {
		r.OrderKey = unsafe.String(unsafe.SliceData(r.Key), len(r.Key)) // as decodeJSON
		return nil
	}
	if r.Value == nil {
		return fmt.Errorf("tombstone: no value to read the key field %q from", d.in.KeyField)
	}
	f, ok := val.Lookup(d.keyNames)
	if !ok {
		return fmt.Errorf("key field %q: missing", d.in.KeyField)
	}
	switch f.Kind {
	case value.KindString, value.KindNumber, value.KindBool, value.KindTime:
		r.OrderKey = f.String()
		return nil
	}
	return fmt.Errorf("key field %q: not a string, number or boolean", d.in.KeyField)
}

// decodedTime is eventTime for a decoded value: a logical timestamp or date
// is its instant; a number or string goes through the time format.
func (d *decoder) decodedTime(r *record.Record, val value.Decoded) (int64, error) {
	if d.in.Time != TimeFromField {
		return d.eventTime(r)
	}
	if r.Value == nil {
		return 0, fmt.Errorf("tombstone: no value to read the event time field %q from", d.in.TimeField)
	}
	f, ok := val.Lookup(d.timeNames)
	if !ok {
		return 0, fmt.Errorf("event time field %q: missing", d.in.TimeField)
	}
	var t int64
	var err error
	switch f.Kind {
	case value.KindTime:
		return f.Time.UnixMilli(), nil
	case value.KindNumber:
		t, err = parseTime([]byte(f.Text), d.in.TimeFormat, true)
	case value.KindString:
		t, err = parseTime([]byte(f.Text), d.in.TimeFormat, false)
	default:
		return 0, fmt.Errorf("event time field %q: not a number, string or timestamp", d.in.TimeField)
	}
	if err != nil {
		return 0, fmt.Errorf("event time field %q: %w", d.in.TimeField, err)
	}
	return t, nil
}

// keyText is a decoded key's ordering text: a string, number or boolean
// key is its text (as a key read as bytes would be), anything else its
// JSON.
func keyText(k value.Decoded) string {
	if f, ok := k.Lookup(nil); ok {
		switch f.Kind {
		case value.KindString, value.KindNumber, value.KindBool, value.KindTime:
			return f.String()
		}
	}
	return string(k.JSON())
}

// schemad reports whether the input decodes keys or values with a
// ValueDecoder.
func (d *decoder) schemad() bool { return d.in.Decoder != nil || d.in.KeyDecoder != nil }

// render decodes r's key and value again for the sinks (record.Record's
// DecodedKey, DecodedValue and their schema ids). Its error is classify's.
func (d *decoder) render(ctx context.Context, r *record.Record) error {
	if d.in.KeyDecoder != nil {
		k, err := d.in.KeyDecoder.DecodeValue(ctx, r.Key, r.Headers)
		if err != nil {
			return classify(ctx, err, "key")
		}
		r.DecodedKey, r.KeySchemaID = k.JSON(), int32(k.SchemaID())
		release(d.in.KeyDecoder, k)
	}
	if d.in.Decoder != nil {
		v, err := d.in.Decoder.DecodeValue(ctx, r.Value, r.Headers)
		if err != nil {
			return classify(ctx, err, "")
		}
		r.DecodedValue, r.ValueSchemaID = v.JSON(), int32(v.SchemaID())
		release(d.in.Decoder, v)
	}
	return nil
}

// embedsValueJSON reports whether some sink trusts record.Record.ValueJSON
// (SinkInfo.EmbedsValueJSON).
func embedsValueJSON(sinks []SinkInfo) bool {
	return slices.ContainsFunc(sinks, func(s SinkInfo) bool { return s.EmbedsValueJSON })
}

// rendered reports whether rec's key and value were rendered at ingest
// (renderIngest): a record restored from a durable store was not (the store
// keeps the original bytes only), and is rendered at release.
func (d *decoder) rendered(rec *record.Record) bool {
	return d.renderIngest && (d.in.KeyDecoder == nil || rec.DecodedKey != nil) && (d.in.Decoder == nil || rec.DecodedValue != nil)
}

// bytesOnly reports whether every sink writes only original bytes
// (SinkInfo.BytesOnly), so that none needs a record's decoded JSON.
func bytesOnly(sinks []SinkInfo) bool {
	return len(sinks) > 0 && !slices.ContainsFunc(sinks, func(s SinkInfo) bool { return !s.BytesOnly })
}

// renderOut is render for a record on its way to the sinks, called by the
// engine (engine.Config.Render) on its goroutine, unless it was rendered at
// ingest (rendered). A record that was checked at ingest decodes again from
// the decoder's cache; only one restored from a durable store after a
// restart, or changed by a Transform, may need the registry, and while the
// registry cannot answer the engine waits here, with backoff (holding,
// never skipping; a fatal error stops the run). dead is the dead-letter
// reason of a record that cannot be decoded.
func (p *Pipeline) renderOut(ctx context.Context, rec *record.Record) (dead string, err error) {
	dec := p.decoderFor(rec.Topic)
	if !dec.schemad() || dec.rendered(rec) {
		return "", nil
	}
	var h *holdError
	if err = dec.render(ctx, rec); errors.As(err, &h) { // the retry policy only once the first try is held
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
			if err := dec.render(ctx, rec); errors.As(err, &h) {
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
	for _, d := range p.decoders {
		d.renderIngest = on && d.schemad()
	}
	for _, tp := range p.patterns {
		tp.dec.renderIngest = on && tp.dec.schemad()
	}
}
