package record

// SinkInfo is what a sink states about itself: the one description the
// engine reads to decide how to treat it (signalbox.SinkDescriber). It is
// here, not in the root package, so that a sink can state it without
// importing the root.
//
// A sink's description follows from its configuration and never changes:
// the engine asks once, when the pipeline is built (signalbox.New), and
// wrappers of a sink need not pass it on.
type SinkInfo struct {
	// Name names the sink in logs, dead-letter reasons and the sink label
	// of the metrics (the built-in sinks: "jsonl", "kafka", "postgres",
	// "bulk"). "" is "sink"; repeats of one name are numbered "#2", "#3" ….
	Name string
	// ExactlyOnce says that the sink stores signalbox's checkpoint in the
	// same transaction as its data: it must then be a
	// signalbox.CheckpointSink, and a pipeline has at most one. A sink that
	// has the CheckpointSink methods but says false (the Kafka sink without
	// a transactional id and a group) is an at-least-once sink: the engine
	// flushes it like any other and never calls Restore, FlushCheckpoint or
	// Claim.
	ExactlyOnce bool
	// CommitsSourceOffsets (read only with ExactlyOnce) says that the
	// sink's transaction also commits the source's consumer offsets
	// (Kafka's AddOffsetsToTxn): the engine then does not commit them
	// through the source, which would overwrite the checkpoint the
	// transaction stored.
	CommitsSourceOffsets bool
	// BytesOnly says that the sink writes keys and values as their original
	// bytes only (the Kafka sink): when every sink says so, the engine only
	// checks a schema'd record at ingest and never renders it as JSON
	// (Record.DecodedKey and DecodedValue stay nil).
	BytesOnly bool
	// EmbedsValueJSON says that the sink embeds values in JSON and copies a
	// value marked Record.ValueJSON without validating it (the JSONL sink,
	// through sinks/envelope). When one says so, the engine validates on
	// its poller goroutine the values that decoding did not (the time and
	// key do not come from JSON fields), while their bytes are fresh from
	// the source, and marks the valid ones.
	EmbedsValueJSON bool
}
