package workload

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
)

// TestPartitionTimesBoundedDisorder checks invariants 2 and 4 of the history.
func TestPartitionTimesBoundedDisorder(t *testing.T) {
	const end, span, d = 1_000_000_000, 604_800_000, 100
	rng := rand.New(rand.NewPCG(1, 2))
	ts := partitionTimes(rng, 20_000, end, span, d)
	maxSeen, inversions := int64(-1<<63), 0
	for i, x := range ts {
		if x < end-span || x > end {
			t.Fatalf("ts[%d] = %d outside [%d, %d]", i, x, end-span, end)
		}
		if x < maxSeen {
			inversions++
			if maxSeen-x > d {
				t.Fatalf("ts[%d] = %d is %d ms below an earlier record, bound %d", i, x, maxSeen-x, d)
			}
		}
		maxSeen = max(maxSeen, x)
	}
	if inversions == 0 {
		t.Fatal("no disorder at all: the scenario would not exercise the delay bound")
	}
	if first, last := ts[0], maxSeen; last-first < span/2 {
		t.Fatalf("history spans only %d ms of %d", last-first, span)
	}
}

// TestValuePadding checks that a padded value is valid JSON of about the
// asked size that still carries its event time.
func TestValuePadding(t *testing.T) {
	for _, size := range []int{0, 20, 100, 400} {
		v, _ := value("i-042", 1_700_000_000_123, "sold", size)
		var m struct {
			TS   int64  `json:"ts"`
			Item string `json:"item"`
		}
		if err := json.Unmarshal(v, &m); err != nil {
			t.Fatalf("size %d: %s: %v", size, v, err)
		}
		if m.TS != 1_700_000_000_123 || m.Item != "i-042" {
			t.Fatalf("size %d: decoded %+v from %s", size, m, v)
		}
		if size > 60 && len(v) != size {
			t.Fatalf("size %d: value has %d bytes: %s", size, len(v), v)
		}
	}
}
