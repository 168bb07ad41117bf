package main

import (
	"cmp"
	"fmt"
)

// delivery is one record as a sink received it.
type delivery struct {
	Topic     string
	Partition int32
	Offset    int64
	Key       string
	EventMs   int64
	Late      bool
}

// pos is a record's place in the engine's release order within one key:
// (event time, topic, partition, offset). The job lists its inputs sorted by
// topic, so topic order is input order.
type pos struct {
	ts    int64
	topic string
	part  int32
	off   int64
}

func (a pos) compare(b pos) int {
	return cmp.Or(cmp.Compare(a.ts, b.ts), cmp.Compare(a.topic, b.topic), cmp.Compare(a.part, b.part), cmp.Compare(a.off, b.off))
}

type topicPart struct {
	Topic     string
	Partition int32
}

// checker checks a sink's deliveries, in the order the sink stored them,
// against the records in Kafka: every record at least once, re-deliveries
// counted, first deliveries of each key in release order, late ones counted.
type checker struct {
	seen     map[topicPart][]uint8 // deliveries per offset, saturating at 255
	last     map[string]pos        // per key, the last first delivery
	received int64
	dups     int64
	late     int64
	disorder int64
	examples []string // the first problems, for the report
}

func newChecker() *checker {
	return &checker{seen: map[topicPart][]uint8{}, last: map[string]pos{}}
}

func (c *checker) note(format string, args ...any) {
	if len(c.examples) < 10 {
		c.examples = append(c.examples, fmt.Sprintf(format, args...))
	}
}

// add takes the next delivery in the sink's order and says whether it is a
// re-delivery.
func (c *checker) add(d delivery) (dup bool) {
	c.received++
	if d.Late {
		c.late++
		c.note("late: %s/%d@%d key %s", d.Topic, d.Partition, d.Offset, d.Key)
	}
	tp := topicPart{d.Topic, d.Partition}
	s := c.seen[tp]
	if d.Offset < 0 {
		c.note("negative offset: %s/%d@%d", d.Topic, d.Partition, d.Offset)
		return false
	}
	for int64(len(s)) <= d.Offset {
		s = append(s, make([]uint8, max(len(s), 1024))...)
	}
	c.seen[tp] = s
	if s[d.Offset] > 0 {
		c.dups++
		if s[d.Offset] < 255 {
			s[d.Offset]++
		}
		return true
	}
	s[d.Offset] = 1
	if d.Late {
		return false // emitted out of turn by design; counted above
	}
	p := pos{d.EventMs, d.Topic, d.Partition, d.Offset}
	if prev, ok := c.last[d.Key]; ok && prev.compare(p) >= 0 {
		c.disorder++
		c.note("key %s: %s/%d@%d (event time %d) after %s/%d@%d (event time %d)", d.Key, d.Topic, d.Partition, d.Offset, d.EventMs, prev.topic, prev.part, prev.off, prev.ts)
	}
	c.last[d.Key] = p
	return false
}

// sinkCheck is the verdict on one sink.
type sinkCheck struct {
	Sink       string   `json:"sink"`
	Expected   int64    `json:"expected"`   // records in Kafka
	Received   int64    `json:"received"`   // deliveries, re-deliveries included
	Distinct   int64    `json:"distinct"`   // records delivered at least once
	Missing    int64    `json:"missing"`    // records never delivered
	Duplicates int64    `json:"duplicates"` // re-deliveries
	Unknown    int64    `json:"unknown"`    // deliveries of offsets beyond the end offsets
	Late       int64    `json:"late"`
	OutOfOrder int64    `json:"out_of_order"`
	Examples   []string `json:"examples,omitempty"`
}

// result compares the deliveries with the records in Kafka: offsets
// [0, end) of each partition.
func (c *checker) result(sink string, ends map[topicPart]int64) sinkCheck {
	r := sinkCheck{Sink: sink, Received: c.received, Duplicates: c.dups, Late: c.late, OutOfOrder: c.disorder}
	for tp, end := range ends {
		r.Expected += end
		s := c.seen[tp]
		for off := int64(0); off < end; off++ {
			if off < int64(len(s)) && s[off] > 0 {
				r.Distinct++
			} else {
				r.Missing++
				if r.Missing <= 5 {
					c.note("missing: %s/%d@%d", tp.Topic, tp.Partition, off)
				}
			}
		}
	}
	for tp, s := range c.seen {
		for off := ends[tp]; off < int64(len(s)); off++ {
			if s[off] > 0 {
				r.Unknown++
				c.note("unknown record: %s/%d@%d", tp.Topic, tp.Partition, off)
			}
		}
	}
	r.Examples = c.examples
	return r
}

// failures lists what breaks the sink's guarantee; exactly says whether
// re-deliveries break it.
func (r sinkCheck) failures(exactly bool) []string {
	var f []string
	add := func(n int64, what string) {
		if n > 0 {
			f = append(f, fmt.Sprintf("%s: %d %s", r.Sink, n, what))
		}
	}
	add(r.Missing, "records missing")
	add(r.Unknown, "deliveries of records not in Kafka")
	add(r.Late, "late records")
	add(r.OutOfOrder, "records out of order within their key")
	if exactly {
		add(r.Duplicates, "records delivered more than once")
	}
	return f
}
