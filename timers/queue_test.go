package timers

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
)

// oracle is the obviously correct queue: a slice kept sorted by Less, with
// records pushed at the same Pos kept in push order until release, when the
// last push wins.
type oracle struct {
	items []oracleItem
}

type oracleItem struct {
	pos  Pos
	val  int
	size int
}

func cmpPos(a, b Pos) int {
	switch {
	case Less(a, b):
		return -1
	case Less(b, a):
		return 1
	}
	return 0
}

func (o *oracle) push(p Pos, v, size int) {
	// After every record at p or before it: equal positions stay in push order.
	i := sort.Search(len(o.items), func(i int) bool { return cmpPos(o.items[i].pos, p) > 0 })
	o.items = slices.Insert(o.items, i, oracleItem{p, v, size})
}

func (o *oracle) popUntil(wm int64, max int) []int {
	var out []int
	for len(o.items) > 0 && o.items[0].pos.EventTime <= wm && (max <= 0 || len(out) < max) {
		if len(o.items) > 1 && o.items[1].pos == o.items[0].pos {
			o.items = o.items[1:] // pushed again later: the later push is released
			continue
		}
		out = append(out, o.items[0].val)
		o.items = o.items[1:]
	}
	return out
}

// distinct is the parked records as a release walks them: one per Pos, the
// latest push.
func (o *oracle) distinct() []oracleItem {
	var d []oracleItem
	for i, it := range o.items {
		if i+1 < len(o.items) && o.items[i+1].pos == it.pos {
			continue
		}
		d = append(d, it)
	}
	return d
}

func (o *oracle) bytes() int64 {
	var n int64
	for _, it := range o.items {
		n += int64(it.size)
	}
	return n
}

// randPos draws positions from small domains so that equal event times,
// equal keys and exact duplicates are common.
func randPos(rng *rand.Rand) Pos {
	return Pos{
		EventTime: rng.Int64N(50),
		Key:       []string{"", "a", "b", "ab"}[rng.IntN(4)],
		Input:     []string{"orders", "stock"}[rng.IntN(2)],
		Partition: rng.Int32N(3),
		Offset:    rng.Int64N(20),
	}
}

// rec is a test record; the queue reads its position through recPos.
type rec struct {
	pos Pos
	val int
}

func recPos(r *rec) Pos { return r.pos }

func vals(rs []*rec) []int {
	var v []int
	for _, r := range rs {
		v = append(v, r.val)
	}
	return v
}

// TestQueueAgainstOracle runs random Push (and PushAt)/PopUntil sequences, with duplicate
// positions and equal event times, against the sorted slice (invariants
// 1–3). Each seed spreads the event times by its own scale and offset
// (negative times, epoch milliseconds, times 2^40 apart), since the queue
// files records by the bits of their event times.
func TestQueueAgainstOracle(t *testing.T) {
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 11))
		scale := []int64{1, 7, 1 << 20, 1 << 40}[seed%4]
		base := []int64{0, -1 << 61, 1_780_000_000_000, 1<<62 - 1}[seed/4%4]
		at := func(t int64) int64 { return base + t*scale }
		q, o := NewQueue(recPos), &oracle{}
		var wm int64 = -1
		var got []*rec
		for step := range 400 {
			switch r := rng.IntN(10); {
			case r < 6:
				p, size := randPos(rng), rng.IntN(100)
				p.EventTime = at(p.EventTime)
				if step%2 == 0 {
					q.Push(&rec{p, step}, size)
				} else {
					q.PushAt(&rec{p, step}, p.EventTime, size)
				}
				o.push(p, step, size)
			case r < 9:
				wm += rng.Int64N(8) - 2      // the watermark may stand still or (in this test) go back
				max := max(rng.IntN(7)-3, 0) // 0 (unbounded) half the time
				got = q.PopUntil(at(wm), max, got[:0])
				if want := o.popUntil(at(wm), max); !slices.Equal(vals(got), want) {
					t.Fatalf("seed %d step %d: PopUntil(%d, %d) = %v, oracle %v", seed, step, at(wm), max, vals(got), want)
				}
				if m, ok := q.Min(); ok && max == 0 && m.EventTime <= at(wm) {
					t.Fatalf("seed %d step %d: Min %+v ≤ watermark %d after PopUntil", seed, step, m, wm)
				}
			default:
				var walk []int
				q.Ascend(func(p Pos, r *rec) bool {
					if p != r.pos {
						t.Fatalf("seed %d step %d: Ascend gives %+v for the record at %+v", seed, step, p, r.pos)
					}
					walk = append(walk, r.val)
					return len(walk) < 7
				})
				var want []int
				d := o.distinct()
				for _, it := range d[:min(7, len(d))] {
					want = append(want, it.val)
				}
				if !slices.Equal(walk, want) {
					t.Fatalf("seed %d step %d: Ascend = %v, oracle %v", seed, step, walk, want)
				}
			}
			if q.Len() != len(o.items) || q.Bytes() != o.bytes() {
				t.Fatalf("seed %d step %d: Len, Bytes = %d, %d; oracle %d, %d", seed, step, q.Len(), q.Bytes(), len(o.items), o.bytes())
			}
			if m, ok := q.Min(); ok != (len(o.items) > 0) || ok && m != o.items[0].pos {
				t.Fatalf("seed %d step %d: Min = %+v, %v; oracle %+v", seed, step, m, ok, o.items)
			}
		}
		q.Clear()
		if q.Len() != 0 || q.Bytes() != 0 {
			t.Fatalf("seed %d: after Clear Len, Bytes = %d, %d", seed, q.Len(), q.Bytes())
		}
		if _, ok := q.Min(); ok {
			t.Fatalf("seed %d: Min after Clear", seed)
		}
	}
}

// TestLessIsTotal checks that Less is a strict total order over the fields:
// exactly one of a<b, b<a, a==b holds, and it is transitive.
func TestLessIsTotal(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		a, b, c := randPos(rng), randPos(rng), randPos(rng)
		ab, ba := Less(a, b), Less(b, a)
		if ab && ba || !ab && !ba && a != b {
			t.Fatalf("not total: %+v vs %+v (%v, %v)", a, b, ab, ba)
		}
		if ab && Less(b, c) && !Less(a, c) {
			t.Fatalf("not transitive: %+v < %+v < %+v", a, b, c)
		}
	}
	// Each field breaks ties in turn, in the documented order.
	base := Pos{EventTime: 5, Key: "k", Input: "in", Partition: 1, Offset: 7}
	for i, later := range []Pos{
		{EventTime: 6},
		{EventTime: 5, Key: "l"},
		{EventTime: 5, Key: "k", Input: "io"},
		{EventTime: 5, Key: "k", Input: "in", Partition: 2},
		{EventTime: 5, Key: "k", Input: "in", Partition: 1, Offset: 8},
	} {
		if !Less(base, later) || Less(later, base) {
			t.Errorf("field %d does not break the tie: %+v vs %+v", i, base, later)
		}
	}
}

// TestQueueSteadyStateAllocs checks invariant 4: once the parked set has
// reached its size, parking and releasing records does not allocate.
func TestQueueSteadyStateAllocs(t *testing.T) {
	for _, n := range []int{1, 100, 10000} {
		q, ps := steadyQueue(n)
		var dst []*rec
		i := 0
		allocs := testing.AllocsPerRun(2000, func() {
			dst = parkRelease(q, ps, i, n, dst)
			i++
		})
		if allocs != 0 {
			t.Errorf("n=%d: %v allocations per park+release, want 0", n, allocs)
		}
	}
}

// TestQueueBatchAllocs checks invariant 4 for the engine's pattern: a batch
// of 4096 records (the default release batch) parked, then released in one
// PopUntil. A few allocations remain for a while after start-up, as
// buckets and the sort scratch first created small grow once to full size;
// hence a bound rather than 0 (the benchmark reaches 0 B/op over millions
// of records).
func TestQueueBatchAllocs(t *testing.T) {
	const n, batch = 20_000, 4096
	q, ps := steadyQueue(n)
	dst := make([]*rec, 0, batch)
	i := 0
	step := func() {
		dst = parkReleaseBatch(q, ps, i, n, batch, dst)
		i += batch
	}
	for range 100 { // the buckets' and the scratch's capacities settle
		step()
	}
	if allocs := testing.AllocsPerRun(20, step); allocs > batch/256 {
		t.Errorf("%v allocations per batch of %d, want at most %d", allocs, batch, batch/256)
	}
	if q.Len() != n {
		t.Fatalf("queue holds %d records, want %d", q.Len(), n)
	}
}

// steadyQueue returns a queue holding n records at event times 0..n-1, and
// the ring of records a park+release loop pushes (and reuses once
// released); each record's Pos differs from its neighbours' in key,
// partition and offset.
func steadyQueue(n int) (*Queue[*rec], []rec) {
	ring := make([]rec, n+4096+1)
	for i := range ring {
		ring[i].pos = Pos{Key: fmt.Sprintf("key-%d", i%97), Input: "orders", Partition: int32(i % 42), Offset: int64(i)}
	}
	q := NewQueue(recPos)
	for i := range n {
		r := &ring[i]
		r.pos.EventTime, r.val = int64(i), i
		q.Push(r, 128)
	}
	return q, ring
}

// parkRelease parks the record for step i at event time i+n and releases
// everything up to event time i: one in, one out, the queue stays at n.
func parkRelease(q *Queue[*rec], ring []rec, i, n int, dst []*rec) []*rec {
	r := &ring[(i+n)%len(ring)]
	r.pos.EventTime, r.val = int64(i+n), i
	q.Push(r, 128)
	return q.PopUntil(int64(i), 0, dst[:0])
}

// parkReleaseBatch parks the records for steps i..i+batch-1, then releases
// up to event time i+batch-1 in one PopUntil, as the engine does per batch.
func parkReleaseBatch(q *Queue[*rec], ring []rec, i, n, batch int, dst []*rec) []*rec {
	for j := i; j < i+batch; j++ {
		r := &ring[(j+n)%len(ring)]
		r.pos.EventTime, r.val = int64(j+n), j
		q.Push(r, 128)
	}
	return q.PopUntil(int64(i+batch-1), 0, dst[:0])
}

// TestQueuePushBelowLastRebasesOnce checks invariant 5: after a release
// step, a run of pushes below it (a newly assigned task re-reading its
// backlog, in disorder) files the parked set again once, not once per push.
func TestQueuePushBelowLastRebasesOnce(t *testing.T) {
	q, _ := steadyQueue(10_000)
	q.PopUntil(5_000, 0, nil)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 10_000 {
		q.Push(&rec{Pos{EventTime: 4_000 - int64(i) + rng.Int64N(50), Key: "new", Offset: int64(i)}, i}, 1)
	}
	if q.rebases != 1 {
		t.Fatalf("%d rebases for 10000 pushes below the last release step, want 1", q.rebases)
	}
	got := q.PopUntil(1<<62, 0, nil)
	if len(got) != 14_999 || !slices.IsSortedFunc(got, func(a, b *rec) int { return cmpPos(a.pos, b.pos) }) {
		t.Fatalf("released %d records, sorted %v", len(got), slices.IsSortedFunc(got, func(a, b *rec) int { return cmpPos(a.pos, b.pos) }))
	}
}

// TestQueueCapacityStaysBounded checks that the buckets do not each keep
// the largest array they ever needed: after a burst of 200,000 parked
// records drains to a steady 5,000, the capacity they hold comes back within
// keepFactor times the parked set plus the floors.
func TestQueueCapacityStaysBounded(t *testing.T) {
	const burst, n = 200_000, 5_000
	q, ring := steadyQueue(burst)
	q.PopUntil(burst-n-1, 0, nil) // n left, at burst-n … burst-1
	var dst []*rec
	for i := burst - n; i < burst+100_000; i++ {
		dst = parkRelease(q, ring, i, n, dst)
	}
	total := 0
	for _, b := range q.buckets {
		total += cap(b)
	}
	if bound := keepFactor*q.Len() + len(q.buckets)*keepFloor; q.Len() != n || total > bound {
		t.Fatalf("buckets hold capacity for %d records with %d parked, bound %d", total, q.Len(), bound)
	}
}

// FuzzQueue drives the queue with operations decoded from the fuzzer's
// bytes, against the oracle: each byte pair is a push (event time from a
// range the first byte picks, so that times tie, spread over many bits, or
// fall below the last release step) or a release to a watermark, bounded
// or not. go test -fuzz FuzzQueue ./timers
func FuzzQueue(f *testing.F) {
	f.Add([]byte{0, 5, 0, 9, 200, 7, 0, 5, 201, 255})
	f.Add([]byte{1, 1, 2, 200, 3, 77, 130, 12, 250, 9, 0, 0, 0, 0, 199, 255})
	f.Add([]byte{9, 250, 9, 251, 77, 2, 210, 1, 3, 4, 3, 4, 220, 100})
	f.Fuzz(func(t *testing.T, ops []byte) {
		q, o := NewQueue(recPos), &oracle{}
		var got []*rec
		for i := 0; i+1 < len(ops); i += 2 {
			op, arg := ops[i], int64(ops[i+1])
			scale := []int64{1, 1 << 12, 1 << 33}[op%3]
			if op < 192 {
				p := Pos{EventTime: arg * scale, Key: []string{"a", "b"}[op/3%2], Input: "in", Partition: int32(op / 6 % 4), Offset: int64(op / 24)}
				q.Push(&rec{p, i}, int(op))
				o.push(p, i, int(op))
				continue
			}
			wm, max := arg*scale, int(op%4) // max 0: unbounded
			got = q.PopUntil(wm, max, got[:0])
			if want := o.popUntil(wm, max); !slices.Equal(vals(got), want) {
				t.Fatalf("op %d: PopUntil(%d, %d) = %v, oracle %v", i, wm, max, vals(got), want)
			}
			if q.Len() != len(o.items) || q.Bytes() != o.bytes() {
				t.Fatalf("op %d: Len, Bytes = %d, %d; oracle %d, %d", i, q.Len(), q.Bytes(), len(o.items), o.bytes())
			}
			if m, ok := q.Min(); ok != (len(o.items) > 0) || ok && m != o.items[0].pos {
				t.Fatalf("op %d: Min = %+v, %v; oracle %+v", i, m, ok, o.items)
			}
		}
	})
}
