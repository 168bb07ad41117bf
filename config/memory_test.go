package config

import (
	"testing"

	"github.com/signalbox/signalbox/timers/durable"
)

// TestGCPercent: the garbage collector's headroom over the live heap fits the
// share the budget leaves it, so small budgets collect more often; large
// ones keep Go's default, and none goes below 25.
func TestGCPercent(t *testing.T) {
	for budget, want := range map[int64]int{1: 25, 16 << 20: 31, 256 << 20: 93, 64 << 30: 99} {
		o := durable.StoreOptions{MemoryBudget: budget}
		o.EnsureDefaults()
		if got := GCPercent(o); got != want {
			t.Errorf("budget %d (in-memory part %d): GCPercent %d, want %d", budget, o.InMemoryBudget(), got, want)
		}
	}
}
