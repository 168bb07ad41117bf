// Command salesgen writes the data and the job files of the window and
// processing measurements from a broker (docs/bench.md, "From a broker, as
// users run it"): n generated sales, about 120 bytes of JSON each, -keys
// skus (1,000), event times over 200 minutes, one file per partition of lines
// `sku|value` for `kcat -P -K'|'`, and plain.yaml (the ordered replay into
// a JSONL file until the end offsets), window.yaml (the same with issue
// 37's per-minute window per sku) and process.yaml (the same with issue
// 36's filter and three-field map); with -products also products.txt (one
// version of each sku, for the topic products) and lookup.yaml (issue 38:
// the plain job with the table products and the map {id, product:
// lookup("products", value.sku)}); -keys sets how many skus. With -tls-ca
// and -sasl-user the jobs speak TLS and SCRAM-SHA-256 to a broker that
// asks for them (`signalbox broker --tls-cert-out --sasl-user`); -produce
// also produces the sales there with franz-go (librdkafka, hence kcat,
// does not authenticate to the embedded broker: it answers SASL handshakes
// of version 1 only).
//
// Invariants:
//
//  1. The output is a function of the flags alone (a fixed seed): two runs
//     write the same bytes.
//  2. Each partition's file is in event-time order; every line's key is
//     its value's sku.
package main
