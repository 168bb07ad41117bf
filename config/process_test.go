package config

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/signalbox/signalbox/embedded"
)

// issue36Job is the job file of issue 36, verbatim, after the connection
// and the input.
const issue36Job = `
process:
  filter: 'value.status != "test"'
  map: '{"id": value.id, "sku": value.sku, "total": value.qty * value.price}'
sinks:
  - type: jsonl
    path: all.jsonl
  - type: jsonl
    path: big.jsonl
    where: 'value.total >= 20.0'
dead_letter:
  type: jsonl
  path: dlq.jsonl
`

// envelopeLine is what the test reads of a JSONL line.
type envelopeLine struct {
	Offset      int64           `json:"offset"`
	Partition   int32           `json:"partition"`
	EventTimeMs int64           `json:"event_time_ms"`
	Value       json.RawMessage `json:"value"`
	Reason      string          `json:"reason"`
}

func readLines(t *testing.T, path string) []envelopeLine {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []envelopeLine
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l envelopeLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("%s: %q: %v", path, sc.Text(), err)
		}
		out = append(out, l)
	}
	return out
}

// TestProcessJobEndToEnd runs issue 36's job against the embedded broker:
// every record but the test ones is in all.jsonl once, with exactly the
// mapped value and its own event time, in event-time order; big.jsonl has
// exactly those with a total of 20 or more (the where sees the mapped
// value); the record whose qty is a string is in dlq.jsonl, with the
// expression's path in its reason, and nowhere else.
func TestProcessJobEndToEnd(t *testing.T) {
	c, err := embedded.Start(embedded.WithTopic("orders", 2))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const n, bad = 60, 17
	type order struct {
		id, sku    string
		qty, price float64
		test       bool
		ts         int64
		part       int32
	}
	var orders []order
	var recs []*kgo.Record
	for i := range n {
		o := order{id: fmt.Sprint("o", i), sku: fmt.Sprint("sku-", i%4), qty: float64(i%5 + 1), price: float64(i%7)*2.5 + 0.25,
			test: i%6 == 0, ts: future + int64((i*37)%n), part: int32(i % 2)}
		orders = append(orders, o)
		status := "ok"
		if o.test {
			status = "test"
		}
		qty := fmt.Sprint(o.qty)
		if i == bad {
			qty = `"3"`
		}
		recs = append(recs, embedded.Record("orders", o.part, o.sku, fmt.Sprintf(
			`{"ts":%d,"id":%q,"sku":%q,"qty":%s,"price":%v,"status":%q}`, o.ts, o.id, o.sku, qty, o.price, status)))
	}
	if err := c.Produce(context.Background(), recs...); err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	runJob(t, fmt.Sprintf(`
brokers: [%s]
inputs: [{topic: orders, time: field, time_field: ts}]
until: end-offsets
`, c.Addrs()[0])+issue36Job)

	want := map[int64]string{} // by event time (each order has its own)
	var wantBig []int64
	for i, o := range orders {
		if o.test || i == bad {
			continue
		}
		total, _ := json.Marshal(o.qty * o.price)
		want[o.ts] = fmt.Sprintf(`{"id":%q,"sku":%q,"total":%s}`, o.id, o.sku, total)
		if o.qty*o.price >= 20 {
			wantBig = append(wantBig, o.ts)
		}
	}
	check := func(path string, wantTS map[int64]bool) {
		t.Helper()
		lines := readLines(t, path)
		if len(lines) != len(wantTS) {
			t.Errorf("%s: %d records, want %d", path, len(lines), len(wantTS))
		}
		last := int64(0)
		seen := map[int64]bool{}
		for _, l := range lines {
			if !wantTS[l.EventTimeMs] || seen[l.EventTimeMs] {
				t.Errorf("%s: unexpected or repeated record at %d: %s", path, l.EventTimeMs, l.Value)
			}
			seen[l.EventTimeMs] = true
			if string(l.Value) != want[l.EventTimeMs] {
				t.Errorf("%s: value %s, want %s", path, l.Value, want[l.EventTimeMs])
			}
			if l.EventTimeMs < last {
				t.Errorf("%s: event time %d after %d", path, l.EventTimeMs, last)
			}
			last = l.EventTimeMs
		}
	}
	all := map[int64]bool{}
	for ts := range want {
		all[ts] = true
	}
	big := map[int64]bool{}
	for _, ts := range wantBig {
		big[ts] = true
	}
	if len(big) == 0 || len(big) == len(all) {
		t.Fatalf("the data must route some records and not others: %d of %d", len(big), len(all))
	}
	check("all.jsonl", all)
	check("big.jsonl", big)
	dlq := readLines(t, "dlq.jsonl")
	if len(dlq) != 1 || dlq[0].EventTimeMs != orders[bad].ts || !strings.Contains(dlq[0].Reason, "process.map") {
		t.Fatalf("dlq.jsonl = %+v, want the one record whose qty is a string, its reason naming process.map", dlq)
	}
	if !strings.Contains(string(dlq[0].Value), `"qty":"3"`) {
		t.Errorf("the dead-letter sink got %s, want the original value", dlq[0].Value)
	}
}
