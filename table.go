package signalbox

// Tables (issue 38): an input whose records update a versioned table
// (package tables) instead of going to the sinks, read under the same
// offset gate as every input, so that a record released at event time t
// finds every version at or before t in the table (design O3).

import (
	"fmt"

	"github.com/signalbox/signalbox/internal/fielderr"
	"github.com/signalbox/signalbox/tables"
)

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
	Into  *tables.Table
}

// WithTables declares tables. Default none.
func WithTables(ts ...Table) Option {
	return func(c *config) { c.tables = append(c.tables, ts...) }
}

// tabling is the part of config that WithTables sets.
type tabling struct {
	tables []Table
}

// tableOf is topic's table, nil when topic is no table's.
func (c *config) tableOf(topic string) *tables.Table {
	for _, t := range c.tables {
		if t.Topic == topic {
			return t.Into
		}
	}
	return nil
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
			bad("into", "a table needs its tables.Table")
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
