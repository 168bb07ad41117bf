// Package decode is record decoding: an input's compiled form (a Decoder,
// compiled from a Spec, the root package's validated Input) fills each
// record's event time, ordering key and timeless flag, from the Kafka
// timestamp, a header, a JSON field, or the value a ValueDecoder decoded
// (a schema'd format); a Set finds a topic's Decoder. The root package's
// poller calls it off the engine's goroutine, as each Fetch arrives.
//
// Invariants:
//
//  1. Decode is a function of the record and the Spec: the same bytes give
//     the same event time, key and error (a ValueDecoder decodes the same
//     bytes the same way every time).
//  2. A record whose event time cannot be decoded, or lies outside
//     [MinEventTime, MaxEventTime], is left Timeless at 0 with an error
//     whose text is its dead-letter reason: never a wrong time.
//  3. A ValueDecoder that cannot answer yet (retry.IsRetryable, not fatal,
//     or a deadline) makes Classify return a *HoldError: the record is
//     held, never dead-lettered; the context's end and a fatal error stop
//     the run.
//  4. A JSON value scanned for a field and found valid on one line is
//     marked record.Record.ValueJSON; an invalid value gets the same
//     answer it would without the scan (validation never changes which
//     records decode).
//  5. With SetRenderIngest, a schema'd key and value are rendered to their
//     JSON as they are decoded (Rendered); otherwise only checked
//     (CheckValue), and rendered again later (Render).
//  6. A Decoder is safe for concurrent use once compiled; SetRenderIngest
//     is called before the first record.
//  7. DecodeMembers decodes exactly as Decode, and records the value's
//     members in the same pass; the Members it fills are only for the
//     record it was given, until its next call (each caller keeps its
//     own).
package decode
