package engine

import (
	"testing"

	"github.com/signalbox/signalbox/record"
)

// TestReadAtRelease: the release asks the CPU ahead for the bytes it will
// read, the value processed or decoded ahead when a record holds one (a
// Process's result, a template, an Avro value's JSON), else the value.
func TestReadAtRelease(t *testing.T) {
	value, decoded := []byte(`{"a":1}`), []byte(`{"b":2}`)
	for _, c := range []struct {
		r    record.Record
		want []byte
	}{
		{record.Record{Value: value}, value},
		{record.Record{Value: value, DecodedValue: decoded}, decoded},
		{record.Record{Value: value, DecodedValue: decoded[:0]}, decoded[:0]}, // a drop's mark: nothing to read
	} {
		if got := readAtRelease(&c.r); string(got) != string(c.want) || (got == nil) != (c.want == nil) || len(got) > 0 && &got[0] != &c.want[0] {
			t.Errorf("readAtRelease(Value %q, DecodedValue %q) = %q, want %q", c.r.Value, c.r.DecodedValue, got, c.want)
		}
	}
}
