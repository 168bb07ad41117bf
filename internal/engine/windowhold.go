package engine

import (
	"errors"
	"fmt"

	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/watermark"
)

// windowHold is, for one partition, the lowest offset of its records in
// a window by that window's timer (the last of the record's windows): a
// record holds its partition's Low until the windows' time reaches it.
// last and lastMin cache the entry of the last record's timer: records in
// release order mostly share it.
//
// A session's end moves with its records, so a session window holds by
// key instead: sess[i] holds, for window i, the lowest offset of the
// partition's records in each key's open sessions, until the key has none
// (keyed.WithKeyGone).
type windowHold struct {
	by            map[int64]int64
	last, lastMin int64
	sess          []*sessionHold
}

// sessionHold is one session window's holds on a partition: by key, and
// counted by bucket of holdBucket offsets, so that a checkpoint's claim
// reads the least bucket with a key instead of walking every key.
type sessionHold struct {
	keys    map[string]int64 // key → the offset of its oldest record in its open sessions
	buckets map[int64]int32  // keys by their offset's bucket (offset / holdBucket)
	least   int64            // the least bucket with keys; -1: to be found (and none when buckets is empty)
}

// holdBucket is how many offsets a bucket of session holds covers: a
// checkpoint claims the first offset of the least bucket holding a key,
// so that a restart re-reads at most holdBucket - 1 records more than
// the keys need (re-read records that were emitted only rebuild their
// windows, K7 and K8).
const holdBucket = 4096

func newSessionHold() *sessionHold {
	return &sessionHold{keys: map[string]int64{}, buckets: map[int64]int32{}, least: -1}
}

func (s *sessionHold) add(o int64) {
	b := o / holdBucket
	s.buckets[b]++
	if s.least >= 0 && b < s.least || len(s.buckets) == 1 {
		s.least = b
	}
}

func (s *sessionHold) remove(o int64) {
	b := o / holdBucket
	if s.buckets[b]--; s.buckets[b] == 0 {
		delete(s.buckets, b)
		if b == s.least {
			s.least = -1
		}
	}
}

// low is the first offset of the least bucket holding a key; ok is false
// when no key is held.
func (s *sessionHold) low() (o int64, ok bool) {
	if len(s.buckets) == 0 {
		return 0, false
	}
	if s.least < 0 {
		for b := range s.buckets {
			if s.least < 0 || b < s.least {
				s.least = b
			}
		}
	}
	return s.least * holdBucket, true
}

// holdKey notes that rec, of ps, joined an open session of key in window
// i.
func (c *Engine) holdKey(ps *partState, i int, key []byte, rec *record.Record) {
	h := &ps.winHold
	if h.sess == nil {
		h.sess = make([]*sessionHold, len(c.wins))
	}
	s := h.sess[i]
	if s == nil {
		s = newSessionHold()
		h.sess[i] = s
	}
	o, ok := s.keys[string(key)]
	switch {
	case !ok:
		s.keys[string(key)] = rec.Offset
	case rec.Offset < o:
		s.remove(o)
		s.keys[string(key)] = rec.Offset
	default:
		return
	}
	s.add(rec.Offset)
}

// keyGone lets go of key's session holds in window i: its last session in
// scope sc was emitted.
func (c *Engine) keyGone(sc *winScope, i int, key string) {
	drop := func(ps *partState) {
		if h := ps.winHold.sess; h != nil && h[i] != nil {
			if o, ok := h[i].keys[key]; ok {
				delete(h[i].keys, key)
				h[i].remove(o)
			}
		}
	}
	if sc.task != nil {
		for _, ps := range sc.task.parts {
			drop(ps)
		}
		return
	}
	for _, ps := range c.parts {
		drop(ps)
	}
}

// holdRecord notes that rec, of ps, joined windows of wr up to timer.
func (c *Engine) holdRecord(ps *partState, rec *record.Record, timer int64) {
	h := &ps.winHold
	if h.by != nil && timer == h.last && rec.Offset >= h.lastMin {
		return
	}
	if h.by == nil {
		h.by = map[int64]int64{}
	}
	o, ok := h.by[timer]
	if !ok || rec.Offset < o {
		o = rec.Offset
		h.by[timer] = o
	}
	h.last, h.lastMin = timer, o
}

// windowHeld is low held back to the oldest record of ps in a window not
// emitted yet (timer above the windows' time): what a checkpoint commits.
// The checkpoints come after a release is over, so every window with a
// timer at or below the checkpoint's watermark was emitted before it (K4).
// A session window's hold is its least bucket's first offset (sessionHold),
// never below where ps was assigned.
func (c *Engine) windowHeld(ps *partState, low int64) int64 {
	for _, s := range ps.winHold.sess {
		if s == nil {
			continue
		}
		if o, ok := s.low(); ok {
			low = min(low, max(o, ps.start))
		}
	}
	h := ps.winHold.by
	if len(h) == 0 || len(c.wins) == 0 {
		return low
	}
	now := c.scopeOf(ps).ws[0].Time() // a scope's windows are advanced together
	for t, o := range h {
		if t <= now {
			delete(h, t)
			if t == ps.winHold.last {
				ps.winHold.last = watermark.MinTime // the cached entry is gone
			}
		} else {
			low = min(low, o)
		}
	}
	return low
}

// windowsReread takes a re-read record that the restored checkpoint says
// was emitted (the restart skip rule): it goes to the windows, as it did
// before the restart, and to no sink, no dead-letter sink and no counter
// but Skipped. A record the Process or a where drops, or whose evaluation
// fails, was dealt with the first time.
func (c *Engine) windowsReread(ps *partState, rec *record.Record) error {
	c.stats.Skipped++
	if rec.Timeless {
		return nil
	}
	o, stats := c.cur, c.stats
	dead := len(o.Dead)
	c.rereading = true // failed counts nothing: the map is not in the stats' copy
	err := c.output(ps, rec)
	c.rereading = false
	if c.stats.Out > stats.Out { // rec went into the batch, last, after the results it fired
		o.Records, o.Routes = o.Records[:len(o.Records)-1], o.Routes[:len(o.Routes)-1]
		if c.cfg.InflightBytes > 0 {
			o.Bytes -= rec.Size()
		}
	}
	o.Dead = o.Dead[:dead]
	c.stats = stats
	return err
}

// skipReread drops a re-read record the restored checkpoint says was
// emitted and that fails again on its way in (the first time it went to
// the dead-letter sink, in no window).
func (c *Engine) skipReread() error {
	c.stats.Skipped++
	return nil
}

// parkReread parks a re-read record the restored checkpoint says was
// emitted, so that it comes back to the windows in release order
// (windowsReread). Late by the data, it gets its lateness, so that it
// parks where it did, without being counted again; under late: drop or
// dead-letter it was in no window and stays out.
func (c *Engine) parkReread(ps *partState, rec *record.Record, byData int64) error {
	if rec.EventTime <= byData {
		rec.Late, rec.LateBy = true, byData-rec.EventTime
		if c.cfg.Late != LateEmit {
			return c.skipReread()
		}
	}
	return c.park(ps, rec)
}

// errWindowsRestore is the error of a run with windows that a checkpoint
// restores where that is not exact yet (WithWindow).
var errWindowsRestore = errors.New("signalbox: windows: resuming from a checkpoint is supported only without a durable store: without a group, from a checkpoint sink before the windows start; with a group, when a task's partitions are assigned together")

// windowsResume refuses a restored checkpoint that the windows cannot
// resume from exactly: a durable store's (its restart re-reads from the
// stored positions, not the held-back Low), one without a group that
// neither a checkpoint sink restored nor came before the windows started
// (the run's one scope would take re-read records behind its time), or
// one that joins a task whose windows already took records.
func (c *Engine) windowsResume(assigned []record.PartitionInfo) error {
	if len(c.cfg.Windows) == 0 {
		return nil
	}
	restored := false
	for _, a := range assigned {
		if _, ok := c.restored[a.TopicPartition]; ok || a.Checkpoint != nil {
			restored = true
			if t := c.tasks[a.Partition]; c.cfg.InGroup && t != nil && t.win != nil && t.win.started {
				return fmt.Errorf("%w: %s[%d] joins a task whose windows started", errWindowsRestore, a.Topic, a.Partition)
			}
		}
	}
	if !restored {
		return nil
	}
	switch {
	case c.cfg.Durable:
		return fmt.Errorf("%w: the run has a durable store", errWindowsRestore)
	case !c.cfg.InGroup && !c.hasCP:
		return fmt.Errorf("%w: a group's committed checkpoint", errWindowsRestore)
	case !c.cfg.InGroup && c.winAll != nil && c.winAll.started:
		return fmt.Errorf("%w: partitions assigned after the windows started", errWindowsRestore)
	}
	return nil
}
