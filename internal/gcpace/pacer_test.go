package gcpace

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

const mib = 1 << 20

// feed observes lives (MiB) with a fixed overhead and returns each answer.
func feed(p *Pacer, overhead uint64, lives ...uint64) (limits []int64, oks []bool) {
	for _, l := range lives {
		limit, ok := p.Observe(l*mib, overhead)
		limits, oks = append(limits, limit), append(oks, ok)
	}
	return limits, oks
}

// TestWarmup: no limit before Window collections (invariant 2).
func TestWarmup(t *testing.T) {
	p := New(Config{GCPercent: 150, Window: 4})
	_, oks := feed(p, 0, 3, 10, 26, 61, 77)
	if want := []bool{false, false, false, true, true}; !slices.Equal(oks, want) {
		t.Errorf("ok %v, want %v", oks, want)
	}
	if New(Config{}).cfg.Window != DefaultWindow {
		t.Errorf("default window %d, want %d", New(Config{}).cfg.Window, DefaultWindow)
	}
}

// TestSpike: one high mark among steady ones does not lift the limit to
// GOGC's goal for it (invariant 3), and the limit includes the overhead
// (invariant 4).
func TestSpike(t *testing.T) {
	p := New(Config{GCPercent: 150})
	const overhead = 20 * mib
	limits, _ := feed(p, overhead, 60, 62, 58, 61, 60, 59, 63, 60, 92)
	got := limits[len(limits)-1]
	if want := int64(60*mib*250/100 + overhead); got != want {
		t.Errorf("limit after a 92 MiB mark among ~60: %d MiB, want the median's %d MiB", got/mib, want/mib)
	}
	if gogc := int64(92*mib*250/100 + overhead); got >= gogc {
		t.Errorf("limit %d MiB is not below GOGC's goal for the spike, %d MiB", got/mib, gogc/mib)
	}
}

// TestGrowth: a live heap that keeps growing always keeps a quarter of
// GOGC's headroom over its newest mark (invariant 3), and a level shift is
// followed within half a window.
func TestGrowth(t *testing.T) {
	p := New(Config{GCPercent: 100})
	lives := []uint64{50, 50, 50, 50, 50, 50, 50, 50}
	for l := uint64(50); l < 2000; l = l * 13 / 10 {
		lives = append(lives, l)
	}
	limits, _ := feed(p, 0, lives...)
	for i := 8; i < len(lives); i++ {
		if floor := int64(lives[i] * mib * 125 / 100); limits[i] < floor {
			t.Fatalf("collection %d: limit %d MiB below 1.25 × the newest live heap (%d MiB)", i, limits[i]/mib, lives[i])
		}
	}
	p = New(Config{GCPercent: 100, Window: 8})
	limits, _ = feed(p, 0, 50, 50, 50, 50, 50, 50, 50, 50, 100, 100, 100, 100, 100)
	if got, want := limits[len(limits)-1], int64(200*mib); got != want {
		t.Errorf("five collections after a shift from 50 to 100 MiB: limit %d MiB, want %d", got/mib, want/mib)
	}
}

// TestCeiling: the limit never exceeds Config.Ceiling (invariant 4).
func TestCeiling(t *testing.T) {
	p := New(Config{GCPercent: 150, Ceiling: 100 * mib, Window: 1})
	limits, _ := feed(p, mib, 10, 500)
	if want := []int64{26 * mib, 100 * mib}; !slices.Equal(limits, want) {
		t.Errorf("limits %v, want %v", limits, want)
	}
}

// TestObserveProperty compares Observe with the invariants' formula, computed
// afresh from the whole history, on random histories and settings.
func TestObserveProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 500 {
		cfg := Config{GCPercent: rng.IntN(400), Window: 1 + rng.IntN(12)}
		if rng.IntN(2) == 0 {
			cfg.Ceiling = int64(1+rng.IntN(2000)) * mib
		}
		p := New(cfg)
		var lives []uint64
		for i := range 50 {
			live, overhead := uint64(rng.IntN(1000))*mib, uint64(rng.IntN(64))*mib
			lives = append(lives, live)
			limit, ok := p.Observe(live, overhead)
			if ok != (i+1 >= cfg.Window) {
				t.Fatalf("trial %d (%+v), collection %d: ok %v", trial, cfg, i, ok)
			}
			if !ok {
				continue
			}
			last := slices.Clone(lives[len(lives)-cfg.Window:])
			slices.Sort(last)
			g := uint64(cfg.GCPercent)
			want := int64(max(last[(len(last)-1)/2]*(100+g)/100, live*(400+g)/400) + overhead)
			if cfg.Ceiling > 0 {
				want = min(want, cfg.Ceiling)
			}
			if limit != want {
				t.Fatalf("trial %d (%+v), collection %d: limit %d, want %d", trial, cfg, i, limit, want)
			}
		}
	}
}

// A replay's live heap as its collections marked it, in MiB (from a 12M
// record replay's gctrace): the high mark 92 would lift GOGC's next goal to
// 230 MiB; the pacer's limit stays at the median's, 62 × 2.5, plus the
// runtime's 16 MiB of overhead.
func ExamplePacer() {
	p := New(Config{GCPercent: 150, Window: 8})
	for _, live := range []uint64{61, 77, 60, 76, 76, 59, 62, 62, 92, 60} {
		if limit, ok := p.Observe(live<<20, 16<<20); ok {
			fmt.Printf("live %d MiB: GOGC's goal %d MiB, limit %d MiB\n", live, live*250/100, limit>>20)
		}
	}
	// Output:
	// live 62 MiB: GOGC's goal 155 MiB, limit 171 MiB
	// live 92 MiB: GOGC's goal 230 MiB, limit 171 MiB
	// live 60 MiB: GOGC's goal 150 MiB, limit 171 MiB
}
