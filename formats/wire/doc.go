// Package wire parses the framing that Confluent-compatible serializers put
// around a schema'd key or value, and nothing else: it never looks inside
// the body and never talks to a registry.
//
// Two framings are read:
//
//   - the prefix: magic byte 0, the schema id as a 4-byte big-endian
//     integer, then (Protobuf only) the message-index array, then the body;
//   - the header: a `__value_schema_id` (or `__key_schema_id`) record
//     header holding magic byte 1 and a 16-byte GUID (or magic byte 0 and a
//     4-byte id), then (Protobuf only) the message-index array; the payload
//     is the body with no prefix.
//
// The message-index array is a zigzag varint count followed by that many
// zigzag varint indexes; a count of 0 is the shortcut for [0] (the first
// message of the file), which is also what an empty array means.
//
// Invariants:
//
//  1. A header of the right name wins over the prefix (as Confluent's
//     DualSchemaIdDeserializer): with the header present the whole payload
//     is the body, even when it happens to start with a 0 byte.
//  2. Parse never panics and allocates at most one slice of indexes, no
//     longer than MaxIndexes; Body aliases the payload (no copy).
//  3. Every failure is a *Error (errors.Is(err, ErrNotWire)): the bytes are
//     not in the wire format, which is the record's fault, never the
//     registry's.
//  4. A message index is never negative, and Indexes is nil exactly when
//     the format has no message indexes (not Protobuf).
package wire
