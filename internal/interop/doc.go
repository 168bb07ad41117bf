// Package interop holds end-to-end checks of signalbox against an
// independent Kafka client: Debian's kcat (librdkafka) produces the input
// into the embedded broker over TCP, and signalbox (franz-go) must read all of
// it and release it in event-time order. It has no non-test code.
//
// Invariant: under CI (CI=true) a missing kcat is a failure, never a skip.
package interop
