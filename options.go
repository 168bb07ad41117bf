package signalbox

// The With options, their defaults and their validation.

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/signalbox/signalbox/internal/fielderr"
	"github.com/signalbox/signalbox/internal/strategy"
	"github.com/signalbox/signalbox/record"
)

// LatePolicy says what happens to a late record (docs/design.md L1).
type LatePolicy string

// The late policies. Every late record is counted, Late and LateBy set.
const (
	// LateEmit releases the record out of turn, with Late set (late by
	// the data: just after its partition's mark by the data; by timing:
	// at once). It is the default: nothing is lost.
	LateEmit LatePolicy = "emit"
	// LateDeadLetter sends the record to the dead-letter sink with its
	// reason.
	LateDeadLetter LatePolicy = "dead-letter"
	// LateDrop drops the record; it is only counted.
	LateDrop LatePolicy = "drop"
)

// Validate reports, as an error about the field late, a p that is not one
// of the late policies. "" is none of them: leave WithLatePolicy out for the
// default, LateEmit.
func (p LatePolicy) Validate() error {
	switch p {
	case LateEmit, LateDeadLetter, LateDrop:
		return nil
	}
	return fielderr.New("late", "%s is not one of emit, dead-letter, drop", fielderr.Quote(string(p)))
}

// Until says when a pipeline stops.
type Until string

// The run modes.
const (
	// UntilLive runs until the context is cancelled (the default).
	UntilLive Until = "live"
	// UntilEndOffsets stops once every partition has reached the end offset
	// snapshotted at start-up, flushes everything and returns nil.
	UntilEndOffsets Until = "end-offsets"
)

// UntilTime is the run mode that stops at the event time t: once the
// watermark reaches t, every record at or before t is released (the
// watermark is held at t), a last checkpoint commits them, and Run returns
// nil. A record after t is never emitted, and stays uncommitted. As the
// watermark only advances on evidence, records of the range that are still
// arriving hold the stop like any release. A record of a TimeNone input has
// no event time: it passes through while the run lasts. Its value is t in
// RFC 3339, as a job file's until.
func UntilTime(t time.Time) Until { return Until(t.UTC().Format(time.RFC3339Nano)) }

// Time returns the event time a u of UntilTime (or an RFC 3339 string)
// stops at; false for the other run modes.
func (u Until) Time() (time.Time, bool) {
	t, err := time.Parse(time.RFC3339Nano, string(u))
	return t, err == nil
}

// Validate reports, as an error about the field until, a u that is not one
// of the run modes nor an event time. "" is none of them: leave WithUntil
// out for the default, UntilLive.
func (u Until) Validate() error {
	switch u {
	case UntilLive, UntilEndOffsets:
		return nil
	}
	if _, ok := u.Time(); ok {
		return nil
	}
	return fielderr.New("until", "%s is not live, end-offsets or an event time in RFC 3339 (2026-03-08T00:00:00Z)", fielderr.Quote(string(u)))
}

// Clock returns the processing time. Tests inject their own.
type Clock func() time.Time

// MetaFilter sees a record before its payload is decoded: Topic, Partition,
// Offset, Key, Headers and Timestamp are set. Returning false skips the
// record cheaply. It runs on the pipeline's poller goroutine, which decodes
// records ahead of the engine: never concurrently with itself, but
// concurrently with Filter and Transform. Like Filter and Transform, it must
// not keep r after it returns: the record's array may be reused for a later
// fetch (Recycler); its bytes (Key, Value, headers) may be kept.
type MetaFilter func(r *record.Record) bool

// Filter sees a decoded record (EventTime and OrderKey set). Returning false
// skips it. It must not keep r after it returns (see MetaFilter).
type Filter func(r *record.Record) bool

// Transform may rewrite a decoded record in place (its Value, Key or
// Headers; not its EventTime, OrderKey or source coordinates). A new Key is
// assigned as a new slice, never written into the old one's bytes: an
// OrderKey from the Kafka key shares them (record.Record.OrderKey). An error
// sends the record to the dead-letter sink with the error as reason. It must
// not keep r after it returns (see MetaFilter).
type Transform func(r *record.Record) error

// Option configures a Pipeline.
//
// Defaults and "off" follow one convention for every option:
//   - Default: leave the option out. An option that is given is never
//     replaced by its default: New (and ValidateOptions) checks the value
//     given against the option's range and refuses it, naming the option
//     as a job file names it, when it is outside.
//   - Off: 0 turns off what can be turned off (WithAlignment,
//     WithParkedLimit, WithMaxFuture, WithStaleAfter, WithMaxInflightBytes;
//     0 for WithDelay and WithFlushLinger means no delay and no linger).
//     An option that cannot be off (WithBatchSize, WithMaxInflightBatches,
//     WithCheckpointInterval, WithTick) refuses 0. No option takes a
//     negative value, and none takes "" (WithLatePolicy, WithUntil) or nil
//     (WithClock, WithParkedStore) for its default; a nil
//     filter, transform, observer or logger is off.
type Option func(*config)

type config struct {
	inputs          []Input
	sinks           []Sink
	deadLetter      Sink
	sinkInfo        []SinkInfo // derived (describeSinks): what each of sinks states
	deadInfo        SinkInfo   // derived: what deadLetter states
	exactlyOnce     int        // derived: the index in sinks of the sink that stores the checkpoint; -1 when none
	delay           time.Duration
	late            LatePolicy
	until           Until
	stopAt          int64 // derived (ensureDefaults): UntilTime's event time, Unix ms
	stopSet         bool
	clock           Clock
	logger          *zap.Logger
	metaFilter      MetaFilter
	filter          Filter
	transform       Transform
	processing      // WithProcess, WithRoutedSink, WithWindow, WithTables (processing.go)
	batchSize       int
	maxInflight     int
	inflightBytes   int64
	batchBytes      int // derived (ensureDefaults): a batch holding this many bytes is handed over
	checkpointEvery time.Duration
	staleAfter      time.Duration
	tick            time.Duration
	strategy        func() strategy.Strategy
	store           ParkedStore
	observer        func(Event)
	// flow control and guards (internal/engine align.go, ingest.go)
	align       time.Duration
	parkedLimit int64
	limitSet    bool // the default depends on the store (WithParkedLimit)
	maxFuture   time.Duration
	flushLinger time.Duration
	// nilGiven names the options given nil where nil is no value
	// (WithClock, WithParkedStore, the internal strategy option), for validate.
	nilGiven []string
}

// DefaultFlushLinger is the default idle-flush linger (WithFlushLinger).
const DefaultFlushLinger = 5 * time.Millisecond

// DefaultAlignment is the default alignment window (WithAlignment).
const DefaultAlignment = 10 * time.Second

// DefaultParkedLimit is the default bound on the bytes parked in memory
// (WithParkedLimit).
const DefaultParkedLimit = 256 << 20

// DefaultMaxFuture is the default bound on how far ahead of the evidence
// clock an event time may be (WithMaxFuture).
const DefaultMaxFuture = time.Hour

// WithInputs declares how each topic's records are decoded. A topic the
// source delivers without an Input uses the Kafka timestamp and key.
func WithInputs(in ...Input) Option { return func(c *config) { c.inputs = append(c.inputs, in...) } }

// WithSink adds a sink. Every released record goes to every sink, in order.
func WithSink(s Sink) Option { return func(c *config) { c.sinks = append(c.sinks, s) } }

// WithDeadLetter sets the sink that receives malformed records, records with
// no usable event time, records a Transform rejects, and late records under
// LateDeadLetter. Each carries its reason in the record.ReasonHeader header.
// Default: none, in which case such records make Run fail rather than be lost.
func WithDeadLetter(s Sink) Option { return func(c *config) { c.deadLetter = s } }

// WithDelay sets the delay bound: a record more than d behind its
// partition's newest event time is late, and a holding partition's
// contribution to the watermark is its newest event time − d − 1 ms
// (design W1, L1). Default 0; at most MaxDelay.
func WithDelay(d time.Duration) Option { return func(c *config) { c.delay = d } }

// WithLatePolicy sets the late policy. Default LateEmit.
func WithLatePolicy(p LatePolicy) Option { return func(c *config) { c.late = p } }

// WithUntil sets the run mode: UntilLive, UntilEndOffsets or UntilTime(t).
// Default UntilLive.
func WithUntil(u Until) Option { return func(c *config) { c.until = u } }

// WithClock injects the processing-time clock. Default time.Now. Every
// engine decision and measure reads it (the processing-time fallback, the
// checkpoint interval, the flush linger, the latency metrics); only retry
// backoffs, log rate limits and the trimming of idle buffers use wall time.
// It may be called from several goroutines.
func WithClock(clk Clock) Option {
	return func(c *config) {
		if clk == nil {
			c.nilGiven = append(c.nilGiven, "clock")
		}
		c.clock = clk
	}
}

// WithLogger sets the logger. Default: no logging.
func WithLogger(l *zap.Logger) Option { return func(c *config) { c.logger = l } }

// WithMetaFilter sets the cheap filter that runs before decoding.
func WithMetaFilter(f MetaFilter) Option { return func(c *config) { c.metaFilter = f } }

// WithFilter sets the filter that runs on decoded records.
func WithFilter(f Filter) Option { return func(c *config) { c.filter = f } }

// WithTransform sets the per-record transform, run after the filters. The
// engine clears record.Record.ValueJSON before it runs; a transform that
// leaves Value one line of valid JSON may set it again.
func WithTransform(t Transform) Option { return func(c *config) { c.transform = t } }

// WithBatchSize bounds how many records one release batch holds. Default
// 4096; from 1 to MaxBatchSize.
func WithBatchSize(n int) Option { return func(c *config) { c.batchSize = n } }

// WithMaxInflightBatches bounds how many release batches may wait for the
// sinks. When the sinks lag this far, signalbox stops polling the source and
// Kafka keeps the backlog. Default 16; from 1 to MaxInflightBatches.
func WithMaxInflightBatches(n int) Option { return func(c *config) { c.maxInflight = n } }

// WithMaxInflightBytes bounds the bytes (record.Record.Size) of released
// records that are not yet written by every sink: a batch is handed over
// once it holds n / (max in-flight batches + 2) bytes, so the batches
// queued, the one being written and the one filling hold about n together,
// and a batch's capacity follows the number of records its predecessor held
// rather than WithBatchSize. Default 0: only the record counts bound them.
// `signalbox run` sets a quarter of state.memory when state.dir is set
// (config.InflightBytes), so that a memory budget covers what the engine
// has released as well as what it has parked.
func WithMaxInflightBytes(n int64) Option { return func(c *config) { c.inflightBytes = n } }

// WithCheckpointInterval sets how often sinks are flushed, a checkpoint is
// taken and offsets are committed. Default 1s; above 0, at most
// MaxCheckpointInterval.
func WithCheckpointInterval(d time.Duration) Option { return func(c *config) { c.checkpointEvery = d } }

// WithStaleAfter turns a partition Unknown, holding the watermark, when the
// source has reported no evidence for it for d. Default 0: off (the source
// reports failures itself); at most MaxStaleAfter.
func WithStaleAfter(d time.Duration) Option { return func(c *config) { c.staleAfter = d } }

// WithTick sets how often a live pipeline re-evaluates the processing-time
// watermark when nothing else happens. Default 50ms; from MinTick to
// MaxTick. Parked records also schedule their own exact release time.
func WithTick(d time.Duration) Option { return func(c *config) { c.tick = d } }

// withStrategy replaces the offset gate with another watermark strategy
// (internal/strategy.Option, for the benchmark baselines and tests).
func withStrategy(newStrategy func() strategy.Strategy) Option {
	return func(c *config) {
		if newStrategy == nil {
			c.nilGiven = append(c.nilGiven, "strategy")
		}
		c.strategy = newStrategy
	}
}

func init() {
	strategy.Option = func(newStrategy func() strategy.Strategy) any { return withStrategy(newStrategy) }
}

// WithParkedStore replaces the in-memory timer queue, e.g. with the
// pebble-backed store of package timers/durable.
func WithParkedStore(s ParkedStore) Option {
	return func(c *config) {
		if s == nil {
			c.nilGiven = append(c.nilGiven, "parked_store")
		}
		c.store = s
	}
}

// WithAlignment sets the alignment window of event-time-aligned fetching
// (Flink's watermark alignment, Kafka Streams' lowest-timestamp choice). A
// partition whose contribution to the watermark (its newest event time −
// the delay − 1 ms) runs more than window ahead of the released watermark — or,
// while the watermark is still −∞, of its own first record — is paused at
// the source (Pauser), on top of the event time its last fetch answer
// spanned (counted for at most 1,024 of its records: only whole big
// producer batches make answers larger), so that one answer's worth of
// data is never refused; it resumes
// when the watermark catches up. Pausing only holds: a paused partition
// still gets fresh end-offset evidence and holds the watermark exactly as
// before. Memory then stays bounded by about one answer per partition plus
// window's worth of event time, whatever the history's size. Default
// DefaultAlignment (10s); 0 disables alignment. Sources that do not
// implement Pauser are never paused.
func WithAlignment(window time.Duration) Option {
	return func(c *config) { c.align = window }
}

// WithParkedLimit bounds the accounted bytes of parked records. Past it,
// every partition is paused except those with the lowest contribution
// among the partitions holding the watermark, until parked bytes fall
// below three quarters of the limit: memory stays bounded even when one
// window of event time holds more than memory can. Default
// DefaultParkedLimit (256 MiB) with the in-memory store; with a
// DurableStore, which spills beyond its own budget, the default is 0 (no
// bound). 0 disables the bound.
func WithParkedLimit(bytes int64) Option {
	return func(c *config) { c.parkedLimit, c.limitSet = bytes, true }
}

// WithMaxFuture sets the poison guard: a record whose event time is more
// than d ahead of the evidence clock (the source's record.Fetch.At, else
// the pipeline's clock) does not move time. It goes to the dead-letter sink
// with its reason and is counted (Stats.Future); its partition's
// contribution to the watermark is unchanged. A restored checkpoint whose
// watermark is more than d ahead of the clock is refused. Default
// DefaultMaxFuture (1h); 0 disables the guard.
func WithMaxFuture(d time.Duration) Option {
	return func(c *config) { c.maxFuture = d }
}

// WithFlushLinger sets how soon released records become visible in the
// at-least-once sinks (every sink that is not exactly once, SinkInfo, and
// the dead-letter sink): they are flushed linger after the first record
// handed to them since their last flush, instead of waiting for the next
// checkpoint. Under load one flush covers every record released within
// linger, so batching stays efficient. The exactly-once sink (PostgreSQL,
// transactional Kafka) is flushed only at checkpoints: what it writes
// becomes visible with the checkpoint's transaction, every
// WithCheckpointInterval. Default
// DefaultFlushLinger (5ms); 0 flushes as soon as the engine has handed over
// what it released.
func WithFlushLinger(d time.Duration) Option {
	return func(c *config) { c.flushLinger = d }
}

// WithObserver receives pipeline events (phase changes, checkpoints, late
// records) synchronously from the engine goroutine; it must not block.
func WithObserver(f func(Event)) Option { return func(c *config) { c.observer = f } }

// The defaults of the options, which newConfig holds and docs/config.md
// documents (a test holds the two together).
const (
	DefaultLatePolicy         = LateEmit
	DefaultUntil              = UntilLive
	DefaultBatchSize          = 4096
	DefaultMaxInflightBatches = 16
	DefaultCheckpointInterval = time.Second
	DefaultTick               = 50 * time.Millisecond
)

// newConfig returns every option at its default; the options given replace
// them, and derive completes the result.
func newConfig() config {
	return config{
		late: DefaultLatePolicy, until: DefaultUntil, clock: time.Now,
		batchSize: DefaultBatchSize, maxInflight: DefaultMaxInflightBatches,
		checkpointEvery: DefaultCheckpointInterval, tick: DefaultTick,
		align: DefaultAlignment, maxFuture: DefaultMaxFuture, flushLinger: DefaultFlushLinger,
	}
}

// configOf returns the configuration opts make: newConfig with opts
// applied, derived.
func configOf(opts []Option) config {
	c := newConfig()
	for _, o := range opts {
		o(&c)
	}
	c.derive()
	return c
}

// derive sets what follows from the options given: the stop time, the
// batch byte bound, the parked limit's store-dependent default, and the
// no-op logger for a nil one.
func (c *config) derive() {
	if t, ok := c.until.Time(); ok {
		c.stopAt, c.stopSet = t.UnixMilli(), true
	}
	if c.logger == nil {
		c.logger = zap.NewNop()
	}
	c.describeSinks()
	c.batchBytes = math.MaxInt
	if c.inflightBytes > 0 {
		c.batchBytes = int(max(c.inflightBytes/int64(max(c.maxInflight, 1)+2), 1))
	}
	if !c.limitSet {
		c.parkedLimit = DefaultParkedLimit
		if _, durable := c.store.(DurableStore); durable {
			c.parkedLimit = 0
		}
	}
}

// validate checks every rule of the options, each reported as a field
// error named as a job file names the field (sinks[1], inputs[0].topic,
// dead_letter, batch_size...). It never opens or writes to a sink.
func (c *config) validate() error {
	var errs []error
	bad := func(field, format string, args ...any) { errs = append(errs, fielderr.New(field, format, args...)) }
	if len(c.sinks) == 0 {
		bad("sinks", "at least one sink is required")
	}
	errs = append(errs, c.validateSinks()...)
	errs = append(errs, c.validateRanges()...)
	if err := c.late.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.late == LateDeadLetter && c.deadLetter == nil {
		bad("dead_letter", "required when late is dead-letter")
	}
	if err := c.until.Validate(); err != nil {
		errs = append(errs, err)
	} else if _, ok := c.until.Time(); ok && len(c.inputs) > 0 &&
		!slices.ContainsFunc(c.inputs, func(in Input) bool { return in.Time != TimeNone }) {
		bad("until", "an event time is never reached when every input is time: none (no record has an event time)")
	}
	for _, field := range c.nilGiven {
		bad(field, "must not be nil (leave the option out for its default)")
	}
	declared := map[string]int{} // Input.name → the index of the input declaring it
	for i, in := range c.inputs {
		prefix := fmt.Sprintf("inputs[%d].", i)
		if prev, dup := declared[in.name()]; dup {
			field, val := "topic", in.Topic
			if in.TopicPattern != "" {
				field, val = "topic_pattern", in.TopicPattern
			}
			bad(prefix+field, "%s is already declared by inputs[%d]", fielderr.Quote(val), prev)
		} else if in.Topic != "" || in.TopicPattern != "" {
			declared[in.name()] = i
		}
		for _, fe := range fielderr.All(in.Validate()) {
			bad(prefix+fe.Field, "%s", fe.Msg)
		}
	}
	return errors.Join(errs...)
}

// The ranges of the options' sizes and intervals, which New enforces (see
// ValidateOptions) and docs/config.md documents. A value outside them is a
// mistake, not a tuning: it costs the machine its memory (a billion-record
// batch) or a core (a nanosecond ticker), or means nothing (a year of delay).
const (
	MaxDelay              = 30 * 24 * time.Hour // WithDelay: 0 to 30 days
	MaxBatchSize          = 65536               // WithBatchSize: 1 to 65,536
	MaxInflightBatches    = 1024                // WithMaxInflightBatches: 1 to 1,024
	MaxInflightBytes      = 1 << 40             // WithMaxInflightBytes: 0 (off) to 1 TiB
	MaxCheckpointInterval = time.Hour           // WithCheckpointInterval: above 0, at most 1h
	MaxStaleAfter         = 24 * time.Hour      // WithStaleAfter: 0 (off) to 24h
	MinTick, MaxTick      = time.Millisecond, time.Minute
	MaxAlignment          = 30 * 24 * time.Hour  // WithAlignment: 0 (off) to 30 days
	MaxParkedLimit        = 1 << 40              // WithParkedLimit: 0 (off) to 1 TiB
	MaxMaxFuture          = 365 * 24 * time.Hour // WithMaxFuture: 0 (off) to 365 days
	MaxFlushLinger        = time.Hour            // WithFlushLinger: 0 to 1h
)

// ValidateOptions returns New's verdict on opts: every rule New checks but
// the source's, each problem a field error named as the job file names the
// field (sinks, sinks[i], dead_letter, late, until, inputs[i].<field>,
// delay, batch_size, checkpoint_interval, align, max_future, flush_linger,
// parked_limit, max_inflight_batches, max_inflight_bytes, tick,
// stale_after; clock, strategy, parked_store when given nil), joined in one
// error. Of the sinks it only asks what they are (SinkDescriber): a caller
// may pass stand-ins that only describe themselves, and are CheckpointSinks
// where they say they are exactly once.
func ValidateOptions(opts ...Option) error {
	c := configOf(opts)
	return c.validate()
}

// validateRanges checks every size and interval against its range.
func (c *config) validateRanges() []error {
	var errs []error
	check := func(field string, ok bool, val any, want string) {
		if !ok {
			errs = append(errs, fielderr.New(field, "%v is out of range: %s", val, want))
		}
	}
	check("delay", c.delay >= 0 && c.delay <= MaxDelay, c.delay, "must be ≥ 0 and at most 720h (30 days)")
	check("batch_size", c.batchSize >= 1 && c.batchSize <= MaxBatchSize, c.batchSize, "must be from 1 to 65536 records")
	check("max_inflight_batches", c.maxInflight >= 1 && c.maxInflight <= MaxInflightBatches, c.maxInflight, "must be from 1 to 1024")
	check("max_inflight_bytes", c.inflightBytes >= 0 && c.inflightBytes <= MaxInflightBytes, c.inflightBytes, "must be ≥ 0 and at most 1 TiB")
	check("checkpoint_interval", c.checkpointEvery > 0 && c.checkpointEvery <= MaxCheckpointInterval, c.checkpointEvery, "must be above 0 and at most 1h")
	check("stale_after", c.staleAfter >= 0 && c.staleAfter <= MaxStaleAfter, c.staleAfter, "must be ≥ 0 and at most 24h")
	check("tick", c.tick >= MinTick && c.tick <= MaxTick, c.tick, "must be from 1ms to 1m")
	check("align", c.align >= 0 && c.align <= MaxAlignment, c.align, "must be ≥ 0 and at most 720h (30 days)")
	check("parked_limit", c.parkedLimit >= 0 && c.parkedLimit <= MaxParkedLimit, c.parkedLimit, "must be ≥ 0 and at most 1 TiB")
	check("max_future", c.maxFuture >= 0 && c.maxFuture <= MaxMaxFuture, c.maxFuture, "must be ≥ 0 and at most 8760h (365 days)")
	check("flush_linger", c.flushLinger >= 0 && c.flushLinger <= MaxFlushLinger, c.flushLinger, "must be ≥ 0 and at most 1h")
	return append(append(errs, c.validateTables()...), c.validateProcess()...)
}

// WithProcessHint gives the Process (WithProcessFork's) a hint: before the
// Process runs on a block of a long release's records, on the run's
// goroutine or the helper's (design K10), hint is called with the block,
// to ask the CPU for memory the Process will read at random, such as a
// table's index (package process's Hints, tables.Table.HintKey): the
// cache misses of a block's lookups then come together rather than one
// after the other. It must change nothing, be safe to call from several
// goroutines at once, and only read what the Process reads: what it does
// changes no result. Default none.
func WithProcessHint(hint func(recs []*record.Record)) Option {
	return func(c *config) { c.processHint = hint }
}
