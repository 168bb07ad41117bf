package gcpace

import "slices"

// DefaultWindow is Config.Window's default: the (lower) median of 8
// collections ignores up to four high marks among them.
const DefaultWindow = 8

// Config is the pacer's setting.
type Config struct {
	// GCPercent is the collector's percentage in force (GOGC).
	GCPercent int
	// Ceiling is the static soft memory limit; the pacer never proposes
	// more. 0 means none.
	Ceiling int64
	// Window is how many collections the median covers, and how many
	// are observed before the first limit. Default DefaultWindow.
	Window int
}

// Pacer turns the live heaps of successive collections into a soft memory
// limit (invariants 2–4). It is not safe for concurrent use.
type Pacer struct {
	cfg    Config
	lives  []uint64 // ring of the last Window live heaps
	next   int      // where the next live heap goes
	sorted []uint64 // scratch for the median
}

// New returns a Pacer for cfg, its defaults applied.
func New(cfg Config) *Pacer {
	if cfg.Window <= 0 {
		cfg.Window = DefaultWindow
	}
	return &Pacer{cfg: cfg, lives: make([]uint64, 0, cfg.Window), sorted: make([]uint64, 0, cfg.Window)}
}

// Observe takes one collection's live heap and the runtime's overhead at
// its end, both in bytes, and returns the soft memory limit to set; ok is
// false until Window collections have been observed.
func (p *Pacer) Observe(live, overhead uint64) (limit int64, ok bool) {
	if len(p.lives) < p.cfg.Window {
		p.lives = append(p.lives, live)
	} else {
		p.lives[p.next] = live
	}
	p.next = (p.next + 1) % p.cfg.Window
	if len(p.lives) < p.cfg.Window {
		return 0, false
	}
	p.sorted = append(p.sorted[:0], p.lives...)
	slices.Sort(p.sorted)
	median := p.sorted[(len(p.sorted)-1)/2] // the lower one of an even window
	g := uint64(max(p.cfg.GCPercent, 0))
	allowance := max(median+median*g/100, live+live*g/400)
	limit = int64(min(allowance+overhead, 1<<62))
	if p.cfg.Ceiling > 0 {
		limit = min(limit, p.cfg.Ceiling)
	}
	return limit, true
}
