package kbatch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/signalbox/signalbox/record"
)

// Compression codecs, the low three bits of a batch's attributes.
const (
	CodecNone   = 0
	CodecGzip   = 1
	CodecSnappy = 2
	CodecLZ4    = 3
	CodecZstd   = 4
)

// Batch attribute bits.
const (
	attrCodec         = 0x07
	attrLogAppendTime = 0x08
	attrTransactional = 0x10
	attrControl       = 0x20
)

// headerLen is the size of a v2 batch header: base offset (8), length (4),
// partition leader epoch (4), magic (1), crc (4), attributes (2), last
// offset delta (4), first timestamp (8), max timestamp (8), producer id
// (8), producer epoch (2), base sequence (4), record count (4).
const headerLen = 61

// Batch is one complete v2 record batch, or one entry of a legacy message
// set (Legacy).
type Batch struct {
	FirstOffset     int64
	LastOffsetDelta int32
	FirstTimestamp  int64 // ms; a record's CreateTime is FirstTimestamp + its delta
	MaxTimestamp    int64 // ms; every record's LogAppendTime when LogAppendTime is set
	ProducerID      int64
	ProducerEpoch   int16
	Codec           int8
	LogAppendTime   bool
	Transactional   bool
	Control         bool
	// Legacy: the batch is one entry of a legacy message set (magic 0 or
	// 1; legacy.go), a message or a compressed wrapper of messages, with
	// Kafka's offsets and timestamps: FirstOffset is its first record's
	// offset and LastOffset its wrapper's; FirstTimestamp is 0 and each
	// record's TimestampDelta is its own Kafka timestamp (-1: none, as
	// every magic-0 one); MaxTimestamp is the wrapper's. Never
	// Transactional or Control; ProducerID and ProducerEpoch are -1. Its
	// records are decoded by Scan too.
	Legacy bool
	// Records are the batch's records: decoded by Decode; by Scan only in
	// a control batch (the others' are read by AppendTo or Check).
	Records []Record
	// body is the batch's records' bytes (decompressed) and n their count
	// as the header gives it, kept by Scan (scanned) for AppendTo and Check.
	body    []byte
	n       int32
	scanned bool
}

// LastOffset is the offset of the batch's last record (as the broker
// wrote it, whatever compaction removed since).
func (b *Batch) LastOffset() int64 { return b.FirstOffset + int64(b.LastOffsetDelta) }

// Record is one record of a batch. Key is nil for a null key, Value nil for
// a null value; both alias the decoded bytes (invariant 1).
type Record struct {
	OffsetDelta    int32
	TimestampDelta int64
	Key            []byte
	Value          []byte
	Headers        []record.Header
}

// Decoder decodes partitions' record batches, reusing its slabs between
// calls (invariant 2). The zero value is ready; it is not safe for
// concurrent use.
type Decoder struct {
	batches []Batch
	recs    []Record
	// The most of each slab filled since the last Release: what Release
	// clears.
	batchesUsed, recsUsed int
	// The streaming decompressors, reset for each batch of their codec,
	// their input, and the scratch their output goes to before it is
	// copied out at its exact size (at most maxScratch bytes are kept).
	in      bytes.Reader
	gz      *gzip.Reader
	lz      *lz4.Reader
	scratch []byte
	// offsets holds a legacy wrapper's inner offsets while it is decoded.
	offsets []int64
}

// maxScratch is the most scratch a Decoder keeps between batches: a larger
// decompressed batch's scratch is left to the garbage collector.
const maxScratch = 4 << 20

// Release drops the Decoder's references into the bytes it decoded last,
// keeping its slabs' capacity: a long-lived Decoder would otherwise keep the
// last fetch response (or stale parts of earlier ones) reachable after the
// caller has copied out what it needed (invariant 2). The batches Decode
// returned are invalid afterwards.
func (d *Decoder) Release() {
	clear(d.batches[:d.batchesUsed])
	clear(d.recs[:d.recsUsed])
	d.batches, d.recs = d.batches[:0], d.recs[:0]
	d.batchesUsed, d.recsUsed = 0, 0
	d.in.Reset(nil)
}

// ErrCorrupt wraps every decoding error.
var ErrCorrupt = errors.New("kbatch: corrupt record batch")

func corrupt(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, a...)...)
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Decode decodes raw, the concatenated record batches of one partition.
// partial reports trailing bytes that do not make a whole batch (invariant
// 3). On error, batches holds the complete batches before the bad one.
func (d *Decoder) Decode(raw []byte) (batches []Batch, partial bool, err error) {
	return d.decode(raw, false)
}

// Scan is Decode but for the records of batches other than control ones:
// it checks every batch's header, CRC and length and decompresses it,
// and leaves its records to AppendTo or Check, which decode them straight
// into the caller's records (invariant 7). An error Scan returns is the
// first of Decode's unless AppendTo or Check finds one in an earlier
// batch.
func (d *Decoder) Scan(raw []byte) (batches []Batch, partial bool, err error) {
	return d.decode(raw, true)
}

func (d *Decoder) decode(raw []byte, scan bool) (batches []Batch, partial bool, err error) {
	d.batches, d.recs = d.batches[:0], d.recs[:0]
	type span struct{ from, to int }
	var spans []span // records of batch i are d.recs[spans[i].from:spans[i].to]; set once the slab stops moving
	var spanBuf [16]span
	spans = spanBuf[:0]
	for len(raw) > 0 {
		if len(raw) < 17 { // base offset, length, epoch, magic
			partial = true
			break
		}
		length := int32(binary.BigEndian.Uint32(raw[8:]))
		if length < 5 { // epoch and magic at least
			err = corrupt("batch length %d", length)
			break
		}
		if int64(len(raw)) < 12+int64(length) {
			partial = true
			break
		}
		whole := raw[:12+int(length)]
		raw = raw[12+int(length):]
		if magic := whole[16]; magic < 2 {
			// A legacy message set's entry (invariant 5): its records are
			// decoded now, whether scanning or not.
			from := len(d.recs)
			var b Batch
			if b, d.recs, err = d.legacy(whole, d.recs); err != nil {
				d.recsUsed = max(d.recsUsed, len(d.recs))
				d.recs = d.recs[:from]
				err = corrupt("%w", err)
				break
			}
			d.batches = append(d.batches, b)
			spans = append(spans, span{from, len(d.recs)})
			continue
		} else if magic > 2 {
			err = corrupt("magic %d", magic)
			break
		}
		if len(whole) < headerLen {
			err = corrupt("batch length %d is shorter than a v2 header", length)
			break
		}
		if crc := binary.BigEndian.Uint32(whole[17:]); crc != crc32.Checksum(whole[21:], castagnoli) {
			err = corrupt("CRC mismatch at offset %d", int64(binary.BigEndian.Uint64(whole)))
			break
		}
		attrs := binary.BigEndian.Uint16(whole[21:])
		b := Batch{
			FirstOffset:     int64(binary.BigEndian.Uint64(whole)),
			LastOffsetDelta: int32(binary.BigEndian.Uint32(whole[23:])),
			FirstTimestamp:  int64(binary.BigEndian.Uint64(whole[27:])),
			MaxTimestamp:    int64(binary.BigEndian.Uint64(whole[35:])),
			ProducerID:      int64(binary.BigEndian.Uint64(whole[43:])),
			ProducerEpoch:   int16(binary.BigEndian.Uint16(whole[51:])),
			Codec:           int8(attrs & attrCodec),
			LogAppendTime:   attrs&attrLogAppendTime != 0,
			Transactional:   attrs&attrTransactional != 0,
			Control:         attrs&attrControl != 0,
		}
		n := int32(binary.BigEndian.Uint32(whole[57:]))
		body := whole[headerLen:]
		if b.Codec != CodecNone {
			if body, err = d.decompress(b.Codec, body); err != nil {
				err = corrupt("batch at offset %d: %w", b.FirstOffset, err)
				break
			}
		}
		from := len(d.recs)
		if scan && !b.Control {
			if err = checkCount(n, body); err != nil {
				err = corrupt("batch at offset %d: %w", b.FirstOffset, err)
				break
			}
			b.body, b.n, b.scanned = body, n, true
		} else if d.recs, err = appendRecords(d.recs, body, n); err != nil {
			d.recsUsed = max(d.recsUsed, len(d.recs))
			d.recs = d.recs[:from]
			err = corrupt("batch at offset %d: %w", b.FirstOffset, err)
			break
		}
		d.batches = append(d.batches, b)
		spans = append(spans, span{from, len(d.recs)})
	}
	for i := range d.batches {
		if !d.batches[i].scanned {
			d.batches[i].Records = d.recs[spans[i].from:spans[i].to:spans[i].to]
		}
	}
	d.batchesUsed, d.recsUsed = max(d.batchesUsed, len(d.batches)), max(d.recsUsed, len(d.recs))
	return d.batches, partial, err
}

// checkCount checks a batch's record count against its body: a record
// takes at least one byte (in fact seven).
func checkCount(n int32, body []byte) error {
	if n < 0 || int64(n) > int64(len(body)) {
		return fmt.Errorf("record count %d for %d bytes", n, len(body))
	}
	return nil
}

// appendRecords decodes n records from body, which they must fill exactly.
func appendRecords(dst []Record, body []byte, n int32) ([]Record, error) {
	if err := checkCount(n, body); err != nil {
		return dst, err
	}
	r := reader{b: body}
	for i := int32(0); i < n; i++ {
		rec, err := r.record(i)
		if err != nil {
			return dst, err
		}
		dst = append(dst, rec)
	}
	return dst, r.end(n)
}

// record decodes the i-th record, the next one in r.
func (r *reader) record(i int32) (rec Record, err error) {
	length := r.varint()
	if r.bad || length < 0 || length > int64(r.left()) {
		return rec, fmt.Errorf("record %d: bad length", i)
	}
	rr := reader{b: r.b[r.i : r.i+int(length)]}
	r.i += int(length)
	rr.skip(1) // attributes, unused
	rec.TimestampDelta = rr.varint()
	od := rr.varint()
	if od != int64(int32(od)) {
		rr.bad = true
	}
	rec.OffsetDelta = int32(od)
	rec.Key = rr.bytes()
	rec.Value = rr.bytes()
	if nh := rr.varint(); nh > 0 {
		if nh > int64(rr.left()) { // a header takes at least two bytes
			return rec, fmt.Errorf("record %d: %d headers", i, nh)
		}
		rec.Headers = make([]record.Header, nh)
		for j := range rec.Headers {
			rec.Headers[j] = record.Header{Key: string(rr.bytes()), Value: rr.bytes()}
		}
	} else if nh < -1 {
		rr.bad = true
	}
	if rr.bad || rr.left() != 0 {
		return rec, fmt.Errorf("record %d: malformed", i)
	}
	return rec, nil
}

// end reports bytes left after a batch's n records.
func (r *reader) end(n int32) error {
	if r.left() != 0 {
		return fmt.Errorf("%d bytes after %d records", r.left(), n)
	}
	return nil
}

// reader reads Kafka's zig-zag varints and varint-prefixed bytes from b at
// i (an index, not a re-slice: a reader behind a pointer then moves on
// without a write barrier); any shortfall sets bad, after which every read
// returns zero values.
type reader struct {
	b   []byte
	i   int
	bad bool
}

// left is the number of bytes not read yet.
func (r *reader) left() int { return len(r.b) - r.i }

func (r *reader) skip(n int) {
	if r.left() < n {
		r.bad, r.i = true, len(r.b)
		return
	}
	r.i += n
}

// varint reads a zig-zag varint; one and two bytes (most of a record's
// varints) are read inline.
func (r *reader) varint() int64 {
	b, i := r.b, r.i
	if i < len(b) {
		if u := b[i]; u < 0x80 {
			r.i = i + 1
			return int64(u>>1) ^ -int64(u&1)
		}
		if i+1 < len(b) && b[i+1] < 0x80 {
			u := uint64(b[i]&0x7f) | uint64(b[i+1])<<7
			r.i = i + 2
			return int64(u>>1) ^ -int64(u&1)
		}
	}
	return r.longVarint()
}

// longVarint is varint's slow path: three bytes or more, or a bad one.
func (r *reader) longVarint() int64 {
	if r.bad {
		return 0
	}
	v, n := binary.Varint(r.b[r.i:])
	if n <= 0 {
		r.bad, r.i = true, len(r.b)
		return 0
	}
	r.i += n
	return v
}

// bytes reads a varint length and that many bytes; -1 is null (nil).
func (r *reader) bytes() []byte {
	l := r.varint()
	switch {
	case r.bad:
		return nil
	case l == -1:
		return nil
	case l < -1 || l > int64(r.left()):
		r.bad, r.i = true, len(r.b)
		return nil
	}
	v := r.b[r.i : r.i+int(l) : r.i+int(l)]
	r.i += int(l)
	return v
}

// Check decodes a batch from Scan's records without keeping them, and
// returns the error Decode would have returned for them.
func (b *Batch) Check() error {
	if !b.scanned {
		return nil // decoded by Decode or Scan
	}
	r := reader{b: b.body}
	for i := int32(0); i < b.n; i++ {
		if _, err := r.record(i); err != nil {
			return corrupt("batch at offset %d: %w", b.FirstOffset, err)
		}
	}
	if err := r.end(b.n); err != nil {
		return corrupt("batch at offset %d: %w", b.FirstOffset, err)
	}
	return nil
}

// Len is the batch's number of records: as its header gives it for a
// batch from Scan (at most the body's bytes), as decoded otherwise.
func (b *Batch) Len() int {
	if !b.scanned {
		return len(b.Records)
	}
	return int(b.n)
}

// AppendTo appends the records of b at offsets from on to dst as records
// of topic and partition, with their Kafka timestamps (CreateTime: the
// batch's first timestamp plus the record's delta; LogAppendTime: the
// batch's max timestamp; a negative one is the zero time; a legacy
// batch's records: their own, see Batch.Legacy), and returns
// dst. For a batch from Scan it decodes them on the way, and on error it
// returns Decode's error for them and dst with what it appended; the
// records' bytes alias the batch's (invariant 1).
func (b *Batch) AppendTo(dst []record.Record, topic string, partition int32, from int64) ([]record.Record, error) {
	if b.Legacy {
		return b.appendLegacy(dst, topic, partition, from), nil
	}
	base := millisTime(b.FirstTimestamp)
	if b.LogAppendTime {
		base = millisTime(b.MaxTimestamp)
	}
	if !b.scanned {
		for i := range b.Records {
			dst = b.appendRecord(dst, topic, partition, from, base, &b.Records[i])
		}
		return dst, nil
	}
	dst = slices.Grow(dst, int(b.n))
	r := reader{b: b.body}
	for i := int32(0); i < b.n; i++ {
		rec, err := r.record(i)
		if err != nil {
			return dst, corrupt("batch at offset %d: %w", b.FirstOffset, err)
		}
		dst = b.appendRecord(dst, topic, partition, from, base, &rec)
	}
	if err := r.end(b.n); err != nil {
		return dst, corrupt("batch at offset %d: %w", b.FirstOffset, err)
	}
	return dst, nil
}

// appendRecord appends rec, a record of b, unless its offset is below from.
func (b *Batch) appendRecord(dst []record.Record, topic string, partition int32, from int64, base time.Time, rec *Record) []record.Record {
	off := b.FirstOffset + int64(rec.OffsetDelta)
	if off < from {
		return dst
	}
	ts := base
	switch delta := rec.TimestampDelta; {
	case b.LogAppendTime:
	case b.FirstTimestamp >= 0 && delta >= -maxDelta && delta <= maxDelta && delta <= math.MaxInt64-b.FirstTimestamp:
		ts = time.UnixMilli(b.FirstTimestamp + delta) // the Add below, inlined: the same Time
	default:
		ts = base.Add(time.Duration(delta) * time.Millisecond)
	}
	// Field by field into the new slot: a composite literal would be built
	// on the stack first and then copied, twice the stores per record.
	n := len(dst)
	if n == cap(dst) {
		dst = slices.Grow(dst, 1)
	}
	dst = dst[:n+1]
	d := &dst[n]
	*d = record.Record{}
	d.Topic, d.Partition, d.Offset = topic, partition, off
	d.Key, d.Value, d.Headers = rec.Key, rec.Value, rec.Headers
	d.Timestamp = ts
	return dst
}

// maxDelta is the largest timestamp delta, in ms, that is a Duration.
const maxDelta = math.MaxInt64 / int64(time.Millisecond)

// millisTime is a batch timestamp: a negative one (none) is the zero time.
func millisTime(ms int64) time.Time {
	if ms < 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

// MaxDecompressed bounds a compressed batch's decompressed size: a batch
// claiming more is an error rather than an allocation of that size. (The
// broker's batch limit, message.max.bytes, is 1 MiB by default; this
// allows a compression ratio of 256 at that size.) The zstd decoder takes
// it at the first zstd batch decoded as the most it ever allocates; a
// later change is still enforced, but set it before any Decode.
var MaxDecompressed = 256 << 20

var errTooLarge = errors.New("decompressed batch exceeds MaxDecompressed")

var zstdDec = sync.OnceValue(func() *zstd.Decoder {
	d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(uint64(MaxDecompressed)))
	if err != nil {
		panic(err) // only on invalid options
	}
	return d
})

// xerialMagic opens Kafka's (xerial snappy-java) framed snappy stream.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

func (d *Decoder) decompress(codec int8, in []byte) ([]byte, error) {
	switch codec {
	case CodecGzip:
		d.in.Reset(in)
		if d.gz == nil {
			zr, err := gzip.NewReader(&d.in)
			if err != nil {
				return nil, err
			}
			d.gz = zr
		} else if err := d.gz.Reset(&d.in); err != nil {
			return nil, err
		}
		return d.readAll(d.gz)
	case CodecSnappy:
		if !bytes.HasPrefix(in, xerialMagic) {
			if dl, err := s2.DecodedLen(in); err != nil {
				return nil, err
			} else if dl > MaxDecompressed {
				return nil, errTooLarge
			}
			return s2.Decode(nil, in)
		}
		return unxerial(in)
	case CodecLZ4:
		d.in.Reset(in)
		return d.readAll(d.lz4(&d.in))
	case CodecZstd:
		// The decoder's own bound is MaxDecompressed as it was when the
		// decoder was made; a frame declaring its size is checked against
		// the current one before decoding, the result after.
		var h zstd.Header
		if h.Decode(in) == nil && h.HasFCS && h.FrameContentSize > uint64(MaxDecompressed) {
			return nil, errTooLarge
		}
		out, err := zstdDec().DecodeAll(in, nil)
		if errors.Is(err, zstd.ErrDecoderSizeExceeded) || len(out) > MaxDecompressed {
			return nil, errTooLarge
		}
		return out, err
	default:
		return nil, fmt.Errorf("unknown compression codec %d", codec)
	}
}

// lz4 is the Decoder's lz4 reader, reset to read r.
func (d *Decoder) lz4(r io.Reader) *lz4.Reader {
	if d.lz == nil {
		d.lz = lz4.NewReader(r)
	} else {
		d.lz.Reset(r)
	}
	return d.lz
}

// unxerial decompresses Kafka's (xerial snappy-java) framed snappy stream:
// magic, version (4), compatible version (4), then blocks of a big-endian
// int32 size and a snappy block. The blocks' decoded lengths are summed
// first, so that the output is allocated once, at its size.
func unxerial(in []byte) ([]byte, error) {
	if len(in) < 16 {
		return nil, errors.New("short xerial snappy header")
	}
	in = in[16:]
	total := 0
	for rest := in; len(rest) > 0; {
		if len(rest) < 4 {
			return nil, errors.New("short xerial snappy block size")
		}
		n := binary.BigEndian.Uint32(rest)
		rest = rest[4:]
		if uint64(n) > uint64(len(rest)) {
			return nil, errors.New("short xerial snappy block")
		}
		dl, err := s2.DecodedLen(rest[:n])
		if err != nil {
			return nil, err
		} else if dl > MaxDecompressed-total {
			return nil, errTooLarge
		}
		total += dl
		rest = rest[n:]
	}
	var out []byte
	if total > 0 {
		out = make([]byte, total)
	}
	for at := 0; len(in) > 0; {
		n := binary.BigEndian.Uint32(in)
		in = in[4:]
		dl, _ := s2.DecodedLen(in[:n])
		if _, err := s2.Decode(out[at:at+dl], in[:n]); err != nil {
			return nil, err
		}
		at += dl
		in = in[n:]
	}
	return out, nil
}

// readAll reads r to its end, at most MaxDecompressed bytes, into the
// Decoder's scratch, and returns a copy at its exact size: the records
// alias it (invariant 1), so it is the only allocation, where reading
// into a growing buffer would allocate about twice the size in all.
func (d *Decoder) readAll(r io.Reader) ([]byte, error) {
	buf := d.scratch[:0]
	for {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, max(len(buf), 64<<10))
		}
		room := buf[len(buf):min(cap(buf), MaxDecompressed+1)]
		n, err := r.Read(room)
		buf = buf[:len(buf)+n]
		if len(buf) > MaxDecompressed {
			err = errTooLarge
		}
		if err != nil {
			if cap(buf) <= maxScratch {
				d.scratch = buf[:0]
			} else {
				d.scratch = nil
			}
			if err == io.EOF {
				return bytes.Clone(buf), nil
			}
			return nil, err
		}
	}
}
