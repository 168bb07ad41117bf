package prefetch_test

import (
	"runtime"
	"testing"
	"unsafe"

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

// TestRecordLinesCovered: prefetch_amd64.s hints at bytes 0 to 215 of a
// record, its last byte included; a record of another size needs the
// assembly's offsets changed with it.
func TestRecordLinesCovered(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("Record is a no-op here")
	}
	if n := unsafe.Sizeof(record.Record{}); n != 216 {
		t.Fatalf("record.Record is %d bytes; prefetch_amd64.s's last hint is at byte 215: move it to %d", n, n-1)
	}
}
