package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestReplayWritesTheMappedOrders runs a small replay in each mode: every
// record is written (plain) or every record but the test ones, with
// exactly issue 36's mapped value, in event-time order.
func TestReplayWritesTheMappedOrders(t *testing.T) {
	for _, args := range [][]string{{}, {"-job"}, {"-process"}, {"-process", "-at", "ingest"}} {
		out := filepath.Join(t.TempDir(), "out.jsonl")
		var stdout strings.Builder
		if err := run(append([]string{"-n", "10K", "-out", out}, args...), &stdout); err != nil {
			t.Fatal(args, err)
		}
		f, err := os.Open(out)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		processed := len(args) > 0 && args[0] == "-process"
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
			if processed {
				if _, ok := v["total"].(float64); !ok || len(v) != 3 || v["id"] == nil || v["sku"] == nil {
					t.Fatalf("%v: value %s is not the mapped order", args, line.Value)
				}
			} else if v["status"] == nil {
				t.Fatalf("%v: value %s is not an order", args, line.Value)
			}
			lines++
		}
		want := int64(10_000) - testRecords(10_000, processed)
		if lines != want || want == 10_000 && processed {
			t.Fatalf("%v: %d lines, want %d (%s)", args, lines, want, stdout.String())
		}
	}
}

// outLine is one line of a JSONL sink.
type outLine struct {
	Key       string          `json:"key"`
	EventTime int64           `json:"event_time_ms"`
	Value     json.RawMessage `json:"value"`
}

// readLines reads a JSONL sink's file.
func readLines(t *testing.T, path string) []outLine {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []outLine
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l outLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, l)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}

// TestReplayWindowIsTheOracles: with -window, every order is written and
// the window's results are exactly the (sku, minute) count, sum and max
// of value.qty computed from the written orders, one result each.
func TestReplayWindowIsTheOracles(t *testing.T) {
	dir := t.TempDir()
	out, win := filepath.Join(dir, "out.jsonl"), filepath.Join(dir, "win.jsonl")
	var stdout strings.Builder
	if err := run([]string{"-n", "30K", "-out", out, "-window", "-window-out", win}, &stdout); err != nil {
		t.Fatal(err)
	}
	type agg struct{ Count, Qty, MaxQty float64 }
	type cell struct {
		key   string
		start int64
	}
	oracle := map[cell]*agg{}
	orders := readLines(t, out)
	for _, l := range orders {
		var v struct{ Qty float64 }
		if err := json.Unmarshal(l.Value, &v); err != nil {
			t.Fatal(err)
		}
		c := cell{l.Key, l.EventTime - l.EventTime%60_000}
		a := oracle[c]
		if a == nil {
			a = &agg{}
			oracle[c] = a
		}
		a.Count++
		a.Qty += v.Qty
		a.MaxQty = max(a.MaxQty, v.Qty)
	}
	if len(orders) != 30_000 || len(oracle) < 1000 {
		t.Fatalf("%d orders in %d windows, want 30000 in at least 1000 (%s)", len(orders), len(oracle), stdout.String())
	}
	results := readLines(t, win)
	var counted float64
	for _, l := range results {
		var v struct {
			Key    string
			Start  time.Time
			Count  float64
			Qty    float64
			MaxQty float64 `json:"max_qty"`
		}
		if err := json.Unmarshal(l.Value, &v); err != nil {
			t.Fatal(err)
		}
		c := cell{v.Key, v.Start.UnixMilli()}
		want := oracle[c]
		if want == nil || *want != (agg{v.Count, v.Qty, v.MaxQty}) {
			t.Fatalf("result %s, want %+v", l.Value, want)
		}
		delete(oracle, c) // one result a window
		counted += v.Count
	}
	if len(oracle) != 0 || counted != 30_000 {
		t.Fatalf("%d windows without a result, %v records counted, want 0 and 30000", len(oracle), counted)
	}
}

// TestReplayLookupFindsEveryProduct: with -lookup, every order is written
// as {id, product}, its product the table's version of its own sku.
func TestReplayLookupFindsEveryProduct(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out.jsonl")
	var stdout strings.Builder
	if err := run([]string{"-n", "30K", "-keys", "20K", "-out", out, "-lookup"}, &stdout); err != nil {
		t.Fatal(err)
	}
	lines := readLines(t, out)
	skus := map[string]bool{}
	for _, l := range lines {
		var v struct {
			ID      string
			Product *struct{ SKU, Name string }
		}
		if err := json.Unmarshal(l.Value, &v); err != nil {
			t.Fatal(err)
		}
		if v.ID == "" || v.Product == nil || v.Product.SKU != l.Key || v.Product.Name != "product "+productNumber(l.Key) {
			t.Fatalf("%s: value %s, want its id and its product", l.Key, l.Value)
		}
		skus[l.Key] = true
	}
	if len(lines) != 30_000 || len(skus) != 20_000 {
		t.Fatalf("%d orders over %d skus, want 30000 over 20000 (%s)", len(lines), len(skus), stdout.String())
	}
}

// productNumber is a sku's number without its padding: "sku-000042" → "42".
func productNumber(sku string) string {
	n, _ := strconv.Atoi(strings.TrimPrefix(sku, "sku-"))
	return strconv.Itoa(n)
}

// TestTraceIsWritten: -trace leaves an execution trace of the run, which
// go tool trace reads (its header, then the run's events).
func TestTraceIsWritten(t *testing.T) {
	file := filepath.Join(t.TempDir(), "run.trace")
	var stdout strings.Builder
	if err := run([]string{"-n", "2K", "-trace", file}, &stdout); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), "go 1.") || len(b) < 1024 {
		t.Fatalf("the trace is %d bytes, starting %q: no execution trace", len(b), b[:min(len(b), 16)])
	}
}
