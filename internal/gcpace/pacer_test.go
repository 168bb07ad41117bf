package gcpace

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

const mib = 1 << 20

// feed observes lives (MiB) with a fixed overhead and returns each answer.
func feed(p *Pacer, overhead uint64, lives ...uint64) (limits []int64) {
	for _, l := range lives {
		limits = append(limits, p.Observe(l*mib, overhead))
	}
	return limits
}

// TestStartUp: while the live heap doubles from one collection to the
// next, the limit is GOGC's own goal; from the first mark that is less than
// twice the one before, the paced growth over the median of the marks since
// the last doubling (invariant 2). The marks are a 12M-record replay's
// first nine (MiB, from its gctrace): without a limit, GOGC 150 let the
// heap reach 431 MiB after the sixth, the run's peak; with the build-up's
// marks in the median (115 MiB of the last eight), the ninth limit would
// be 230 MiB, and the collector would run every 59 MiB instead of every
// 171.
func TestStartUp(t *testing.T) {
	const overhead = 16 * mib
	got := feed(New(Config{GCPercent: 150}), overhead, 5, 15, 26, 67, 115, 184, 160, 171, 171)
	want := []int64{12, 37, 32, 167, 143, 230, 320, 320, 342} // MiB over the overhead, rounded down
	if !slices.Equal(mibs(got, overhead), want) {
		t.Errorf("limits %v MiB, want %v MiB", mibs(got, overhead), want)
	}
	if New(Config{}).cfg.Window != DefaultWindow {
		t.Errorf("default window %d, want %d", New(Config{}).cfg.Window, DefaultWindow)
	}
}

// mibs turns limits into MiB of allowance, for messages.
func mibs(limits []int64, overhead int64) (out []int64) {
	for _, l := range limits {
		out = append(out, (l-overhead)/mib)
	}
	return out
}

// TestSpike: one high mark among steady ones does not lift the limit to
// GOGC's goal for it (invariant 3), and the limit includes the overhead
// (invariant 4).
func TestSpike(t *testing.T) {
	p := New(Config{GCPercent: 150})
	const overhead = 20 * mib
	limits := feed(p, overhead, 60, 62, 58, 61, 60, 59, 63, 60, 92)
	got := limits[len(limits)-1]
	if want := int64(60*mib*200/100 + overhead); got != want {
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
	limits := feed(p, 0, lives...)
	for i := 8; i < len(lives); i++ {
		if floor := int64(lives[i] * mib * 125 / 100); limits[i] < floor {
			t.Fatalf("collection %d: limit %d MiB below 1.25 × the newest live heap (%d MiB)", i, limits[i]/mib, lives[i])
		}
	}
	p = New(Config{GCPercent: 100, Window: 8})
	limits = feed(p, 0, 50, 50, 50, 50, 50, 50, 50, 50, 100, 100, 100, 100, 100)
	if got, want := limits[len(limits)-1], int64(200*mib); got != want {
		t.Errorf("five collections after a shift from 50 to 100 MiB: limit %d MiB, want %d", got/mib, want/mib)
	}
}

// TestPacedPercent: once paced, a GOGC above 100 lets the heap grow by
// 100% over the median live heap, not by GOGC's percentage (invariant 3),
// unless Config.PacedPercent says otherwise; a GOGC below 100 keeps its own.
// The marks are a 12M-record replay's of 1 MiB producer batches (MiB, from
// its gctrace): flat, with GOGC 150's goals at 420–448 MiB.
func TestPacedPercent(t *testing.T) {
	marks := []uint64{5, 16, 40, 92, 166, 211, 183, 199, 179, 174, 172, 185, 176, 173}
	const overhead = 16 * mib
	for _, c := range []struct {
		cfg  Config
		want uint64 // × the median, in percent
	}{
		{Config{GCPercent: 150}, 200},
		{Config{GCPercent: 150, PacedPercent: 150}, 250},
		{Config{GCPercent: 60}, 160},
		{Config{GCPercent: 400, PacedPercent: 50}, 150},
	} {
		limits := feed(New(c.cfg), overhead, marks...)
		last := slices.Clone(marks[len(marks)-DefaultWindow:])
		slices.Sort(last)
		median := last[(len(last)-1)/2]
		if got, want := limits[len(limits)-1], int64(median*mib*c.want/100+overhead); got != want {
			t.Errorf("%+v: limit %d MiB, want %d%% of the median %d MiB plus the overhead, %d MiB", c.cfg, got/mib, c.want, median, want/mib)
		}
	}
}

// TestCeiling: the limit never exceeds Config.Ceiling (invariant 4).
func TestCeiling(t *testing.T) {
	p := New(Config{GCPercent: 150, Ceiling: 100 * mib, Window: 1})
	limits := feed(p, mib, 10, 500)
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
		paced := min(cfg.GCPercent, 100)
		if rng.IntN(2) == 0 {
			cfg.PacedPercent = 1 + rng.IntN(400)
			paced = cfg.PacedPercent
		}
		p := New(cfg)
		var lives []uint64
		for i := range 50 {
			live, overhead := uint64(rng.IntN(1000))*mib, uint64(rng.IntN(64))*mib
			if rng.IntN(4) == 0 {
				live /= 4 // some marks below half the others
			}
			lives = append(lives, live)
			limit := p.Observe(live, overhead)
			var recent []uint64
			for _, l := range lives[max(0, len(lives)-cfg.Window):] {
				if 2*l >= live-live%2 {
					recent = append(recent, l)
				}
			}
			slices.Sort(recent)
			g := uint64(paced)
			floor := live * (400 + g) / 400
			if i == 0 || live >= 2*max(lives[i-1], 1) {
				floor = live * uint64(100+cfg.GCPercent) / 100
			}
			want := int64(max(recent[(len(recent)-1)/2]*(100+g)/100, floor) + overhead)
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
// 230 MiB; the pacer's limit stays at the median's, 62 × 2 (GOGC 150 paced
// at 100), plus the runtime's 16 MiB of overhead.
func ExamplePacer() {
	p := New(Config{GCPercent: 150, Window: 8})
	for i, live := range []uint64{61, 77, 60, 76, 76, 59, 62, 62, 92, 60} {
		if limit := p.Observe(live<<20, 16<<20); i >= 7 {
			fmt.Printf("live %d MiB: GOGC's goal %d MiB, limit %d MiB\n", live, live*250/100, limit>>20)
		}
	}
	// Output:
	// live 62 MiB: GOGC's goal 155 MiB, limit 140 MiB
	// live 92 MiB: GOGC's goal 230 MiB, limit 140 MiB
	// live 60 MiB: GOGC's goal 150 MiB, limit 140 MiB
}
