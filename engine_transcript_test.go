package signalbox_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/retry"
	"github.com/signalbox/signalbox/timers/durable"
)

// TestEngineTranscripts replays testdata/engine/*.txt: whole-engine scenarios
// written as cockroachdb/datadriven transcripts, as watermark/testdata is for
// the watermark alone. A transcript declares what the source delivers, step
// by step (fetches, rebalances, clock ticks), and how the sink behaves, then
// runs the pipeline and prints what the engine decided and what came out:
// its effects step by step (Stepper.Effects: what it released, paused,
// resumed, dead-lettered, checkpointed, and the barriers a commit waits
// at), then the released records in order, the dead letters, the late
// counts, the committed offsets and what the source saw (pauses, resumes,
// the commits at a revoke). Regenerate the
// expected output with
//
//	go test . -run TestEngineTranscripts -rewrite
//
// Commands (ids are topic/partition; times are ms since the epoch):
//
//	new [delay=<ms>] [late=emit|dead-letter|drop] [checkpoint-sink] [durable] [align=<ms>]
//	    [max-future=<ms>] [live] [no-dead-letter] [window=<ms>] [group]
//	                                                a new job (a new group: nothing committed, the
//	                                                clock at the epoch); with checkpoint-sink the sink
//	                                                stores the checkpoint (CheckpointSink, as
//	                                                PostgreSQL) and a restart restores it; with durable
//	                                                the parked records are in a pebble-backed
//	                                                DurableStore (durable.Store, in a directory of the
//	                                                test's) that a restart reopens, and the source is a
//	                                                Seeker; align is the alignment window (default
//	                                                off), max-future the poison guard's bound (default
//	                                                1h); live runs until the script is done instead of
//	                                                to the end offsets; no-dead-letter configures no
//	                                                dead-letter sink; window adds a tumbling window of
//	                                                that size counting each key's records (the
//	                                                ordering key), its results printed under windows;
//	                                                group makes the source read in a consumer group
//	                                                (GroupReader): each task has its windows
//	assign <id> [start=<n>] end=<n>                 the start-up end-offset snapshot (the first Fetch)
//	fetch <id> pos=<n> [end=<n>] [records=(<off>@<ms>[:key], ...)] [fail]
//	                                                a Fetch of one partition
//	revoke <id>                                     a Fetch that revokes the partition; the source
//	                                                prints what was committed when it is polled next
//	discover <id> [start=<n>] end=<n>               a later Fetch that assigns the partition (new, or
//	                                                back after a revoke); it starts at the committed
//	                                                offset unless start is given, and the source never
//	                                                delivers its records below that start
//	tick <ms>                                       the clock advances by ms, then an empty Fetch wakes
//	                                                the engine
//	sink [fail-after=<n>] [reject=(<id>@<off>, ...)]
//	                                                the sink fails (fatally) once it has taken n
//	                                                records; it rejects the listed records
//	                                                (retry.Rejected: bad data, to the dead-letter sink)
//	store fail-after=<n>                            (durable) the store's Checkpoint fails once it has
//	                                                stored n checkpoints, as a process killed after the
//	                                                sink's transaction and before the store's sync: a
//	                                                restart reopens the store at its last checkpoint
//	run                                             run the script; print what came out
//	commit <id> offset=<n> [position=<n> watermark=<ms>]
//	                                                an offset (with the checkpoint committed with it,
//	                                                whose Low is the offset) committed by an earlier
//	                                                process, as if by a restart's predecessor
//	restart                                         same job and group, new process: keeps the
//	                                                committed offsets and the checkpoints committed
//	                                                with them (CheckpointCommitter), the sink's
//	                                                checkpoint, the store's directory and the clock;
//	                                                forgets the script and the sink's and the store's
//	                                                behaviour
//
// An assignment that starts at a partition's committed offset reports the
// checkpoint committed with it (record.PartitionInfo.Checkpoint), as the
// Kafka source does in a consumer group; a partition with none is new to
// the job. A Seeker source (durable) starts the partitions of its first
// assignment at the offsets the engine asked for (StartAt) instead, with no
// checkpoint, logs each as start=<n>, and never delivers their records
// below it.
//
// The test steps the engine's core itself (signalbox.Stepper, stepThrough),
// on its own goroutine: it polls the source, and hands each Fetch to the
// core, which handles it, releases, aligns and checkpoints, and has the
// sinks write and acknowledge, before the next is polled. The source holds back the fetches of a partition the engine paused (Pauser) until
// it is resumed, delivering later steps first. A script whose remaining
// fetches are all of paused partitions fails the run. The clock moves only
// by tick: what comes out is decided by the offsets, event times and ticks
// the transcript declares, never by the machine's speed. Every input uses
// the record's "ts" field as event time.
func TestEngineTranscripts(t *testing.T) {
	datadriven.Walk(t, "testdata/engine", func(t *testing.T, path string) {
		e := &engineScript{tempDir: t.TempDir}
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			return e.exec(t, td)
		})
	})
}

// engineScript is the state of one transcript.
type engineScript struct {
	delay     int64
	late      signalbox.LatePolicy
	align     int64
	maxFuture int64 // ms; -1: the default
	live      bool
	noDead    bool
	assigned  []record.PartitionInfo
	steps     []step
	failAfter int // 0: never
	rejects   map[string]bool
	committed map[record.TopicPartition]int64
	cps       map[record.TopicPartition]record.PartitionCheckpoint
	topics    []string
	cpSink    bool
	cp        *record.Checkpoint // the checkpoint sink's last checkpoint
	clock     int64              // ms since the epoch
	tempDir   func() string      // a new directory, removed when the transcript is done
	storeDir  string             // durable: the DurableStore's directory ("": none)
	storeFail int                // durable: checkpoints stored before Checkpoint fails; -1: never
	window    int64              // a tumbling window's size (ms); 0: none
	group     bool               // the source reads in a consumer group
}

func (e *engineScript) exec(t *testing.T, td *datadriven.TestData) string {
	switch td.Cmd {
	case "new":
		*e = engineScript{late: signalbox.LateEmit, maxFuture: -1, committed: map[record.TopicPartition]int64{}, cps: map[record.TopicPartition]record.PartitionCheckpoint{},
			tempDir: e.tempDir, storeFail: -1}
		for _, a := range []struct {
			key string
			v   *int64
		}{{"delay", &e.delay}, {"align", &e.align}, {"max-future", &e.maxFuture}, {"window", &e.window}} {
			if td.HasArg(a.key) {
				td.ScanArgs(t, a.key, a.v)
			}
		}
		if td.HasArg("late") {
			var s string
			td.ScanArgs(t, "late", &s)
			e.late = signalbox.LatePolicy(s)
		}
		e.cpSink, e.live, e.noDead, e.group = td.HasArg("checkpoint-sink"), td.HasArg("live"), td.HasArg("no-dead-letter"), td.HasArg("group")
		if td.HasArg("durable") {
			e.storeDir = e.tempDir()
		}
		return ""
	case "restart":
		e.assigned, e.steps, e.failAfter, e.rejects, e.storeFail = nil, nil, 0, nil, -1
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
		info := e.partitionInfo(t, td)
		if !td.HasArg("start") {
			info.Start = e.committed[info.TopicPartition]
		}
		if pc, ok := e.cps[info.TopicPartition]; ok && pc.Low == info.Start {
			info.Checkpoint = &pc
		}
		e.assigned = append(e.assigned, info)
		return ""
	case "discover":
		e.steps = append(e.steps, step{line: stepLabel(td), info: e.partitionInfo(t, td), startSet: td.HasArg("start")})
		return ""
	case "revoke":
		id := partitionArg(t, td)
		e.steps = append(e.steps, step{line: stepLabel(td), f: record.Fetch{Revoked: []record.TopicPartition{id}}})
		return ""
	case "tick":
		if len(td.CmdArgs) != 1 || len(td.CmdArgs[0].Vals) != 0 {
			t.Fatalf("%s: tick <ms>", td.Pos)
		}
		ms, err := strconv.ParseInt(td.CmdArgs[0].Key, 10, 64)
		if err != nil || ms <= 0 {
			t.Fatalf("%s: tick %q: want a positive number of ms", td.Pos, td.CmdArgs[0].Key)
		}
		e.steps = append(e.steps, step{line: stepLabel(td), tick: ms})
		return ""
	case "fetch":
		e.steps = append(e.steps, step{line: stepLabel(td), f: record.Fetch{Partitions: []record.PartitionFetch{fetchArg(t, td)}}})
		return ""
	case "sink":
		if td.HasArg("fail-after") {
			td.ScanArgs(t, "fail-after", &e.failAfter)
		}
		if a, ok := td.Arg("reject"); ok {
			e.rejects = map[string]bool{}
			for _, v := range a.Vals {
				e.rejects[v] = true
			}
		}
		return ""
	case "store":
		if e.storeDir == "" {
			t.Fatalf("%s: store needs a job with durable", td.Pos)
		}
		td.ScanArgs(t, "fail-after", &e.storeFail)
		return ""
	case "run":
		return e.run(t)
	}
	t.Fatalf("%s: unknown command %q", td.Pos, td.Cmd)
	return ""
}

// stepLabel names a step in the source's log: its command, partition and
// position.
func stepLabel(td *datadriven.TestData) string {
	l := td.Cmd
	for _, a := range td.CmdArgs {
		if a.Key == "pos" || len(a.Vals) == 0 {
			l += " " + a.String()
		}
	}
	return l
}

// partitionInfo parses an assignment: <id> [start=<n>] end=<n>.
func (e *engineScript) partitionInfo(t *testing.T, td *datadriven.TestData) record.PartitionInfo {
	id := partitionArg(t, td)
	info := record.PartitionInfo{TopicPartition: id}
	if td.HasArg("start") {
		td.ScanArgs(t, "start", &info.Start)
	}
	td.ScanArgs(t, "end", &info.End)
	if !slices.Contains(e.topics, id.Topic) {
		e.topics = append(e.topics, id.Topic)
	}
	return info
}

// fetchArg parses a fetch: <id> pos=<n> [end=<n>] [records=(...)] [fail].
func fetchArg(t *testing.T, td *datadriven.TestData) record.PartitionFetch {
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
	return pf
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

// failingSink collects records and fails fatally once it holds failAfter:
// it stores the part of the batch that fits, then fails, as a destination
// that went down mid-batch; what comes out does not depend on how the
// engine cut its batches. It rejects the records of rejects as bad data.
type failingSink struct {
	collect
	failAfter int
	rejects   map[string]bool // topic/partition@offset
}

var errSinkDown = errors.New("sink rejected the write")

func (s *failingSink) Write(ctx context.Context, batch []record.Record) error {
	var rej []retry.Rejection
	for _, r := range batch {
		if s.rejects[fmt.Sprintf("%s/%d@%d", r.Topic, r.Partition, r.Offset)] {
			rej = append(rej, retry.Rejection{Record: r, Reason: "scripted rejection"})
		}
	}
	if len(rej) > 0 {
		return retry.Rejected(rej...) // accepts nothing of the batch
	}
	s.mu.Lock()
	room := s.failAfter - len(s.records)
	s.mu.Unlock()
	if s.failAfter > 0 && len(batch) > room {
		_ = s.collect.Write(ctx, batch[:max(room, 0)])
		return errSinkDown
	}
	return s.collect.Write(ctx, batch)
}

// failingStore is a DurableStore whose Checkpoint fails once it has stored
// failAfter checkpoints (-1: never). It does not touch the store then: as
// after a crash, reopening the directory restores the last checkpoint.
type failingStore struct {
	*durable.Store
	failAfter, stored int
}

var errStoreDown = errors.New("the store went down before its sync")

func (s *failingStore) Checkpoint(cp record.Checkpoint, blobs map[string][]byte) error {
	if s.failAfter >= 0 && s.stored >= s.failAfter {
		return errStoreDown
	}
	s.stored++
	return s.Store.Checkpoint(cp, blobs)
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
	slices.SortFunc(cp.Partitions, func(a, b record.PartitionCheckpoint) int { return a.TopicPartition.Compare(b.TopicPartition) })
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
	clock := &scriptClock{}
	clock.ms.Store(e.clock)
	src := &transcriptSource{commitLog: commitLog{committed: maps.Clone(e.committed), cps: maps.Clone(e.cps)}, clock: clock, live: e.live,
		steps: append([]step{{line: "assign", f: record.Fetch{Assigned: e.assigned}}}, e.steps...)}
	out, dead := &failingSink{failAfter: e.failAfter, rejects: e.rejects}, &collect{}
	var sink signalbox.Sink = out
	var cps *checkpointing
	if e.cpSink {
		cps = &checkpointing{failingSink: out, cp: e.cp}
		sink = cps
	}
	until := signalbox.UntilEndOffsets
	if e.live {
		until = signalbox.UntilLive
	}
	opts := []signalbox.Option{tsInputs(e.topics...),
		signalbox.WithDelay(time.Duration(e.delay) * time.Millisecond), signalbox.WithClock(clock.now),
		signalbox.WithLatePolicy(e.late), signalbox.WithSink(sink), signalbox.WithUntil(until),
		signalbox.WithAlignment(time.Duration(e.align) * time.Millisecond)}
	if !e.noDead {
		opts = append(opts, signalbox.WithDeadLetter(dead))
	}
	if e.maxFuture >= 0 {
		opts = append(opts, signalbox.WithMaxFuture(time.Duration(e.maxFuture)*time.Millisecond))
	}
	var source signalbox.Source = src
	if e.group {
		source = &groupSource{src}
	}
	wins := &collect{}
	if e.window > 0 {
		w := countPerSecond
		w.Spec.Size = e.window
		opts = append(opts, signalbox.WithWindow(w, wins))
	}
	if e.storeDir != "" {
		store, err := durable.OpenStore(e.storeDir, durable.StoreOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := store.Close(); err != nil {
				t.Error(err)
			}
		}()
		opts = append(opts, signalbox.WithParkedStore(&failingStore{Store: store, failAfter: e.storeFail}))
		source = &seekingSource{src}
	}
	p, err := signalbox.New(source, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	src.stop = stop
	effects, runErr := stepThrough(runCtx, p, src)
	if ctx.Err() != nil {
		t.Fatalf("the run did not end by itself (a transcript must let every partition reach its end offset): %v", runErr)
	}
	src.mu.Lock()
	e.committed, e.cps = maps.Clone(src.committed), maps.Clone(src.cps)
	events := slices.Clone(src.events)
	src.mu.Unlock()
	e.clock = clock.ms.Load()
	if cps != nil {
		e.cp = cps.checkpoint()
	}
	return e.report(p, out, dead, wins, events, effects, runErr)
}

// stepThrough runs p on this goroutine as Run would, stepping its engine
// core (signalbox.Stepper) through what src delivers, one Fetch at a time.
// It returns what the engine decided at each step (Stepper.Effects), each
// line labelled with the step.
func stepThrough(ctx context.Context, p *signalbox.Pipeline, src *transcriptSource) (effects []string, err error) {
	st, err := signalbox.NewStepper(ctx, p)
	if err != nil {
		return nil, err
	}
	note := func(label string) {
		for _, l := range st.Effects() {
			effects = append(effects, label+": "+l)
		}
	}
	for {
		f, err := src.Poll(ctx)
		if err != nil {
			if ctx.Err() == nil {
				err = fmt.Errorf("signalbox: source: %w", err)
			}
			err = st.Stop(err)
			note("stop")
			return effects, err
		}
		src.mu.Lock()
		label := src.last
		src.mu.Unlock()
		done, err := st.Step(f)
		note(label)
		if done || err != nil {
			err = st.Stop(err)
			note("stop")
			return effects, err
		}
	}
}

// report prints what a run put out.
func (e *engineScript) report(p *signalbox.Pipeline, out *failingSink, dead, wins *collect, events, effects []string, runErr error) string {
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
	section("effects", effects)
	section("released", out.lines())
	section("dead-letter", dead.lines())
	if e.window > 0 {
		var ws []string
		wins.mu.Lock()
		rs := slices.Clone(wins.records)
		wins.mu.Unlock()
		for _, r := range rs {
			ws = append(ws, fmt.Sprintf("%s t=%d %s", r.Key, r.EventTime, r.Value))
		}
		section("windows", ws)
	}
	st := p.Stats()
	var late []string
	for _, id := range slices.SortedFunc(maps.Keys(st.Late), record.TopicPartition.Compare) {
		l := st.Late[id]
		late = append(late, fmt.Sprintf("%s/%d: count=%d emitted=%d dead-lettered=%d dropped=%d max-late-by=%dms",
			id.Topic, id.Partition, l.Count, l.Emitted, l.DeadLettered, l.Dropped, l.MaxLateBy))
	}
	section("late", late)
	section("committed", committedLines(e.committed, e.cps))
	if e.cpSink {
		var cp []string
		if e.cp != nil {
			cp = append(cp, "watermark="+signalbox.MarkString(e.cp.Watermark))
			for _, pc := range e.cp.Partitions {
				cp = append(cp, fmt.Sprintf("%s/%d low=%d position=%d watermark=%s", pc.Topic, pc.Partition, pc.Low, pc.Position, signalbox.MarkString(pc.Watermark)))
			}
		}
		section("checkpoint", cp)
	}
	if len(events) > 0 {
		section("source", events)
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

// committedLines prints committed offsets, with the checkpoint committed
// with each, sorted.
func committedLines(committed map[record.TopicPartition]int64, cps map[record.TopicPartition]record.PartitionCheckpoint) []string {
	var lines []string
	for _, id := range slices.SortedFunc(maps.Keys(committed), record.TopicPartition.Compare) {
		l := fmt.Sprintf("%s/%d=%d", id.Topic, id.Partition, committed[id])
		if pc, ok := cps[id]; ok {
			l += fmt.Sprintf(" position=%d watermark=%s", pc.Position, signalbox.MarkString(pc.Watermark))
		}
		lines = append(lines, l)
	}
	return lines
}
