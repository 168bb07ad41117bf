package config

// The `tables` section (docs/config.md, Tables and enrichment): topics
// whose records are the versions of a table that lookup(name, key) reads,
// as of each record's event time (signalbox.WithTables, package tables).

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/formats"
	"github.com/signalbox/signalbox/tables"
)

// Table is one entry of `tables`. Its topic is read as an input (Topic,
// Key, KeyField, Format, Time, TimeField, TimeFormat as an input's: the
// key is the table's key, the time each version's time), whose records
// update the table instead of going to the sinks.
type Table struct {
	Name       string `yaml:"name"`
	Topic      string `yaml:"topic"`
	Key        string `yaml:"key"`
	KeyField   string `yaml:"key_field"`
	Format     string `yaml:"format"`
	Time       string `yaml:"time"`
	TimeField  string `yaml:"time_field"`
	TimeFormat string `yaml:"time_format"`
	// History is how long versions are kept behind the watermark
	// (DefaultHistory when empty); a duration, or a number of days (7d).
	History string `yaml:"history"`
}

// DefaultHistory is a table's history when the job leaves it out.
const DefaultHistory = 7 * 24 * time.Hour

// input is the input that reads the table's topic.
func (t Table) input() Input {
	return Input{Topic: t.Topic, Key: t.Key, KeyField: t.KeyField, Format: t.Format,
		Time: t.Time, TimeField: t.TimeField, TimeFormat: t.TimeFormat}
}

// readInputs are the job's inputs, then its tables' inputs: what the
// source reads and the engine decodes.
func (j *Job) readInputs() []Input {
	if len(j.Tables) == 0 {
		return j.Inputs
	}
	ins := append(make([]Input, 0, len(j.Inputs)+len(j.Tables)), j.Inputs...)
	for _, t := range j.Tables {
		ins = append(ins, t.input())
	}
	return ins
}

// inputPath is the YAML path of readInputs' i-th input: inputs[i], or the
// table's tables[k].
func (j *Job) inputPath(i int) string {
	if i < len(j.Inputs) {
		return fmt.Sprintf("inputs[%d]", i)
	}
	return fmt.Sprintf("tables[%d]", i-len(j.Inputs))
}

// libraryField is the YAML path of the library's field: an input past the
// job's inputs is a table's.
func (j *Job) libraryField(field string) string {
	if !strings.HasPrefix(field, "inputs[") {
		return field
	}
	end := strings.IndexByte(field, ']')
	i, err := strconv.Atoi(field[len("inputs["):max(end, len("inputs["))])
	if end < 0 || err != nil || i < len(j.Inputs) {
		return field
	}
	return j.inputPath(i) + field[end+1:]
}

// parseHistory is a table's history: a Go duration, or whole days (7d).
func parseHistory(s string) (time.Duration, error) {
	if s == "" {
		return DefaultHistory, nil
	}
	if n, ok := strings.CutSuffix(s, "d"); ok {
		if d, err := strconv.Atoi(n); err == nil && d > 0 && d <= 100*365 {
			return time.Duration(d) * 24 * time.Hour, nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%q is not a positive duration such as 7d, 36h or 90m", s)
	}
	return d, nil
}

// validateTables checks what only the job file has: names, topics
// (distinct, none an input's too) and histories; the library judges the
// rest of each table's input (inputs, validateLibrary).
func (j *Job) validateTables(v *validator) {
	names, topics := map[string]bool{}, map[string]string{}
	for _, in := range j.Inputs {
		topics[in.Topic] = "an input's"
	}
	for i, t := range j.Tables {
		p := fmt.Sprintf("tables[%d]", i)
		v.uniqueName(names, p+".name", t.Name, "the name lookup(name, key) reads the table by", "another table has this name")
		switch {
		case t.Topic == "":
			v.bad(p+".topic", "required: the topic holding the table's versions")
		case topics[t.Topic] != "":
			v.bad(p+".topic", "%q is already %s topic: a topic is an input or a table, not both", t.Topic, topics[t.Topic])
		default:
			topics[t.Topic] = "a table's"
		}
		if formats.Format(t.Format) == formats.Raw {
			v.bad(p+".format", "lookup reads a table's values as JSON: raw is not a table's format")
		}
		if t.Time == string(signalbox.TimeNone) {
			v.bad(p+".time", "a table's versions need a time: timestamp (default), field or header")
		}
		if _, err := parseHistory(t.History); err != nil {
			v.bad(p+".history", "%v", err)
		}
		t.input().validateFormats(v, p, j.SchemaRegistry)
	}
}

// tableSet builds the job's tables: the set lookup reads, and the
// pipeline's WithTables (nil when the job has none). With a directory
// (TablesDir: state.dir is set) each table lives in pebble under
// dir/<name> within budget bytes of memory (tables.Open; budget is split
// between the tables); the caller closes the tables (closeTables). A
// table's pebble files are scratch: wiped at every open, as a table is
// rebuilt by re-reading its topic (its offsets are never committed).
func (j *Job) tableSet(dir string, budget int64) (*tables.Set, signalbox.Option, error) {
	if len(j.Tables) == 0 {
		return nil, nil, nil
	}
	var ts []*tables.Table
	var decl []signalbox.Table
	for i, t := range j.Tables {
		h, err := parseHistory(t.History)
		if err != nil {
			closeTables(ts)
			return nil, nil, fmt.Errorf("tables[%d].history: %w", i, err)
		}
		var tb *tables.Table
		if dir == "" {
			tb, err = tables.New(t.Name, h)
		} else {
			tb, err = tables.Open(t.Name, h, tables.Options{Dir: filepath.Join(dir, t.Name), MemoryBudget: max(budget/int64(len(j.Tables)), tables.MinMemoryBudget)})
		}
		if err != nil {
			closeTables(ts)
			return nil, nil, fmt.Errorf("tables[%d]: %w", i, err)
		}
		ts = append(ts, tb)
		decl = append(decl, signalbox.Table{Topic: t.Topic, Into: tb})
	}
	set, err := tables.NewSet(ts...)
	if err != nil {
		closeTables(ts)
		return nil, nil, err
	}
	return set, signalbox.WithTables(decl...), nil
}

// closeTables closes ts (their pebble storage, if any), returning the
// first error.
func closeTables(ts []*tables.Table) error {
	var first error
	for _, tb := range ts {
		if err := tb.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// TablesDir is where the tables of a job with state dir live: beside it,
// not in it (the parked store owns state.dir, and --reset-state removes
// only its files).
func TablesDir(stateDir string) string {
	if stateDir == "" {
		return ""
	}
	return filepath.Clean(stateDir) + "-tables"
}

// tablesShare is the part of state.memory the tables get when the job has
// tables and a state.dir: a quarter; the parked store keeps the rest.
const tablesShare = 4

// tableTopics are the tables' topics: read whole by every member, from
// the earliest offset (kafka.Config.Tables).
func (j *Job) tableTopics() []string {
	var ts []string
	for _, t := range j.Tables {
		ts = append(ts, t.Topic)
	}
	return ts
}
