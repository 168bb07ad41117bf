package prefetch_test

import (
	"testing"

	"github.com/signalbox/signalbox/internal/prefetch"
	"github.com/signalbox/signalbox/record"
)

// TestAnyPointerIsSafe holds invariant 1: a hint on nil, empty or
// short memory neither faults nor changes what it points to.
func TestAnyPointerIsSafe(t *testing.T) {
	prefetch.Record(nil)
	prefetch.Bytes(nil)
	prefetch.Bytes([]byte{})
	r := record.Record{Topic: "t", Offset: 7, Value: []byte("v")}
	prefetch.Record(&r)
	b := []byte{1}
	prefetch.Bytes(b)
	if r.Topic != "t" || r.Offset != 7 || string(r.Value) != "v" || b[0] != 1 {
		t.Fatalf("a prefetch changed memory: %+v %v", r, b)
	}
}
