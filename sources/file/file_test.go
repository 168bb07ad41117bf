package file

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/signalbox/signalbox/record"
)

func writeFile(t testing.TB, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "in.jsonl")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// drain polls until every partition's position reached its snapshot end.
func drain(t testing.TB, s *Source) (record.PartitionInfo, []record.Record) {
	t.Helper()
	ctx := context.Background()
	if err := s.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	f, err := s.Poll(ctx)
	if err != nil || len(f.Assigned) != 1 {
		t.Fatalf("first poll: %v %+v", err, f)
	}
	info := f.Assigned[0]
	var recs []record.Record
	pos := info.Start
	for pos < info.End {
		f, err := s.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, pf := range f.Partitions {
			if pf.Position < pos {
				t.Fatalf("position went back: %d < %d", pf.Position, pos)
			}
			pos = pf.Position
			recs = append(recs, pf.Records...)
		}
	}
	return info, recs
}

func TestFileSourceLinesAndSnapshot(t *testing.T) {
	p := writeFile(t, []byte("{\"a\":1}\n{\"a\":2}\r\n\n{\"a\":3}\npartial"))
	s, err := New(Options{BatchSize: 2}, File{Path: p, Topic: "t"})
	if err != nil {
		t.Fatal(err)
	}
	info, recs := drain(t, s)
	if info.Start != 0 || info.End != 4 {
		t.Fatalf("snapshot = [%d,%d), want [0,4): the partial last line is not counted", info.Start, info.End)
	}
	want := []string{`{"a":1}`, `{"a":2}`, ``, `{"a":3}`}
	if len(recs) != len(want) {
		t.Fatalf("got %d records, want %d", len(recs), len(want))
	}
	for i, r := range recs {
		if string(r.Value) != want[i] || r.Offset != int64(i) || r.Topic != "t" {
			t.Errorf("record %d = %q@%d, want %q@%d", i, r.Value, r.Offset, want[i], i)
		}
	}
}

func TestFileSourceStartAt(t *testing.T) {
	p := writeFile(t, []byte("a\nb\nc\n"))
	s, _ := New(Options{}, File{Path: p, Topic: "t"})
	s.StartAt(map[record.TopicPartition]int64{{Topic: "t"}: 2})
	info, recs := drain(t, s)
	if info.Start != 2 || len(recs) != 1 || string(recs[0].Value) != "c" || recs[0].Offset != 2 {
		t.Fatalf("start=%d recs=%+v", info.Start, recs)
	}
}

func TestFileSourceErrors(t *testing.T) {
	if _, err := New(Options{}); err == nil {
		t.Error("no files: want error")
	}
	if _, err := New(Options{}, File{Path: "a", Topic: "t"}, File{Path: "b", Topic: "t"}); err == nil {
		t.Error("same topic/partition twice: want error")
	}
	s, _ := New(Options{}, File{Path: filepath.Join(t.TempDir(), "missing")})
	if err := s.Open(context.Background()); err == nil {
		t.Error("missing file: want error")
	}
}

// FuzzFileSource checks the line parsing: for any bytes, the snapshot counts
// the complete lines, each is delivered once in order with its line number,
// and the values are the lines without their line ending.
func FuzzFileSource(f *testing.F) {
	f.Add([]byte("{\"ts\":1}\n{\"ts\":2}\n"))
	f.Add([]byte("\n\n\r\n"))
	f.Add([]byte("no newline"))
	f.Add([]byte{0, '\n', 0xff, '\r'})
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := New(Options{BatchSize: 3}, File{Path: writeFile(t, data), Topic: "t"})
		if err != nil {
			t.Fatal(err)
		}
		info, recs := drain(t, s)
		lines := bytes.Split(data, []byte{'\n'})
		lines = lines[:len(lines)-1] // the part after the last newline is incomplete
		if info.End != int64(len(lines)) || len(recs) != len(lines) {
			t.Fatalf("end=%d records=%d, want %d", info.End, len(recs), len(lines))
		}
		for i, r := range recs {
			if want := bytes.TrimRight(lines[i], "\r\n"); !bytes.Equal(r.Value, want) || r.Offset != int64(i) {
				t.Fatalf("line %d = %q@%d, want %q", i, r.Value, r.Offset, want)
			}
		}
	})
}
