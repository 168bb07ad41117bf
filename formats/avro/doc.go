// Package avro decodes Avro binary bodies with a writer schema from the
// registry (github.com/twmb/avro) and renders them as JSON by the rules in
// docs/sinks.md ("Schema'd values").
//
// Lifecycle: Compile a schema once per registry id; a *Codec is immutable
// and safe for concurrent use. Decode runs per record.
//
// Invariants:
//
//  1. Decode never panics and its memory is bounded by the body: the
//     library refuses a block count larger than the bytes left to hold it,
//     nesting deeper than 1000, and more than 4096 zero-byte items; a body
//     with bytes left after the value is refused too.
//  2. The JSON of a value is a pure function of (schema, body): record
//     fields in schema order, map keys sorted, unions as the plain value of
//     their branch, enums as symbols, bytes and fixed as base64, decimals
//     as exact strings with the schema's scale, timestamps as RFC 3339 in
//     UTC with the precision of their logical type.
//  3. Lookup of a logical timestamp or date (local-timestamp-* read as UTC)
//     yields KindTime, so no time format is needed for it.
package avro
