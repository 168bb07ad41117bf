// Package admin is the HTTP admin server of `signalbox run`: /metrics
// (Prometheus), /status (JSON), /healthz and /readyz.
//
// Lifecycle: Start listens (the listen error names the setting the address
// came from) and serves in a goroutine; Close shuts it down. Everything it
// serves comes from the pipeline's Stats snapshots, and, for a job with
// tables, from their sizes (Options.Tables, safe from any goroutine).
//
// Invariants:
//
//  1. An address without a host (":9321", ":0") binds the loopback
//     interface only; another interface is bound only when named
//     ("0.0.0.0:9321", "[::]:9321", "10.0.0.5:9321"). An IPv4 address
//     binds IPv4 only: 0.0.0.0 is every IPv4 interface, not Go's
//     dual-stack wildcard.
//  2. Port 0 takes any free port; the URL, the address as given with the
//     actual port, is returned and logged. A port in use fails Start with
//     an error naming the setting.
//  3. /healthz answers 503 only when the engine loop has published stats
//     before and has not for StallAfter: a job still opening its sinks or
//     restoring state is alive. /readyz answers 200 only while every sink
//     is open and, in a consumer group, the member has joined it (whether
//     or not it owns a partition: a member idle because the group has
//     more members than tasks is ready), else while at least one
//     partition is assigned.
//  4. Every connection has read, write and idle timeouts: a client that
//     stops reading or keeps a connection open idle cannot hold resources.
package admin
