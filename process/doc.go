// Package process compiles the expressions of a job file's processing
// (process.filter, process.map, a sink's where) with CEL (cel.dev/cel-go)
// and runs them on records: Steps as a signalbox.Process
// (signalbox.WithProcess), an Expr as a signalbox.Where
// (signalbox.WithRoutedSink) or, for JSON values at ingest, a
// signalbox.Transform. The root package does not import it: cel-go stays
// out of the library's core.
//
// Invariants:
//
//  1. Every expression compiles against one fixed environment (Env): the
//     variables below, CEL's standard library and the strings, math and
//     encoders extensions, with cross-type numeric comparisons. No
//     function reads the wall clock or any other state but lookup's
//     tables (8): an evaluation is a pure function of the record and the
//     tables' versions at or before its event time, so a replay and a live
//     run compute the same.
//  2. Variables: value (dyn, the record's value in the JSON model the
//     sinks render: record.Record.DecodedValue for a schema'd value, else
//     its bytes, which must be JSON; object → map(string, dyn), array →
//     list(dyn), every number → double, string, bool, null; null for a
//     record without a value), key (string: the Kafka key; reading it
//     fails when the key is not UTF-8, key_bytes then reads it
//     losslessly; a null key reads as ""; a schema'd key,
//     record.Record.DecodedKey, is its decoded value: a string key's
//     text, any other key's JSON), key_bytes (bytes), headers
//     (map(string, bytes), the last header of a name wins), topic
//     (string), partition and offset (int), event_time (timestamp, the
//     record's event time; reading it fails for a `time: none` input),
//     kafka_timestamp (timestamp), late (bool: released out of turn).
//  3. Compile refuses, with a *CompileError naming the expression, its line
//     and column: a syntax error, an unknown variable or function, a
//     filter or where whose type is neither bool nor dyn, and an
//     expression whose estimated cost, with every value, key and header at
//     most MaxInputBytes long, exceeds MaxEstimatedCost (an unbounded
//     estimate included).
//  4. An evaluation never turns an error into a result: a missing key read
//     without has(), a type mismatch, a division by zero, a value that is
//     not JSON, a cost above MaxCost, a filter or where that is not a bool,
//     a map result that is no JSON (a non-string map key, NaN, infinity)
//     or is longer than MaxValueBytes are an *Error naming the expression;
//     the root package dead-letters the record with it as the reason.
//  5. A map's result becomes the record's value as one line of JSON
//     (AppendJSON): map keys sorted by their bytes, an object passed
//     through from the input unchanged in the input's member order; the
//     same record gives the same bytes every time. A where sees the mapped
//     value, read back from those bytes.
//  6. Reading a field of a top-level object scans the value's bytes for
//     that member only (internal/jsonfield); the first member of a name
//     wins, in every read. On the fast path (7) the top-level members are
//     scanned at most once per record for every read of the filter and the
//     map, and only as far as the last member read so far (members.go:
//     each read is exactly jsonfield.Get's, errors included;
//     TestMemberScanIsGet, FuzzMemberScan).
//  7. The fast path (fast.go) changes the speed, never a result: an
//     expression made only of `value`'s field paths, topic, partition,
//     offset, key, late, lookup (8), literals, == != < <= > >=, + - * / %, unary -,
//     && || ! and ?:, and (for a map) map literals of distinct constant
//     string keys, whose estimated cost is at most MaxCost, runs as Go
//     closures when the record's value, key and topic are at most
//     MaxInputBytes long (so its cost cannot pass MaxCost and needs no
//     tracking). A map literal is rendered entry by entry, its keys sorted
//     at compile time, no CEL map built. The closures compute with
//     cel-go's own operator bindings (or their exact native equivalent)
//     and give up on anything else (an error, an array, an object used as
//     an operand, a string with escapes): cel-go's interpreter then
//     evaluates the whole expression, so every error and its text are
//     cel-go's. Double arithmetic and comparisons over the value's numbers,
//     and a field compared with a string literal, are read straight from
//     the value's bytes, falling back to the general closures for any other
//     type; a number -?d+(.d+)? of at most 15 digits is read, and a double
//     that such a decimal denotes is written, without strconv's general
//     algorithms and with its exact results (numbers.go,
//     TestNumbersAreStrconv); a string of plain ASCII, and an integer of
//     at most 15 digits without a leading zero, are copied into a map's
//     result as they are. TestFastPathIsTheInterpreter,
//     TestStepsAreTheInterpreter and FuzzEval compare the two paths' bytes
//     and errors.
//  8. lookup(name, key), compiled WithTables only, is the value of key in
//     table name as of the record's event time (a hidden variable the
//     macro adds: lookup(n, k) is __lookup(n, k, __as_of)), read through
//     Tables, null when there is no version at or before that time or a
//     tombstone there, or the key is null; a `time: none` record reads the
//     latest version. The key is a string, or an integral number read as
//     its decimal text. A literal table name that is not a table, or
//     lookup without tables (NoLookup says why), is a *CompileError. On
//     the fast path (7), lookup with a literal name and a fast key is a
//     node whose value is the table's bytes (an object passed through as
//     the interpreter's lazy object renders it); it gives up to the
//     interpreter on a key of another type or an unknown table. A table
//     must hold valid JSON (the root package dead-letters a table record
//     whose value is not). TestLookupAsOfEventTime compares both paths.
//  9. Steps.Run gives the record a new value in memory of its own, never
//     the old value's bytes nor another record's: values are carved from
//     chunks an activation holds (one allocation per 16 KiB of values),
//     each capped at its length, and a chunk's bytes are never written
//     again once carved.
//  10. Expr.NeedsRelease is true when the expression reads late or a table
//     (lookup): otherwise it computes the same before parking, on a value
//     that is JSON as it arrives, as at release (and so do the parts of a
//     map that read neither: 13).
//  11. A Set (set.go: a window's where, key and arguments) evaluates each
//     of its expressions exactly as the expression alone (results, errors
//     and their texts), sharing only the reads of one record between them:
//     its doc, the member scan (6) and the activation's buffers, never a
//     converted `value`, which each evaluation converts anew
//     (TestSetIsSeparate). Its results are its own memory, reused for the
//     next record.
//  12. An Early (early.go) gives what its chain gives, whatever happened
//     between Prepare and Release: Prepare leaves the record's value as it
//     was and keeps the chain's result in DecodedValue (the mapped value,
//     or a mark of a drop or of a record kept unchanged, neither of which
//     is JSON, so a copy reads the same); Release applies it, and runs
//     the chain when there is none (Prepare failed, or a store did not
//     keep it). The members Prepare reads are those of the decoder's scan
//     (jsonfield.ScanMembers), Get's by jsonfield's invariants 5 and 6.
//     Chain leaves a record it fails on as it came (TestEarlyIsTheChain,
//     FuzzEarly).
//  13. A map that reads the release only through lookups whose keys read
//     nothing of it (Expr.partial: lookups with a literal table name, as
//     map values at any depth or the whole result, beside expressions that
//     read nothing of the release) runs in an Early as a template
//     (partial.go), when it is the chain's last step: Prepare renders it on
//     the fast path with a hole for each lookup and its key (a null key
//     rendered as the lookup renders it), and keeps that in DecodedValue
//     under a mark no JSON value starts with; Release makes the lookups, as
//     of the record's event time, into the holes, rendered as the fast
//     path renders a lookup, or, when the fast path gives up on one (or the
//     template has a hole the map does not: another map's), runs the
//     chain. Hints reads a template's keys instead of the value's.
//     What Release gives is the chain's (TestTemplateIsTheChain, FuzzEarly).
package process
