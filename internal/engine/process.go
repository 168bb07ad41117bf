package engine

import (
	"errors"

	"github.com/signalbox/signalbox/record"
)

// process runs the Process and the sinks' Wheres on rec (output): keep is
// false when the record was filtered or dead-lettered; the record's routes
// (a bit per sink index, for routed sinks) are left in c.route.
func (c *Engine) process(rec *record.Record) (keep bool, err error) {
	var orig record.Record
	if c.routed() {
		orig = *rec // the dead-letter sink gets the record as it came
	}
	if p := c.cfg.Process; p != nil {
		ok, err, ahead := c.aheadProcess(rec)
		if !ahead {
			ok, err = p(rec)
		}
		if err != nil {
			return false, c.failed(rec, err)
		}
		if !ok {
			c.stats.Filtered++
			return false, nil
		}
	}
	c.route = c.cfg.RawRoute
	for i, w := range c.cfg.Wheres {
		if w == nil {
			continue
		}
		ok, err := w(rec)
		if err != nil {
			return false, c.failed(&orig, err)
		}
		if ok {
			c.route |= 1 << i
		}
	}
	return true, nil
}

// failed dead-letters rec, counting err by expression.
func (c *Engine) failed(rec *record.Record, err error) error {
	var ee ExpressionError
	if errors.As(err, &ee) && !c.rereading {
		if c.stats.ExpressionFailed == nil {
			c.stats.ExpressionFailed = map[string]int64{}
		}
		c.stats.ExpressionFailed[ee.Expression()]++
	}
	return c.dead(rec, err.Error())
}

// routed reports whether some sink is routed.
func (c *Engine) routed() bool { return len(c.cfg.Wheres) > 0 || len(c.cfg.Windows) > 0 }

// tableOf is topic's table, nil when topic is no table's.
func (c *Engine) tableOf(topic string) TableStore {
	for _, t := range c.cfg.Tables {
		if t.Topic == topic {
			return t.Into
		}
	}
	return nil
}
