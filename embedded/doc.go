// Package embedded runs an in-process Kafka-protocol cluster
// (github.com/twmb/franz-go/pkg/kfake) for tests, the demo and the
// `signalbox broker` command, optionally with a schema registry
// (github.com/twmb/franz-go/pkg/sr/srfake) beside it. Clients talk to both
// over real TCP.
//
// Lifecycle: Start → use Addrs, the helpers and the fault hooks → Close.
// Run wraps the same lifecycle around a context for a standalone broker.
//
// Invariants:
//
//  1. Start returns only once every broker listens; Addrs lists them all.
//  2. Topics given with WithTopic exist before Start returns.
//  3. The helpers (Produce, ProduceTxn, OpenTxn, DeleteRecords, CreateTopic)
//     use an ordinary Kafka client (franz-go kgo) over the same TCP
//     listeners, with the cluster's TLS and first SASL user, so what they
//     write is exactly what any consumer sees.
//  4. DelayFetches and FailFetches affect only fetches of the named topic
//     and only until their deadline; afterwards the cluster answers as usual.
//  5. Close is idempotent and releases every listener and helper client,
//     the schema registry's too.
//  6. With WithSchemaRegistry, Start returns only once the registry
//     (srfake, a Confluent-compatible REST API in memory) listens too;
//     RegistryURL names it.
package embedded
