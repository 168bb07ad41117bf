package signalbox

// Windows on released records (package keyed): WithWindow (the engine's
// part is windowrun.go). Every window is fed in core.output, after the Process and
// the sinks' wheres, in release order, and advanced when a release is over
// (releaseMore) with the release watermark; its results go into the same
// out batches as the records, routed to the window's own sinks only, so
// that a checkpoint covers them as it covers the records released before
// it (design K1-K4).

import (
	"fmt"

	"github.com/signalbox/signalbox/internal/fielderr"
	"github.com/signalbox/signalbox/keyed"
	"github.com/signalbox/signalbox/record"
)

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
	// Args returns a record's argument of each aggregate, by
	// Spec.Aggregates, as JSON (keyed.Spec.Item); an entry for a Count is
	// not called and may be nil.
	Args []func(r *record.Record) ([]byte, error)
}

// WindowStats is one window's activity (Stats.Windows).
type WindowStats struct {
	Name    string
	Open    int64 // windows open now
	Keys    int   // keys with an open window
	Results int64 // results emitted
	Late    int64 // records late for one of their windows: in none of those (keyed invariant 7)
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
// count among the MaxRoutedSinks first sinks. A run without a group
// resumes tumbling and hopping windows exactly from a CheckpointSink's
// checkpoint (windowhold.go); one restored from a group's committed
// offsets or a DurableStore's, or with session windows, fails: their state
// before the checkpoint is not restored yet.
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
