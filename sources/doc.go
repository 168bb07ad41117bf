// Package sources groups signalbox's sources. Each subpackage implements the
// root package's Source contract without importing it:
//
//   - sources/kafka: Kafka through franz-go, with the start-up
//     end-offset snapshot and fresh evidence on every fetch;
//   - sources/file: JSONL files, one partition per file, for local runs;
//   - sources/script: a deterministic, scripted source for tests, examples
//     and property tests (random interleavings of the same records).
//
// The package itself holds what those sources share: Commits, an in-memory
// record of committed offsets for sources without a consumer group, and
// the codec of the checkpoint a consumer group keeps in its commits'
// metadata (EncodeCheckpoint).
package sources
