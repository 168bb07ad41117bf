package signalbox_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/process"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/sinks/jsonl"
	"github.com/signalbox/signalbox/sources/script"
	"github.com/signalbox/signalbox/tables"
)

// tableSet draws orders on three partitions (event time in "ts", skus
// s0..s3) and a products table on two partitions (version time: the Kafka
// timestamp, key: the sku), versions often exactly at an order's time, some
// tombstones, offset gaps (compaction) and an empty partition, and, on
// some seeds, a version late by the data. It returns
// the partitions and the expected output: the orders in the total order,
// each mapped to {"id", "product"} with the product as of its event time
// by a model of design O3 (a version late by the data counts from its
// partition's mark + 1 ms).
func tableSet(seed uint64, delay int64) ([]script.Partition, []record.Record) {
	rng := rand.New(rand.NewPCG(seed, 38))
	const base = 1_700_000_000_000
	var parts []script.Partition
	var orders []record.Record
	for p := range int32(3) {
		sp := script.Partition{TopicPartition: tp("orders", p)}
		for i := range 40 {
			ts := base + int64(i)*10 + 10*rng.Int64N(3)
			id := fmt.Sprintf("o%d-%d", p, i)
			r := record.Record{Topic: "orders", Partition: p, Offset: int64(i), Key: []byte(id),
				Value: []byte(fmt.Sprintf(`{"id":%q,"sku":"s%d","ts":%d}`, id, rng.IntN(4), ts))}
			sp.Records = append(sp.Records, r)
			r.EventTime = ts
			orders = append(orders, r)
		}
		parts = append(parts, sp)
	}
	// model: sku → version time → value ("" for a tombstone); puts in
	// offset order per partition, each sku on one partition
	model := map[string]map[int64]string{}
	for p := range int32(2) {
		sp := script.Partition{TopicPartition: tp("products", p)}
		newest := int64(-1 << 62)
		for i := range 30 {
			ts := base - 50 + int64(i)*15 + 10*rng.Int64N(2) // often on an order's 10 ms grid
			if i == 20 && seed%2 == 1 {
				ts = newest - delay - 30 // late by the data
			}
			sku := fmt.Sprintf("s%d", 2*rng.IntN(2)+int(p)) // s0, s2 on 0; s1, s3 on 1
			val := fmt.Sprintf(`{"sku":%q,"v":%d}`, sku, i)
			r := record.Record{Topic: "products", Partition: p, Offset: 3 * int64(i), Key: []byte(sku), // compacted: gaps
				Value: []byte(val), Timestamp: time.UnixMilli(ts)}
			if rng.IntN(6) == 0 {
				r.Value, val = nil, ""
			}
			sp.Records = append(sp.Records, r)
			at := ts
			if mark := newest - delay - 1; ts <= mark {
				at = mark + 1
			}
			newest = max(newest, ts)
			if model[sku] == nil {
				model[sku] = map[int64]string{}
			}
			model[sku][at] = val
		}
		parts = append(parts, sp)
	}
	parts = append(parts, script.Partition{TopicPartition: tp("products", 2), Start: 7, End: 7}) // empty: compacted away
	var out []record.Record
	for _, o := range sortedTotal(orders) {
		sku := "s" + string(o.Value[bytes.Index(o.Value, []byte(`"sku":"s`))+len(`"sku":"s`)])
		best, product := int64(-1<<62), "null"
		for at, v := range model[sku] {
			if at <= o.EventTime && at > best {
				best, product = at, v
			}
		}
		if product == "" {
			product = "null"
		}
		id := strings.TrimPrefix(string(o.Key), "")
		o.Value = []byte(fmt.Sprintf(`{"id":%q,"product":%s}`, id, product))
		out = append(out, o)
	}
	return parts, out
}

// TestTableInterleavingsGiveIdenticalOutput: under every interleaving and
// fetch size of table and order fetches, the output is the orders only,
// in the total order, each with its product as of its own event time (the
// version exactly at it joined, one later not; null before the first and
// after a tombstone; a late version from its partition's mark + 1).
func TestTableInterleavingsGiveIdenticalOutput(t *testing.T) {
	const delay = 20
	for dataSeed := range uint64(4) {
		parts, expect := tableSet(dataSeed, delay)
		want := encodeJSONL(t, expect)
		if !bytes.Contains(want, []byte(`"product":null`)) || !bytes.Contains(want, []byte(`"product":{`)) {
			t.Fatalf("data %d: the data must give both null and found products", dataSeed)
		}
		for seed := range uint64(8) {
			got, st := runTable(t, parts, dataSeed, seed, delay, time.Hour)
			if !bytes.Equal(got, want) {
				t.Fatalf("data %d, interleaving %d: the output differs\n%s", dataSeed, seed, firstDiff(got, want))
			}
			if st.TableVersions != 60 || st.Out != 120 || st.TableLookupsBeyond["products"] != 0 {
				t.Fatalf("data %d, interleaving %d: %d versions, %d out, %v beyond; want 60, 120, 0", dataSeed, seed, st.TableVersions, st.Out, st.TableLookupsBeyond)
			}
		}
	}
}

// TestTableHistoryBeyondCounted: with a history shorter than the spread
// of a release, lookups older than the history are answered from the
// oldest version kept and counted.
func TestTableHistoryBeyondCounted(t *testing.T) {
	parts, _ := tableSet(0, 20)
	_, st := runTable(t, parts, 0, 7, 20, time.Millisecond) // 8 records a fetch: the watermark jumps
	if st.TableLookupsBeyond["products"] == 0 {
		t.Fatalf("no lookup beyond a 1 ms history counted: %v", st.TableLookupsBeyond)
	}
}

func runTable(t *testing.T, parts []script.Partition, dataSeed, seed uint64, delay int64, history time.Duration) ([]byte, signalbox.Stats) {
	t.Helper()
	products, err := tables.New("products", history)
	if err != nil {
		t.Fatal(err)
	}
	set, err := tables.NewSet(products)
	if err != nil {
		t.Fatal(err)
	}
	mapx, err := process.Compile("process.map", `{"id": value.id, "product": lookup("products", value.sku)}`, process.Map, process.WithTables(set))
	if err != nil {
		t.Fatal(err)
	}
	var a bytes.Buffer
	src := script.New(seed*7919+dataSeed, 1+int(seed%8), parts...)
	p, err := signalbox.New(src,
		signalbox.WithInputs(signalbox.Input{Topic: "orders", Time: signalbox.TimeFromField, TimeField: "ts"}, signalbox.Input{Topic: "products"}),
		signalbox.WithTables(signalbox.Table{Topic: "products", Into: products}),
		signalbox.WithDelay(time.Duration(delay)*time.Millisecond), signalbox.WithClock(frozen), signalbox.WithMaxFuture(0),
		signalbox.WithBatchSize(1+int(seed%5)*7),
		signalbox.WithProcess(process.Steps{Map: mapx}.Process()),
		signalbox.WithSink(jsonl.New(&a, jsonl.Options{BufferSize: 64})),
		signalbox.WithUntil(signalbox.UntilEndOffsets))
	if err != nil {
		t.Fatal(err)
	}
	if err := runBounded(t, p); err != nil {
		t.Fatal(err)
	}
	return a.Bytes(), p.Stats()
}

// TestTableValidation: a table's topic must be an input's, with a time.
func TestTableValidation(t *testing.T) {
	products, _ := tables.New("products", time.Hour)
	src := script.New(1, 1)
	for _, c := range []struct {
		in   signalbox.Input
		tb   signalbox.Table
		want string
	}{
		{signalbox.Input{Topic: "orders"}, signalbox.Table{Topic: "products", Into: products}, `tables[0].topic: "products" is no input's topic`},
		{signalbox.Input{Topic: "products", Time: signalbox.TimeNone}, signalbox.Table{Topic: "products", Into: products}, `tables[0].topic: "products" has time: none`},
		{signalbox.Input{Topic: "products"}, signalbox.Table{Topic: "products"}, `tables[0].into`},
	} {
		_, err := signalbox.New(src, signalbox.WithInputs(c.in), signalbox.WithTables(c.tb), signalbox.WithSink(jsonl.New(&bytes.Buffer{}, jsonl.Options{})))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v; want %q", c.tb, err, c.want)
		}
	}
}

// TestTableHoldsTheWatermarkLikeAnInput: a table partition that has not
// caught up with its start-up snapshot holds the watermark, and is named
// among the holders (signalbox status), while the caught-up orders wait.
func TestTableHoldsTheWatermarkLikeAnInput(t *testing.T) {
	products, _ := tables.New("products", time.Hour)
	orders := tsRecord("orders", 0, 0, "o", 1_000)
	version := record.Record{Topic: "products", Partition: 0, Offset: 0, Key: []byte("s"), Value: []byte(`{}`), Timestamp: time.UnixMilli(500)}
	src := script.New(1, 1, script.Partition{TopicPartition: tp("orders", 0), Records: []record.Record{orders}},
		script.Partition{TopicPartition: tp("products", 0), Records: []record.Record{version}, End: 2})
	var out bytes.Buffer
	p, err := signalbox.New(src,
		signalbox.WithInputs(signalbox.Input{Topic: "orders", Time: signalbox.TimeFromField, TimeField: "ts"}, signalbox.Input{Topic: "products"}),
		signalbox.WithTables(signalbox.Table{Topic: "products", Into: products}),
		signalbox.WithClock(frozen), signalbox.WithMaxFuture(0),
		signalbox.WithSink(jsonl.New(&out, jsonl.Options{})))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st, err := signalbox.NewStepper(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	f := record.Fetch{
		Assigned: []record.PartitionInfo{{TopicPartition: tp("orders", 0), End: 1}, {TopicPartition: tp("products", 0), End: 2}},
		Partitions: []record.PartitionFetch{
			{TopicPartition: tp("orders", 0), Records: []record.Record{orders}, Position: 1, End: 1},
			{TopicPartition: tp("products", 0), Records: []record.Record{version}, Position: 1, End: 2},
		},
	}
	if _, err := st.Step(f); err != nil {
		t.Fatal(err)
	}
	s := p.Stats()
	if len(s.Holders) == 0 || s.Holders[0].Input != "products" || s.Out != 0 || s.TableVersions != 1 {
		t.Fatalf("holders %+v, out %d, versions %d: want products/0 holding, nothing out, one version", s.Holders, s.Out, s.TableVersions)
	}
	if err := st.Stop(context.Canceled); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}

// TestTableValueNotJSONDeadLettered: a table record whose value is not
// JSON is dead-lettered with a reason naming the table, and not applied.
func TestTableValueNotJSONDeadLettered(t *testing.T) {
	products, _ := tables.New("products", time.Hour)
	bad := record.Record{Topic: "products", Partition: 0, Offset: 0, Key: []byte("s"), Value: []byte(`{"x":`), Timestamp: time.UnixMilli(5)}
	src := script.New(1, 1, script.Partition{TopicPartition: tp("products", 0), Records: []record.Record{bad}})
	var out, dead bytes.Buffer
	p, err := signalbox.New(src, signalbox.WithInputs(signalbox.Input{Topic: "products"}),
		signalbox.WithTables(signalbox.Table{Topic: "products", Into: products}),
		signalbox.WithClock(frozen), signalbox.WithMaxFuture(0), signalbox.WithUntil(signalbox.UntilEndOffsets),
		signalbox.WithSink(jsonl.New(&out, jsonl.Options{})), signalbox.WithDeadLetter(jsonl.New(&dead, jsonl.Options{})))
	if err != nil {
		t.Fatal(err)
	}
	if err := runBounded(t, p); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(dead.String(), "table products: the value is not JSON") || out.Len() != 0 || products.Keys() != 0 {
		t.Fatalf("dead %q, out %q, %d keys", dead.String(), out.String(), products.Keys())
	}
}
