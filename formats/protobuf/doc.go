// Package protobuf decodes Protobuf bodies with a writer schema from the
// registry: the .proto text is compiled by github.com/bufbuild/protocompile,
// the body read into a dynamicpb message, and rendered by protojson.
//
// Lifecycle: Compile a schema once per registry id; a *Codec is immutable
// and safe for concurrent use. Decode runs per record.
//
// Invariants:
//
//  1. Imports of google/protobuf/* (protocompile's standard imports),
//     google/type/* (the genproto descriptors) and confluent/meta.proto,
//     confluent/type/decimal.proto are built in; every other import must
//     come from the schema's references.
//  2. The message is chosen by the wire format's message-index path; a
//     path that names no message is an error, never a panic.
//  3. JSON is protojson with the .proto field names (UseProtoNames), every
//     field present (EmitUnpopulated: a zero quantity is 0, not absent),
//     enums as names, 64-bit integers as strings (the proto3 JSON mapping:
//     a JSON number loses precision above 2^53 in most readers), then
//     compacted, so the bytes do not depend on protojson's deliberately
//     unstable spacing.
//  4. Decode never panics; memory is bounded by the body (every length in
//     the wire format is checked against the bytes left, nesting is limited
//     to RecursionLimit, unknown fields are discarded).
//  5. Lookup of a google.protobuf.Timestamp yields KindTime; wrapper types
//     (google.protobuf.Int64Value, …) yield their inner value.
package protobuf
