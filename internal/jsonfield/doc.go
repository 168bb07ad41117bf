// Package jsonfield reads JSON documents on the hot path without decoding
// them: Get extracts one field (an event time, a key), and Scan validates a
// whole document in one pass and finds a field on the way, so that a value
// parsed for its event time need not be validated again by the sinks;
// ScanMembers also records where the top-level members are, so that
// processing need not scan the value again.
//
// Invariants:
//
//  1. Get and Scan never panic and never read past the input, whatever the
//     bytes; a returned Value aliases the input, it is not copied.
//  2. Get returns ErrMalformed when the document is not a JSON object up to
//     the field (it does not validate what follows the field, and it fails
//     on member values nested more than 512 levels deep), and ErrNotFound
//     when the object has no such field. At each level the first member
//     whose unescaped key equals the path segment wins.
//  3. Scan(doc, path).Valid == utf8.Valid(doc) && encoding/json.Valid(doc)
//     for every input, encoding/json's limit of 10000 nested arrays and
//     objects included. When Valid, Multiline reports whether doc contains
//     CR or LF, and Field and Err are exactly Get(doc, path)'s results (same
//     kind, same bytes at the same address, same error). When not Valid,
//     Multiline, Field and Err are unspecified (the caller falls back to
//     Get). FuzzScan checks all of it against those references.
//  4. Scan does not allocate, does not recurse (its stack of open
//     containers is a bit set on the goroutine stack) and runs in time
//     linear in the document.
//  5. When Members(nil, doc) returns no error, Find(members, key) is
//     exactly Get(doc, Path{key}) (same kind, same bytes at the same
//     address, same error) for every key: one scan serves many reads.
//     FuzzMembers checks it.
//  6. ScanMembers(doc, path, spans)'s Doc is Scan(doc, path)'s, and it
//     keeps the spans it was given. When it reports ok, doc is Valid, its
//     value an object, and the spans it appended are exactly the members
//     Members(nil, doc) returns (the same keys and values at the same
//     offsets, in order); it reports ok for every Valid object nested at
//     most 256 levels deep. FuzzScan checks it (checkScan).
package jsonfield
