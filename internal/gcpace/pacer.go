package gcpace

import "slices"

// DefaultWindow is Config.Window's default: the (lower) median of 8
// collections ignores up to four high marks among them.
const DefaultWindow = 8

// DefaultPacedPercent caps Config.PacedPercent's default: once the live heap
// stops doubling, the heap grows by at most Go's default percentage over
// the median live heap, whatever GOGC let it grow by while it built up.
const DefaultPacedPercent = 100

// Config is the pacer's setting.
type Config struct {
	// GCPercent is the collector's percentage in force (GOGC).
	GCPercent int
	// Ceiling is the static soft memory limit; the pacer never proposes
	// more. 0 means none.
	Ceiling int64
	// Window is how many collections the median covers. Default
	// DefaultWindow.
	Window int
	// PacedPercent is the heap's growth over the median live heap once
	// the live heap stops doubling (invariant 3). Default: GCPercent, at most
	// DefaultPacedPercent.
	PacedPercent int
}

// Pacer turns the live heaps of successive collections into a soft memory
// limit (invariants 2–4). It is not safe for concurrent use.
type Pacer struct {
	cfg    Config
	lives  []uint64 // ring of the last Window live heaps
	next   int      // where the next live heap goes
	sorted []uint64 // scratch for the median
	prev   uint64   // the previous mark; 0 before the first
}

// New returns a Pacer for cfg, its defaults applied.
func New(cfg Config) *Pacer {
	if cfg.Window <= 0 {
		cfg.Window = DefaultWindow
	}
	if cfg.PacedPercent <= 0 {
		cfg.PacedPercent = min(max(cfg.GCPercent, 0), DefaultPacedPercent)
	}
	return &Pacer{cfg: cfg, lives: make([]uint64, 0, cfg.Window), sorted: make([]uint64, 0, cfg.Window)}
}

// Observe takes one collection's live heap and the runtime's overhead at
// its end, both in bytes, and returns the soft memory limit to set.
func (p *Pacer) Observe(live, overhead uint64) (limit int64) {
	if len(p.lives) < p.cfg.Window {
		p.lives = append(p.lives, live)
	} else {
		p.lives[p.next] = live
	}
	p.next = (p.next + 1) % p.cfg.Window
	p.sorted = p.sorted[:0]
	for _, l := range p.lives {
		if l >= live/2 { // a mark from before the heap's last doubling says nothing of it now
			p.sorted = append(p.sorted, l)
		}
	}
	slices.Sort(p.sorted)
	median := p.sorted[(len(p.sorted)-1)/2] // the lower one of an even count
	g := uint64(p.cfg.PacedPercent)
	floor := live + live*g/400
	if p.prev == 0 || live >= 2*p.prev { // still doubling: GOGC's own goal
		floor = live + live*uint64(max(p.cfg.GCPercent, 0))/100
	}
	p.prev = max(live, 1)
	allowance := max(median+median*g/100, floor)
	limit = int64(min(allowance+overhead, 1<<62))
	if p.cfg.Ceiling > 0 {
		limit = min(limit, p.cfg.Ceiling)
	}
	return limit
}
