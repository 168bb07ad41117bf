package wire_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/signalbox/signalbox/formats/wire"
	"github.com/signalbox/signalbox/record"
)

// confluent frames body as franz-go's serde does (an encoder independent of
// the parser under test).
func confluent(t testing.TB, id int, index []int, body string) []byte {
	t.Helper()
	b, err := new(sr.ConfluentHeader).AppendEncode(nil, id, index)
	if err != nil {
		t.Fatal(err)
	}
	return append(b, body...)
}

func guidHeader(t *testing.T, guid string, tail ...byte) []byte {
	t.Helper()
	raw, err := hex.DecodeString(strings.ReplaceAll(guid, "-", ""))
	if err != nil || len(raw) != 16 {
		t.Fatalf("bad guid %q", guid)
	}
	return append(append([]byte{wire.MagicGUID}, raw...), tail...)
}

func TestParsePrefix(t *testing.T) {
	cases := []struct {
		name     string
		payload  []byte
		protobuf bool
		want     wire.Frame
	}{
		{"avro", confluent(t, 7, nil, "body"), false, wire.Frame{ID: 7, Body: []byte("body")}},
		{"large id", confluent(t, 1<<31+5, nil, "x"), false, wire.Frame{ID: 1<<31 + 5, Body: []byte("x")}},
		{"empty body", confluent(t, 3, nil, ""), false, wire.Frame{ID: 3, Body: []byte{}}},
		{"protobuf first-message shortcut", confluent(t, 9, []int{0}, "pb"), true, wire.Frame{ID: 9, Indexes: []int{0}, Body: []byte("pb")}},
		{"protobuf explicit count 1 index 0", append([]byte{0, 0, 0, 0, 9, 2, 0}, "pb"...), true, wire.Frame{ID: 9, Indexes: []int{0}, Body: []byte("pb")}},
		{"protobuf nested path", confluent(t, 9, []int{1, 0, 300}, "pb"), true, wire.Frame{ID: 9, Indexes: []int{1, 0, 300}, Body: []byte("pb")}},
		// sr writes no count at all for an empty index; an explicit empty
		// array (count 0) is the shortcut, so both mean the first message.
		{"protobuf empty array", append([]byte{0, 0, 0, 0, 4, 0}, "pb"...), true, wire.Frame{ID: 4, Indexes: []int{0}, Body: []byte("pb")}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := wire.Parse(c.payload, nil, false, c.protobuf)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestParseHeaderWins(t *testing.T) {
	const guid = "89791762-2336-4186-9674-299b90a802e2"
	// The payload looks like a prefixed value of id 5: the header still wins,
	// and the whole payload is the body.
	payload := confluent(t, 5, nil, "body")
	headers := []record.Header{{Key: "other", Value: []byte("x")}, {Key: wire.ValueHeader, Value: guidHeader(t, guid)}}
	h, ok := wire.Header(headers, wire.ValueHeader)
	if !ok {
		t.Fatal("header not found")
	}
	got, err := wire.Parse(payload, h, ok, false)
	if err != nil {
		t.Fatal(err)
	}
	want := wire.Frame{GUID: guid, Body: payload, FromHeader: true}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	if _, ok := wire.Header(headers, wire.KeyHeader); ok {
		t.Fatal("key header found where there is none")
	}

	// Protobuf: the message indexes travel in the header after the GUID.
	got, err = wire.Parse([]byte("pb"), guidHeader(t, guid, 4, 2, 6), true, true)
	if err != nil {
		t.Fatal(err)
	}
	if want := (wire.Frame{GUID: guid, Indexes: []int{1, 3}, Body: []byte("pb"), FromHeader: true}); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}

	// A magic-0 header carries a plain id.
	got, err = wire.Parse([]byte("b"), []byte{0, 0, 0, 1, 0}, true, false)
	if err != nil || got.ID != 256 || got.GUID != "" || !got.FromHeader {
		t.Fatalf("got %+v, %v", got, err)
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct {
		name            string
		payload, header []byte
		hasHeader, pb   bool
		reason          string
	}{
		{"empty", nil, nil, false, false, "payload is empty"},
		{"plain json", []byte(`{"a":1}`), nil, false, false, "not a magic byte"},
		{"short prefix", []byte{0, 0, 1}, nil, false, false, "shorter than the 5-byte prefix"},
		{"guid magic in payload", append([]byte{1}, make([]byte, 20)...), nil, false, false, "not a magic byte"},
		{"protobuf no index", []byte{0, 0, 0, 0, 1}, nil, false, true, "count is missing"},
		{"protobuf negative count", []byte{0, 0, 0, 0, 1, 1}, nil, false, true, "out of range"},
		{"protobuf count past end", []byte{0, 0, 0, 0, 1, 6, 2}, nil, false, true, "out of range"},
		{"protobuf huge count", append([]byte{0, 0, 0, 0, 1, 0x80, 0x04}, make([]byte, 300)...), nil, false, true, "out of range"},
		{"protobuf negative index", []byte{0, 0, 0, 0, 1, 2, 1}, nil, false, true, "message index 0 is -1"},
		{"header empty", []byte("x"), []byte{}, true, false, "schema id header is empty"},
		{"header short guid", []byte("x"), []byte{1, 2, 3}, true, false, "shorter than magic byte and GUID"},
		{"header trailing", []byte("x"), append(make([]byte, 17), 9)[1:], true, false, "trailing"},
		{"header bad magic", []byte("x"), []byte{7, 0, 0, 0, 0}, true, false, "0x07"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := wire.Parse(c.payload, c.header, c.hasHeader, c.pb)
			if !errors.Is(err, wire.ErrNotWire) {
				t.Fatalf("err %v is not ErrNotWire", err)
			}
			if !strings.Contains(err.Error(), c.reason) {
				t.Fatalf("err %q does not say %q", err, c.reason)
			}
		})
	}
}

// FuzzParse: any bytes parse or fail with ErrNotWire, never panic; a parsed
// frame's body is a suffix of the payload, its indexes are bounded and
// non-negative, and re-framing it with franz-go's encoder parses back to
// the same frame.
func FuzzParse(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 1, 'x'}, []byte{}, false, false)
	f.Add([]byte{0, 0, 0, 0, 1, 0, 'x'}, []byte{}, false, true)
	f.Add([]byte{0, 0, 0, 0, 1, 4, 2, 6, 'x'}, []byte{}, false, true)
	f.Add([]byte("body"), append([]byte{1}, make([]byte, 16)...), true, false)
	f.Add([]byte("body"), append(append([]byte{1}, make([]byte, 16)...), 0), true, true)
	f.Fuzz(func(t *testing.T, payload, header []byte, hasHeader, protobuf bool) {
		fr, err := wire.Parse(payload, header, hasHeader, protobuf)
		if err != nil {
			if !errors.Is(err, wire.ErrNotWire) {
				t.Fatalf("error %v is not ErrNotWire", err)
			}
			return
		}
		if !bytes.HasSuffix(payload, fr.Body) || (hasHeader && len(fr.Body) != len(payload)) {
			t.Fatalf("body %x is not the payload's tail %x", fr.Body, payload)
		}
		if protobuf != (fr.Indexes != nil) || len(fr.Indexes) > wire.MaxIndexes {
			t.Fatalf("indexes %v for protobuf=%v", fr.Indexes, protobuf)
		}
		for _, i := range fr.Indexes {
			if i < 0 {
				t.Fatalf("negative index in %v", fr.Indexes)
			}
		}
		if hasHeader || fr.ID < 0 {
			return
		}
		again, err := wire.Parse(confluent(t, fr.ID, fr.Indexes, string(fr.Body)), nil, false, protobuf)
		if err != nil || !reflect.DeepEqual(again, fr) {
			t.Fatalf("re-framed %+v parses as %+v, %v", fr, again, err)
		}
	})
}
