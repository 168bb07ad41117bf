// Package file is a source that reads JSON lines from files, one partition
// per file. It makes signalbox useful without Kafka: local runs, tests, and
// replays of exported data.
//
// Offsets are line numbers (0-based). The end offset snapshotted at Open is
// the number of complete lines the file held then; a trailing line without
// a newline is not counted until it is completed.
//
// Invariants:
//
//  1. Open counts lines before any record is delivered; the first Fetch
//     assigns every file with that count as End.
//  2. Each line is delivered once, in order, with Offset = its line number;
//     Position is always the next line number.
//  3. With Follow, lines appended later are delivered as they are completed,
//     and every poll reports fresh evidence (End = lines available).
//     Without Follow, nothing past the snapshot is read.
package file

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/sources"
)

// File is one input file.
type File struct {
	Path      string
	Topic     string // default: the path
	Partition int32
}

// Options configure a Source.
type Options struct {
	// Follow keeps reading lines appended after the snapshot (like tail -f).
	Follow bool
	// BatchSize is the most lines one fetch returns per file. Default 1024.
	BatchSize int
	// Idle is how long Poll waits when no file has new lines. Default 50ms.
	Idle time.Duration
}

// Source reads JSON lines from files.
type Source struct {
	opts   Options
	files  []*reader
	start  map[record.TopicPartition]int64
	opened bool
	next   int

	sources.Commits // Commit and Committed
}

type reader struct {
	File
	f       *os.File
	br      *bufio.Reader
	pending []byte // a partial last line
	pos     int64  // next line number
	end     int64  // snapshot
	skip    int64  // lines to skip before delivering (StartAt)
}

// New returns a source over files.
func New(opts Options, files ...File) (*Source, error) {
	if len(files) == 0 {
		return nil, errors.New("file source: files: at least one file is required")
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = 1024
	}
	if opts.Idle <= 0 {
		opts.Idle = 50 * time.Millisecond
	}
	s := &Source{opts: opts, start: map[record.TopicPartition]int64{}}
	seen := map[record.TopicPartition]bool{}
	for i, f := range files {
		if f.Path == "" {
			return nil, fmt.Errorf("file source: files[%d].path: must not be empty", i)
		}
		if f.Topic == "" {
			f.Topic = f.Path
		}
		tp := record.TopicPartition{Topic: f.Topic, Partition: f.Partition}
		if seen[tp] {
			return nil, fmt.Errorf("file source: files[%d]: topic %q partition %d is used twice", i, f.Topic, f.Partition)
		}
		seen[tp] = true
		s.files = append(s.files, &reader{File: f})
	}
	return s, nil
}

// StartAt makes the given partitions start at the given line numbers. It
// implements the root package's Seeker; call it before Open.
func (s *Source) StartAt(offsets map[record.TopicPartition]int64) {
	for tp, o := range offsets {
		s.start[tp] = o
	}
}

// Open opens every file and snapshots its line count (invariant 1).
func (s *Source) Open(context.Context) error {
	for _, r := range s.files {
		n, err := countLines(r.Path)
		if err != nil {
			return fmt.Errorf("file source: %w", err)
		}
		r.end = n
		if r.f, err = os.Open(r.Path); err != nil {
			return fmt.Errorf("file source: %w", err)
		}
		r.br = bufio.NewReaderSize(r.f, 256<<10)
		r.skip = min(s.start[record.TopicPartition{Topic: r.Topic, Partition: r.Partition}], r.end)
	}
	return nil
}

func countLines(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var n int64
	buf := make([]byte, 256<<10)
	for {
		k, err := f.Read(buf)
		n += int64(bytes.Count(buf[:k], []byte{'\n'}))
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return 0, err
		}
	}
}

// Poll implements the Source contract.
func (s *Source) Poll(ctx context.Context) (record.Fetch, error) {
	if err := ctx.Err(); err != nil {
		return record.Fetch{}, err
	}
	var f record.Fetch
	if !s.opened {
		s.opened = true
		for _, r := range s.files {
			if err := r.skipLines(); err != nil {
				return f, err
			}
			f.Assigned = append(f.Assigned, record.PartitionInfo{TopicPartition: record.TopicPartition{Topic: r.Topic, Partition: r.Partition}, Start: r.pos, End: r.end})
		}
		return f, nil
	}
	for range s.files {
		r := s.files[s.next]
		s.next = (s.next + 1) % len(s.files)
		pf, err := r.read(s.opts)
		if err != nil {
			return f, err
		}
		if len(pf.Records) > 0 {
			f.Partitions = append(f.Partitions, pf)
			return f, nil
		}
	}
	// Nothing new anywhere: wait, then report fresh evidence for every file.
	select {
	case <-ctx.Done():
		return f, ctx.Err()
	case <-time.After(s.opts.Idle):
	}
	for _, r := range s.files {
		end := r.pos
		if !s.opts.Follow {
			end = max(r.pos, r.end)
		}
		f.Partitions = append(f.Partitions, record.PartitionFetch{TopicPartition: record.TopicPartition{Topic: r.Topic, Partition: r.Partition}, Position: r.pos, End: end})
	}
	return f, nil
}

func (r *reader) skipLines() error {
	for r.pos < r.skip {
		if _, err := r.line(); err != nil {
			return fmt.Errorf("file source: %s: skipping to line %d: %w", r.Path, r.skip, err)
		}
	}
	return nil
}

// line returns the next complete line without its newline, or io.EOF.
func (r *reader) line() ([]byte, error) {
	b, err := r.br.ReadBytes('\n')
	if err == io.EOF {
		r.pending = append(r.pending, b...)
		return nil, io.EOF
	}
	if err != nil {
		return nil, err
	}
	if len(r.pending) > 0 {
		b = append(r.pending, b...)
		r.pending = nil
	}
	r.pos++
	return bytes.TrimRight(b, "\r\n"), nil
}

func (r *reader) read(opts Options) (record.PartitionFetch, error) {
	pf := record.PartitionFetch{TopicPartition: record.TopicPartition{Topic: r.Topic, Partition: r.Partition}, End: -1}
	eof := false
	for len(pf.Records) < opts.BatchSize && (opts.Follow || r.pos < r.end) {
		off := r.pos
		b, err := r.line()
		if err == io.EOF {
			eof = true
			break
		}
		if err != nil {
			return pf, fmt.Errorf("file source: %s: %w", r.Path, err)
		}
		pf.Records = append(pf.Records, record.Record{Topic: r.Topic, Partition: r.Partition, Offset: off, Value: b})
	}
	pf.Position = r.pos
	switch {
	case opts.Follow && eof:
		pf.End = r.pos
	case opts.Follow:
		pf.End = r.pos + 1 // the batch was full: at least one more line may wait
	default:
		pf.End = r.end
	}
	return pf, nil
}

// Close closes the files.
func (s *Source) Close() error {
	var errs []error
	for _, r := range s.files {
		if r.f != nil {
			errs = append(errs, r.f.Close())
		}
	}
	return errors.Join(errs...)
}
