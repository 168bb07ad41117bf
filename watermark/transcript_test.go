package watermark_test

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/signalbox/signalbox/catchup"
	"github.com/signalbox/signalbox/watermark"
)

// TestTranscripts replays testdata/*.txt with cockroachdb/datadriven, the
// runner etcd-io/raft and pebble use. Each file is a timeline of commands,
// each followed by "----" and the expected output, ended by a blank line;
// lines starting with '#' are comments. Regenerate the expected output with
//
//	go test ./watermark -run TestTranscripts -rewrite
//
// The interpreter drives a catchup.Tracker and a watermark.Tracker together,
// the way the engine loop does: every phase change becomes SetHolding, and
// after every command staleness is applied (catchup Tick) and the watermark
// recomputed (Advance), as the engine does after every fetch and on every
// timer tick.
//
// Commands (ids are input/partition; times are ms since the epoch):
//
//	init delay=<ms> [stale=<ms>]           new trackers (implicit: delay=0)
//	assign <id> start=<n> end=<n> [timeless]
//	observe <id> pos=<n> [end=<n>]         a fetch's evidence (end omitted: none)
//	record <id> t=<ms>[,<ms>...]           records delivered with these event times
//	fail <id>                              a failed fetch
//	revoke <id>
//	restore wm=<ms>                        a checkpointed watermark
//	tick now=<ms>                          the engine's timer fires: only the clock moves
//	progress                               replay progress per input (no tick)
//
// Every command accepts now=<ms> to move the clock first. The output lists
// phase transitions, then the watermark and who holds it.
func TestTranscripts(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no transcripts in testdata")
	}
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		m := newMachine(t)
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			m.t = t
			return strings.Join(m.exec(td), "\n") + "\n"
		})
	})
}

// machine is the engine's wiring of the two trackers, without records.
type machine struct {
	t      *testing.T
	catch  *catchup.Tracker
	wm     *watermark.Tracker
	now    int64
	last   int64
	inited bool
}

func newMachine(t *testing.T) *machine {
	m := &machine{t: t}
	m.init(0, 0)
	m.inited = false
	return m
}

func (m *machine) init(delay, stale int64) {
	m.catch = catchup.New(catchup.Options{StaleAfter: time.Duration(stale) * time.Millisecond})
	m.wm = watermark.New(time.Duration(delay) * time.Millisecond)
	m.last = watermark.MinTime
	m.inited = true
}

func (m *machine) clock() time.Time { return time.UnixMilli(m.now) }

// exec runs one command and returns its output lines.
func (m *machine) exec(td *datadriven.TestData) []string {
	where, cmd, pos, kv := td.Pos, td.Cmd, []string{}, map[string]string{}
	for _, a := range td.CmdArgs {
		if len(a.Vals) == 0 {
			pos = append(pos, a.Key)
		} else {
			kv[a.Key] = strings.Join(a.Vals, ",")
		}
	}
	num := func(k string, def int64) int64 {
		v, ok := kv[k]
		if !ok {
			return def
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			m.t.Fatalf("%s: %s=%q: %v", where, k, v, err)
		}
		return n
	}
	need := func(k string) int64 {
		if _, ok := kv[k]; !ok {
			m.t.Fatalf("%s: %s needs %s=", where, cmd, k)
		}
		return num(k, 0)
	}
	id := func() (catchup.ID, watermark.ID) {
		if len(pos) == 0 {
			m.t.Fatalf("%s: %s needs a partition id", where, cmd)
		}
		in, p, ok := strings.Cut(pos[0], "/")
		n, err := strconv.ParseInt(p, 10, 32)
		if !ok || err != nil {
			m.t.Fatalf("%s: bad partition id %q (want input/partition)", where, pos[0])
		}
		return catchup.ID{Input: in, Partition: int32(n)}, watermark.ID{Input: in, Partition: int32(n)}
	}
	if now := num("now", m.now); now < m.now {
		m.t.Fatalf("%s: the clock cannot go back (%d < %d)", where, now, m.now)
	} else {
		m.now = now
	}

	var out []string
	if cmd != "init" {
		defer func() { m.inited = true }()
	}
	switch cmd {
	case "init":
		if m.inited {
			m.t.Fatalf("%s: init must come first", where)
		}
		m.init(num("delay", 0), num("stale", 0))
		return []string{fmt.Sprintf("delay=%dms stale=%dms", m.wm.Delay(), num("stale", 0))}
	case "assign":
		cid, wid := id()
		timeless := len(pos) > 1 && pos[1] == "timeless"
		m.wm.Add(wid, timeless)
		ph := m.catch.Assign(cid, need("start"), need("end"), m.clock())
		out = append(out, fmt.Sprintf("%s: assigned -> %s", pos[0], ph))
		m.hold(cid)
	case "observe":
		cid, _ := id()
		if tr, ok := m.catch.Observe(cid, need("pos"), num("end", -1), m.clock()); ok {
			out = append(out, transition(tr))
		}
		m.hold(cid)
	case "record":
		_, wid := id()
		for _, s := range strings.Split(kv["t"], ",") {
			ts, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				m.t.Fatalf("%s: t=%q: %v", where, kv["t"], err)
			}
			m.wm.Observe(wid, ts)
		}
	case "fail":
		cid, _ := id()
		if tr, ok := m.catch.Fail(cid, m.clock()); ok {
			out = append(out, transition(tr))
		}
		m.hold(cid)
	case "revoke":
		cid, wid := id()
		m.catch.Revoke(cid)
		m.wm.Remove(wid)
	case "restore":
		m.wm.Restore(need("wm"))
	case "tick":
	case "progress":
		for _, p := range m.catch.Progress() {
			eta := "unknown"
			if p.ETA >= 0 {
				eta = p.ETA.String()
			}
			out = append(out, fmt.Sprintf("%s: %d/%d caught up, remaining=%d/%d fraction=%.2f rate=%.1f/s eta=%s",
				p.Input, p.CaughtUp, p.Partitions, p.Remaining, p.Total, p.Fraction, p.Rate, eta))
		}
		return out
	default:
		m.t.Fatalf("%s: unknown command %q", where, cmd)
	}
	for _, tr := range m.catch.Tick(m.clock()) {
		out = append(out, transition(tr))
		m.hold(tr.ID)
	}
	return append(out, m.advance(where)...)
}

// hold tells the watermark what catch-up knows, as the engine's phase handler
// does.
func (m *machine) hold(cid catchup.ID) {
	st, ok := m.catch.Status(cid)
	if !ok {
		return
	}
	m.wm.SetHolding(watermark.ID(cid), st.Phase.Holds(), st.Phase.String(), st.Behind)
}

// advance recomputes the watermark and checks the invariants that hold after
// every step, whatever the transcript expects.
func (m *machine) advance(where string) []string {
	wm := m.wm.Advance(m.clock())
	if wm < m.last {
		m.t.Errorf("%s: watermark went back from %s to %s", where, ms(m.last), ms(wm))
	}
	m.last = wm
	holders := m.wm.Holders()
	for _, st := range m.catch.Statuses() {
		if st.Phase == catchup.CaughtUp && st.Position < st.LatestEnd {
			m.t.Errorf("%s: %s/%d caught up at position %d < end %d", where, st.Input, st.Partition, st.Position, st.LatestEnd)
		}
	}
	out := []string{"wm=" + ms(wm)}
	for _, h := range holders {
		out = append(out, fmt.Sprintf("  held by %s/%d: %s behind=%d max=%s contrib=%s",
			h.Input, h.Partition, h.State, h.Behind, ms(h.MaxEventTime), ms(h.Contribution)))
	}
	return out
}

func transition(tr catchup.Transition) string {
	return fmt.Sprintf("%s/%d: %s -> %s", tr.Input, tr.Partition, tr.From, tr.To)
}

func ms(v int64) string {
	switch v {
	case watermark.MinTime:
		return "-inf"
	case watermark.MaxTime:
		return "+inf"
	}
	return strconv.FormatInt(v, 10)
}
