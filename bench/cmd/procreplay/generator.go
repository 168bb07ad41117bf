package main

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/record"
)

// The history's shape: 8 topics × 3 partitions, 1000 items (skus) unless
// -keys says otherwise; with -lookup, a products table on 3 partitions.
const (
	topics     = 8
	partitions = 3
	items      = 1000
	tableParts = 3
	disorder   = 200 // ms of event-time disorder inside a partition
	testEvery  = 100 // one record in testEvery is a test record
	baseTime   = int64(1_700_000_000_000)
)

func topicNames() []string {
	var ts []string
	for t := range topics {
		ts = append(ts, fmt.Sprintf("orders-%02d", t))
	}
	return ts
}

// testRecords is how many of n records the filter drops.
func testRecords(n int64, filtered bool) int64 {
	if !filtered {
		return 0
	}
	var c int64
	for _, p := range partitionSizes(n) {
		c += (p + testEvery - 1) / testEvery // offsets 0, testEvery, 2·testEvery, …
	}
	return c
}

// partitionSizes spreads n records over the partitions.
func partitionSizes(n int64) []int64 {
	k := int64(topics * partitions)
	s := make([]int64, k)
	for i := range s {
		s[i] = n / k
		if int64(i) < n%k {
			s[i]++
		}
	}
	return s
}

// generator is a signalbox.Source of the history: each Poll answers the
// next partition in turn with up to batch records.
type generator struct {
	batch int
	keys  int64     // distinct skus
	parts []genPart // the orders' partitions, then the table's
	next  int       // the orders' partition the next Poll answers
	open  bool
	left  int // partitions not at their end
	table int // the table's partitions not at their end: answered first

	mu    sync.Mutex // guards spare: Recycle comes from the engine goroutine
	spare [][]record.Record
}

type genPart struct {
	tp       record.TopicPartition
	pos, end int64
}

var _ signalbox.Recycler = (*generator)(nil)

// newGenerator generates n orders over keys skus; with table, first a
// products table of one version of each sku (tableValue).
func newGenerator(n int64, batch int, keys int64, table bool) *generator {
	g := &generator{batch: batch, keys: keys}
	names := topicNames()
	for i, size := range partitionSizes(n) {
		tp := record.TopicPartition{Topic: names[i/partitions], Partition: int32(i % partitions)}
		g.parts = append(g.parts, genPart{tp: tp, end: size})
		if size > 0 {
			g.left++
		}
	}
	if !table {
		return g
	}
	for p := range tableParts {
		size := keys / tableParts
		if int64(p) < keys%tableParts {
			size++
		}
		g.parts = append(g.parts, genPart{tp: record.TopicPartition{Topic: tableName, Partition: int32(p)}, end: size})
		if size > 0 {
			g.left++
			g.table++
		}
	}
	return g
}

// item is the sku of an order: with the default 1000 skus the harness's
// original (offset·7 + partition) mod 1000; with other counts the order's
// place in the history (offset·24 + partition index) times 7919 mod keys,
// a bijection when keys divides a power of ten (7919 is prime), so that
// consecutive orders hit keys far apart, as random skus would.
func (g *generator) item(off int64, index int) int64 {
	if g.keys == items {
		return (off*7 + int64(index%partitions)) % items
	}
	return (off*topics*partitions + int64(index)) * 7919 % g.keys
}

// tableKey is the sku of a table partition's record at off: the
// partitions hold consecutive keys, partition p from p·(keys/3) on.
func (g *generator) tableKey(p int32, off int64) int64 {
	var start int64
	for q := range p {
		start += g.parts[topics*partitions+int(q)].end
	}
	return start + off
}

func (g *generator) Open(context.Context) error { return nil }
func (g *generator) Close() error               { return nil }
func (g *generator) Commit(context.Context, map[record.TopicPartition]int64) error {
	return nil
}

func (g *generator) done() bool { return g.open && g.left == 0 }

func (g *generator) Recycle(recs []record.Record) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.spare) < 64 {
		g.spare = append(g.spare, recs[:0])
	}
}

func (g *generator) records() []record.Record {
	g.mu.Lock()
	defer g.mu.Unlock()
	if n := len(g.spare); n > 0 {
		r := g.spare[n-1]
		g.spare = g.spare[:n-1]
		return r
	}
	return make([]record.Record, 0, g.batch)
}

func (g *generator) Poll(ctx context.Context) (record.Fetch, error) {
	if err := ctx.Err(); err != nil {
		return record.Fetch{}, err
	}
	var f record.Fetch
	if !g.open {
		g.open = true
		for _, p := range g.parts {
			f.Assigned = append(f.Assigned, record.PartitionInfo{TopicPartition: p.tp, Start: 0, End: p.end})
		}
		return f, nil
	}
	if g.left == 0 {
		// everything delivered: fresh evidence that nothing more is coming
		for _, p := range g.parts {
			f.Partitions = append(f.Partitions, record.PartitionFetch{TopicPartition: p.tp, Position: p.pos, End: p.end})
		}
		select {
		case <-ctx.Done():
			return f, ctx.Err()
		case <-time.After(time.Millisecond):
		}
		return f, nil
	}
	if g.table > 0 {
		return g.tableFetch(), nil
	}
	orders := topics * partitions
	g.next %= orders
	for g.parts[g.next].pos == g.parts[g.next].end {
		g.next = (g.next + 1) % orders
	}
	index := g.next
	p := &g.parts[index]
	g.next++
	n := int(min(int64(g.batch), p.end-p.pos))
	recs := g.records()[:0]
	buf := make([]byte, 0, n*128) // one allocation for the batch's keys and values, as a fetch's
	for i := range n {
		off := p.pos + int64(i)
		ts := baseTime + off*topics*partitions + int64(index+1) - (off*7919)%disorder
		start := len(buf)
		buf = append(buf, "sku-"...)
		buf = appendPadded(buf, g.item(off, index), 6)
		key := buf[start:len(buf):len(buf)]
		start = len(buf)
		buf = appendValue(buf, off, ts, key, p.tp.Partition)
		recs = append(recs, record.Record{Topic: p.tp.Topic, Partition: p.tp.Partition, Offset: off, Key: key,
			Value: buf[start:len(buf):len(buf)], Timestamp: time.UnixMilli(ts)})
	}
	g.advance(p, n)
	f.Partitions = append(f.Partitions, record.PartitionFetch{TopicPartition: p.tp, Records: recs, Position: p.pos, End: p.end})
	return f, nil
}

// advance moves p past n records.
func (g *generator) advance(p *genPart, n int) {
	p.pos += int64(n)
	if p.pos == p.end {
		g.left--
		if p.tp.Topic == tableName {
			g.table--
		}
	}
}

// tableFetch answers the first table partition not at its end with up to
// batch versions, all a minute before the first order (Kafka timestamp):
// the bootstrap, read before any order.
func (g *generator) tableFetch() record.Fetch {
	p := &g.parts[topics*partitions]
	for p.pos == p.end {
		p = &g.parts[topics*partitions+int(p.tp.Partition)+1]
	}
	n := int(min(int64(g.batch), p.end-p.pos))
	recs := g.records()[:0]
	buf := make([]byte, 0, n*96)
	at := time.UnixMilli(baseTime - 60_000)
	for i := range n {
		off := p.pos + int64(i)
		k := g.tableKey(p.tp.Partition, off)
		start := len(buf)
		buf = append(buf, "sku-"...)
		buf = appendPadded(buf, k, 6)
		key := buf[start:len(buf):len(buf)]
		start = len(buf)
		buf = tableValue(buf, key, k)
		recs = append(recs, record.Record{Topic: p.tp.Topic, Partition: p.tp.Partition, Offset: off, Key: key,
			Value: buf[start:len(buf):len(buf)], Timestamp: at})
	}
	g.advance(p, n)
	return record.Fetch{Partitions: []record.PartitionFetch{{TopicPartition: p.tp, Records: recs, Position: p.pos, End: p.end}}}
}

// tableValue appends a product of about 70 bytes:
// {"sku":"sku-000042","name":"product 42","price":7.25,"stock":12}.
func tableValue(b, sku []byte, k int64) []byte {
	b = append(b, `{"sku":"`...)
	b = append(b, sku...)
	b = append(b, `","name":"product `...)
	b = strconv.AppendInt(b, k, 10)
	b = append(b, `","price":`...)
	b = strconv.AppendInt(b, 1+k%40, 10)
	b = append(b, '.', "0257"[k%4], '5')
	b = append(b, `,"stock":`...)
	b = strconv.AppendInt(b, k%100, 10)
	return append(b, '}')
}

// appendValue appends an order of about 110 bytes: every testEvery-th
// offset a test record.
func appendValue(b []byte, off, ts int64, sku []byte, part int32) []byte {
	b = append(b, `{"ts":`...)
	b = strconv.AppendInt(b, ts, 10)
	b = append(b, `,"id":"o-`...)
	b = appendPadded(b, off*int64(partitions)+int64(part), 7)
	b = append(b, `","sku":"`...)
	b = append(b, sku...)
	b = append(b, `","qty":`...)
	b = strconv.AppendInt(b, 1+off%9, 10)
	b = append(b, `,"price":`...)
	b = strconv.AppendInt(b, 1+off%40, 10)
	b = append(b, '.', "0257"[off%4], '5')
	status := `ok`
	if off%testEvery == 0 {
		status = `test`
	}
	b = append(b, `,"status":"`...)
	b = append(b, status...)
	return append(b, `","site":"oslo"}`...)
}

// appendPadded appends v in decimal, zero-padded to width digits.
func appendPadded(b []byte, v int64, width int) []byte {
	var d [20]byte
	s := strconv.AppendInt(d[:0], v, 10)
	for i := len(s); i < width; i++ {
		b = append(b, '0')
	}
	return append(b, s...)
}
