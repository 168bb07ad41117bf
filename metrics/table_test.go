package metrics_test

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/metrics"
	"github.com/signalbox/signalbox/process"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/sinks/jsonl"
	"github.com/signalbox/signalbox/sources/script"
	"github.com/signalbox/signalbox/tables"
)

// TestTableMetrics: a run that enriches orders from a products table
// exposes, at a scrape of its Stats, the table's versions (every product
// record) and its lookups beyond a history too short for them (a 1 ms
// history, the watermark jumping over several versions at a time), with
// the values the run counted; a run without tables has neither series.
func TestTableMetrics(t *testing.T) {
	const versions = 30
	st := runEnrich(t, versions, true)
	beyond := st.TableLookupsBeyond["products"]
	if st.TableVersions != versions || beyond == 0 {
		t.Fatalf("the run counted %d table versions and %d lookups beyond; want %d and some", st.TableVersions, beyond, versions)
	}
	want := fmt.Sprintf(`
# HELP signalbox_table_lookups_beyond_history_total Lookups older than the table's history, answered with the oldest version kept.
# TYPE signalbox_table_lookups_beyond_history_total counter
signalbox_table_lookups_beyond_history_total{table="products"} %d
# HELP signalbox_table_versions_total Records of tables' topics applied to their table (tables): never output.
# TYPE signalbox_table_versions_total counter
signalbox_table_versions_total %d
`, beyond, versions)
	names := []string{"signalbox_table_versions_total", "signalbox_table_lookups_beyond_history_total"}
	if err := testutil.CollectAndCompare(collector(st), strings.NewReader(want), names...); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(collector(runEnrich(t, versions, false)), names...); n != 0 {
		t.Fatalf("%d table series from a run without tables", n)
	}
}

// runEnrich runs orders (one every 10 ms, sku s0 to s2) with products
// (one version every 40 ms) read as a 1 ms table that the orders look up
// (withTable), or as an input (its records then go out too), and returns
// the run's Stats.
func runEnrich(t *testing.T, nVersions int, withTable bool) signalbox.Stats {
	t.Helper()
	const base = 1_700_000_000_000
	orders := script.Partition{TopicPartition: record.TopicPartition{Topic: "orders"}}
	for i := range 4 * nVersions {
		orders.Records = append(orders.Records, record.Record{Topic: "orders", Offset: int64(i), Key: []byte("o"),
			Value: []byte(fmt.Sprintf(`{"id":"o%d","sku":"s%d","ts":%d}`, i, i%3, base+10*int64(i)))})
	}
	products := script.Partition{TopicPartition: record.TopicPartition{Topic: "products"}}
	for i := range nVersions {
		products.Records = append(products.Records, record.Record{Topic: "products", Offset: int64(i), Key: []byte(fmt.Sprintf("s%d", i%3)),
			Value: []byte(fmt.Sprintf(`{"v":%d}`, i)), Timestamp: time.UnixMilli(base - 5 + 40*int64(i))})
	}
	opts := []signalbox.Option{
		signalbox.WithInputs(signalbox.Input{Topic: "orders", Time: signalbox.TimeFromField, TimeField: "ts"}, signalbox.Input{Topic: "products"}),
		signalbox.WithDelay(20 * time.Millisecond), signalbox.WithMaxFuture(0),
		signalbox.WithClock(func() time.Time { return time.Unix(0, 0) }), // the data alone moves the watermark
		signalbox.WithSink(jsonl.New(io.Discard, jsonl.Options{})),
		signalbox.WithUntil(signalbox.UntilEndOffsets),
	}
	if withTable {
		tb, err := tables.New("products", time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		set, err := tables.NewSet(tb)
		if err != nil {
			t.Fatal(err)
		}
		x, err := process.Compile("process.map", `{"id": value.id, "product": lookup("products", value.sku)}`, process.Map, process.WithTables(set))
		if err != nil {
			t.Fatal(err)
		}
		opts = append(opts, signalbox.WithTables(signalbox.Table{Topic: "products", Into: tb}),
			signalbox.WithProcess(process.Steps{Map: x}.Process()))
	}
	p, err := signalbox.New(script.New(1, 8, orders, products), opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := p.Run(ctx); err != nil {
		t.Fatal(err)
	}
	return p.Stats()
}

// TestTableSizeMetrics: the size of each table, one in memory and one in
// pebble, is scraped while the engine's goroutine puts and trims (a data
// race under -race otherwise), and after, with the keys, versions and
// bytes the tables hold; the disk and memory series only for pebble.
func TestTableSizeMetrics(t *testing.T) {
	mem, err := tables.New("prices", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	dsk, err := tables.Open("products", time.Hour, tables.Options{Dir: t.TempDir() + "/products", MemoryBudget: tables.MinMemoryBudget})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = dsk.Close() }()
	set, err := tables.NewSet(mem, dsk)
	if err != nil {
		t.Fatal(err)
	}
	c := metrics.NewTableCollector(set.Sizes)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 3000 {
			for _, tb := range []*tables.Table{mem, dsk} {
				// 1,000 keys, three versions of 5 bytes each, then the
				// first version of each dropped by a trim
				tb.Put(fmt.Sprintf("k%03d", i%1000), int64(i/1000), []byte("value"), false)
			}
		}
		for _, tb := range []*tables.Table{mem, dsk} {
			tb.Trim(2 + time.Hour.Milliseconds()) // bound 2: drops the versions at 0
		}
	}()
	for scraping := true; scraping; {
		select {
		case <-done:
			scraping = false
		default:
		}
		testutil.CollectAndCount(c)
	}
	if err := dsk.Err(); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP signalbox_table_keys Keys a table holds now.
# TYPE signalbox_table_keys gauge
signalbox_table_keys{table="prices"} 1000
signalbox_table_keys{table="products"} 1000
# HELP signalbox_table_kept_versions Versions a table keeps now (its history behind the watermark, and the newest before it).
# TYPE signalbox_table_kept_versions gauge
signalbox_table_kept_versions{table="prices"} 2000
signalbox_table_kept_versions{table="products"} 2000
# HELP signalbox_table_value_bytes Bytes of the values of the versions a table keeps now.
# TYPE signalbox_table_value_bytes gauge
signalbox_table_value_bytes{table="prices"} 10000
signalbox_table_value_bytes{table="products"} 10000
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "signalbox_table_keys", "signalbox_table_kept_versions", "signalbox_table_value_bytes"); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(c, "signalbox_table_disk_bytes", "signalbox_table_memory_bytes"); n != 2 {
		t.Fatalf("%d disk and memory series; want 2, the pebble table's", n)
	}
	if s := dsk.Size(); s.DiskBytes <= 0 || s.MemoryBytes <= 0 || s.MemoryBytes > tables.MinMemoryBudget {
		t.Fatalf("pebble table's size %+v: want bytes on disk, and in memory within its budget", s)
	}
}
