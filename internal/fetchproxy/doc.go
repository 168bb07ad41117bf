// Package fetchproxy is a Kafka-protocol TCP proxy for tests, in front of
// a cluster's brokers, that rewrites the record batches of Fetch answers:
// it lets a test hand a client what a broker it cannot configure (kfake)
// would never store, such as legacy message sets (magic 0 and 1).
//
// Invariants:
//
//  1. Every request goes to the proxied broker as the client sent it, and
//     every response comes back byte for byte, but for three kinds: Fetch
//     answers, whose partitions' RecordBatches pass through the Rewrite
//     function, and Metadata and FindCoordinator answers, whose broker
//     addresses are replaced by their proxies', so that a client
//     bootstrapped on the proxy stays behind it.
//  2. Responses are matched to requests by correlation id, per connection
//     (a request without a response, acks=0 Produce, leaves nothing
//     behind but its entry).
//  3. Close stops the listeners and every connection, and waits for the
//     proxy's goroutines.
package fetchproxy
