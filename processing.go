package signalbox

// Processing on the way to the sinks: a Process (filter, map) and the
// routing of records to the sinks added with WithRoutedSink. Both run on
// the engine goroutine, in release order (internal/engine's output), once per record,
// before the record is in any out batch, so that a record whose processing
// fails goes to the dead-letter sink and to no other sink. Package process
// compiles job-file expressions into both; cel-go stays out of this
// package.

import (
	"fmt"
	"time"

	"github.com/signalbox/signalbox/internal/early"
	"github.com/signalbox/signalbox/internal/fielderr"
	"github.com/signalbox/signalbox/keyed"
	"github.com/signalbox/signalbox/record"
)

// Process runs on every record on its way to the sinks, in release order,
// on the engine goroutine: after the late policy (record.Record.Late is
// set) and after a schema'd value was rendered for the sinks
// (record.Record.DecodedValue; with a Process it is rendered even when
// every sink writes original bytes). keep false drops the record: it is
// counted in Stats.Filtered and its offset commits as any released
// record's. An error sends the record, unchanged, to the dead-letter sink
// with the error as reason (Run fails without one; an ExpressionError is
// counted by expression in Stats.ExpressionFailed). It may set a new Value
// (a new slice, never written into the old one's bytes), and then clears
// DecodedValue and ValueSchemaID: the new value is what every sink writes;
// it must leave r unchanged when it returns an error, and not keep r.
type Process func(r *record.Record) (keep bool, err error)

// Where decides whether a record goes to one sink (WithRoutedSink). It
// sees the record as Process left it.
type Where func(r *record.Record) (bool, error)

// ExpressionError is implemented by the errors of a Process or Where that
// name the expression that failed (package process): Stats.ExpressionFailed
// counts them by that name.
type ExpressionError interface {
	error
	Expression() string
}

// MaxRoutedSinks bounds the sinks added with WithRoutedSink.
const MaxRoutedSinks = 64

// WithProcess sets the Process run on every record on its way to the
// sinks. Default none.
func WithProcess(p Process) Option { return func(c *config) { c.process, c.processFork = p, nil } }

// WithProcessFork is WithProcess with a fork: fork returns the Process
// again, sharing no memory with p or with another fork's, and giving the
// same results and errors, and the same record. When a release is long,
// a helper goroutine runs a fork on its records ahead of the run's
// goroutine, which still takes each record's result in release order
// (design K10): what comes out is the same, sooner on a machine with a
// core to spare. A fork is used by one goroutine at a time, and runs
// beside nothing else of the run's that writes what it reads; it may
// look tables up (WithTables) only if their AsOf changes nothing (the
// in-memory tables.New's), as no version is put while it runs. Package
// config gives one to a job's process unless its tables are in pebble
// or it runs as records are decoded (docs/design.md K12).
func WithProcessFork(p Process, fork func() Process) Option {
	return func(c *config) { c.process, c.processFork = p, fork }
}

// WithRoutedSink adds a sink that receives only the records for which
// where returns true. Every where runs once per record, after Process, in
// release order, before the record is handed to any sink: an error sends
// the record to the dead-letter sink and to no sink. A record routed to
// no sink is released all the same: its offset commits. A CheckpointSink
// added this way writes its subset; its checkpoint covers every released
// record, as the other sinks acknowledged theirs. A routed sink must be
// one of the first MaxRoutedSinks sinks.
func WithRoutedSink(s Sink, where Where) Option {
	return func(c *config) {
		c.wheres = append(c.wheres, make([]Where, len(c.sinks)-len(c.wheres))...)
		c.sinks = append(c.sinks, s)
		c.wheres = append(c.wheres, where)
		if where == nil {
			c.nilGiven = append(c.nilGiven, fmt.Sprintf("sinks[%d].where", len(c.sinks)-1))
		}
	}
}

// processing is the part of config that WithProcess and WithRoutedSink
// set, and WithTables (the tables the processing looks up).
type processing struct {
	process     Process
	processFork func() Process
	processHint func(recs []*record.Record) // WithProcessHint
	// spawn starts the helper that evaluates ahead (engine.Config.Spawn);
	// nil: a goroutine of its own when GOMAXPROCS is above 1 (tests set
	// it, export_test.go).
	spawn   func(func())
	early   func(topic string) early.Func // package config's, per topic (poll.go)
	wheres  []Where                       // by sink index, up to the last routed sink
	windows []windowDef
	// rawRoute, with windows, has the bit of every sink that receives
	// every released record (no where, not a window's): validateWindows.
	rawRoute uint64
	tabling
}

// validateProcess is validate's part for WithRoutedSink.
func (c *config) validateProcess() []error {
	if n := len(c.wheres); n > MaxRoutedSinks {
		return []error{fielderr.New(fmt.Sprintf("sinks[%d].where", n-1), "a sink with a where must be one of the first %d sinks", MaxRoutedSinks)}
	}
	return c.validateWindows()
}

// routedSink reports whether sink i was added with WithRoutedSink, or
// receives its records by route because there are windows (WithWindow).
func (c *config) routedSink(i int) bool {
	return i < len(c.wheres) && c.wheres[i] != nil || len(c.windows) > 0
}

// routeBatch is the part of o's records that the routed sink i receives:
// those whose route has its bit, copied into buf (the writer's, reused).
func routeBatch(o *out, i int, buf []record.Record) []record.Record {
	buf = buf[:0]
	for j, r := range o.Routes {
		if r&(1<<i) != 0 {
			buf = append(buf, o.Records[j])
		}
	}
	return buf
}

// routed reports whether some sink is routed.
func (c *config) routed() bool { return len(c.wheres) > 0 || len(c.windows) > 0 }

// Window is a window computed on the released records (WithWindow).
type Window struct {
	// Spec is the window: its name, kind, sizes, allowed lateness and
	// aggregates (keyed.Spec).
	Spec keyed.Spec
	// Inputs are the topics whose records it takes; none: every record
	// with an event time (records of a `time: none` input never).
	Inputs []string
	// Where, when set, keeps the records for which it returns true.
	Where Where
	// Key returns a record's window key as JSON. Nil: the record's
	// ordering key as a JSON string, or, when it is not UTF-8, as
	// {"key_b64": its base64}.
	Key func(r *record.Record) ([]byte, error)
	// Store, when set, keeps the window's state and timers (keyed.WithStore):
	// keyed/durable's spills to pebble beyond a memory budget. The state is
	// scratch, rebuilt from the re-read records after a restart like the
	// in-memory one (a durable store of parked records is refused with
	// windows, WithWindow). With a group it is not used: each task's
	// windows have their own (TaskStore). Nil: in memory.
	Store keyed.Store[keyed.State]
	// TaskStore, when set, makes the store of one task's windows in a
	// consumer group (its partition number, and how many tasks the member
	// holds as it is made, to size it by), and what lets go of it when the
	// member lets go of the task (a revoke); an error fails the run. The
	// state is scratch, rebuilt from the re-read records as in memory.
	// Package config opens a keyed/durable store per task under
	// state.dir. Nil: each task's windows are in memory.
	TaskStore func(task int32, tasks int) (st keyed.Store[keyed.State], release func(), err error)
	// Args returns a record's argument of each aggregate, by
	// Spec.Aggregates, as JSON (keyed.Spec.Item); an entry for a Count is
	// not called and may be nil.
	Args []func(r *record.Record) ([]byte, error)
	// Fork, when set, returns the window again with a Where, Key and Args
	// that share no memory with these or with another Fork's, and that give
	// the same results and errors. When a release is long, a helper
	// goroutine evaluates its records with a fork, ahead of the run's
	// goroutine, which still takes them into the window in order (design
	// K10): what comes out is the same, sooner on a machine with a core to
	// spare. A fork is used by one goroutine at a time. Nil: every record is
	// evaluated on the run's goroutine. Package config sets it for a job
	// file's window whose expressions read no table.
	Fork func() Window
}

// WindowStats is one window's activity (Stats.Windows).
type WindowStats struct {
	Name    string
	Open    int64 // windows open now
	Keys    int   // keys with an open window
	Results int64 // results emitted
	Late    int64 // records late for one of their windows: in none of those (keyed invariant 7)
	// StateBytes is the size of the window's state, about, wherever it
	// lives: open windows, keys, First and Last values
	// (keyed.Windows.StateBytes).
	StateBytes int64
}

// WithWindow adds a window whose results go to sinks, and to no other
// sink: each result is a record whose Topic is the window's name, Key the
// window key (the JSON key's text when it is a string, else its JSON),
// Value the result's JSON object (keyed.Result), EventTime the window's
// end − 1 ms (its last instant: the result lies in its own window, as
// Flink's window timestamps do, so a window downstream of the same size
// puts it in the same window), Partition 0 and Offset a 63-bit hash of
// its key and start (resultID: the same after a restart). The sinks added
// otherwise receive the released records and no result. A window's sinks
// count among the MaxRoutedSinks first sinks. Tumbling and hopping
// windows resume exactly from a CheckpointSink's checkpoint, or in a
// consumer group from the committed offsets, held back to the oldest
// record of a window still open (docs/design.md K5-K9). In a group each
// task has its own windows (in memory: Store is not used), so Key must be
// the record's Kafka key (nil). A run restored from a DurableStore's
// checkpoint fails at its first assignment: its restart resumes from the
// stored positions, past the open windows' records (durable.Store.Scratch
// spills parked records without a checkpoint).
func WithWindow(w Window, sinks ...Sink) Option {
	return func(c *config) {
		c.windows = append(c.windows, windowDef{Window: w, first: len(c.sinks), n: len(sinks)})
		for i, s := range sinks {
			c.sinks = append(c.sinks, s)
			if s == nil {
				c.nilGiven = append(c.nilGiven, fmt.Sprintf("windows[%d].sinks[%d]", len(c.windows)-1, i))
			}
		}
	}
}

// windowDef is a WithWindow: its Window and its sinks, c.sinks[first:first+n].
type windowDef struct {
	Window
	first, n int
}

// bits is the route of the window's results: a bit per sink of its own.
func (d *windowDef) bits() uint64 {
	var b uint64
	for i := d.first; i < d.first+d.n; i++ {
		b |= 1 << i
	}
	return b
}

// validateWindows is validate's part for WithWindow; it also sets
// rawRoute, the sinks that receive released records.
func (c *config) validateWindows() []error {
	if len(c.windows) == 0 {
		return nil
	}
	var errs []error
	names := map[string]bool{}
	for i := range c.windows {
		d := &c.windows[i]
		at := fmt.Sprintf("windows[%d]", i)
		if err := d.Spec.Validate(); err != nil {
			for _, e := range unjoinErr(err) {
				errs = append(errs, fielderr.New(at, "%v", e))
			}
		}
		if names[d.Spec.Name] {
			errs = append(errs, fielderr.New(at+".name", "%q: another window has this name", d.Spec.Name))
		}
		names[d.Spec.Name] = true
		if d.n == 0 {
			errs = append(errs, fielderr.New(at+".sinks", "none: a window's results go to its own sinks"))
		}
		if d.first+d.n > MaxRoutedSinks {
			errs = append(errs, fielderr.New(at+".sinks", "with windows, every sink must be one of the first %d sinks", MaxRoutedSinks))
		}
		if len(d.Args) != len(d.Spec.Aggregates) {
			errs = append(errs, fielderr.New(at+".aggregate", "%d arguments for %d aggregates", len(d.Args), len(d.Spec.Aggregates)))
			continue
		}
		for j, a := range d.Spec.Aggregates {
			if a.Op != keyed.Count && d.Args[j] == nil {
				errs = append(errs, fielderr.New(at+".aggregate."+a.Name, "%s needs an argument", a.Op))
			}
		}
	}
	if len(c.sinks) > MaxRoutedSinks {
		errs = append(errs, fielderr.New("sinks", "with windows, at most %d sinks", MaxRoutedSinks))
	}
	c.rawRoute = 0
	window := uint64(0)
	for i := range c.windows {
		window |= c.windows[i].bits()
	}
	for i := range min(len(c.sinks), 64) {
		if window&(1<<i) == 0 && !(i < len(c.wheres) && c.wheres[i] != nil) {
			c.rawRoute |= 1 << i
		}
	}
	return errs
}

func unjoinErr(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// Table makes the records of the input Topic versions of the table Into:
// each record's ordering key (the input's Key, KeyField: the Kafka key by
// default) is the table's key, its value (the JSON the sinks would render:
// a schema'd value decoded) the key's value from its event time on (the
// version time; the input's Time, TimeField), a record without a value a
// tombstone; a value that is not JSON is dead-lettered. A table's
// records pass WithFilter and WithTransform as any
// input's, and are then never output, processed (WithProcess) nor
// dead-lettered as late; they count in Stats.In and Stats.TableVersions.
// Their offsets are never committed past where the partition was assigned
// (low, emittedClaim): a restart re-reads the table from there, which
// rebuilds it.
//
// Topic must be an input's (WithInputs) plain topic, with an event time
// (not TimeNone). Look a table up from a Process or a Where (package
// process's lookup, or Into's AsOf at the record's EventTime): they run on
// the engine goroutine at release, when every version at or before the
// record's event time is in it (design O6). Not from a Filter or a
// Transform: they run as a record is read, before the gate.
type Table struct {
	Topic string
	// Into is the table: a *tables.Table (in memory, tables.New, or in
	// pebble beyond a memory budget, tables.Open).
	Into TableStore
}

// TableStore is what the engine does with a table declared with WithTables
// (*tables.Table is one): it puts each version as its record is read,
// trims the versions older than the history behind the watermark, and
// fails the run when its storage fails (Err). Beyond counts the lookups
// older than the history (Stats.TableLookupsBeyond); it may be read from
// any goroutine. The root package names the interface rather than the
// type so that it links no storage engine (package tables may use pebble).
type TableStore interface {
	Name() string
	History() time.Duration
	Put(key string, at int64, value []byte, tomb bool)
	Trim(watermark int64)
	Beyond() int64
	Err() error
}

// WithTables declares tables. Default none.
func WithTables(ts ...Table) Option {
	return func(c *config) { c.tables = append(c.tables, ts...) }
}

// tabling is the part of config that WithTables sets.
type tabling struct {
	tables []Table
}

// inputNamed is the input whose Topic is topic, nil when none.
func (c *config) inputNamed(topic string) *Input {
	for i := range c.inputs {
		if c.inputs[i].Topic == topic {
			return &c.inputs[i]
		}
	}
	return nil
}

// validateTables is validate's part for WithTables.
func (c *config) validateTables() []error {
	var errs []error
	seen := map[string]bool{}
	for i, t := range c.tables {
		bad := func(field, format string, args ...any) {
			errs = append(errs, fielderr.New(fmt.Sprintf("tables[%d].%s", i, field), format, args...))
		}
		in := c.inputNamed(t.Topic)
		switch {
		case t.Into == nil:
			bad("into", "a table needs its store (a *tables.Table)")
		case t.Topic == "":
			bad("topic", "required")
		case in == nil:
			bad("topic", "%q is no input's topic: declare it in WithInputs (its time, key and format)", t.Topic)
		case in.Time == TimeNone:
			bad("topic", "%q has time: none: a table's records need a version time", t.Topic)
		case seen[t.Topic]:
			bad("topic", "%q is the topic of two tables", t.Topic)
		}
		seen[t.Topic] = true
	}
	return errs
}

// tableBeyond is Stats.TableLookupsBeyond: safe from any goroutine.
func (c *config) tableBeyond() map[string]int64 {
	if len(c.tables) == 0 {
		return nil
	}
	m := make(map[string]int64, len(c.tables))
	for _, t := range c.tables {
		m[t.Into.Name()] = t.Into.Beyond()
	}
	return m
}
