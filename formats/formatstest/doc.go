// Package formatstest holds the producer side of the schema'd-format tests:
// a schema registry (srfake over HTTP) that can be switched down, and
// encoders that frame Avro and Protobuf records as franz-go's serde does.
//
// Invariants:
//
//  1. It is imported only by tests: it pulls in hamba/avro and srfake, which
//     the binary must not link.
//  2. The encoders are independent of the decoders under test: Avro goes
//     through hamba/avro, Protobuf through a descriptor built by hand with
//     protodesc, never through the package formats' compilers.
package formatstest
