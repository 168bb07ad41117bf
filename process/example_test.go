package process_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/process"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/sinks/jsonl"
	"github.com/signalbox/signalbox/sources/script"
	"github.com/signalbox/signalbox/tables"
)

// A map that enriches orders from an in-memory table, run as a job
// file's process is: a fork for the helper that evaluates long releases
// ahead (signalbox.WithProcessFork), and the lookups' hints
// (signalbox.WithProcessHint), which ask for a block's table slots and
// keys together before the map reads them one by one. Neither changes
// what comes out.
func ExampleHints() {
	products, _ := tables.New("products", 24*time.Hour)
	products.Put("sku-1", 0, []byte(`{"name":"pen"}`), false)
	set, _ := tables.NewSet(products)
	enrich, err := process.Compile("process.map", `{"id": value.id, "product": lookup("products", value.sku)}`,
		process.Map, process.WithTables(set))
	if err != nil {
		fmt.Println(err)
		return
	}
	steps := process.Steps{Map: enrich}
	orders := script.Partition{TopicPartition: record.TopicPartition{Topic: "orders"}, Records: []record.Record{
		{Topic: "orders", Offset: 0, Value: []byte(`{"id":"o-1","sku":"sku-1","ts":1000}`)},
		{Topic: "orders", Offset: 1, Value: []byte(`{"id":"o-2","sku":"sku-2","ts":2000}`)},
	}}
	p, err := signalbox.New(script.New(1, 2, orders),
		signalbox.WithInputs(signalbox.Input{Topic: "orders", Time: signalbox.TimeFromField, TimeField: "ts"}),
		signalbox.WithProcessFork(steps.Process(), steps.Process),
		signalbox.WithProcessHint(process.Hints(steps)),
		signalbox.WithSink(jsonl.New(os.Stdout, jsonl.Options{})),
		signalbox.WithUntil(signalbox.UntilEndOffsets),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := p.Run(context.Background()); err != nil {
		fmt.Println(err)
	}
	// Output:
	// {"topic":"orders","partition":0,"offset":0,"key":null,"event_time":"1970-01-01T00:00:01.000Z","event_time_ms":1000,"value":{"id":"o-1","product":{"name":"pen"}},"late":false}
	// {"topic":"orders","partition":0,"offset":1,"key":null,"event_time":"1970-01-01T00:00:02.000Z","event_time_ms":2000,"value":{"id":"o-2","product":null},"late":false}
}

// A filter and a map split in two, as a job file's process runs for a JSON
// input: Prepare as the record is decoded (here without the decoder's
// members: it then scans the value itself), which leaves the value as it
// was, and Release at release, which applies the result Prepare kept.
func ExampleEarly() {
	filter, _ := process.Compile("process.filter", `value.status != "test"`, process.Filter)
	mapx, _ := process.Compile("process.map", `{"id": value.id, "total": value.qty * value.price}`, process.Map)
	early, ok := process.NewEarly(process.Steps{Filter: filter, Map: mapx})
	if !ok {
		fmt.Println("reads late or a table: runs at release")
		return
	}
	for _, v := range []string{`{"id":"o-1","qty":3,"price":7.25,"status":"ok"}`, `{"id":"o-2","qty":1,"price":2,"status":"test"}`} {
		r := record.Record{Topic: "orders", Value: []byte(v)}
		early.Prepare(&r, nil, false)
		fmt.Printf("parked: %s\n", r.Value)
		keep, err := early.Release(&r)
		fmt.Printf("released: kept %v, %s, %v\n", keep, r.Value, err)
	}
	// Output:
	// parked: {"id":"o-1","qty":3,"price":7.25,"status":"ok"}
	// released: kept true, {"id":"o-1","total":21.75}, <nil>
	// parked: {"id":"o-2","qty":1,"price":2,"status":"test"}
	// released: kept false, {"id":"o-2","qty":1,"price":2,"status":"test"}, <nil>
}
