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
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/signalbox/signalbox/config"
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

// orderPad pads each order (the map drops it) so that a partition's orders
// take several fetches (a fetch brings at most 1 MiB of a partition): the
// engine releases what a fetch made due in one pass and checkpoints only
// between passes, so that a replay fetched whole commits no checkpoint
// before its end, and every kill restarts it from the beginning.
var orderPad = strings.Repeat("x", 6000)

// tableData is what the table crash test produced: the orders, and the
// products' versions in production order.
type tableData struct {
	orders   []Produced
	versions []Version
}

// produceTableData produces perPart orders on each orders partition, event
// times 100 ms apart out of order by up to disorder, each of a random sku,
// then the products: versionsPerSku versions of each sku, each at exactly
// the event time of one of its orders or 1 ms after it, and a tombstone
// after the last version of one sku, with orders after it. Each products
// partition gets its versions in time order (none is late by the data).
func produceTableData(t *testing.T, b *Broker, rng *rand.Rand, perPart int, disorder time.Duration) tableData {
	cl := b.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MaxBufferedRecords(1<<20), kgo.ProducerLinger(5*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), HangGuard)
	defer cancel()
	start := time.Now().Add(-time.Hour).UnixMilli()
	var recs []*kgo.Record
	for i := range perPart {
		for p := range int32(orderParts) {
			ts := start + int64(i)*100 - rng.Int64N(disorder.Milliseconds()+1)
			sku := fmt.Sprintf("sku-%02d", rng.IntN(tableSkus))
			id := fmt.Sprintf("o/%d/%d", p, i)
			v := fmt.Sprintf(`{"id":%q,"ts":%d,"sku":%q,"pad":%q}`, id, ts, sku, orderPad)
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
		if o := &d.orders[i]; o.TS > start+int64(perPart)/10*100 && o.TS < start+int64(perPart)*8/10*100 {
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
// (transactional Kafka) in no group, SIGKILLed during the replay again and
// again, then run with until: end-offsets. Each restart rebuilds the table
// by re-reading its topic from the earliest offset (design O6, R11) while
// the orders resume from the sink's checkpoint. The output topic, read with
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
	// Padded orders (orderPad), enough for a replay of several fetches.
	const perPart = 1000
	d := produceTableData(t, r.broker, rng, perPart, sc.disorder)
	exact, msAfter, before, afterTomb := d.coverage()
	t.Logf("%d orders, %d versions; orders with a version exactly at their time %d, 1 ms after it %d, before the first version %d, after the tombstone %d",
		len(d.orders), len(d.versions), exact, msAfter, before, afterTomb)
	if exact == 0 || msAfter == 0 || before == 0 || afterTomb == 0 {
		t.Fatal("the data does not cover every case of the oracle")
	}
	// A checkpoint commits only between the engine's passes (a pass
	// releases everything a fetch made due) and once the sinks have
	// written everything released before it. Event-time-aligned fetching
	// (align: 1ms), a small memory budget, small batches and a small stdout
	// buffer keep the reading and the release close to the slow stdout,
	// so that a run commits a checkpoint before its replay is over.
	extra := tableJobSection + "align: 1ms\nstate:\n  memory: 1MiB\n"
	stateDir := filepath.Join(r.dir, "state")
	tableMarker := filepath.Join(config.TablesDir(stateDir), "products", "SIGNALBOX-TABLE")
	if state {
		extra = tableJobSection + fmt.Sprintf("align: 1ms\nstate:\n  dir: %s\n  memory: 4MiB\n", stateDir)
	}
	r.prepare(rng, &Job{Brokers: r.broker.Addr, Topics: []string{ordersTopic}, Delay: sc.delay, Extra: extra, BatchSize: 8, StdoutBuffer: 4096,
		Sinks: fmt.Sprintf("  - type: kafka\n    topic: %s\n    transactional_id: %s\n    group: %s\n", enrichedTopic, tableTxnID, tableTxnID)})
	r.c.ReplayOnly = true
	// A run is killed during its replay only once it has committed a
	// checkpoint (else as soon as its replay is seen done): its restart
	// resumes the orders from there, while it re-reads the table whole.
	r.c.Checkpoints = 1
	// Whether a run commits a checkpoint before its replay is over depends
	// on how the engine's passes fall: a pass releases everything due, and
	// the records read while the table bootstraps (or all of a restart's
	// short replay) are often one pass, with no checkpoint before its end.
	// Kill until a run was killed after a checkpoint, at most maxKills
	// times (mostly one of the first six runs is).
	const maxKills = 20
	for len(r.c.Kills) < maxKills {
		r.c.Crash(1)
		if replay, _ := r.c.Phases(); replay > 0 && len(r.c.Kills) >= sc.kills/2 {
			break
		}
	}
	if _, err := os.Stat(tableMarker); state && err != nil {
		t.Errorf("after the kills, no table in pebble that the next start must wipe: %v", err)
	}
	r.c.Finish()
	if _, err := os.Stat(tableMarker); state && !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after the final run, the table's files remain: %v", err)
	}
	replay, _ := r.c.Phases()
	t.Logf("seed %d: %d kills, %d during the replay, each after a checkpoint", r.seed, len(r.c.Kills), replay)
	if replay == 0 {
		t.Errorf("no kill landed in a replay after a checkpoint in %d runs", maxKills)
	}

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
	// The point of the test: a restart that resumed the orders from a
	// checkpoint inside them, with the table rebuilt from its beginning.
	if n := bytes.Count(runs[len(runs)-1], []byte{'\n'}); n >= len(d.orders) {
		t.Errorf("the final run output %d orders, all of them: no restart resumed the orders from a checkpoint", n)
	}
}
