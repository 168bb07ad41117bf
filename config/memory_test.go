package config

import (
	"os"
	"strings"
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

// TestInflightBytes: the engine's released bytes in flight get a quarter of
// the budget, at least 1 MiB, as docs/operations.md states.
func TestInflightBytes(t *testing.T) {
	for budget, want := range map[int64]int64{1: 1 << 20, 16 << 20: 4 << 20, 256 << 20: 64 << 20} {
		o := durable.StoreOptions{MemoryBudget: budget}
		o.EnsureDefaults()
		if got := InflightBytes(o); got != want {
			t.Errorf("budget %d: InflightBytes %d, want %d", budget, got, want)
		}
	}
	md, err := os.ReadFile("../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	if doc := "not yet written by the sinks bounded to a\n  quarter of the budget"; !strings.Contains(string(md), doc) {
		t.Errorf("docs/operations.md does not state %q", doc)
	}
}
