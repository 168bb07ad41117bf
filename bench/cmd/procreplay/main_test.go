package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReplayWritesTheMappedOrders runs a small replay in each mode: every
// record is written (plain) or every record but the test ones, with
// exactly issue 36's mapped value, in event-time order.
func TestReplayWritesTheMappedOrders(t *testing.T) {
	for _, args := range [][]string{{}, {"-process"}, {"-process", "-at", "ingest"}} {
		out := filepath.Join(t.TempDir(), "out.jsonl")
		var stdout strings.Builder
		if err := run(append([]string{"-n", "30K", "-out", out}, args...), &stdout); err != nil {
			t.Fatal(args, err)
		}
		f, err := os.Open(out)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		var lines, last int64
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var line struct {
				EventTime int64           `json:"event_time_ms"`
				Value     json.RawMessage `json:"value"`
			}
			if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
				t.Fatal(err)
			}
			if line.EventTime < last {
				t.Fatalf("%v: event time %d after %d", args, line.EventTime, last)
			}
			last = line.EventTime
			var v map[string]any
			if err := json.Unmarshal(line.Value, &v); err != nil {
				t.Fatal(err)
			}
			if len(args) > 0 {
				if _, ok := v["total"].(float64); !ok || len(v) != 3 || v["id"] == nil || v["sku"] == nil {
					t.Fatalf("%v: value %s is not the mapped order", args, line.Value)
				}
			} else if v["status"] == nil {
				t.Fatalf("%v: value %s is not an order", args, line.Value)
			}
			lines++
		}
		want := int64(30_000) - testRecords(30_000, len(args) > 0)
		if lines != want || want == 30_000 && len(args) > 0 {
			t.Fatalf("%v: %d lines, want %d (%s)", args, lines, want, stdout.String())
		}
	}
}
