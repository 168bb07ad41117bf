package jsonl

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/signalbox/signalbox/internal/fielderr"
	"github.com/signalbox/signalbox/internal/prefetch"
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
	// DefaultBufferSize (256 KiB); from MinBufferSize to MaxBufferSize. A
	// full buffer is written out during Write.
	BufferSize int
	// Sync makes every Flush (and Close) of a file sink call fsync after
	// writing, so that an acknowledgement survives a machine crash, not only
	// a process crash. Default false. Ignored for writers passed to New.
	Sync bool
	// FileMode is the permission of a file created by Create. Default 0644.
	FileMode os.FileMode
}

// The range of Options.BufferSize: a larger buffer buys nothing, and one
// of terabytes exhausts memory when Open allocates it.
const (
	MinBufferSize = 16 // bufio's smallest
	MaxBufferSize = 64 << 20
)

// Validate reports an option out of its range as an error naming the field
// as the job file does (buffer_size). Open calls it.
func (o Options) Validate() error {
	if o.BufferSize != 0 && (o.BufferSize < MinBufferSize || o.BufferSize > MaxBufferSize) {
		return fmt.Errorf("jsonl: %w", fielderr.New("buffer_size", "%d bytes is out of range: must be from 16 B to 64 MiB", o.BufferSize))
	}
	return nil
}

// EnsureDefaults fills zero fields with their defaults.
func (o *Options) EnsureDefaults() {
	if o.BufferSize == 0 {
		o.BufferSize = DefaultBufferSize
	}
	if o.FileMode == 0 {
		o.FileMode = 0o644
	}
}

// Sink writes records as JSON lines.
type Sink struct {
	opts Options
	path string      // set for Create
	file *os.File    // the file opened from path
	fw   *fileWriter // writes to file when it is a regular file
	w    io.Writer
	bw   *bufio.Writer
	enc  envelope.Encoder // remembers topic-partitions and the last second
	line []byte           // scratch for a line longer than the buffer's free space
	err  error            // sticky: first write error, or ErrClosed
	// size is the file's size once everything written is flushed (a
	// regular file from Create only; -1 otherwise): the good size the
	// side file records at each Flush.
	size   int64
	marked int64 // the size the side file holds
	// side is the side file, open since Open made it: without Sync, later
	// sizes are written over it in place (mark).
	side *os.File
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

// Open opens the file (for Create) and allocates the buffer. A file that
// ends in a partial line is cut back to its last newline only when the side
// file shows that signalbox wrote that tail (invariant 5); otherwise Open
// refuses, naming the file.
func (s *Sink) Open(ctx context.Context) error {
	if s.err != nil {
		return s.err
	}
	if s.bw != nil {
		return errors.New("jsonl: Open called twice")
	}
	if err := s.opts.Validate(); err != nil {
		return err
	}
	s.size = -1
	if s.path != "" {
		size, err := dropTornLine(s.path)
		if err != nil {
			return fmt.Errorf("jsonl: %w", err)
		}
		f, err := os.OpenFile(s.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, s.opts.FileMode)
		if err != nil {
			return fmt.Errorf("jsonl: %w", err)
		}
		s.file, s.w = f, f
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
			if size < 0 { // created just now
				size = 0
			}
			s.size = size
			s.fw = &fileWriter{f: f, off: size, end: size}
			s.w = s.fw
			if err := s.mark(); err != nil {
				f.Close()
				s.closeSide()
				return err
			}
		}
	}
	s.bw = bufio.NewWriterSize(s.w, s.opts.BufferSize)
	return nil
}

// SideFile returns the path of the file in which a sink created for path
// records the size of path after its last Flush: "<path>.signalbox-size".
func SideFile(path string) string { return path + ".signalbox-size" }

// mark records s.size in the side file, so that a crash leaves the old or
// the new size, never half of one. The first time (at Open), and every
// time with Sync, it writes a temporary file and renames it over the side
// file. Later, without Sync, it writes the size over the side file it
// keeps open, in place, in one write at offset 0: sizes only grow while
// the sink is open, so the new "N\n" covers the old one whole, and a
// process crash cannot leave half of a write this small (a machine crash
// promises nothing without Sync). That saves an open, a close and a
// rename at every flush, which a replay makes dozens of times a second.
func (s *Sink) mark() error {
	b := strconv.AppendInt(make([]byte, 0, 24), s.size, 10)
	b = append(b, '\n')
	if s.side != nil && !s.opts.Sync {
		if _, err := s.side.WriteAt(b, 0); err != nil {
			return fmt.Errorf("jsonl: recording the file size: %w", err)
		}
		s.marked = s.size
		return nil
	}
	side := SideFile(s.path)
	tmp := side + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, s.opts.FileMode)
	if err != nil {
		return fmt.Errorf("jsonl: %w", err)
	}
	_, err = f.Write(b)
	if err == nil && s.opts.Sync {
		err = f.Sync()
	}
	if err == nil {
		err = os.Rename(tmp, side)
	}
	if err == nil && s.opts.Sync {
		// The rename (and at Open the file's own creation) lives in the
		// directory: without its fsync a machine crash can lose them.
		err = syncDir(filepath.Dir(side))
	}
	if err == nil && !s.opts.Sync {
		s.side = f // the side file now, kept for the writes in place
	} else if err = errors.Join(err, f.Close()); err != nil {
		return fmt.Errorf("jsonl: recording the file size: %w", err)
	}
	s.marked = s.size
	return nil
}

// syncDir fsyncs a directory, so that the entries created or renamed in it
// survive a machine crash. A variable so that tests see the calls.
var syncDir = func(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}

// goodSize reads the size recorded by mark, or returns false.
func goodSize(path string) (int64, bool) {
	b, err := os.ReadFile(SideFile(path))
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n, err == nil && n >= 0
}

// dropTornLine prepares an existing regular file for appending and returns
// its size (-1 when it does not exist, 0 for other kinds of files). A file
// that ends in a partial line is cut back to its last newline only when the
// side file records a size at or before that newline: the tail was then
// written by signalbox after its last acknowledged Flush (a flush always
// ends on a whole line), so the restarted job writes those records again.
// Any other partial last line belongs to someone else, and dropTornLine
// refuses to touch the file.
func dropTornLine(path string) (int64, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return -1, nil
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() || st.Size() == 0 {
		return 0, err
	}
	keep := int64(0) // just after the last newline
	buf := make([]byte, 64<<10)
	for end := st.Size(); end > 0; {
		start := max(0, end-int64(len(buf)))
		n, err := f.ReadAt(buf[:end-start], start)
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			keep = start + int64(i) + 1
			break
		}
		end = start
	}
	if keep == st.Size() {
		return keep, nil
	}
	if good, ok := goodSize(path); !ok || good > keep {
		what := "its last line has no final newline"
		if keep == 0 {
			what = "it holds no newline at all"
		}
		return 0, fmt.Errorf("%s: %s (%d bytes after byte %d), and signalbox did not write them (%s records no such write): refusing to append to, or cut, a file it does not own; end the line, or choose another path",
			path, what, st.Size()-keep, keep, filepath.Base(SideFile(path)))
	}
	return keep, f.Truncate(keep)
}

// Info describes the sink options make (signalbox.SinkDescriber): "jsonl",
// at least once, and embedding values as JSON: the sink copies a value
// marked record.Record.ValueJSON as it is (sinks/envelope), so the engine
// validates values for it before they reach the sink goroutine.
func (o Options) Info() record.SinkInfo { return record.SinkInfo{Name: "jsonl", EmbedsValueJSON: true} }

// Info is the sink's description: its options' (Options.Info).
func (s *Sink) Info() record.SinkInfo { return s.opts.Info() }

// Write encodes batch, one line per record, into the buffer. A full buffer is
// written to the file or writer.
func (s *Sink) Write(ctx context.Context, batch []record.Record) error {
	if err := s.ready(); err != nil {
		return err
	}
	// How many records ahead the loop asks the CPU for the key's and
	// value's bytes: they sit in fetched batches parked long ago, cold.
	const ahead = 8
	for i := range batch {
		if j := i + ahead; j < len(batch) {
			prefetch.Bytes(batch[j].Key)
			prefetch.Bytes(batch[j].Value)
		}
		// Encoded straight into the buffer's free space
		// (bufio.Writer.AvailableBuffer), unless that is shorter than the
		// last line that did not fit: then into the line scratch, which
		// keeps a line that outgrew the free space.
		line := s.bw.AvailableBuffer()
		if cap(line) < len(s.line) {
			line = s.line[:0]
		}
		line = append(s.enc.Append(line, &batch[i]), '\n')
		if len(line) > s.bw.Available() {
			s.line = line
		}
		if _, err := s.bw.Write(line); err != nil {
			return s.fail(err)
		}
		if s.size >= 0 {
			s.size += int64(len(line))
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
	if s.size >= 0 && s.size != s.marked {
		if err := s.mark(); err != nil {
			s.err = err
			return err
		}
	}
	return nil
}

// Close flushes, gives back the blocks reserved past the file's end, and
// closes the file the sink opened. It returns the flush error, if any; a
// second Close returns ErrClosed.
func (s *Sink) Close() error {
	if errors.Is(s.err, ErrClosed) {
		return ErrClosed
	}
	var err error
	if s.bw != nil {
		err = s.Flush(context.Background())
	}
	if s.fw != nil {
		err = errors.Join(err, s.fw.release())
	}
	if s.file != nil {
		err = errors.Join(err, s.file.Close())
	}
	err = errors.Join(err, s.closeSide())
	s.err = ErrClosed
	return err
}

// closeSide closes the side file that mark keeps open, if any.
func (s *Sink) closeSide() error {
	if s.side == nil {
		return nil
	}
	err := s.side.Close()
	s.side = nil
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
