// Package envelope encodes a released record as the signalbox JSON envelope,
// the one line format shared by the JSONL, HTTP bulk and PostgreSQL sinks.
//
// The envelope is one JSON object with these members, in this order:
//
//	topic          string
//	partition      int
//	offset         int
//	key            string, or null when the record has no key
//	event_time     RFC 3339, UTC, millisecond precision ("2026-11-30T05:13:24.123Z")
//	event_time_ms  int, milliseconds since the Unix epoch
//	value          the payload embedded verbatim when it is valid JSON, else a JSON string
//	late           bool
//	late_by_ms     int, only when late
//	reason         string, only when the record carries a record.ReasonHeader header
//
// event_time and event_time_ms are omitted for Timeless records.
//
// Invariants:
//
//  1. Append always produces one syntactically valid JSON object that is
//     valid UTF-8 and contains no raw newline, whatever the key, value,
//     topic or header bytes (fuzzed by FuzzAppend), provided a record
//     marked record.Record.ValueJSON holds what the mark says (the
//     engine's decoder sets it only after validating the value).
//  2. A payload that is valid JSON and valid UTF-8 is embedded byte for byte,
//     except that a payload containing CR or LF is compacted (insignificant
//     whitespace removed) so that the envelope stays on one line. A record
//     marked record.Record.ValueJSON has its value embedded without being
//     scanned again.
//  3. Strings are escaped as encoding/json does: `"` `\` and control
//     characters are escaped, U+2028 and U+2029 are escaped, and invalid
//     UTF-8 is replaced by U+FFFD. A key that is valid UTF-8 therefore
//     round-trips exactly.
//  4. Append does not allocate when dst has enough capacity, except when a
//     multi-line JSON payload must be compacted.
//  5. An Encoder writes exactly Append's bytes, whatever it encoded before
//     (FuzzAppend); it only remembers the last topic and event-time second.
package envelope
