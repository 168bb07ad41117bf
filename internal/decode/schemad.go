package decode

// Schema'd keys and values: a ValueDecoder's answers, and what they mean
// for the record (a bad record, a hold, the context's end).

import (
	"context"
	"errors"
	"fmt"
	"unsafe"

	"github.com/signalbox/signalbox/formats/value"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/retry"
)

// ValueDecoder decodes a schema'd key or value (the root package's
// ValueDecoder documents the contract, and that a decoder may also check
// a payload without rendering it, CheckValue, and take back the values it
// returned, ReleaseValue).
type ValueDecoder interface {
	DecodeValue(ctx context.Context, payload []byte, headers []record.Header) (value.Decoded, error)
}

// release hands v back to vd when vd reuses its values.
func release(vd ValueDecoder, v value.Decoded) {
	if r, ok := vd.(interface{ ReleaseValue(value.Decoded) }); ok && v != nil {
		r.ReleaseValue(v)
	}
}

// check is vd's CheckValue when it has one, else its DecodeValue.
func check(ctx context.Context, vd ValueDecoder, payload []byte, headers []record.Header) (value.Decoded, error) {
	if c, ok := vd.(interface {
		CheckValue(context.Context, []byte, []record.Header) (value.Decoded, error)
	}); ok {
		return c.CheckValue(ctx, payload, headers)
	}
	return vd.DecodeValue(ctx, payload, headers)
}

// HoldError marks a record that a ValueDecoder could not decode yet.
type HoldError struct{ err error }

func (e *HoldError) Error() string { return "held: " + e.err.Error() }

func (e *HoldError) Unwrap() error { return e.err }

// Classify turns a ValueDecoder's error into the record's fate: a
// *HoldError, the context's error (ctx is done), or the dead-letter reason
// (what names the payload: "key" or "" for the value), unless retry.IsFatal.
func Classify(ctx context.Context, err error, what string) error {
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case retry.IsRetryable(err) && !retry.IsFatal(err), errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return &HoldError{err: err}
	case what != "":
		return fmt.Errorf("%s: %w", what, err)
	}
	return err
}

// decodeSchemad is decode for an input with a Decoder or a KeyDecoder.
// With d.renderIngest the key and value are decoded and rendered here, in
// one pass each, and their JSON travels with the record (renderOut then has
// nothing to do); otherwise they are only checked (CheckValue), and
// rendered at release if a sink wants JSON.
func (d *Decoder) decodeSchemad(ctx context.Context, r *record.Record) error {
	var val, key value.Decoded
	var err error
	if d.in.KeyDecoder != nil {
		defer func() { release(d.in.KeyDecoder, key) }()
		if key, err = d.read(ctx, d.in.KeyDecoder, r.Key, r.Headers); err != nil {
			r.Timeless, r.EventTime = true, 0
			return Classify(ctx, err, "key")
		}
	}
	if d.in.Decoder == nil {
		if err := d.decodeJSON(r, nil); err != nil {
			return err
		}
	} else {
		defer func() { release(d.in.Decoder, val) }()
		if val, err = d.read(ctx, d.in.Decoder, r.Value, r.Headers); err != nil {
			r.Timeless, r.EventTime = true, 0
			return Classify(ctx, err, "")
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
func (d *Decoder) read(ctx context.Context, vd ValueDecoder, payload []byte, headers []record.Header) (value.Decoded, error) {
	if d.renderIngest {
		return vd.DecodeValue(ctx, payload, headers)
	}
	return check(ctx, vd, payload, headers)
}

// fromDecoded fills r's event time and ordering key from its decoded value.
func (d *Decoder) fromDecoded(r *record.Record, val value.Decoded) error {
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
func (d *Decoder) decodedTime(r *record.Record, val value.Decoded) (int64, error) {
	if d.in.Time != TimeFromField {
		return d.eventTime(r, nil)
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

// Schemad reports whether the input decodes keys or values with a
// ValueDecoder.
func (d *Decoder) Schemad() bool { return d.in.Decoder != nil || d.in.KeyDecoder != nil }

// Render decodes r's key and value again for the sinks (record.Record's
// DecodedKey, DecodedValue and their schema ids). Its error is classify's.
func (d *Decoder) Render(ctx context.Context, r *record.Record) error {
	if d.in.KeyDecoder != nil {
		k, err := d.in.KeyDecoder.DecodeValue(ctx, r.Key, r.Headers)
		if err != nil {
			return Classify(ctx, err, "key")
		}
		r.DecodedKey, r.KeySchemaID = k.JSON(), int32(k.SchemaID())
		release(d.in.KeyDecoder, k)
	}
	if d.in.Decoder != nil {
		v, err := d.in.Decoder.DecodeValue(ctx, r.Value, r.Headers)
		if err != nil {
			return Classify(ctx, err, "")
		}
		r.DecodedValue, r.ValueSchemaID = v.JSON(), int32(v.SchemaID())
		release(d.in.Decoder, v)
	}
	return nil
}

// Rendered reports whether rec's key and value were rendered at ingest
// (renderIngest): a record restored from a durable store was not (the store
// keeps the original bytes only), and is rendered at release.
func (d *Decoder) Rendered(rec *record.Record) bool {
	return d.renderIngest && (d.in.KeyDecoder == nil || rec.DecodedKey != nil) && (d.in.Decoder == nil || rec.DecodedValue != nil)
}
