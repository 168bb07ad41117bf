package crashtest

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/signalbox/signalbox/config"
	"github.com/signalbox/signalbox/timers"
)

// The table crash test's topics and table: orders on three partitions,
// keyed by their sku (carried in the value too), enriched from the
// products table (key: the sku, version time: the Kafka timestamp) into
// one output partition.
const (
	ordersTopic     = "orders"
	productsTopic   = "products"
	enrichedTopic   = "enriched"
	orderParts      = 3
	productParts    = 2
	tableSkus       = 24
	versionsPerSku  = 3
	tableTxnID      = "crashtest-tables"
	tableJobSection = `tables:
  - name: products
    topic: products
    key: key
    format: json
    time: timestamp
    history: 7d
process:
  map: '{"id": value.id, "product": lookup("products", value.sku)}'
`
)

// tableData is what the table crash test produced: the orders, and the
// products' versions in production order.
type tableData struct {
	orders   []Produced
	versions []Version
}

// produceTableData produces perPart orders on each orders partition, event
// times from start, step ms apart, out of order by up to disorder, each of
// a random sku,
// then the products: versionsPerSku versions of each sku, each at exactly
// the event time of one of its orders or 1 ms after it, and a tombstone
// after the last version of one sku, with orders after it. Each products
// partition gets its versions in time order (none is late by the data).
func produceTableData(t *testing.T, b *Broker, rng *rand.Rand, perPart int, start, step int64, disorder time.Duration) tableData {
	cl := b.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MaxBufferedRecords(1<<20), kgo.ProducerLinger(5*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), HangGuard)
	defer cancel()
	var recs []*kgo.Record
	for i := range perPart {
		for p := range int32(orderParts) {
			ts := start + int64(i)*step - rng.Int64N(disorder.Milliseconds()+1)
			sku := fmt.Sprintf("sku-%02d", rng.IntN(tableSkus))
			id := fmt.Sprintf("o/%d/%d", p, i)
			v := fmt.Sprintf(`{"id":%q,"ts":%d,"sku":%q}`, id, ts, sku)
			recs = append(recs, &kgo.Record{Topic: ordersTopic, Partition: p, Key: []byte(sku), Value: []byte(v)})
		}
	}
	var d tableData
	res := cl.ProduceSync(ctx, recs...)
	if err := res.FirstErr(); err != nil {
		t.Fatal(err)
	}
	bySku := map[string][]*Produced{}
	for _, r := range res {
		var v struct {
			ID string
			TS int64
		}
		if err := json.Unmarshal(r.Record.Value, &v); err != nil {
			t.Fatal(err)
		}
		d.orders = append(d.orders, Produced{ID: v.ID, Topic: r.Record.Topic, Partition: r.Record.Partition, Offset: r.Record.Offset, Key: string(r.Record.Key), TS: v.TS})
	}
	for i := range d.orders {
		if o := &d.orders[i]; o.TS > start+int64(perPart)/10*step && o.TS < start+int64(perPart)*8/10*step {
			bySku[o.Key] = append(bySku[o.Key], o) // versions after the first tenth and before the last fifth
		}
	}
	tomb := fmt.Sprintf("sku-%02d", rng.IntN(tableSkus))
	part := map[string]int32{}
	for s := range tableSkus {
		sku := fmt.Sprintf("sku-%02d", s)
		part[sku] = int32(s % productParts)
		n := versionsPerSku
		if sku == tomb {
			n++
		}
		times := map[int64]bool{}
		for len(times) < n {
			o := bySku[sku][rng.IntN(len(bySku[sku]))]
			times[o.TS+rng.Int64N(2)] = true // exactly at the order's time, or 1 ms after
		}
		sorted := slices.Sorted(func(yield func(int64) bool) {
			for ts := range times {
				if !yield(ts) {
					return
				}
			}
		})
		for k, ts := range sorted {
			v := []byte(fmt.Sprintf(`{"name":"p%d","v":%d}`, s, k))
			if k == versionsPerSku {
				v = nil
			}
			d.versions = append(d.versions, Version{Key: sku, Time: ts, Value: v})
		}
	}
	slices.SortStableFunc(d.versions, func(a, b Version) int { return cmp.Compare(a.Time, b.Time) })
	recs = recs[:0]
	for _, v := range d.versions {
		recs = append(recs, &kgo.Record{Topic: productsTopic, Partition: part[v.Key], Key: []byte(v.Key), Value: v.Value, Timestamp: time.UnixMilli(v.Time)})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return d
}

// coverage counts the orders that make the oracle's cases: a version of
// their sku exactly at their event time (joined), one 1 ms after it (not
// joined), no version yet (null), and after the tombstone (null).
func (d *tableData) coverage() (exact, msAfter, before, afterTomb int) {
	for _, o := range d.orders {
		first, tombAt := int64(-1), int64(-1)
		for _, v := range d.versions {
			if v.Key != o.Key {
				continue
			}
			switch {
			case v.Time == o.TS:
				exact++
			case v.Time == o.TS+1:
				msAfter++
			}
			if first < 0 || v.Time < first {
				first = v.Time
			}
			if v.Value == nil {
				tombAt = v.Time
			}
		}
		if o.TS < first {
			before++
		}
		if tombAt >= 0 && o.TS >= tombAt {
			afterTomb++
		}
	}
	return exact, msAfter, before, afterTomb
}

// TestCrashTableKafka (issue 38: "Restarts and kills mid-replay give the
// same enriched output"): a job that enriches orders with the version of
// their product as of their event time, to an exactly-once sink
// (transactional Kafka) in no group, SIGKILLed again and again, during the
// replay that follows each start (the table's re-reading, the orders'
// catch-up) and while the orders are released (the first run once a
// sixth of them is released and checkpointed), then run with until:
// end-offsets. Each restart rebuilds the table by re-reading its topic from
// the earliest offset (design O6, R11) while the orders resume from the
// sink's checkpoint, inside them. The output topic, read with
// read_committed, holds every order exactly once, in order, each with the
// oracle's product (the latest version at or before its event time; null
// before the first and after the tombstone) and no product record; so do
// the at-least-once stdout outputs of every run, killed or not.
func TestCrashTableKafka(t *testing.T) {
	t.Parallel()
	crashTable(t, false)
}

// TestCrashTableKafkaState: as TestCrashTableKafka with state.dir: the
// table in pebble under <state.dir>-tables/products, which a SIGKILL
// leaves behind and every start wipes, and the parked store in state.dir.
func TestCrashTableKafkaState(t *testing.T) {
	t.Parallel()
	crashTable(t, true)
}

func crashTable(t *testing.T, state bool) {
	sc := newScenario()
	r, rng := newRun(t, sc, []string{fmt.Sprintf("%s:%d", ordersTopic, orderParts), fmt.Sprintf("%s:%d", productsTopic, productParts), enrichedTopic + ":1"})
	// The orders' event times run from a second before the first start to
	// releaseSpan later: all of them in the log before the first run (none
	// is late), released as the clock (less the delay) passes them, pass
	// after pass, each followed by a checkpoint. A run killed while they
	// are released resumes them from a checkpoint inside them, and
	// re-reads the table whole. (History of past event times, all due at
	// once, is released in one pass, with no checkpoint before its end:
	// every kill would restart it from the beginning.)
	const perPart = 1000
	const releaseSpan = 6 * time.Second
	start := time.Now().Add(-time.Second).UnixMilli()
	d := produceTableData(t, r.broker, rng, perPart, start, releaseSpan.Milliseconds()/perPart, sc.disorder)
	exact, msAfter, before, afterTomb := d.coverage()
	t.Logf("%d orders, %d versions; orders with a version exactly at their time %d, 1 ms after it %d, before the first version %d, after the tombstone %d",
		len(d.orders), len(d.versions), exact, msAfter, before, afterTomb)
	if exact == 0 || msAfter == 0 || before == 0 || afterTomb == 0 {
		t.Fatal("the data does not cover every case of the oracle")
	}
	extra := tableJobSection
	stateDir := filepath.Join(r.dir, "state")
	tableMarker := filepath.Join(config.TablesDir(stateDir), "products", "SIGNALBOX-TABLE")
	if state {
		extra += fmt.Sprintf("state:\n  dir: %s\n  memory: 16MiB\n", stateDir)
	}
	r.prepare(rng, &Job{Brokers: r.broker.Addr, Topics: []string{ordersTopic}, Delay: sc.delay, Extra: extra,
		Sinks: fmt.Sprintf("  - type: kafka\n    topic: %s\n    transactional_id: %s\n    group: %s\n", enrichedTopic, tableTxnID, tableTxnID)})
	// The first run is killed once a sixth of the orders is released and
	// checkpointed, so that at least one restart resumes from a checkpoint
	// inside them whatever the machine's speed (random kill points alone
	// can all land before a run's first checkpoint); the others at random.
	r.c.FirstWatermark = start + releaseSpan.Milliseconds()/6
	r.c.Crash(sc.kills / 2)
	if _, err := os.Stat(tableMarker); state && err != nil {
		t.Errorf("after the kills, no table in pebble that the next start must wipe: %v", err)
	}
	r.c.Finish()
	if _, err := os.Stat(tableMarker); state && !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after the final run, the table's files remain: %v", err)
	}
	replay, live := r.c.Phases()
	t.Logf("seed %d: %d kills, %d during a replay (the table's re-reading, the orders' catch-up), %d while the orders were released", r.seed, len(r.c.Kills), replay, live)

	var out []Enriched
	var problems []string
	for _, rec := range readCommittedRecords(t, r.broker, enrichedTopic, len(d.orders)) {
		e, err := ParseEnriched(rec.Value, fmt.Sprintf("%s@%d", rec.Topic, rec.Offset))
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		out = append(out, e)
	}
	report(t, "kafka sink", Check(d.orders, Outs(out), Mode{ExactlyOnce: true}), append(problems, CheckEnriched(d.orders, d.versions, out)...)...)

	runs, torn, err := r.c.StdoutRuns()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("stdout sink: %d killed runs ended in a cut line (never acknowledged, dropped)", torn)
	out, problems = out[:0], problems[:0]
	for run, data := range runs {
		for i, l := range bytes.Split(bytes.TrimSuffix(data, []byte{'\n'}), []byte{'\n'}) {
			if len(l) == 0 {
				continue
			}
			e, err := ParseEnriched(l, fmt.Sprintf("stdout of run %d, line %d", run, i+1))
			if err != nil {
				problems = append(problems, err.Error())
				continue
			}
			out = append(out, e)
		}
	}
	report(t, "stdout sink", Check(d.orders, Outs(out), Mode{Delay: sc.delay.Milliseconds()}), append(problems, CheckEnriched(d.orders, d.versions, out)...)...)
	// The point of the test: restarts that resumed the orders from a
	// checkpoint inside them (their stdout has orders, not the first one),
	// each with the table re-read whole.
	first := &d.orders[0]
	for i := range d.orders {
		if timers.Less(d.orders[i].pos(), first.pos()) {
			first = &d.orders[i]
		}
	}
	resumed := 0
	for _, data := range runs[1:] {
		if len(data) > 0 && !bytes.Contains(data, []byte(fmt.Sprintf(`"id":%q`, first.ID))) {
			resumed++
		}
	}
	t.Logf("%d restarts resumed the orders from a checkpoint inside them", resumed)
	if resumed == 0 {
		t.Errorf("no restart resumed the orders from a checkpoint inside them")
	}
}
