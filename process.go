package signalbox

// Processing on the way to the sinks: a Process (filter, map) and the
// routing of records to the sinks added with WithRoutedSink. Both run on
// the engine goroutine, in release order (core.output), once per record,
// before the record is in any out batch, so that a record whose processing
// fails goes to the dead-letter sink and to no other sink. Package process
// compiles job-file expressions into both; cel-go stays out of this
// package.

import (
	"fmt"

	"github.com/signalbox/signalbox/internal/fielderr"
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
func WithProcess(p Process) Option { return func(c *config) { c.process = p } }

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
// set, and WithTables (the tables the processing looks up: table.go).
type processing struct {
	process Process
	wheres  []Where // by sink index, up to the last routed sink
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
