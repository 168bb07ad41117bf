package crashtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/signalbox/signalbox/timers"
)

// Produced is one input record, as acknowledged by the broker.
type Produced struct {
	ID        string // unique, carried in the value ("id")
	Topic     string
	Partition int32
	Offset    int64
	Key       string
	TS        int64 // event time, Unix ms (the value's "ts")
	Live      bool  // produced while the job ran, rather than as history
	// Acked is when the broker's acknowledgement arrived, Unix ms (0:
	// unknown): the record was in the log by then.
	Acked int64
}

// delayedBeyond reports whether p is a live record that its producer may
// have delayed beyond a delay bound of delay ms: acknowledged more than
// delay after its event time. Only such a record can be passed by a
// watermark before it is in the log (design L1).
func (p *Produced) delayedBeyond(delay int64) bool {
	return delay > 0 && p.Live && p.Acked-p.TS > delay
}

// ackedAfter says, for a message, how long after its event time the broker
// acknowledged p ("" when unknown).
func (p *Produced) ackedAfter() string {
	if p.Acked == 0 {
		return ""
	}
	return fmt.Sprintf(", acknowledged %dms after it", p.Acked-p.TS)
}

func (p *Produced) pos() timers.Pos {
	return timers.Pos{EventTime: p.TS, Key: p.Key, Input: p.Topic, Partition: p.Partition, Offset: p.Offset}
}

// Out is one record read back from a sink, in output order.
type Out struct {
	ID string
	// HasCoords says Topic, Partition and Offset were read back too (the
	// envelope carries them); they must then match the produced record.
	HasCoords bool
	Topic     string
	Partition int32
	Offset    int64
	Late      bool
	Where     string // where it was read, for messages ("line 12", "seq 40")
}

// Mode says what Check demands.
type Mode struct {
	// ExactlyOnce: every record exactly once. Otherwise at least once, and
	// the order is checked on first occurrences.
	ExactlyOnce bool
	// PerKeyOrder: the order is checked per key only (a multi-partition
	// output topic read back partition by partition). Otherwise the whole
	// output is checked against the total order.
	PerKeyOrder bool
	// Delay is the job's delay bound in ms. Without ExactlyOnce, a live
	// record its producer delayed beyond it (delayedBeyond) may come out of
	// turn unflagged, as if late: a run whose watermark passed it
	// before it was in the log was killed before its last checkpoint
	// claimed that release, and the restart, at the checkpoint's lower
	// watermark, releases it in order, unflagged, after its newer records
	// the killed run had written (design L1, docs/operations.md). 0: no
	// record is exempt.
	Delay int64
}

// Report is the result of Check.
type Report struct {
	Output     int // records read back
	Distinct   int
	Duplicates int
	Missing    int
	Unknown    int
	Late       int // late records (first occurrences)
	LateLive   int // of which produced live
	// Delayed: first occurrences, not flagged late, of live records their
	// producer delayed beyond Mode.Delay; DelayedOutOfTurn of them came out
	// of turn.
	Delayed          int
	DelayedOutOfTurn int
	// LateWithin: late first occurrences of live records acknowledged
	// within Mode.Delay of their event time. The watermark passed them
	// after they were in the log: a diagnostic of stale evidence (design
	// W2a), logged rather than failed.
	LateWithin int
	Inversions int
	Problems   []string // human-readable, at most a few per kind
}

// OK reports whether Check found no problem.
func (r *Report) OK() bool { return len(r.Problems) == 0 }

func (r *Report) String() string {
	return fmt.Sprintf("output %d, distinct %d, duplicates %d, missing %d, unknown %d, late %d (live %d), delayed beyond the bound %d (out of turn %d), inversions %d",
		r.Output, r.Distinct, r.Duplicates, r.Missing, r.Unknown, r.Late, r.LateLive, r.Delayed, r.DelayedOutOfTurn, r.Inversions)
}

const maxPerKind = 5

// problem adds a message, keeping at most maxPerKind per kind (n is the
// count of that kind so far, this one included).
func (r *Report) problem(n int, format string, args ...any) {
	if n <= maxPerKind {
		r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
	}
}

// Check compares the output with what was produced. It is pure.
func Check(produced []Produced, outs []Out, m Mode) *Report {
	r := &Report{Output: len(outs)}
	byID := make(map[string]*Produced, len(produced))
	for i := range produced {
		byID[produced[i].ID] = &produced[i]
	}
	seen := make(map[string]bool, len(produced))
	firstAt := make(map[*Produced]string, len(produced)) // where each record was first read
	lastByKey := map[string]*Produced{}
	var last *Produced
	for i := range outs {
		o := &outs[i]
		p := byID[o.ID]
		if p == nil {
			r.Unknown++
			r.problem(r.Unknown, "%s: record %q was never produced", o.Where, o.ID)
			continue
		}
		if o.HasCoords && (o.Topic != p.Topic || o.Partition != p.Partition || o.Offset != p.Offset) {
			r.Unknown++
			r.problem(r.Unknown, "%s: record %q carries %s/%d@%d, was produced at %s/%d@%d",
				o.Where, o.ID, o.Topic, o.Partition, o.Offset, p.Topic, p.Partition, p.Offset)
		}
		if seen[o.ID] {
			r.Duplicates++
			if m.ExactlyOnce {
				r.problem(r.Duplicates, "%s: duplicate of %s/%d@%d (exactly-once)", o.Where, p.Topic, p.Partition, p.Offset)
			}
			continue
		}
		seen[o.ID] = true
		firstAt[p] = o.Where
		if o.Late {
			r.Late++
			if p.Live {
				r.LateLive++
				if m.Delay > 0 && p.Acked > 0 && !p.delayedBeyond(m.Delay) {
					r.LateWithin++
				}
			} else {
				r.problem(r.Late-r.LateLive, "%s: history record %s/%d@%d flagged late", o.Where, p.Topic, p.Partition, p.Offset)
			}
			continue // out of turn by definition
		}
		prev := last
		if m.PerKeyOrder {
			prev = lastByKey[p.Key]
		}
		delayed := !m.ExactlyOnce && p.delayedBeyond(m.Delay)
		if delayed {
			r.Delayed++
		}
		if prev != nil && !timers.Less(prev.pos(), p.pos()) {
			if delayed {
				r.DelayedOutOfTurn++
				continue // in turn for the run that released it, not for the killed one that overtook it
			}
			r.Inversions++
			r.problem(r.Inversions, "%s: %s/%d@%d (ts %d, key %s%s) released after %s/%d@%d (ts %d, key %s, first released at %s)",
				o.Where, p.Topic, p.Partition, p.Offset, p.TS, p.Key, p.ackedAfter(), prev.Topic, prev.Partition, prev.Offset, prev.TS, prev.Key, firstAt[prev])
		}
		if prev == nil || timers.Less(prev.pos(), p.pos()) {
			last = p
			lastByKey[p.Key] = p
		}
	}
	r.Distinct = len(seen)
	for i := range produced {
		if p := &produced[i]; !seen[p.ID] {
			r.Missing++
			r.problem(r.Missing, "lost: %s/%d@%d (id %s, ts %d, key %s, live %v)", p.Topic, p.Partition, p.Offset, p.ID, p.TS, p.Key, p.Live)
		}
	}
	if r.Missing > maxPerKind {
		r.Problems = append(r.Problems, fmt.Sprintf("lost %d records in all", r.Missing))
	}
	if r.Inversions > maxPerKind {
		r.Problems = append(r.Problems, fmt.Sprintf("%d order inversions in all", r.Inversions))
	}
	return r
}

// envelope is the part of the signalbox JSON envelope the checker reads.
type envelope struct {
	Topic     *string         `json:"topic"`
	Partition int32           `json:"partition"`
	Offset    int64           `json:"offset"`
	Value     json.RawMessage `json:"value"`
	Late      bool            `json:"late"`
}

// payload is the value of every produced record.
type payload struct {
	ID  string `json:"id"`
	TS  int64  `json:"ts"`
	Key string `json:"k"`
}

// ParseEnvelope reads one envelope line (or Kafka value): an envelope whose
// value is a payload, or a bare payload.
func ParseEnvelope(b []byte, where string) (Out, error) {
	var e envelope
	if err := json.Unmarshal(b, &e); err != nil {
		return Out{}, err
	}
	if e.Topic == nil { // a bare payload
		var p payload
		if err := json.Unmarshal(b, &p); err != nil || p.ID == "" {
			return Out{}, fmt.Errorf("neither an envelope nor a payload: %.120s", b)
		}
		return Out{ID: p.ID, Where: where}, nil
	}
	var p payload
	if err := json.Unmarshal(e.Value, &p); err != nil || p.ID == "" {
		return Out{}, fmt.Errorf("envelope value is not a payload: %.120s", e.Value)
	}
	return Out{ID: p.ID, HasCoords: true, Topic: *e.Topic, Partition: e.Partition, Offset: e.Offset, Late: e.Late, Where: where}, nil
}

// envelopeStart begins every envelope (sinks/envelope writes topic first).
var envelopeStart = []byte(`{"topic":`)

// ParseJSONL reads a JSONL sink's file. A line that does not parse is a
// problem; when it is a torn line (a SIGKILL cut it mid-write and the next
// run appended after it), the envelope that starts after the tear is
// recovered, so that the other checks still see that record.
func ParseJSONL(data []byte) (outs []Out, problems []string) {
	lines := bytes.Split(data, []byte{'\n'})
	if n := len(lines); n > 0 && len(lines[n-1]) == 0 {
		lines = lines[:n-1]
	} else if n > 0 {
		problems = append(problems, fmt.Sprintf("the file does not end with a newline: last line %.120q", lines[n-1]))
	}
	for i, l := range lines {
		where := fmt.Sprintf("line %d", i+1)
		o, err := ParseEnvelope(l, where)
		if err == nil {
			outs = append(outs, o)
			continue
		}
		if j := bytes.LastIndex(l, envelopeStart); j > 0 {
			if o, err2 := ParseEnvelope(l[j:], where); err2 == nil {
				problems = append(problems, fmt.Sprintf("%s: torn line: %d bytes of an interrupted write, then a whole envelope (%.60q…)", where, j, l))
				outs = append(outs, o)
				continue
			}
		}
		problems = append(problems, fmt.Sprintf("%s: %v: %.120q", where, err, l))
	}
	return outs, problems
}

// tornLines counts the torn-line problems of ParseJSONL.
func tornLines(problems []string) int {
	n := 0
	for _, p := range problems {
		if strings.Contains(p, "torn line") {
			n++
		}
	}
	return n
}
