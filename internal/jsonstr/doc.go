// Package jsonstr writes a Go string as a quoted JSON string: the one
// escaping shared by the sinks' envelope and the schema'd value renderer, so
// that a string reads the same wherever a record's JSON carries it.
//
// Invariants:
//
//  1. Append appends valid JSON and never fails: '"', '\\', \n, \r and \t
//     get their short escapes, other control bytes \u00XX, U+2028 and
//     U+2029 are escaped, nothing is HTML-escaped.
//  2. A byte that is not part of valid UTF-8 becomes \ufffd, and only then
//     does Append report valid == false; a valid string reads back exactly.
//  3. ASCII that needs no escape is copied in runs, and Append allocates
//     only when dst must grow.
package jsonstr
