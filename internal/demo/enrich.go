package demo

// The reference topic as a table (Options.ReferenceTable): as in the seed
// texts' case, the topic without event time publishes the valid items,
// and every event is enriched with its item as of the event's time.

import (
	"bytes"
	"time"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/internal/workload"
	"github.com/signalbox/signalbox/process"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/tables"
)

// ReferenceTableName is the table the reference topic fills.
const ReferenceTableName = "items"

// EnrichMap is the process.map of every event with a reference table: the
// event's value passed through, and its item's reference record as of the
// event's time (null when there is none).
const EnrichMap = `{"event": value, "reference": lookup("` + ReferenceTableName + `", value.item)}`

// enrichedMark is in the value of a record EnrichMap enriched with a
// reference record (not null).
var enrichedMark = []byte(`"reference":{`)

// referenceHistory is the table's history: the reference records are one
// version per item, which a trim always keeps.
const referenceHistory = 7 * 24 * time.Hour

// enrich is what a lane reads the reference topic as a table with: the
// table, and the process that enriches the events with it. The process
// counts the values decoded from Avro in m before the map turns them into
// JSON (measure.Write, which then sees none).
func enrich(m *measure) ([]signalbox.Option, error) {
	tb, err := tables.New(ReferenceTableName, referenceHistory)
	if err != nil {
		return nil, err
	}
	set, err := tables.NewSet(tb)
	if err != nil {
		return nil, err
	}
	x, err := process.Compile("process.map", EnrichMap, process.Map, process.WithTables(set))
	if err != nil {
		return nil, err
	}
	steps := process.Steps{Map: x}
	return []signalbox.Option{
		signalbox.WithTables(signalbox.Table{Topic: workload.ReferenceTopic, Into: tb}),
		signalbox.WithProcess(func(r *record.Record) (bool, error) {
			m.countDecoded(r)
			return steps.Run(r)
		}),
	}, nil
}

// isEnriched reports whether v is an event EnrichMap enriched.
func isEnriched(v []byte) bool { return bytes.Contains(v, enrichedMark) }
