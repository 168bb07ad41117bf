// Command procreplay measures what a job's processing (issue 36: one
// filter, a three-field map), a window (issue 37) or a table lookup
// (issue 38) costs an ordered replay, per record, one replay per process
// so that each is timed alone:
//
//	go build -o /tmp/procreplay ./bench/cmd/procreplay
//	/usr/bin/time -v /tmp/procreplay -n 4M                 # plain
//	/usr/bin/time -v /tmp/procreplay -n 4M -process        # filter + map
//	/usr/bin/time -v /tmp/procreplay -n 4M -process -job   # the same, a job file's process
//	/usr/bin/time -v /tmp/procreplay -n 4M -window         # plain + issue 37's window
//	/usr/bin/time -v /tmp/procreplay -n 4M -job           # plain, from a job file
//	/usr/bin/time -v /tmp/procreplay -n 4M -job -keys 1M  # the same, skus over 1M keys
//	/usr/bin/time -v /tmp/procreplay -n 4M -keys 1M -lookup # + issue 38's table and lookup
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
// processing there would save. It is not what `signalbox run` does (that
// is -process -job), and not a use a Filter allows (a Filter must not
// change the record): an estimate only.
//
// -process -job runs the filter and map as a job file's `process`, built
// by package config as `signalbox run` builds it: as records are decoded
// (docs/design.md K12).
//
// -window and -lookup build the replay's options from a job file with
// package config (config.Job.Build), as `signalbox run` does (jobfile.go):
// the same inputs, delay, until and JSONL sink, and with -window issue
// 37's window
//
//	windows:
//	  - name: per_minute
//	    key: value.sku
//	    tumbling: 1m
//	    aggregate: {count: count(), qty: sum(value.qty), max_qty: max(value.qty)}
//	    sinks: [{type: jsonl, path: <-window-out, /dev/null>}]
//
// over the 1,000 skus; with -lookup a table `products` (Kafka key, JSON,
// `time: timestamp`, the default 7d history, in memory) and the map
// `{"id": value.id, "product": lookup("products", value.sku)}`. The
// generator then first answers the table's topic, 3 partitions holding
// one version of each of -keys skus (about 70 bytes of JSON, a minute
// before the first order), so the table is loaded through the engine as a
// job's is, and its load is in the measured time; then the orders, whose
// skus with -keys other than 1000 are their place in the history times
// 7919 modulo -keys (every key as often, consecutive orders far apart).
// The plain replay to compare with is `-job` (the plain job file, built
// the same way), with `-keys 1M` for -lookup: the same orders, no table.
//
// It prints one line: the mode, the records generated and written, the
// wall time, and the process's user + system CPU in total and per
// generated record (getrusage), from before the source opens to the end.
package main
