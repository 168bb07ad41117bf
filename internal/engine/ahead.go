package engine

// Evaluating a release chunk's Process and window items ahead of the
// engine (design K10): while the engine takes a chunk's records in order, a
// helper (started through Config.Spawn) runs the Process fork on copies of
// the same records and evaluates the windows' where, key and arguments of
// them with the windows' forks (Window.Fork); another helper does the same
// for the next chunk. A chunk is cut into blocks of aheadBlock records; each
// block is either a helper's or the engine's, whichever claims it first (a
// compare-and-swap), so no record is evaluated twice. The engine takes a
// block's results when the helper has filled it (while it is being
// filled, the engine fills an unclaimed block of its own with forks of
// its own: steal), and evaluates the records of a block it claimed
// itself as it always does. The current chunk's helper goes from its end back, the next
// chunk's forward, skipping the blocks the engine took. The results are the
// same either way (the forks give the same results, keyed.Spec.ItemIn is
// Windows.Item's, and the engine takes the Process's copy as the Process
// would have left the record), so what comes out does not depend on who
// evaluated: only how soon.

import (
	"runtime"
	"sync/atomic"

	"github.com/signalbox/signalbox/internal/prefetch"
	"github.com/signalbox/signalbox/keyed"
	"github.com/signalbox/signalbox/record"
)

// aheadBlock is how many records a claim covers: enough that claims are
// rare (one compare-and-swap per block on each side), few enough that the
// engine seldom waits for a block the helper is filling.
const aheadBlock = 64

// A block's states.
const (
	blockFree   int32 = iota // claimed by no one yet
	blockHelper              // the helper is filling it
	blockEngine              // the engine's: it evaluates the records itself
	blockDone                // filled by the helper: its items are ready
)

// aheadChunk is one release chunk evaluated ahead, with the helper's own
// forks of the Process and the windows. A chunk is reused only once its
// helper has exited.
type aheadChunk struct {
	recs []*record.Record // the chunk's records, a copy (the store clears its own)
	aheadForks
	blocks []aheadBlockOf
	exited atomic.Bool
}

// aheadForks are what fills a block: one goroutine's forks of the
// Process and the windows, and its buffer. A chunk's helper has its own;
// the engine has its own too, for the blocks it steals (steal).
type aheadForks struct {
	runs  []*windowRun                       // the engine's windows (inputs, spec: read only)
	forks []Window                           // the functions, by window
	proc  func(*record.Record) (bool, error) // the Process fork; nil: no Process
	hint  func([]*record.Record)             // Config.ProcessHint, with proc
	args  [][]byte                           // the arguments buffer
}

// aheadBlockOf is one block's state and its records' items.
type aheadBlockOf struct {
	state atomic.Int32
	procs []aheadProc // by record in the block, with a Process
	items []aheadItem // by record in the block, then by window
	args  []keyed.Arg // the items' Args
	mem   []byte      // the items' keys and First/Last arguments
}

// aheadProc is the Process's outcome on one record: the record as it
// left it, and its results.
type aheadProc struct {
	rec  record.Record
	keep bool
	err  error
}

// aheadItem is one window's item of one record, as windowRun.item returns
// it.
type aheadItem struct {
	it  keyed.Item
	ok  bool
	err error
}

// aheadOK reports whether the Process and the windows can be evaluated
// ahead: there is one of them, each has a fork, a helper can be started,
// and no schema'd value is decoded at release (Render).
func (c *Engine) aheadOK() bool {
	if c.cfg.Spawn == nil || c.cfg.Render != nil || c.cfg.Process == nil && len(c.cfg.Windows) == 0 ||
		c.cfg.Process != nil && c.cfg.ProcessFork == nil {
		return false
	}
	for i := range c.cfg.Windows {
		if c.cfg.Windows[i].Fork == nil {
			return false
		}
	}
	return true
}

// aheadStart is the store about to pass on the chunk recs[:n] of recs,
// the records it released and has not passed on yet (memStore.ahead): the
// chunk's evaluation was started at the last chunk, or starts now, and the
// next chunk's starts too, so that the helper works ahead of the engine
// across the two (its records stay in the store, untouched, until the
// engine claims them).
func (c *Engine) aheadStart(recs []*record.Record, n int) {
	if c.wins == nil {
		c.windowsStart()
	}
	cur, next := recs[:n], recs[n:min(len(recs), 2*n)]
	if ch := c.aheadNext; ch != nil && len(ch.recs) == len(cur) && ch.recs[0] == cur[0] {
		c.ahead = ch
	} else {
		c.ahead, c.aheadBlk = c.aheadNext, -1
		c.aheadEnd() // another chunk than foreseen
		c.ahead = c.aheadChunkOf(cur, false)
	}
	c.aheadBlk, c.aheadFilled = -1, false
	c.aheadNext = c.aheadChunkOf(next, true)
}

// aheadChunkOf starts evaluating recs (the next chunk's: next), nil when
// too short to share.
func (c *Engine) aheadChunkOf(recs []*record.Record, next bool) *aheadChunk {
	if len(recs) < 2*aheadBlock {
		if !next {
			aheadCounts.short.Add(int64(len(recs)))
		}
		return nil
	}
	var ch *aheadChunk
	for i, sp := range c.aheadSpares {
		if sp.exited.Load() {
			ch = sp
			c.aheadSpares = append(c.aheadSpares[:i], c.aheadSpares[i+1:]...)
			break
		}
	}
	if ch == nil {
		ch = &aheadChunk{aheadForks: c.newForks()}
	}
	ch.exited.Store(false)
	ch.recs = append(ch.recs[:0], recs...)
	nb := (len(recs) + aheadBlock - 1) / aheadBlock
	if cap(ch.blocks) < nb {
		ch.blocks = make([]aheadBlockOf, nb)
	}
	ch.blocks = ch.blocks[:nb]
	for i := range ch.blocks {
		ch.blocks[i].state.Store(blockFree)
	}
	if next {
		c.cfg.Spawn(ch.runAhead)
	} else {
		c.cfg.Spawn(ch.run)
	}
	return ch
}

// newForks makes a goroutine's own forks of the Process and the windows.
func (c *Engine) newForks() aheadForks {
	f := aheadForks{runs: c.wins, args: make([][]byte, c.maxAggregates())}
	for i := range c.cfg.Windows {
		f.forks = append(f.forks, c.cfg.Windows[i].Fork())
	}
	if c.cfg.Process != nil {
		f.proc, f.hint = c.cfg.ProcessFork(), c.cfg.ProcessHint
	}
	return f
}

// maxAggregates is the most aggregates a window has.
func (c *Engine) maxAggregates() int {
	n := 0
	for i := range c.cfg.Windows {
		n = max(n, len(c.cfg.Windows[i].Spec.Aggregates))
	}
	return n
}

// run is the helper of a chunk the engine is about to go through: it
// fills the chunk's blocks from the last, until it meets the first one the
// engine claimed; the engine goes from the first, so each does part of the
// chunk, and the engine waits at most for the block they meet in.
func (ch *aheadChunk) run() {
	defer ch.exited.Store(true)
	for b := len(ch.blocks) - 1; b >= 0; b-- {
		if !ch.take(b) {
			return
		}
	}
}

// runAhead is the helper of the next chunk, which the engine reaches only
// after this one: it fills the blocks from the first, skipping any the
// engine claimed, to stay ahead of it.
func (ch *aheadChunk) runAhead() {
	defer ch.exited.Store(true)
	for b := range ch.blocks {
		ch.take(b)
	}
}

// take claims and fills block b, unless the engine claimed it.
func (ch *aheadChunk) take(b int) bool {
	blk := &ch.blocks[b]
	if !blk.state.CompareAndSwap(blockFree, blockHelper) {
		return false
	}
	ch.fill(b, &ch.aheadForks)
	blk.state.Store(blockDone)
	return true
}

// fill runs the Process on block b's records, and evaluates them for
// every window, with f's forks.
func (ch *aheadChunk) fill(b int, f *aheadForks) {
	blk := &ch.blocks[b]
	recs := ch.recs[b*aheadBlock : min(len(ch.recs), (b+1)*aheadBlock)]
	nw, na := len(f.runs), len(f.args)
	if n := len(recs) * nw; cap(blk.items) < n {
		blk.items, blk.args = make([]aheadItem, n), make([]keyed.Arg, n*na)
	}
	blk.items, blk.args = blk.items[:len(recs)*nw], blk.args[:len(recs)*nw*na]
	blk.mem = blk.mem[:0]
	if f.proc != nil && cap(blk.procs) < len(recs) {
		blk.procs = make([]aheadProc, aheadBlock)
	}
	if f.hint != nil {
		f.hint(recs)
	}
	for r, rec := range recs {
		// ask for the records and values ahead, as memStore.Release does
		// (only the block's: the helper reads no other record)
		if j := r + prefetchAhead; j < len(recs) {
			prefetch.Record(recs[j])
		}
		if j := r + prefetchAhead/2; j < len(recs) {
			prefetch.Bytes(readAtRelease(recs[j]))
		}
		if f.proc != nil {
			pr := &blk.procs[r]
			pr.rec = *rec
			pr.keep, pr.err = f.proc(&pr.rec)
			if !pr.keep || pr.err != nil {
				continue // the windows do not see it
			}
			rec = &pr.rec // the windows see the record as the Process left it
		}
		for w, wr := range f.runs {
			k := r*nw + w
			it := &blk.items[k]
			*it = aheadItem{}
			if rec.Timeless {
				continue // windowsTake takes none
			}
			key, ok, err := wr.eval(&f.forks[w], rec, f.args)
			if !ok || err != nil {
				it.err = err
				continue
			}
			key = blk.keep(key)
			spec := &wr.def.Spec
			item, err := spec.ItemIn(blk.args[k*na:(k+1)*na], key, rec.EventTime, f.args)
			for a := range item.Args {
				if item.Args[a].JSON != nil {
					item.Args[a].JSON = blk.keep(item.Args[a].JSON)
				}
			}
			it.it, it.ok, it.err = wr.itemErr(item, err)
		}
	}
}

// keep copies b into the block's memory, which is never moved: a copy that
// does not fit starts a new array, and the earlier copies keep theirs.
func (blk *aheadBlockOf) keep(b []byte) []byte {
	if len(b) > cap(blk.mem)-len(blk.mem) {
		blk.mem = make([]byte, 0, max(4096, len(b)))
	}
	n := len(blk.mem)
	blk.mem = append(blk.mem, b...)
	return blk.mem[n:len(blk.mem):len(blk.mem)]
}

// aheadAt is the engine reaching the chunk's record i (releasedOne): at a
// block's first record it claims the block, or waits for the helper to
// finish filling it, so that the helper never reads a record the engine
// has passed on.
func (c *Engine) aheadAt(i int) {
	if i%aheadBlock != 0 {
		return
	}
	b := i / aheadBlock
	c.aheadBlk, c.aheadFilled = b, c.claim(b, true)
	if c.aheadFilled {
		aheadCounts.filled.Add(1)
	} else {
		aheadCounts.own.Add(1)
	}
	if h := c.ahead.hint; h != nil && !c.aheadFilled {
		h(c.ahead.recs[i:min(len(c.ahead.recs), i+aheadBlock)]) // the step runs the Process on them
	}
}

// claim takes block b for the engine, or, when the helper has it, waits
// until it is filled: filled reports the latter. While it waits it fills
// blocks no one has claimed yet itself when it may (steal: the engine is
// going through the chunk, not ending it), and yields only when there are
// none.
func (c *Engine) claim(b int, maySteal bool) (filled bool) {
	blk := &c.ahead.blocks[b]
	if blk.state.CompareAndSwap(blockFree, blockEngine) {
		return false
	}
	for blk.state.Load() == blockHelper {
		if !maySteal || !c.steal() {
			aheadCounts.waits.Add(1)
			runtime.Gosched() // at most one block's evaluation
		}
	}
	return true
}

// AheadCounts are counts of evaluation ahead, over every engine of the
// process (Ahead): for tests and profiling, by block, not by record.
type AheadCounts struct {
	Filled int64 // blocks the engine took filled: by a helper, or by itself while it waited (Stolen)
	Own    int64 // blocks the engine claimed and evaluated as it released them
	Stolen int64 // blocks the engine filled while it waited for a helper (steal)
	Waits  int64 // times the engine yielded, waiting for a helper, with nothing to steal
	Short  int64 // released records in chunks too short to evaluate ahead
}

var aheadCounts struct{ filled, own, stolen, waits, short atomic.Int64 }

// Ahead is the process's AheadCounts so far.
func Ahead() AheadCounts {
	a := &aheadCounts
	return AheadCounts{Filled: a.filled.Load(), Own: a.own.Load(), Stolen: a.stolen.Load(), Waits: a.waits.Load(), Short: a.short.Load()}
}

// steal fills, with the engine's own forks, the last block no one has
// claimed of the chunk the engine is in, else of the next chunk, as a
// helper would (the helpers skip a block claimed): the engine, waiting for
// a helper, evaluates what it will take later rather than wait idle.
// ok false: there was none.
func (c *Engine) steal() (ok bool) {
	for _, ch := range []*aheadChunk{c.ahead, c.aheadNext} {
		if ch == nil {
			continue
		}
		for b := len(ch.blocks) - 1; b > c.aheadBlk || ch != c.ahead && b >= 0; b-- {
			blk := &ch.blocks[b]
			if blk.state.Load() != blockFree || !blk.state.CompareAndSwap(blockFree, blockHelper) {
				continue
			}
			if c.stealForks == nil {
				f := c.newForks()
				c.stealForks = &f
			}
			ch.fill(b, c.stealForks)
			blk.state.Store(blockDone)
			aheadCounts.stolen.Add(1)
			return true
		}
	}
	return false
}

// aheadOf is rec's place in the block the helper filled: ok false when
// the engine evaluates rec itself.
func (c *Engine) aheadOf(rec *record.Record) (blk *aheadBlockOf, r int, ok bool) {
	if c.ahead == nil || !c.aheadFilled {
		return nil, 0, false
	}
	i := c.rel.n - 1
	if i < 0 || i >= len(c.ahead.recs) || c.ahead.recs[i] != rec || i/aheadBlock != c.aheadBlk {
		return nil, 0, false
	}
	return &c.ahead.blocks[c.aheadBlk], i % aheadBlock, true
}

// aheadItems is rec's items, by window, when the helper evaluated them; nil
// when the engine evaluates rec itself.
func (c *Engine) aheadItems(rec *record.Record) []aheadItem {
	blk, r, ok := c.aheadOf(rec)
	if !ok {
		return nil
	}
	nw := len(c.wins)
	return blk.items[r*nw : (r+1)*nw]
}

// aheadProcess is the Process's outcome on rec when the helper ran it:
// rec becomes the record as the Process left it. ok false when the engine
// runs the Process itself.
func (c *Engine) aheadProcess(rec *record.Record) (keep bool, err error, ok bool) {
	blk, r, ok := c.aheadOf(rec)
	if !ok || c.ahead.proc == nil {
		return false, nil, false
	}
	pr := &blk.procs[r]
	*rec = pr.rec
	return pr.keep, pr.err, true
}

// aheadEnd ends the chunk (ReleaseMore, whether or not the release went
// through it all): every block the engine did not reach is claimed, or
// waited for, so that the helper reads none of the chunk's records from
// here on. The chunk is kept for reuse once its helper has exited.
func (c *Engine) aheadEnd() {
	if c.ahead == nil {
		return
	}
	for b := c.aheadBlk + 1; b < len(c.ahead.blocks); b++ {
		c.claim(b, false) // the chunk ends: nothing of it to steal
	}
	if len(c.aheadSpares) < 4 {
		c.aheadSpares = append(c.aheadSpares, c.ahead)
	}
	c.ahead, c.aheadBlk, c.aheadFilled = nil, -1, false
}

// aheadJoin ends the next chunk's evaluation before any step but
// ReleaseMore (TakeFetch, a pass's release): a helper then runs only
// beside the release it belongs to, never beside a revoke, a record
// parked, a table version put or a table trimmed, which a fork may look
// up. The driver finishes a release before either (doc.go), so there is
// none then; this holds whatever the driver does.
func (c *Engine) aheadJoin() {
	if c.aheadNext != nil {
		c.aheadDone()
	}
}

// aheadDone ends the chunks at the end of a release: the next one too,
// which no chunk follows.
func (c *Engine) aheadDone() {
	c.aheadEnd()
	c.ahead, c.aheadNext = c.aheadNext, nil
	c.aheadEnd()
}
