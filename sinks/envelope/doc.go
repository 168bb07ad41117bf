// Package envelope encodes a released record as the signalbox JSON envelope,
// the one line format shared by the JSONL, HTTP bulk and PostgreSQL sinks.
//
// The envelope is one JSON object with these members, in this order:
//
//	topic          string
//	partition      int
//	offset         int
//	key            string, or null when the record has no key; the decoded key (any JSON)
//	               when the input decodes keys (record.Record.DecodedKey)
//	key_b64        in place of key when the key is not valid UTF-8: its bytes in standard base64
//	event_time     RFC 3339, UTC, millisecond precision ("2026-11-30T05:13:24.123Z")
//	event_time_ms  int, milliseconds since the Unix epoch
//	value          the payload embedded verbatim when it is valid JSON, else a JSON
//	               string when it is valid UTF-8; null for a tombstone (no value)
//	               the decoded value (record.Record.DecodedValue) when the input decodes values
//	value_b64      in place of value when the payload is neither: its bytes in standard base64
//	schema_id      int, the value's writer schema id, only when it has one
//	key_schema_id  int, the key's writer schema id, only when it has one
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
//     engine sets it only after validating the value) and
//     record.Record.DecodedKey and DecodedValue are single-line JSON (the
//     formats package's output is).
//  2. A payload that is valid JSON and valid UTF-8 is embedded byte for byte,
//     except that a payload containing CR or LF is compacted (insignificant
//     whitespace removed) so that the envelope stays on one line. A record
//     marked record.Record.ValueJSON has its value embedded without being
//     scanned again.
//  3. Keys and values are never garbled. Strings are escaped as
//     encoding/json does (`"` `\` and control characters, U+2028 and
//     U+2029), so a key or value written as a string reads back exactly;
//     one that is not valid UTF-8 is written as key_b64 or value_b64
//     (RFC 4648 §4, padded) instead, and Decode returns its bytes. Exactly
//     one of key and key_b64 is present, and of value and value_b64. A
//     JSON payload reads back as JSON, not as its bytes: a payload that is
//     a JSON string or null is indistinguishable from that text or from a
//     tombstone. Other strings (topic, reason) have invalid UTF-8 replaced
//     by U+FFFD. Writing a valid UTF-8 key or value costs what it did:
//     the escaping loop finds invalid UTF-8 itself.
//  4. Append does not allocate when dst has enough capacity, except when a
//     multi-line JSON payload must be compacted.
//  5. An Encoder writes exactly Append's bytes, whatever it encoded before
//     (FuzzAppend, TestEncoderManyPartitions); it only remembers, per
//     topic-partition, the envelope's start up to the offset's last three
//     digits, and the last event-time second and its day.
//  6. ID maps keys to document ids injectively over all byte strings, and
//     ParseID inverts it (FuzzID): a key that is valid UTF-8 and does not
//     start with IDPrefix ("~b64:") is its own id; any other key is
//     IDPrefix and its bytes in unpadded base64url (RFC 4648 §5).
package envelope
