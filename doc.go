// Package signalbox is an event-time ordering stream processor for Kafka.
//
// A Pipeline reads records from a Source, parks each under its event time,
// and releases them to Sinks in event-time order once the evidence says that
// nothing older can still arrive. See docs/design.md for the semantics.
package signalbox
