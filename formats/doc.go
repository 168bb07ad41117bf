// Package formats decodes schema'd keys and values (Avro, Protobuf and JSON
// Schema in the Confluent wire format) into JSON, with the schemas fetched
// from a schema registry. It is the registry-backed decoder the engine
// plugs in per input; the engine itself does not import it.
//
// Pieces, each a package of its own: wire (the framing), registry (the
// cached, retried registry client), avro and protobuf (body → JSON), value
// (the rendering rules and the Field a path resolves to). The rules are in
// docs/sinks.md, "Schema'd values".
//
// Format names every format of a key or value a job file may name (Names:
// json, avro, protobuf, json_schema, raw), the schema'd ones among them
// (Schemad): the one list, which the job file validates against.
//
// Lifecycle: New returns a Decoder for one format; Decode may be called
// from any number of goroutines. Codecs are compiled on the first record of
// each schema id and kept in the Decoder's Codecs, one per registry client
// when the caller shares them (Config.Codecs; config makes one per job),
// for the life of the Codecs. A caller done with a
// Value may hand it back (ReleaseValue) for a later decode to reuse; the
// JSON bytes it took from it stay its own.
//
// Invariants:
//
//  1. Every error from Decode is exactly one of: a *BadRecordError
//     (errors.Is ErrBadRecord: not in the wire format, an unknown schema id
//     or GUID, a schema of another type or that does not compile, a body
//     that does not decode), which the caller dead-letters with its reason;
//     an error matching ErrUnavailable (the registry could not answer;
//     also marked retry.Retryable, and nothing else Decode returns is),
//     which the caller answers by holding the record and retrying later,
//     never by dead-lettering or skipping it; an error matching ErrAuth
//     (the registry answered 401 or 403: the credentials are wrong; marked
//     retry.Fatal), which the caller answers by stopping, since every
//     record would fail alike; or the context's error.
//  2. Which schema decodes a record depends only on the record (its
//     framing), never on the records before it: a new writer schema id in
//     the middle of a topic just works, and an id is compiled once per
//     Codecs and format, by whichever Decoder meets it first, even when
//     several meet it at once (TestCodecsSharedByInputs,
//     TestCodecsCompileOnceConcurrently).
//  3. The JSON of a record is a pure function of (schema, record bytes).
//  4. Decode never panics and its memory is bounded by the record's size
//     (the wire parser and the codecs check every length against the
//     bytes left).
//  5. A nil payload (a tombstone) decodes to JSON null with no schema; an
//     empty non-nil payload is not in the wire format.
//  6. Check fails exactly where Decode fails, with the same error, and its
//     Value looks up and renders as Decode's (FuzzDecode); it only skips
//     the rendering until JSON is asked for.
package formats
