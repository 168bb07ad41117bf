// Command scaling measures ordered replay against plain consumers of the
// same data, at several history sizes and data shapes, in one command
// (issues 9, 24):
//
//	go run ./bench/cmd/scaling -sizes 1M,4M,12M -rounds 3 \
//	    -shapes 16KiB,1MiB,1MiB+sasl,1MiB+3brokers -json docs/scaling.json
//
// A shape is the producer's batch bytes when the history is written
// (-batch; 16 KiB is Kafka's default batch.size, 1 MiB about franz-go's
// default ProducerBatchMaxBytes), whether the broker requires
// SASL/SCRAM-SHA-256 (-sasl), whether it speaks TLS (the shape's +tls)
// and how many brokers it has (-broker-count); -shapes lists several, each
// measured at every size. For each size and shape it starts one broker
// process (this binary as `-child broker`: the embedded kfake cluster,
// with the SCRAM user under -sasl, and under +tls a self-signed
// certificate that it writes to a file every client trusts), produces the
// history into it (8 topics × 3 partitions of ~100-byte JSON values, event
// time in field ts and as the Kafka timestamp, ≤ 200 ms disorder inside a
// partition, 1000 keys, plus the reference topic), then runs each consumer
// in its own process, rounds times, alternating (A B C A B C …):
//
//   - franz-go: PollFetches up to the end offsets listed first, with the
//     client's defaults and the shape's authentication, counting records
//     (bench/harness.RawConsume, the limit);
//   - franz-go-jsonl, the peer a user would write without ordering: the
//     same reads, each fetched partition's records written as they come,
//     unordered, into a JSONL file through signalbox's JSONL sink (its
//     line format, buffer and block reservation), event time from the
//     Kafka timestamp as `time: timestamp` takes it (jsonlCopy);
//   - `signalbox run` with `time: timestamp`, then with `time: field`, a
//     JSONL file sink, `until: end-offsets` and, under -sasl, the job
//     file's `sasl:` (SCRAM-SHA-256, the password from an environment
//     variable).
//
// Each signalbox job into a JSONL file is compared with the JSONL copy of
// the same round (records/s and peak RSS, the headline) and with franz-go
// (records/s). A consumer that reads a different number of records than
// the history holds fails the run. Each child's peak RSS comes from its rusage
// (os.ProcessState.SysUsage, ru_maxrss). At -profile-size, each signalbox
// mode runs once more with `signalbox run --cpuprofile --allocprofile`, and
// the top of the CPU profile (`go tool pprof -top`) goes into the section;
// with -profile-dir both profiles are kept (<mode>.pprof,
// <mode>.allocs.pprof: `go tool pprof -sample_index=alloc_space -top`), and
// with -trace an execution trace of the same run (<mode>.trace, `go tool
// trace`: what each goroutine waited for).
//
// With -avro it runs the schema'd round instead: the broker
// process also serves its schema registry, the history is produced in JSON
// and, record by record, Avro-encoded into twin topics
// (workload.Options.AvroTwins: Confluent wire format, a schema change
// halfway through each partition), and a round is franz-go on the JSON
// topics, franz-go on the Avro twins, then `signalbox run` with `time:
// field` reading JSON into a JSONL file sink, Avro (`format: avro`) into
// the same sink, JSON into a Kafka sink and Avro into a Kafka sink (the
// output topic lives in the same broker process, created before and
// deleted after each run; its end offsets count the records). Each rate
// is compared with franz-go on the same topics, and each Avro job with the
// JSON job of the same sink (rate, peak RSS, CPU per record). Its section
// has markers of its own, so both sections live in one bench.md.
//
// The command prints a Markdown section, one table whose rows say their
// history size, shape (batch, auth, brokers) and consumer, and splices it
// into -out (docs/bench.md by default) between its markers, keeping the
// rest of the file. -json also writes the rows, the samples and the run's
// provenance (command, machine, date, commit) to a results file and draws
// their chart beside it (.svg); -replot redraws a chart from its results
// file.
package main
