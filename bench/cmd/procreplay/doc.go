// Command procreplay measures what a job's processing (issue 36: one
// filter, a three-field map) costs an ordered replay, per record, one
// replay per process so that each is timed alone:
//
//	go build -o /tmp/procreplay ./bench/cmd/procreplay
//	/usr/bin/time -v /tmp/procreplay -n 4M                 # plain
//	/usr/bin/time -v /tmp/procreplay -n 4M -process        # filter + map
//	/usr/bin/time -v /tmp/procreplay -n 4M -mode source    # the generator alone
//
// The history is generated in the process, without a broker, so that the
// replay's own CPU is what is measured (a Kafka replay adds the client's
// decoding to both sides, which would make the ratio look smaller): -n
// records over 8 topics × 3 partitions, each partition's event times
// increasing by 24 ms a record (the partitions interleaved, few ties) with
// up to 200 ms of disorder, values of about 110
// bytes of JSON shaped as issue 36's orders
//
//	{"ts":…,"id":"o-0000123","sku":"sku-000042","qty":3,"price":7.25,"status":"ok","site":"oslo"}
//
// with 1 in 100 of them a test record (status "test"). Each fetch answers
// one partition with up to -batch records whose keys and values share one
// allocation, as a Kafka fetch's do; the source reuses the record arrays
// the engine gives back (signalbox.Recycler), as the Kafka source does.
//
// The replay is signalbox.New with every topic `time: field` (`ts`), a 1 s
// delay, until the end offsets, one JSONL sink writing to -out
// (/dev/null), and with -process the filter `value.status != "test"` and
// the map `{"id": value.id, "sku": value.sku, "total": value.qty *
// value.price}` compiled by package process, as a job file's process
// block is. -mode source drains the generator without a pipeline: its CPU
// is in both replays.
//
// -at ingest runs the same Steps before parking instead, inside a
// signalbox.Filter (on the engine goroutine, right after the record was
// decoded, its value still in cache), to estimate what running the
// processing there would save. It is not what `signalbox run` does, and
// not a use a Filter allows (a Filter must not change the record): an
// estimate of a root-package change only.
//
// It prints one line: the mode, the records generated and written, the
// wall time, and the process's user + system CPU in total and per
// generated record (getrusage), from before the source opens to the end.
package main
