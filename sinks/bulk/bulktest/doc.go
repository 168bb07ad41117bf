// Package bulktest is the server side of the Elasticsearch/OpenSearch
// `_bulk` protocol for the fake endpoints of tests and benches: Read parses
// a request's index actions and their documents, Answer writes the reply.
// What a fake does with the documents (an index with versions, outages,
// a delivery check) stays with the fake.
//
// Invariants:
//
//  1. Read returns the actions in request order, each with a copy of its
//     document line, or an error that names the malformed line; it never
//     returns part of a malformed request.
//  2. Answer reports "errors": true exactly when an item carries an error.
package bulktest
