// Package avro decodes Avro binary bodies with a writer schema from the
// registry and renders them as JSON by the rules in docs/sinks.md
// ("Schema'd values").
//
// github.com/twmb/avro parses the schema (with the referenced schemas
// first). Compile resolves it (schema.go) and compiles it into one program
// (program.go), which Decode runs rendering JSON in one pass with no
// intermediate value (render.go), and Check runs only checking. The
// library's own decoder, into a generic value that a renderer walks, is
// the reference, in test files only (reference_test.go): the tests run
// both on every case, and FuzzTranscode checks on arbitrary bodies that
// both fail or both give the same bytes and the same lookups.
//
// Lifecycle: Compile a schema once per registry id; a *Codec is immutable
// and safe for concurrent use. Decode runs per record.
//
// Invariants:
//
//  1. Decode never panics and its memory is bounded by the body: like the
//     library, it refuses a block count larger than the bytes left could
//     hold, nesting deeper than 1000, more than 4096 zero-byte items, and
//     decimals longer than 32 KiB; a body with bytes left after the value,
//     and a time of day outside [0, 24h), are refused too.
//  2. The JSON of a value is a pure function of (schema, body): record
//     fields in schema order, map keys sorted, unions as the plain value of
//     their branch, enums as symbols, bytes and fixed as base64, decimals
//     as exact strings with the schema's scale, timestamps as RFC 3339 in
//     UTC with the precision of their logical type.
//  3. Lookup of a logical timestamp or date (local-timestamp-* read as UTC)
//     yields KindTime, so no time format is needed for it.
//  4. Check and Decode run the same program, and each read of a body is
//     written once in it: a leaf's (read), a union's branch (alt), an
//     array's or map's blocks and keys (blockCount, bytesAt). Its two
//     walks make the same reads in the same order: check renders nothing
//     and allocates nothing (a record's common leaves are read inline, in
//     the shapes read takes in one step, and go to read otherwise); render
//     appends each value's JSON as it reads it. So Check refuses exactly
//     the bodies Decode refuses, with the same error, and its Value looks
//     up and renders as Decode's (FuzzCheck on random schemas and mutated
//     bodies, FuzzTranscode). Lookup walks the body with check, skipping
//     what precedes the field, and reads the field with read.
//  5. A Value's JSON is its own: values render back to back into shared
//     slabs (one allocation per slab), each keeps its exact piece, capped
//     at its length, so appending to it never writes into another's.
//  6. Names resolve as the specification says, once, at Compile: a dotted
//     name is a full name and sets the namespace of what its type contains;
//     a short name means that name in the enclosing namespace (else in the
//     null namespace, as Java looks it up); a named type nested in another
//     inherits its namespace. A name that resolves to nothing fails
//     Compile, so the schema's records are never decoded with a type that
//     reads nothing (TestNamesAgainstIndependentEncoder: hamba/avro's
//     bodies of recursive, cross-namespace and dotted names, and of Apache
//     Avro's interop schema).
package avro
