package kbatch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sync"

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

// Batch is one complete v2 record batch.
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
	Records         []Record
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
}

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
			continue // legacy message set (invariant 5)
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
			if body, err = decompress(b.Codec, body); err != nil {
				err = corrupt("batch at offset %d: %w", b.FirstOffset, err)
				break
			}
		}
		from := len(d.recs)
		if d.recs, err = appendRecords(d.recs, body, n); err != nil {
			d.recsUsed = max(d.recsUsed, len(d.recs))
			d.recs = d.recs[:from]
			err = corrupt("batch at offset %d: %w", b.FirstOffset, err)
			break
		}
		d.batches = append(d.batches, b)
		spans = append(spans, span{from, len(d.recs)})
	}
	for i := range d.batches {
		d.batches[i].Records = d.recs[spans[i].from:spans[i].to:spans[i].to]
	}
	d.batchesUsed, d.recsUsed = max(d.batchesUsed, len(d.batches)), max(d.recsUsed, len(d.recs))
	return d.batches, partial, err
}

// appendRecords decodes n records from body, which they must fill exactly.
func appendRecords(dst []Record, body []byte, n int32) ([]Record, error) {
	if n < 0 || int64(n) > int64(len(body)) { // a record takes at least one byte... in fact seven
		return dst, fmt.Errorf("record count %d for %d bytes", n, len(body))
	}
	r := reader{b: body}
	for i := int32(0); i < n; i++ {
		length := r.varint()
		if r.bad || length < 0 || length > int64(len(r.b)) {
			return dst, fmt.Errorf("record %d: bad length", i)
		}
		rr := reader{b: r.b[:length]}
		r.b = r.b[length:]
		var rec Record
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
			if nh > int64(len(rr.b)) { // a header takes at least two bytes
				return dst, fmt.Errorf("record %d: %d headers", i, nh)
			}
			rec.Headers = make([]record.Header, nh)
			for j := range rec.Headers {
				rec.Headers[j] = record.Header{Key: string(rr.bytes()), Value: rr.bytes()}
			}
		} else if nh < -1 {
			rr.bad = true
		}
		if rr.bad || len(rr.b) != 0 {
			return dst, fmt.Errorf("record %d: malformed", i)
		}
		dst = append(dst, rec)
	}
	if len(r.b) != 0 {
		return dst, fmt.Errorf("%d bytes after %d records", len(r.b), n)
	}
	return dst, nil
}

// reader reads Kafka's zig-zag varints and varint-prefixed bytes; any
// shortfall sets bad, after which every read returns zero values.
type reader struct {
	b   []byte
	bad bool
}

func (r *reader) skip(n int) {
	if len(r.b) < n {
		r.bad, r.b = true, nil
		return
	}
	r.b = r.b[n:]
}

func (r *reader) varint() int64 {
	if len(r.b) > 0 && r.b[0] < 0x80 { // one byte, most of a record's varints
		u := r.b[0]
		r.b = r.b[1:]
		return int64(u>>1) ^ -int64(u&1)
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.bad, r.b = true, nil
		return 0
	}
	r.b = r.b[n:]
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
	case l < -1 || l > int64(len(r.b)):
		r.bad, r.b = true, nil
		return nil
	}
	v := r.b[:l:l]
	r.b = r.b[l:]
	return v
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

func decompress(codec int8, in []byte) ([]byte, error) {
	switch codec {
	case CodecGzip:
		zr, err := gzip.NewReader(bytes.NewReader(in))
		if err != nil {
			return nil, err
		}
		return readAllLimited(zr)
	case CodecSnappy:
		if !bytes.HasPrefix(in, xerialMagic) {
			if dl, err := s2.DecodedLen(in); err != nil {
				return nil, err
			} else if dl > MaxDecompressed {
				return nil, errTooLarge
			}
			return s2.Decode(nil, in)
		}
		// xerial: magic, version (4), compatible version (4), then
		// blocks of a big-endian int32 size and a snappy block.
		if len(in) < 16 {
			return nil, errors.New("short xerial snappy header")
		}
		in = in[16:]
		var out []byte
		for len(in) > 0 {
			if len(in) < 4 {
				return nil, errors.New("short xerial snappy block size")
			}
			n := binary.BigEndian.Uint32(in)
			in = in[4:]
			if uint64(n) > uint64(len(in)) {
				return nil, errors.New("short xerial snappy block")
			}
			dl, err := s2.DecodedLen(in[:n])
			if err != nil {
				return nil, err
			} else if dl > MaxDecompressed-len(out) {
				return nil, errTooLarge
			}
			start := len(out)
			out = append(out, make([]byte, dl)...)
			if _, err := s2.Decode(out[start:], in[:n]); err != nil {
				return nil, err
			}
			in = in[n:]
		}
		return out, nil
	case CodecLZ4:
		return readAllLimited(lz4.NewReader(bytes.NewReader(in)))
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

func readAllLimited(r io.Reader) ([]byte, error) {
	out, err := io.ReadAll(io.LimitReader(r, int64(MaxDecompressed)+1))
	if err == nil && len(out) > MaxDecompressed {
		return nil, errTooLarge
	}
	return out, err
}
