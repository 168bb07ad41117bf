package kbatch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"math/bits"

	"github.com/signalbox/signalbox/record"
)

// Legacy message sets (magic 0 and 1), the formats before v2 record
// batches (Kafka 0.11), which a log written by an old broker or producer
// still holds and a broker serves as they are. An entry of a message set
// is one message: offset (8), size (4), CRC-32 (IEEE, of what follows it)
// (4), magic (1), attributes (1), timestamp (8, magic 1 only), key and
// value (each an int32 length, -1 for null, and its bytes). A compressed
// message (a wrapper) holds in its value the compressed message set of its
// inner messages, uncompressed messages of its own magic. Kafka's rules,
// as franz-go and Kafka's own consumer follow them:
//
//   - Offsets: a magic-0 wrapper's inner messages carry their absolute
//     offsets; a magic-1 wrapper's carry offsets relative to the set, and
//     the wrapper carries the absolute offset of the last inner message, so
//     an inner message's offset is (wrapper - last inner) + inner. A
//     magic-1 wrapper at offset 0 (some old librdkafka versions wrote it)
//     has its inner offsets taken as they are.
//   - Timestamps: magic 0 has none (a record's Kafka timestamp is the zero
//     time); a magic-1 message has its own (CreateTime, or LogAppendTime
//     when attribute bit 3 is set: then an inner message's time is its
//     wrapper's, which the broker set on append; -1 is none).
//   - Codecs: gzip, snappy (xerial-framed or raw) and lz4; zstd came with
//     v2 batches. Magic-0 lz4 frames were written with a wrong header
//     checksum (KAFKA-3160), which Kafka's consumer ignores for magic 0, as
//     does decompressLegacy.

// Legacy message attribute bits.
const (
	legacyCodec         = 0x07
	legacyLogAppendTime = 0x08 // magic 1 only
)

// message is one legacy message as parseMessage reads it.
type message struct {
	offset     int64
	magic      byte
	attrs      byte
	timestamp  int64 // -1 (none) for magic 0
	key, value []byte
}

// parseMessage reads m, exactly one whole legacy message (its offset and
// size fields included), checking its size and CRC.
func parseMessage(m []byte) (msg message, err error) {
	if len(m) < 17 {
		return msg, errors.New("message shorter than its header")
	}
	msg.offset = int64(binary.BigEndian.Uint64(m))
	if size := int64(binary.BigEndian.Uint32(m[8:])); size != int64(len(m)-12) {
		return msg, fmt.Errorf("message size %d for %d bytes", size, len(m)-12)
	}
	if crc := binary.BigEndian.Uint32(m[12:]); crc != crc32.ChecksumIEEE(m[16:]) {
		return msg, errors.New("CRC mismatch")
	}
	msg.magic, msg.timestamp = m[16], -1
	rest := m[17:]
	if msg.magic > 1 {
		return msg, fmt.Errorf("magic %d", msg.magic)
	}
	if len(rest) < 1 {
		return msg, errors.New("no attributes")
	}
	msg.attrs, rest = rest[0], rest[1:]
	if unknown := msg.attrs &^ (legacyCodec | legacyLogAppendTime); unknown != 0 || (msg.magic == 0 && msg.attrs&legacyLogAppendTime != 0) {
		return msg, fmt.Errorf("unknown attributes %#x", msg.attrs)
	}
	if msg.magic == 1 {
		if len(rest) < 8 {
			return msg, errors.New("no timestamp")
		}
		msg.timestamp, rest = int64(binary.BigEndian.Uint64(rest)), rest[8:]
	}
	if msg.key, rest, err = legacyBytes(rest); err != nil {
		return msg, fmt.Errorf("key: %w", err)
	}
	if msg.value, rest, err = legacyBytes(rest); err != nil {
		return msg, fmt.Errorf("value: %w", err)
	}
	if len(rest) != 0 {
		return msg, fmt.Errorf("%d bytes after the value", len(rest))
	}
	return msg, nil
}

// legacyBytes reads an int32 length (-1: null) and that many bytes.
func legacyBytes(b []byte) (v, rest []byte, err error) {
	if len(b) < 4 {
		return nil, nil, errors.New("no length")
	}
	n := int32(binary.BigEndian.Uint32(b))
	b = b[4:]
	switch {
	case n == -1:
		return nil, b, nil
	case n < -1 || int64(n) > int64(len(b)):
		return nil, nil, fmt.Errorf("length %d for %d bytes", n, len(b))
	}
	return b[:n:n], b[n:], nil
}

// legacy decodes whole, one whole entry of a legacy message set, as a
// Batch (Legacy set) whose records it appends to recs.
func (d *Decoder) legacy(whole []byte, recs []Record) (Batch, []Record, error) {
	msg, err := parseMessage(whole)
	if err != nil {
		return Batch{}, recs, fmt.Errorf("message at offset %d: %w", int64(binary.BigEndian.Uint64(whole)), err)
	}
	b := Batch{
		FirstOffset: msg.offset, MaxTimestamp: msg.timestamp, ProducerID: -1, ProducerEpoch: -1,
		Codec: int8(msg.attrs & legacyCodec), LogAppendTime: msg.attrs&legacyLogAppendTime != 0, Legacy: true,
	}
	if b.Codec == CodecNone {
		return b, append(recs, Record{TimestampDelta: msg.timestamp, Key: msg.key, Value: msg.value}), nil
	}
	fail := func(format string, a ...any) (Batch, []Record, error) {
		return Batch{}, recs, fmt.Errorf("magic-%d message set at offset %d: "+format, append([]any{msg.magic, msg.offset}, a...)...)
	}
	if b.Codec > CodecLZ4 {
		return fail("compression codec %d (a message set has gzip, snappy or lz4)", b.Codec)
	}
	inner, err := d.decompressLegacy(b.Codec, msg.magic, msg.value)
	if err != nil {
		return fail("%w", err)
	}
	// The inner messages, their offsets as written kept aside.
	from := len(recs)
	d.offsets = d.offsets[:0]
	for at := 0; len(inner) > 0; at++ {
		if len(inner) < 12 {
			return fail("inner message %d is cut short", at)
		}
		n := 12 + int64(binary.BigEndian.Uint32(inner[8:]))
		if n > int64(len(inner)) {
			return fail("inner message %d is cut short", at)
		}
		m, err := parseMessage(inner[:n])
		switch {
		case err != nil:
			return fail("inner message %d: %w", at, err)
		case m.magic != msg.magic:
			return fail("inner message %d has magic %d", at, m.magic)
		case m.attrs&legacyCodec != CodecNone:
			return fail("inner message %d is compressed too", at)
		}
		inner = inner[n:]
		ts := m.timestamp
		if b.LogAppendTime {
			ts = msg.timestamp
		}
		recs = append(recs, Record{TimestampDelta: ts, Key: m.key, Value: m.value})
		d.offsets = append(d.offsets, m.offset)
	}
	offs := d.offsets
	if len(offs) == 0 {
		return b, recs, nil // nothing left of the set (compacted): skipped past
	}
	base, last := int64(0), offs[len(offs)-1]
	if msg.magic == 1 && msg.offset != 0 {
		if msg.offset < last {
			return fail("the last inner offset %d is above the wrapper's", last)
		}
		base = msg.offset - last
	}
	b.FirstOffset = offs[0] + base
	prev := int64(math.MinInt64)
	for i, o := range offs {
		abs := o + base
		if abs <= prev || abs < 0 {
			return fail("inner offset %d after %d", abs, prev)
		}
		if abs-b.FirstOffset > math.MaxInt32 {
			return fail("inner offset %d is more than 2^31 after the first, %d", abs, b.FirstOffset)
		}
		recs[from+i].OffsetDelta = int32(abs - b.FirstOffset)
		prev = abs
	}
	// The set ends at the wrapper's offset (the last inner one but for a
	// magic-1 wrapper at 0, or a magic-0 one that says less).
	if max(prev, msg.offset)-b.FirstOffset > math.MaxInt32 {
		return fail("wrapper offset %d is more than 2^31 after the first inner one, %d", msg.offset, b.FirstOffset)
	}
	b.LastOffsetDelta = int32(max(prev, msg.offset) - b.FirstOffset)
	return b, recs, nil
}

// decompressLegacy is decompress for a legacy wrapper's value: a magic-0
// lz4 frame's header checksum is replaced by the right one first, as
// Kafka's consumer ignores it for magic 0 (KAFKA-3160: Kafka computed it
// over the frame's magic number too). The wrapper's CRC covers the frame.
func (d *Decoder) decompressLegacy(codec int8, magic byte, in []byte) ([]byte, error) {
	if codec != CodecLZ4 || magic != 0 {
		return d.decompress(codec, in)
	}
	hdr, ok := lz4Header(in)
	if !ok {
		return d.decompress(codec, in) // let the reader say what is wrong
	}
	fixed := append([]byte(nil), in[:hdr]...)
	fixed[hdr-1] = byte(xxh32(fixed[4:hdr-1]) >> 8)
	d.in.Reset(in[hdr:])
	return d.readAll(d.lz4(io.MultiReader(bytes.NewReader(fixed), &d.in)))
}

// lz4Header is the length of the lz4 frame header that opens in (magic
// number, descriptor, header checksum); ok is false when in does not open
// with one.
func lz4Header(in []byte) (n int, ok bool) {
	if len(in) < 7 || binary.LittleEndian.Uint32(in) != 0x184D2204 {
		return 0, false
	}
	n = 7 // magic (4), FLG, BD, HC
	if in[4]&0x08 != 0 {
		n += 8 // content size
	}
	if in[4]&0x01 != 0 {
		n += 4 // dictionary id
	}
	return n, len(in) >= n
}

// xxh32 is XXH32 with seed 0 of b, shorter than 16 bytes (an lz4 frame
// descriptor is at most 14).
func xxh32(b []byte) uint32 {
	const p1, p2, p3, p4, p5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
	h := uint32(p5) + uint32(len(b))
	for ; len(b) >= 4; b = b[4:] {
		h += binary.LittleEndian.Uint32(b) * p3
		h = bits.RotateLeft32(h, 17) * p4
	}
	for _, c := range b {
		h += uint32(c) * p5
		h = bits.RotateLeft32(h, 11) * p1
	}
	h ^= h >> 15
	h *= p2
	h ^= h >> 13
	h *= p3
	h ^= h >> 16
	return h
}

// appendLegacy is AppendTo for a legacy batch: each record's Kafka
// timestamp is its own (Record.TimestampDelta; negative: the zero time),
// its wrapper's already under LogAppendTime.
func (b *Batch) appendLegacy(dst []record.Record, topic string, partition int32, from int64) []record.Record {
	own := Batch{FirstOffset: b.FirstOffset, LogAppendTime: true} // appendRecord takes base as the time
	for i := range b.Records {
		dst = own.appendRecord(dst, topic, partition, from, millisTime(b.Records[i].TimestampDelta), &b.Records[i])
	}
	return dst
}
