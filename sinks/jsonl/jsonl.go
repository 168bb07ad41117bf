package jsonl

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/sinks/envelope"
)

// ErrClosed is returned by every call made after Close.
var ErrClosed = errors.New("jsonl: sink closed")

// DefaultBufferSize is the buffer size used when Options.BufferSize is 0.
const DefaultBufferSize = 256 << 10

// Options configure a Sink. The zero value is valid.
type Options struct {
	// BufferSize is the size of the write buffer in bytes. Default
	// DefaultBufferSize (256 KiB). A full buffer is written out during Write.
	BufferSize int
	// Sync makes every Flush (and Close) of a file sink call fsync after
	// writing, so that an acknowledgement survives a machine crash, not only
	// a process crash. Default false. Ignored for writers passed to New.
	Sync bool
	// FileMode is the permission of a file created by Create. Default 0644.
	FileMode os.FileMode
}

// EnsureDefaults fills zero fields with their defaults.
func (o *Options) EnsureDefaults() {
	if o.BufferSize <= 0 {
		o.BufferSize = DefaultBufferSize
	}
	if o.FileMode == 0 {
		o.FileMode = 0o644
	}
}

// Sink writes records as JSON lines.
type Sink struct {
	opts Options
	path string   // set for Create
	file *os.File // the file opened from path
	w    io.Writer
	bw   *bufio.Writer
	line []byte // scratch for one envelope
	err  error  // sticky: first write error, or ErrClosed
}

// New returns a sink that writes to w. Close does not close w.
func New(w io.Writer, opts Options) *Sink {
	opts.EnsureDefaults()
	return &Sink{opts: opts, w: w}
}

// Create returns a sink that appends to the file at path, creating it if
// needed, when Open is called.
func Create(path string, opts Options) *Sink {
	opts.EnsureDefaults()
	return &Sink{opts: opts, path: path}
}

// Open opens the file (for Create) and allocates the buffer.
func (s *Sink) Open(ctx context.Context) error {
	if s.err != nil {
		return s.err
	}
	if s.bw != nil {
		return errors.New("jsonl: Open called twice")
	}
	if s.path != "" {
		if err := dropTornLine(s.path); err != nil {
			return fmt.Errorf("jsonl: %w", err)
		}
		f, err := os.OpenFile(s.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, s.opts.FileMode)
		if err != nil {
			return fmt.Errorf("jsonl: %w", err)
		}
		s.file, s.w = f, f
	}
	s.bw = bufio.NewWriterSize(s.w, s.opts.BufferSize)
	return nil
}

// dropTornLine cuts a file that a crash left ending in a partial line back to
// its last newline. The cut tail was never acknowledged (a flush always ends
// on a whole line), so the restarted job writes those records again.
func dropTornLine(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return err
	}
	buf := make([]byte, 64<<10)
	for end := st.Size(); end > 0; {
		start := max(0, end-int64(len(buf)))
		n, err := f.ReadAt(buf[:end-start], start)
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			if keep := start + int64(i) + 1; keep != st.Size() {
				return f.Truncate(keep)
			}
			return nil
		}
		end = start
	}
	return f.Truncate(0) // no newline at all: a single torn line
}

// Write encodes batch, one line per record, into the buffer. A full buffer is
// written to the file or writer.
func (s *Sink) Write(ctx context.Context, batch []record.Record) error {
	if err := s.ready(); err != nil {
		return err
	}
	for i := range batch {
		s.line = envelope.Append(s.line[:0], &batch[i])
		s.line = append(s.line, '\n')
		if _, err := s.bw.Write(s.line); err != nil {
			return s.fail(err)
		}
	}
	return nil
}

// Flush writes out the buffer and, with Options.Sync on a file, fsyncs it.
func (s *Sink) Flush(ctx context.Context) error {
	if err := s.ready(); err != nil {
		return err
	}
	if err := s.bw.Flush(); err != nil {
		return s.fail(err)
	}
	if s.opts.Sync && s.file != nil {
		if err := s.file.Sync(); err != nil {
			return s.fail(err)
		}
	}
	return nil
}

// Close flushes and closes the file the sink opened. It returns the flush
// error, if any; a second Close returns ErrClosed.
func (s *Sink) Close() error {
	if errors.Is(s.err, ErrClosed) {
		return ErrClosed
	}
	var err error
	if s.bw != nil {
		err = s.Flush(context.Background())
	}
	if s.file != nil {
		err = errors.Join(err, s.file.Close())
	}
	s.err = ErrClosed
	return err
}

func (s *Sink) ready() error {
	if s.err != nil {
		return s.err
	}
	if s.bw == nil {
		return errors.New("jsonl: sink not open")
	}
	return nil
}

func (s *Sink) fail(err error) error {
	s.err = fmt.Errorf("jsonl: %w", err)
	return s.err
}
