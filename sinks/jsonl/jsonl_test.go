package jsonl_test

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/sinks/jsonl"
	"github.com/signalbox/signalbox/sinks/sinktest"
)

var ctx = context.Background()

type envelope struct {
	Topic       string          `json:"topic"`
	Partition   int32           `json:"partition"`
	Offset      int64           `json:"offset"`
	Key         *string         `json:"key"`
	KeyB64      *string         `json:"key_b64"`
	EventTime   *string         `json:"event_time"`
	EventTimeMs *int64          `json:"event_time_ms"`
	Value       json.RawMessage `json:"value"`
	ValueB64    *string         `json:"value_b64"`
	Late        bool            `json:"late"`
	LateByMs    *int64          `json:"late_by_ms"`
	Reason      *string         `json:"reason"`
}

func decodeLines(t testing.TB, b []byte) []envelope {
	t.Helper()
	var out []envelope
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e envelope
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		out = append(out, e)
	}
	return out
}

func records(n int) []record.Record {
	rs := make([]record.Record, n)
	for i := range rs {
		rs[i] = record.Record{Topic: "t", Partition: int32(i % 3), Offset: int64(i), Key: []byte(fmt.Sprint("k", i%5)),
			EventTime: 1_700_000_000_000 + int64(i), Value: []byte(fmt.Sprintf(`{"i":%d}`, i))}
	}
	return rs
}

func TestWriterRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	s := jsonl.New(&buf, jsonl.Options{BufferSize: 64})
	if err := s.Open(ctx); err != nil {
		t.Fatal(err)
	}
	in := records(50)
	in[3].Late, in[3].LateBy = true, 1234
	in[4].Timeless = true
	in[5].Headers = []record.Header{{Key: record.ReasonHeader, Value: []byte("bad event time")}}
	in[6].Key = nil
	in[7].Value = []byte("plain")
	if err := s.Write(ctx, in[:25]); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, in[25:]); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	got := decodeLines(t, buf.Bytes())
	if len(got) != len(in) {
		t.Fatalf("%d lines, want %d", len(got), len(in))
	}
	for i, e := range got {
		r := in[i]
		if e.Topic != r.Topic || e.Partition != r.Partition || e.Offset != r.Offset {
			t.Fatalf("line %d out of order: %+v", i, e)
		}
		if (e.Key == nil) != (r.Key == nil) || (e.Key != nil && *e.Key != string(r.Key)) {
			t.Fatalf("line %d key %v, want %q", i, e.Key, r.Key)
		}
		if r.Timeless != (e.EventTime == nil) || r.Timeless != (e.EventTimeMs == nil) {
			t.Fatalf("line %d: event time presence wrong: %+v", i, e)
		}
		if !r.Timeless && *e.EventTimeMs != r.EventTime {
			t.Fatalf("line %d: event_time_ms %d", i, *e.EventTimeMs)
		}
		if e.Late != r.Late || (e.LateByMs != nil) != r.Late {
			t.Fatalf("line %d: late fields %+v", i, e)
		}
		if (e.Reason != nil) != (i == 5) {
			t.Fatalf("line %d: reason %v", i, e.Reason)
		}
	}
	if *got[5].Reason != "bad event time" || string(got[7].Value) != `"plain"` || string(got[8].Value) != `{"i":8}` {
		t.Fatalf("fields: %s %s %s", *got[5].Reason, got[7].Value, got[8].Value)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, in); !errors.Is(err, jsonl.ErrClosed) {
		t.Fatalf("write after close: %v", err)
	}
}

func TestFileAppendsAndSyncs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.jsonl")
	for run := 0; run < 2; run++ {
		s := jsonl.Create(path, jsonl.Options{Sync: true})
		if err := s.Open(ctx); err != nil {
			t.Fatal(err)
		}
		if err := s.Write(ctx, records(10)); err != nil {
			t.Fatal(err)
		}
		if err := s.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(decodeLines(t, b)); n != 20 {
		t.Fatalf("%d lines after two runs, want 20 (append mode)", n)
	}
}

// TestSideFileFollowsFlushes: after Open and after every Flush, with Sync
// and without, the side file holds exactly the file's size and a newline,
// also as the size gains digits; without Sync it is written in place (a
// handle opened on it after Open reads each new size), with Sync renamed
// into place each time (the handle keeps reading Open's).
func TestSideFileFollowsFlushes(t *testing.T) {
	for _, sync := range []bool{false, true} {
		path := filepath.Join(t.TempDir(), "out.jsonl")
		s := jsonl.Create(path, jsonl.Options{Sync: sync})
		if err := s.Open(ctx); err != nil {
			t.Fatal(err)
		}
		h, err := os.Open(jsonl.SideFile(path))
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		check := func() {
			t.Helper()
			st, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			want := fmt.Sprintf("%d\n", st.Size())
			if b, err := os.ReadFile(jsonl.SideFile(path)); err != nil || string(b) != want {
				t.Fatalf("sync %v: side file holds %q (%v), want %q", sync, b, err, want)
			}
			if sync {
				want = "0\n" // what Open wrote, in the file h still holds
			}
			b := make([]byte, 32)
			n, err := h.ReadAt(b, 0)
			if err != nil && !errors.Is(err, io.EOF) || string(b[:n]) != want {
				t.Fatalf("sync %v: the side file opened after Open holds %q (%v), want %q", sync, b[:n], err, want)
			}
		}
		check()
		for n := 1; n <= 64; n *= 2 { // sizes of 3, 4 and 5 digits
			if err := s.Write(ctx, records(n)); err != nil {
				t.Fatal(err)
			}
			if err := s.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			check()
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		check()
		if _, err := os.Stat(jsonl.SideFile(path) + ".tmp"); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("sync %v: a temporary side file is left: %v", sync, err)
		}
	}
}

func TestCloseFlushes(t *testing.T) {
	var buf bytes.Buffer
	s := jsonl.New(&buf, jsonl.Options{})
	_ = s.Open(ctx)
	_ = s.Write(ctx, records(3))
	if buf.Len() != 0 {
		t.Fatal("expected buffering before Flush")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(decodeLines(t, buf.Bytes())); n != 3 {
		t.Fatalf("%d lines after Close", n)
	}
}

type failWriter struct{ n int }

func (f *failWriter) Write(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, errors.New("disk full")
	}
	f.n--
	return len(p), nil
}

func TestWriteErrorIsSticky(t *testing.T) {
	s := jsonl.New(&failWriter{n: 1}, jsonl.Options{BufferSize: 16})
	_ = s.Open(ctx)
	var err error
	for i := 0; i < 10 && err == nil; i++ {
		err = s.Write(ctx, records(2))
	}
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("want disk full, got %v", err)
	}
	if err2 := s.Flush(ctx); err2 == nil {
		t.Fatal("Flush after a failed write returned nil")
	}
	if err2 := s.Write(ctx, records(1)); err2 == nil {
		t.Fatal("Write after a failed write returned nil")
	}
}

// FuzzLine checks envelope invariant 1 through the sink: for arbitrary key,
// value, topic and reason bytes, the output is exactly one line of valid
// UTF-8 JSON whose key and topic decode back to the input when it is valid
// UTF-8, and whose value is the input when that is valid JSON.
func FuzzLine(f *testing.F) {
	f.Add([]byte("k"), []byte(`{"a":1}`), "topic", []byte("reason"), int64(0), false)
	f.Add([]byte{0xff, 0, '\n'}, []byte("{\n\"a\":\"\u2028\"\n}"), "t\x00", []byte{0xc3}, int64(-1), true)
	f.Add([]byte(nil), []byte(`"\ud800"`), "", []byte(nil), int64(253402300799999), false)
	f.Fuzz(func(t *testing.T, key, value []byte, topic string, reason []byte, ms int64, late bool) {
		rec := record.Record{Topic: topic, Key: key, Value: value, EventTime: ms, Late: late, LateBy: 7}
		if reason != nil {
			rec.Headers = []record.Header{{Key: record.ReasonHeader, Value: reason}}
		}
		var buf bytes.Buffer
		s := jsonl.New(&buf, jsonl.Options{})
		_ = s.Open(ctx)
		if err := s.Write(ctx, []record.Record{rec}); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		out := buf.Bytes()
		if len(out) == 0 || out[len(out)-1] != '\n' || bytes.Count(out, []byte("\n")) != 1 {
			t.Fatalf("not exactly one line: %q", out)
		}
		line := out[:len(out)-1]
		if !utf8.Valid(line) || !json.Valid(line) {
			t.Fatalf("invalid line: %q", line)
		}
		var e envelope
		if err := json.Unmarshal(line, &e); err != nil {
			t.Fatal(err)
		}
		if utf8.Valid(key) && key != nil && *e.Key != string(key) {
			t.Fatalf("key %q decoded as %q", key, *e.Key)
		}
		if utf8.ValidString(topic) && e.Topic != topic {
			t.Fatalf("topic %q decoded as %q", topic, e.Topic)
		}
		if utf8.Valid(value) && json.Valid(value) && !bytes.ContainsAny(value, "\r\n") && !bytes.Equal(e.Value, value) {
			// json.RawMessage keeps the bytes as written.
			if !bytes.Equal(bytes.TrimSpace(e.Value), bytes.TrimSpace(value)) {
				t.Fatalf("value %q embedded as %q", value, e.Value)
			}
		}
		if !utf8.Valid(value) { // invariant 3: neither JSON nor text, so value_b64
			if e.Value != nil || e.ValueB64 == nil {
				t.Fatalf("value %q written as value %q, not value_b64", value, e.Value)
			}
			if b, err := base64.StdEncoding.DecodeString(*e.ValueB64); err != nil || !bytes.Equal(b, value) {
				t.Fatalf("value %q written as value_b64 %q (%v)", value, *e.ValueB64, err)
			}
		} else if !json.Valid(value) {
			var s string
			if err := json.Unmarshal(e.Value, &s); err != nil {
				t.Fatalf("non-JSON value not a string: %s", e.Value)
			}
			if utf8.Valid(value) && s != string(value) {
				t.Fatalf("string value %q decoded as %q", value, s)
			}
		}
	})
}

func BenchmarkWrite(b *testing.B) {
	rs := records(1000)
	s := jsonl.New(discard{}, jsonl.Options{})
	_ = s.Open(ctx)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_ = s.Write(ctx, rs[i%1000:i%1000+1])
	}
	_ = s.Flush(ctx)
}

// BenchmarkFlushFile writes one record and flushes, to a file sink without
// Sync: one write to the file and one record of its size in the side file
// per op, what an idle flush costs.
func BenchmarkFlushFile(b *testing.B) {
	rs := records(1)
	s := jsonl.Create(filepath.Join(b.TempDir(), "out.jsonl"), jsonl.Options{})
	if err := s.Open(ctx); err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Write(ctx, rs); err != nil {
			b.Fatal(err)
		}
		if err := s.Flush(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// TestCreateDropsTornLine: a crash can leave the file ending in half a line
// (the buffer flushes mid-line when it fills). The next Open cuts it, so the
// restarted job's first record starts on a line of its own, but only when
// the side file shows signalbox wrote that tail: after its last Flush, with
// Sync (side file renamed into place) and without (written in place).
func TestCreateDropsTornLine(t *testing.T) {
	for _, c := range []struct {
		flushed int
		sync    bool
	}{{0, false}, {3, false}, {0, true}, {3, true}} {
		flushed := c.flushed
		path := filepath.Join(t.TempDir(), "out.jsonl")
		s := jsonl.Create(path, jsonl.Options{BufferSize: 64, Sync: c.sync})
		if err := s.Open(ctx); err != nil {
			t.Fatal(err)
		}
		recs := sinktest.Records(0, 10, 2)
		_ = s.Write(ctx, recs[:flushed])
		if err := s.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		acked, _ := os.ReadFile(path)
		// The crash: more records, which the small buffer writes out
		// without a Flush, and a write the kill cut in the middle.
		_ = s.Write(ctx, recs[flushed:])
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = f.WriteString(`{"topic":"in","partition":1,"off`)
		f.Close()
		after, _ := os.ReadFile(path)
		if len(after) <= len(acked) {
			t.Fatal("nothing written after the last Flush")
		}
		s2 := jsonl.Create(path, jsonl.Options{})
		if err := s2.Open(ctx); err != nil {
			t.Fatalf("flushed %d, sync %v: %v", flushed, c.sync, err)
		}
		_ = s2.Close()
		got, _ := os.ReadFile(path)
		if want := after[:bytes.LastIndexByte(after, '\n')+1]; !bytes.Equal(got, want) {
			t.Errorf("flushed %d, sync %v: file after Open = %q, want %q", flushed, c.sync, got, want)
		}
	}
}

// TestCreateRefusesForeignPartialLine: a user's file whose last line has no
// newline, or with no newline at all, was not written by signalbox: Open
// refuses with an error that names the file, and leaves it as it was. A
// user's file that ends in a newline is appended to.
func TestCreateRefusesForeignPartialLine(t *testing.T) {
	for _, c := range []struct{ content, msg string }{
		{"{\"a\":1}\n{\"a\":2}", "its last line has no final newline (7 bytes after byte 8)"},
		{"no newline here", "it holds no newline at all"},
	} {
		path := filepath.Join(t.TempDir(), "users.jsonl")
		if err := os.WriteFile(path, []byte(c.content), 0o644); err != nil {
			t.Fatal(err)
		}
		err := jsonl.Create(path, jsonl.Options{}).Open(ctx)
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("Open(%q) = %v, want an error naming the file and %q", c.content, err, c.msg)
		}
		if got, _ := os.ReadFile(path); string(got) != c.content {
			t.Errorf("file changed to %q", got)
		}
		// A stale side file from an earlier, longer file does not make the
		// tail ours either.
		if err := os.WriteFile(jsonl.SideFile(path), []byte("1000\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := jsonl.Create(path, jsonl.Options{}).Open(ctx); err == nil {
			t.Errorf("Open(%q) with a side file beyond the tail succeeded", c.content)
		}
	}
	path := filepath.Join(t.TempDir(), "users.jsonl")
	if err := os.WriteFile(path, []byte("{\"a\":1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := jsonl.Create(path, jsonl.Options{})
	if err := s.Open(ctx); err != nil {
		t.Fatal(err)
	}
	_ = s.Write(ctx, sinktest.Records(0, 1, 1))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); !bytes.HasPrefix(got, []byte("{\"a\":1}\n{")) || bytes.Count(got, []byte("\n")) != 2 {
		t.Errorf("appended file = %q", got)
	}
}

// TestWriteDoesNotAllocate: a line that does not fit the buffer's free
// space (here every line: the buffer is smaller than one) is encoded into a
// scratch slice the sink keeps, not into a new one per record.
func TestWriteDoesNotAllocate(t *testing.T) {
	rs := records(10)
	for i := range rs {
		rs[i].Value = []byte(`{"pad":"` + strings.Repeat("x", 100) + `"}`)
	}
	s := jsonl.New(discard{}, jsonl.Options{BufferSize: 64})
	if err := s.Open(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, rs); err != nil { // warm up the scratch
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(20, func() {
		if err := s.Write(ctx, rs); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("Write allocates %v times per batch of %d records", n, len(rs))
	}
}

// BenchmarkWriteColdValues writes batches of 4096 records whose keys and
// values lie in 24 partitions' buffers of 4 MiB each, interleaved as a
// replay releases them, so that most are not in the caches when written
// (BenchmarkWrite's are). One op is one record.
//
//	go test -run '^$' -bench WriteColdValues -benchmem ./sinks/jsonl/
func BenchmarkWriteColdValues(b *testing.B) {
	const parts, bufBytes, batch = 24, 4 << 20, 4096
	val := `{"item":"i-042","ts":1764479604123,"kind":"view","pad":"abcdefghijklmnopqrstuvwxyzabcdefghijklmn"}`
	var rs []record.Record
	for p := range parts {
		buf := make([]byte, 0, bufBytes)
		for i := 0; len(buf)+len(val)+16 <= bufBytes; i++ {
			key := fmt.Appendf(nil, "i-%03d", i%1000)
			k0 := len(buf)
			buf = append(append(buf, key...), val...)
			rs = append(rs, record.Record{Topic: "events", Partition: int32(p), Offset: int64(i),
				Key: buf[k0 : k0+len(key) : k0+len(key)], Value: buf[k0+len(key) : len(buf) : len(buf)], ValueJSON: true,
				EventTime: 1_764_479_604_123 + int64(i)*parts + int64(p)})
		}
	}
	// Release order: by event time, across the partitions.
	slices.SortFunc(rs, func(a, b record.Record) int { return cmp.Compare(a.EventTime, b.EventTime) })
	s := jsonl.New(discard{}, jsonl.Options{})
	_ = s.Open(ctx)
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; done += batch {
		from := done % (len(rs) - batch)
		_ = s.Write(ctx, rs[from:from+batch])
	}
	_ = s.Flush(ctx)
}
