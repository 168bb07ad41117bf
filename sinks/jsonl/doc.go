// Package jsonl is the JSON Lines sink: one signalbox envelope (see package
// envelope) per line, to a file opened for append or to any io.Writer such as
// os.Stdout.
//
// Lifecycle: New or Create → Open → (Write | Flush)* → Close. All calls come
// from one goroutine. It implements signalbox.Sink and
// signalbox.SinkDescriber, saying it embeds values as JSON (structurally;
// this package does not import the root package).
//
// Invariants:
//
//  1. Lines are written in exactly the order the records were handed to
//     Write; nothing is reordered, dropped or merged.
//  2. Every line is one complete envelope followed by '\n'; a line is never
//     split across a failed write and a later one, because after the first
//     write error the sink is failed and every later call returns that error.
//  3. When Flush returns nil, every line written before it has been handed to
//     the underlying writer; with Options.Sync and a file sink, it has also
//     been fsynced. That is the acknowledgement: the offsets may be committed.
//  4. Close flushes (and fsyncs with Sync), closes a file the sink opened, and
//     never closes a writer passed to New. Calls after Close return ErrClosed.
//  5. A file is never cut where signalbox did not write. Create's sink
//     records, in the side file SideFile(path) ("<path>.signalbox-size"),
//     the file's size after Open and after each Flush (at Open, and at
//     every Flush with Sync, written to a temporary file, fsynced with
//     Sync, and renamed, and with Sync the directory fsynced after the
//     rename, which also makes a file created at Open durable; at a Flush without Sync, written over the side
//     file in place, in one write that covers the last size whole, since
//     sizes only grow: a process crash leaves the old or the new size
//     either way). Open appends to a file
//     that is empty or ends in a newline. A file whose last line has no
//     newline is cut back to its last newline only when the side file
//     records a size at or before that newline: the partial line was then
//     written by this sink after its last acknowledged Flush (a crash in
//     the middle of a write). Otherwise (a user's file without a final
//     newline, or with no newline at all, or no side file) Open refuses
//     with an error that names the file, and changes nothing. The sink
//     owns the file while the job runs: nothing else may append to it.
//  6. A file sink (a regular file, on Linux) keeps the file's blocks
//     reserved from 4 to 8 MiB past what it has written (fallocate with
//     FALLOC_FL_KEEP_SIZE), so that a write copies into blocks already
//     allocated, and gives them back at Close by a truncate to the file's
//     own size, skipped when the file is not the size the sink wrote to
//     (bytes another writer appended are never cut). The file's size, and
//     so the side file, a reader and a restart, never counts a reserved
//     block. A file system that refuses (no support, a full disk) is not
//     asked again, and the sink writes on as without it. A crash leaves
//     the reservation past the end until the next run's Close.
//
// Errors from the writer or the file system are fatal (not marked retryable):
// a partially written buffer cannot be retried without duplicating or tearing
// lines.
//
// Guarantee: at-least-once. After a crash, records released after the last
// acknowledged Flush are written again on restart.
package jsonl
