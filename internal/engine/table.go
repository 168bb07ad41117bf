package engine

import (
	"fmt"
	"time"

	"github.com/signalbox/signalbox/internal/jsonfield"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/watermark"
)

// version applies rec, a record of ps's table, to the table (design O3):
// at its event time, or, late by the data (at or below byData, its
// partition's mark by the data), just after byData, where the engine
// would have released it (parkedAt): every record released before it
// answered without it, whatever the fetch timing. Nothing is parked: its
// offset is handled at once.
func (c *Engine) version(ps *partState, rec *record.Record, byData int64) error {
	if ok, err := c.render(ps, rec); !ok || err != nil {
		return err
	}
	at := parkedAt(rec.EventTime, byData)
	var value []byte
	if rec.DecodedValue != nil {
		value = rec.DecodedValue
	} else {
		value = rec.Value
	}
	if value != nil && rec.DecodedValue == nil && !rec.ValueJSON && !jsonfield.Scan(value, nil).Valid {
		return c.dead(rec, "table "+ps.table.Name()+": the value is not JSON") // lookup reads JSON (B1)
	}
	ps.table.Put(rec.OrderKey, at, value, rec.Value == nil)
	if err := ps.table.Err(); err != nil {
		return fmt.Errorf("table %s: %w", ps.table.Name(), err) // its storage failed: lookups would be wrong
	}
	c.stats.TableVersions++
	return nil
}

// trimEvery is how far the watermark moves between two trims of a table,
// as a fraction of its history: a trim scans every key.
const trimEvery = 16

// trimming is a TableStore whose Trim does a bounded part of the work and
// goes on at the next Trim (*tables.Table in pebble): Trimming says a trim
// is under way.
type trimming interface{ Trimming() bool }

// trimTables drops the versions the tables no longer need at watermark g
// (TableStore.Trim), each once g moved by a sixteenth of its history, or
// at every release while its trim is under way (trimming). A table whose
// storage failed fails the release (ReleaseMore).
func (c *Engine) trimTables(g int64) {
	if g == watermark.MinTime {
		return
	}
	if c.trimmedAt == nil {
		c.trimmedAt = make([]int64, len(c.cfg.Tables))
		for i := range c.trimmedAt {
			c.trimmedAt[i] = watermark.MinTime // never
		}
	}
	for i, t := range c.cfg.Tables {
		step := max(t.Into.History()/trimEvery, time.Millisecond).Milliseconds()
		tr, ok := t.Into.(trimming)
		if c.trimmedAt[i] == watermark.MinTime || g-c.trimmedAt[i] >= step || ok && tr.Trimming() {
			t.Into.Trim(g)
			c.trimmedAt[i] = g
		}
	}
}

// position is where ps's records are handled up to, as a checkpoint
// claims it: a table's partition never moves past where it was assigned,
// so that a restart re-reads, and rebuilds, the table from there.
func (ps *partState) position() int64 {
	if ps.table != nil {
		return ps.start
	}
	return ps.offs.Position()
}
