// Command signalbox is the CLI of the signalbox event-time ordering stream
// processor: run a job, validate a job file, run an embedded broker, query a
// running job's status, run the demo, and print its version.
//
// It is thin: it parses flags and calls packages (config, internal/logging,
// internal/progress, internal/admin, embedded and the root package). See
// docs/operations.md.
//
// Invariants:
//
//  1. Exit codes: 0 ok, 1 runtime error, 2 usage or configuration error.
//  2. SIGINT and SIGTERM stop a run gracefully: the context is cancelled and
//     Run returns after its final checkpoint; the exit code is then 0.
//  3. Logs go to stderr; stdout carries only command output (validate's
//     "ok", broker's address, status, a jsonl sink to stdout, the progress
//     display on a terminal).
//  4. No secret is printed: SASL passwords are read from the environment by
//     package config and never logged.
//  5. run and demo serve the admin server (internal/admin) unless its
//     address is "off": on loopback unless an interface is named, its URL
//     logged at start; a port in use fails the start with exit code 1.
package main
