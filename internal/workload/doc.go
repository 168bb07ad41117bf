// Package workload generates the reference scenario of signalbox's
// benchmarks and demo, and produces it into an embedded (kfake) broker over
// real TCP with an ordinary Kafka client (franz-go kgo, through package
// embedded's helpers).
//
// The reference scenario: Options.Topics event topics × Options.Partitions
// partitions, keyed by item (keys are co-partitioned: item i always lands in
// partition i mod Partitions of every topic), with JSON values
// {"item":"i-042","ts":<unix ms>,"kind":"sold"}, plus one reference topic
// (ReferenceTopic) whose records carry no event time (`time: none`,
// Inputs), or are read as a table (ReferenceTable): one version per item,
// {"item":"i-042","name":"item 42"}, at the Kafka timestamp ReferenceTime,
// before every event.
//
// Schema'd values: the first Options.AvroTopics event topics carry the same
// events in Avro (Confluent wire format: magic byte 0, schema id, body;
// encoded by twmb/avro, framed by franz-go's sr), with the schema
// registered in the broker's schema registry and evolving from
// AvroSchemaV1 to AvroSchemaV2 halfway through each partition.
// Options.AvroTwins also writes every event record, Avro-encoded, into a
// twin topic (AvroTopic), so a benchmark can replay the same history in
// both formats.
//
// Lifecycle: New → ClusterOptions (topics to create) → ProduceHistory →
// SlowStart (some topics slower to connect than an idle timeout) → Live.
//
// Invariants:
//
//  1. Determinism: the history (keys, values, event times, partitions and
//     per-partition order) is a pure function of Options and the history's
//     end time. Live traffic is seeded too, but its event times follow the
//     wall clock.
//  2. Bounded disorder: inside one partition, a record's event time is never
//     more than Options.Disorder below the event time of any record before
//     it in that partition, in the history and in live traffic alike. A
//     processor whose delay bound is ≥ Disorder (plus the transport latency,
//     live) never has to see a late record.
//  3. Producer-delayed records are the only exception: their event time is
//     ProducerDelayBy older than the wall clock when produced. They are late
//     for any processor whose delay is below ProducerDelayBy, and Live
//     counts them so a report can check that every one was counted late.
//  4. History event times lie in [End−HistorySpan, End]; live event times lie
//     above End (Live starts after End), so a sink can tell them apart.
//  5. An Avro record and its JSON counterpart (its twin, or the JSON value
//     the same seed gives) carry the same item, event time, kind and
//     padding; the Avro value of a partition's first half of the history is
//     written with v1's id, the rest (and live traffic) with v2's.
package workload
