package config

import (
	"os"
	"strings"
	"testing"

	"github.com/signalbox/signalbox/sources/kafka"
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

// TestBoundMemoryFetches: the fetch answers on their way to the engine keep
// their responses reachable, so BoundMemory sizes a fetch to keep all of
// them within 3/8 of the budget (the 1 MiB floor aside), and docs state the
// cap.
func TestBoundMemoryFetches(t *testing.T) {
	for _, budget := range []int64{16 << 20, 64 << 20, 256 << 20, 4 << 30} {
		o := durable.StoreOptions{MemoryBudget: budget}
		o.EnsureDefaults()
		var k kafka.Config
		limit := BoundMemory(&k, o)
		if ahead := answersAhead * int64(k.FetchMaxBytes); ahead > budget*3/8 {
			t.Errorf("budget %d MiB: fetch_max_bytes %d: %d answers ahead keep %d MiB reachable, more than 3/8 of the budget",
				budget>>20, k.FetchMaxBytes, answersAhead, ahead>>20)
		}
		if k.FetchMaxBytes < 1<<20 || k.PartitionMaxBytes > k.FetchMaxBytes {
			t.Errorf("budget %d MiB: fetch_max_bytes %d (want at least 1 MiB), partition_max_bytes %d (want at most the fetch's)",
				budget>>20, k.FetchMaxBytes, k.PartitionMaxBytes)
		}
		if want := budget + 4*int64(k.FetchMaxBytes) + 64<<20; limit != want {
			t.Errorf("budget %d MiB: limit %d, want %d", budget>>20, limit, want)
		}
	}
	var k kafka.Config
	o := durable.StoreOptions{MemoryBudget: 1}
	o.EnsureDefaults()
	if BoundMemory(&k, o); k.FetchMaxBytes != 1<<20 {
		t.Errorf("tiny budget: fetch_max_bytes %d, want the 1 MiB floor", k.FetchMaxBytes)
	}
	md, err := os.ReadFile("../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	if doc := "the Kafka fetches capped at a sixteenth of the\n  budget"; !strings.Contains(string(md), doc) {
		t.Errorf("docs/operations.md does not state %q", doc)
	}
}
