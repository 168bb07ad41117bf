package kafka

import (
	"testing"
	"unsafe"

	"github.com/signalbox/signalbox/record"
)

// TestRecordPool: an array given back is cleared (it keeps nothing
// reachable) and handed out again for an answer it fits without being
// more than twice too large; small answers and misfits get new arrays; the
// pool keeps at most poolArrays.
func TestRecordPool(t *testing.T) {
	var p recordPool
	same := func(a, b []record.Record) bool { return unsafe.SliceData(a) == unsafe.SliceData(b) }

	a := p.get(1000)
	if len(a) != 0 || cap(a) != 1250 {
		t.Fatalf("new array: len %d cap %d, want 0 and 1250 (a quarter to spare)", len(a), cap(a))
	}
	a = append(a, record.Record{Topic: "t", Value: []byte("v")})
	p.put(a)
	if a[0].Topic != "" || a[0].Value != nil {
		t.Fatalf("a pooled array still holds %+v", a[0])
	}
	if b := p.get(1251); same(a, b) {
		t.Fatal("an array too small was handed out")
	}
	if b := p.get(600); same(a, b) {
		t.Fatal("an array more than twice too large was handed out")
	}
	if b := p.get(700); !same(a, b) || len(b) != 0 {
		t.Fatalf("the pooled array was not reused for an answer it fits (len %d)", len(b))
	}
	if b := p.get(minPooled - 1); cap(b) != minPooled-1 {
		t.Fatalf("a small answer got capacity %d, want exactly %d", cap(b), minPooled-1)
	}

	// A full pool keeps the most recent arrays: ones that no longer fit
	// the answers (here: too small) do not keep it full for good.
	for range poolArrays + 5 {
		p.put(make([]record.Record, 100))
	}
	if len(p.free) != poolArrays {
		t.Fatalf("the pool keeps %d arrays, want at most %d", len(p.free), poolArrays)
	}
	big := make([]record.Record, 0, 2000)
	p.put(big)
	if b := p.get(1500); !same(big, b) {
		t.Fatal("a full pool did not keep the array given back last")
	}
}
