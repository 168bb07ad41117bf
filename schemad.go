package signalbox

// Schema'd keys and values: the decoder hook of an Input, and what the
// engine does with its answers (a bad record, a hold, the context's end).

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/signalbox/signalbox/formats/value"
	"github.com/signalbox/signalbox/internal/decode"
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
// engine (engine.Config.Render) on its goroutine, unless it was rendered at
// ingest (rendered). A record that was checked at ingest decodes again from
// the decoder's cache; only one restored from a durable store after a
// restart, or changed by a Transform, may need the registry, and while the
// registry cannot answer the engine waits here, with backoff (holding,
// never skipping; a fatal error stops the run). dead is the dead-letter
// reason of a record that cannot be decoded.
func (p *Pipeline) renderOut(ctx context.Context, rec *record.Record) (dead string, err error) {
	dec := p.decoders.For(rec.Topic)
	if !dec.Schemad() || dec.Rendered(rec) {
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
