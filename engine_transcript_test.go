package signalbox_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/record"
)

// TestEngineTranscripts replays testdata/engine/*.txt: whole-engine scenarios
// written as cockroachdb/datadriven transcripts, as watermark/testdata is for
// the watermark alone. A transcript declares what the source delivers, fetch
// by fetch (records, positions, end offsets), and how the sink behaves, then
// runs the pipeline to the end offsets and prints what came out: the
// released records in order, the dead letters, the late counts and the
// committed offsets. Regenerate the expected output with
//
//	go test . -run TestEngineTranscripts -rewrite
//
// Commands (ids are topic/partition; times are ms since the epoch):
//
//	new [delay=<ms>] [late=emit|dead-letter|drop] [checkpoint-sink]
//	                                                a new job (a new group: nothing committed); with
//	                                                checkpoint-sink the sink stores the checkpoint
//	                                                (CheckpointSink, as PostgreSQL) and a restart
//	                                                restores it
//	assign <id> [start=<n>] end=<n>                 the start-up end-offset snapshot
//	fetch <id> pos=<n> [end=<n>] [records=(<off>@<ms>[:key], ...)] [fail]
//	sink fail-after=<n>                             the sink fails (fatally) once it has taken n records
//	run                                             run to the end offsets; print what came out
//	commit <id> offset=<n> [position=<n> watermark=<ms>]
//	                                                an offset (with the checkpoint committed with it,
//	                                                whose Low is the offset) committed by an earlier
//	                                                process, as if by a restart's predecessor
//	restart                                         same job and group, new process: keeps the
//	                                                committed offsets and the checkpoints committed
//	                                                with them (CheckpointCommitter), forgets
//	                                                fetches and sink
//
// An assignment that starts at a partition's committed offset reports the
// checkpoint committed with it (record.PartitionInfo.Checkpoint), as the
// Kafka source does in a consumer group; a partition with none is new to
// the job.
//
// The clock is frozen at the epoch, so only evidence releases records: what
// comes out is decided by the offsets and event times the transcript
// declares, never by the machine's speed. Every input uses the record's
// "ts" field as event time.
func TestEngineTranscripts(t *testing.T) {
	datadriven.Walk(t, "testdata/engine", func(t *testing.T, path string) {
		e := &engineScript{}
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			return e.exec(t, td)
		})
	})
}

// engineScript is the state of one transcript.
type engineScript struct {
	delay     int64
	late      signalbox.LatePolicy
	assigned  []record.PartitionInfo
	fetches   []record.Fetch
	failAfter int // 0: never
	committed map[record.TopicPartition]int64
	cps       map[record.TopicPartition]record.PartitionCheckpoint
	topics    []string
	cpSink    bool
	cp        *record.Checkpoint // the checkpoint sink's last checkpoint
}

func (e *engineScript) exec(t *testing.T, td *datadriven.TestData) string {
	switch td.Cmd {
	case "new":
		*e = engineScript{late: signalbox.LateEmit, committed: map[record.TopicPartition]int64{}, cps: map[record.TopicPartition]record.PartitionCheckpoint{}}
		if td.HasArg("delay") {
			td.ScanArgs(t, "delay", &e.delay)
		}
		if td.HasArg("late") {
			var s string
			td.ScanArgs(t, "late", &s)
			e.late = signalbox.LatePolicy(s)
		}
		e.cpSink = td.HasArg("checkpoint-sink")
		return ""
	case "restart":
		e.assigned, e.fetches, e.failAfter = nil, nil, 0
		return ""
	case "commit":
		id := partitionArg(t, td)
		var off int64
		td.ScanArgs(t, "offset", &off)
		e.committed[id] = off
		delete(e.cps, id)
		if td.HasArg("position") {
			pc := record.PartitionCheckpoint{TopicPartition: id, Low: off}
			td.ScanArgs(t, "position", &pc.Position)
			td.ScanArgs(t, "watermark", &pc.Watermark)
			e.cps[id] = pc
		}
		return ""
	case "assign":
		id := partitionArg(t, td)
		info := record.PartitionInfo{TopicPartition: id, Start: e.committed[id]}
		if td.HasArg("start") {
			td.ScanArgs(t, "start", &info.Start)
		}
		if pc, ok := e.cps[id]; ok && pc.Low == info.Start {
			info.Checkpoint = &pc
		}
		td.ScanArgs(t, "end", &info.End)
		e.assigned = append(e.assigned, info)
		if !slices.Contains(e.topics, id.Topic) {
			e.topics = append(e.topics, id.Topic)
		}
		return ""
	case "fetch":
		id := partitionArg(t, td)
		pf := record.PartitionFetch{TopicPartition: id, End: -1}
		td.ScanArgs(t, "pos", &pf.Position)
		if td.HasArg("end") {
			td.ScanArgs(t, "end", &pf.End)
		}
		if td.HasArg("fail") {
			pf.Err = errors.New("scripted fetch failure")
		}
		if a, ok := td.Arg("records"); ok {
			for _, v := range a.Vals {
				pf.Records = append(pf.Records, parseRecord(t, id, v))
			}
		}
		e.fetches = append(e.fetches, record.Fetch{Partitions: []record.PartitionFetch{pf}})
		return ""
	case "sink":
		td.ScanArgs(t, "fail-after", &e.failAfter)
		return ""
	case "run":
		return e.run(t)
	}
	t.Fatalf("%s: unknown command %q", td.Pos, td.Cmd)
	return ""
}

func partitionArg(t *testing.T, td *datadriven.TestData) record.TopicPartition {
	if len(td.CmdArgs) == 0 || len(td.CmdArgs[0].Vals) != 0 {
		t.Fatalf("%s: %s needs a topic/partition first", td.Pos, td.Cmd)
	}
	topic, p, ok := strings.Cut(td.CmdArgs[0].Key, "/")
	n, err := strconv.ParseInt(p, 10, 32)
	if !ok || err != nil {
		t.Fatalf("%s: bad partition %q (want topic/partition)", td.Pos, td.CmdArgs[0].Key)
	}
	return record.TopicPartition{Topic: topic, Partition: int32(n)}
}

// parseRecord parses <offset>@<event time>[:key].
func parseRecord(t *testing.T, id record.TopicPartition, s string) record.Record {
	s, key, _ := strings.Cut(s, ":")
	off, ts, ok := strings.Cut(s, "@")
	o, err1 := strconv.ParseInt(off, 10, 64)
	ms, err2 := strconv.ParseInt(ts, 10, 64)
	if !ok || err1 != nil || err2 != nil {
		t.Fatalf("bad record %q (want offset@ms[:key])", s)
	}
	if key == "" {
		key = "k"
	}
	return tsRecord(id.Topic, id.Partition, o, key, ms)
}

// transcriptSource delivers the assignment, then the transcript's fetches in
// order, then keeps reporting the last known evidence; it records commits
// and the checkpoints committed with them.
type transcriptSource struct {
	timeline
	mu        sync.Mutex
	committed map[record.TopicPartition]int64
	cps       map[record.TopicPartition]record.PartitionCheckpoint
}

func (s *transcriptSource) Commit(_ context.Context, offsets map[record.TopicPartition]int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for tp, off := range offsets {
		s.committed[tp] = off
		delete(s.cps, tp) // a plain commit carries no checkpoint
	}
	return nil
}

func (s *transcriptSource) CommitCheckpoint(_ context.Context, cp record.Checkpoint) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, pc := range cp.Partitions {
		s.committed[pc.TopicPartition] = pc.Low
		s.cps[pc.TopicPartition] = pc
	}
	return nil
}

// failingSink collects records and fails fatally once it holds failAfter:
// it stores the part of the batch that fits, then fails, as a destination
// that went down mid-batch; what comes out does not depend on how the
// engine cut its batches.
type failingSink struct {
	collect
	failAfter int
}

var errSinkDown = errors.New("sink rejected the write")

func (s *failingSink) Write(ctx context.Context, batch []record.Record) error {
	s.mu.Lock()
	room := s.failAfter - len(s.records)
	s.mu.Unlock()
	if s.failAfter > 0 && len(batch) > room {
		_ = s.collect.Write(ctx, batch[:max(room, 0)])
		return errSinkDown
	}
	return s.collect.Write(ctx, batch)
}

// checkpointing is a failingSink that stores the checkpoint with what it
// holds, as PostgreSQL does in one transaction.
type checkpointing struct {
	*failingSink
	cp *record.Checkpoint
}

func (s *checkpointing) Restore(context.Context) (*record.Checkpoint, error) {
	return s.checkpoint(), nil
}

func (s *checkpointing) FlushCheckpoint(_ context.Context, cp record.Checkpoint) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cp.Partitions = slices.Clone(cp.Partitions)
	slices.SortFunc(cp.Partitions, func(a, b record.PartitionCheckpoint) int { return cmpTP(a.TopicPartition, b.TopicPartition) })
	s.cp = &cp
	return nil
}

func (s *checkpointing) checkpoint() *record.Checkpoint {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cp == nil {
		return nil
	}
	cp := *s.cp
	cp.Partitions = slices.Clone(cp.Partitions)
	return &cp
}

func (e *engineScript) run(t *testing.T) string {
	src := &transcriptSource{committed: maps.Clone(e.committed), cps: maps.Clone(e.cps)}
	src.fetches = append([]record.Fetch{{Assigned: e.assigned}}, e.fetches...)
	out, dead := &failingSink{failAfter: e.failAfter}, &collect{}
	var sink signalbox.Sink = out
	var cps *checkpointing
	if e.cpSink {
		cps = &checkpointing{failingSink: out, cp: e.cp}
		sink = cps
	}
	p, err := signalbox.New(src, tsInputs(e.topics...),
		signalbox.WithDelay(time.Duration(e.delay)*time.Millisecond), signalbox.WithClock(frozen),
		signalbox.WithLatePolicy(e.late), signalbox.WithSink(sink), signalbox.WithDeadLetter(dead),
		signalbox.WithUntil(signalbox.UntilEndOffsets))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	runErr := p.Run(ctx)
	if ctx.Err() != nil {
		t.Fatalf("the run did not end by itself (a transcript must let every partition reach its end offset): %v", runErr)
	}
	src.mu.Lock()
	e.committed, e.cps = maps.Clone(src.committed), maps.Clone(src.cps)
	src.mu.Unlock()
	if cps != nil {
		e.cp = cps.checkpoint()
	}

	var b strings.Builder
	section := func(name string, lines []string) {
		fmt.Fprintf(&b, "%s:", name)
		if len(lines) == 0 {
			b.WriteString(" none")
		}
		b.WriteString("\n")
		for _, l := range lines {
			fmt.Fprintf(&b, "  %s\n", l)
		}
	}
	section("released", out.lines())
	section("dead-letter", dead.lines())
	st := p.Stats()
	var late []string
	for _, id := range slices.SortedFunc(maps.Keys(st.Late), cmpTP) {
		l := st.Late[id]
		late = append(late, fmt.Sprintf("%s/%d: count=%d emitted=%d dead-lettered=%d dropped=%d max-late-by=%dms",
			id.Topic, id.Partition, l.Count, l.Emitted, l.DeadLettered, l.Dropped, l.MaxLateBy))
	}
	section("late", late)
	var committed []string
	for _, id := range slices.SortedFunc(maps.Keys(e.committed), cmpTP) {
		l := fmt.Sprintf("%s/%d=%d", id.Topic, id.Partition, e.committed[id])
		if pc, ok := e.cps[id]; ok {
			l += fmt.Sprintf(" position=%d watermark=%s", pc.Position, fmtMark(pc.Watermark))
		}
		committed = append(committed, l)
	}
	section("committed", committed)
	if e.cpSink {
		var cp []string
		if e.cp != nil {
			cp = append(cp, "watermark="+fmtMark(e.cp.Watermark))
			for _, pc := range e.cp.Partitions {
				cp = append(cp, fmt.Sprintf("%s/%d low=%d position=%d watermark=%s", pc.Topic, pc.Partition, pc.Low, pc.Position, fmtMark(pc.Watermark)))
			}
		}
		section("checkpoint", cp)
	}
	switch {
	case runErr == nil:
		b.WriteString("run: ok\n")
	case errors.Is(runErr, errSinkDown):
		b.WriteString("run: failed: the sink rejected a write\n")
	default:
		fmt.Fprintf(&b, "run: failed: %v\n", runErr)
	}
	return b.String()
}

func cmpTP(a, b record.TopicPartition) int {
	if c := strings.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	return int(a.Partition - b.Partition)
}

// fmtMark prints a watermark in ms, −∞ as such.
func fmtMark(m int64) string {
	if m == math.MinInt64 {
		return "-inf"
	}
	return strconv.FormatInt(m, 10)
}
