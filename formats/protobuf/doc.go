// Package protobuf decodes Protobuf bodies with a writer schema from the
// registry: the .proto text is compiled by github.com/bufbuild/protocompile.
// The common shapes (proto3 scalars, enums, nested and repeated messages,
// maps, oneofs, Timestamp, Duration, wrappers) go through a transcoder that
// writes what protojson would, straight from the binary; everything else,
// and any body the transcoder declines, is read into a dynamicpb message
// and rendered by protojson, the reference FuzzTranscode checks the
// transcoder against.
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
//  4. Decode never panics (a panic inside proto.Unmarshal or protojson,
//     which some hostile bodies cause with dynamic messages, becomes an
//     error); memory is bounded by the body (every length in the wire
//     format is checked against the bytes left, nesting is limited to
//     RecursionLimit, unknown fields are discarded).
//  5. Lookup of a google.protobuf.Timestamp yields KindTime; wrapper types
//     (google.protobuf.Int64Value, …) yield their inner value.
package protobuf
