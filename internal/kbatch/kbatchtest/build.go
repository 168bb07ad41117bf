// Package kbatchtest builds Kafka v2 record batches and legacy message
// sets (magic 0 and 1) for tests, with kmsg for the encoding and
// franz-go's compressors, independently of kbatch's decoder.
package kbatchtest

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/klauspost/compress/s2"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Spec describes a batch.
type Spec struct {
	First         int64
	Attrs         int16                // attributes besides the codec
	Codec         kgo.CompressionCodec // the zero value: none
	Xerial        bool                 // snappy framed as Kafka's (xerial) stream instead
	ProducerID    int64
	ProducerEpoch int16
	Records       []kmsg.Record // Length is computed
}

// xerialMagic opens a xerial-framed snappy stream.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

// FirstTimestamp and MaxTimestamp are every built batch's timestamps (ms).
const (
	FirstTimestamp = 1_700_000_000_000
	MaxTimestamp   = 1_700_000_009_999
)

// Build encodes spec as one v2 batch with a correct CRC-32C.
func Build(t testing.TB, spec Spec) []byte {
	t.Helper()
	var raw []byte
	for _, r := range spec.Records {
		r.Length = 0
		body := r.AppendTo(nil)
		_, n := binary.Varint(body)
		r.Length = int32(len(body) - n)
		raw = r.AppendTo(raw)
	}
	raw, codec := compress(t, raw, spec.Codec, spec.Xerial)
	b := kmsg.RecordBatch{
		FirstOffset: spec.First, Magic: 2, Attributes: spec.Attrs | codec,
		LastOffsetDelta: int32(len(spec.Records) - 1), FirstTimestamp: FirstTimestamp, MaxTimestamp: MaxTimestamp,
		ProducerID: spec.ProducerID, ProducerEpoch: spec.ProducerEpoch, FirstSequence: -1,
		NumRecords: int32(len(spec.Records)), Records: raw,
	}
	b.Length = int32(len(b.AppendTo(nil)) - 12)
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[17:], crc32.Checksum(out[21:], crc32.MakeTable(crc32.Castagnoli)))
	return out
}

// compress compresses raw with codec (none: the zero value), or as Kafka's
// xerial-framed snappy stream, and returns it with its codec number.
func compress(t testing.TB, raw []byte, codec kgo.CompressionCodec, xerial bool) ([]byte, int16) {
	t.Helper()
	if xerial {
		framed := append([]byte(nil), xerialMagic...)
		framed = binary.BigEndian.AppendUint32(framed, 1)
		framed = binary.BigEndian.AppendUint32(framed, 1)
		for len(raw) > 0 {
			chunk := raw[:min(64, len(raw))]
			raw = raw[len(chunk):]
			blk := s2.EncodeSnappy(nil, chunk)
			framed = binary.BigEndian.AppendUint32(framed, uint32(len(blk)))
			framed = append(framed, blk...)
		}
		return framed, 2
	}
	if codec == (kgo.CompressionCodec{}) {
		return raw, 0
	}
	c, err := kgo.DefaultCompressor(codec)
	if err != nil {
		t.Fatal(err)
	}
	out, typ := c.Compress(new(bytes.Buffer), raw)
	return append([]byte(nil), out...), int16(typ)
}

// Message is a message of a legacy message set (magic 0 or 1). Offset is
// as written: absolute at the top level and in a magic-0 wrapper, relative
// to the set (0, 1, ...) in a magic-1 wrapper.
type Message struct {
	Offset     int64
	Timestamp  int64 // magic 1 only
	Attrs      int8  // LogAppendTime: 0x08 (magic 1)
	Key, Value []byte
}

// LegacySpec describes a legacy message set: without a codec its
// Messages, one after the other; with one, a wrapper message at Offset
// (Kafka: the last inner message's absolute offset) whose value is the
// Messages compressed.
type LegacySpec struct {
	Magic     int8
	Codec     kgo.CompressionCodec // gzip, snappy or lz4
	Xerial    bool                 // snappy framed as Kafka's (xerial) stream instead
	Offset    int64                // the wrapper's
	Timestamp int64                // the wrapper's (magic 1)
	Attrs     int8                 // the wrapper's, besides the codec
	// BadLZ4Checksum writes the lz4 frame's header checksum wrong, as
	// Kafka did for magic 0 (KAFKA-3160).
	BadLZ4Checksum bool
	Messages       []Message
}

// Legacy encodes spec with kmsg, with correct sizes and CRC-32s.
func Legacy(t testing.TB, spec LegacySpec) []byte {
	t.Helper()
	var raw []byte
	for _, m := range spec.Messages {
		raw = append(raw, message(spec.Magic, m.Offset, m.Attrs, m.Timestamp, m.Key, m.Value)...)
	}
	if spec.Codec == (kgo.CompressionCodec{}) && !spec.Xerial {
		return raw
	}
	value, codec := compress(t, raw, spec.Codec, spec.Xerial)
	if spec.BadLZ4Checksum {
		value[6] ^= 0xff // magic (4), FLG, BD, then HC: franz-go writes no content size
	}
	return message(spec.Magic, spec.Offset, spec.Attrs|int8(codec), spec.Timestamp, nil, value)
}

// message encodes one legacy message.
func message(magic int8, offset int64, attrs int8, ts int64, key, value []byte) []byte {
	var out []byte
	if magic == 0 {
		out = (&kmsg.MessageV0{Offset: offset, Magic: 0, Attributes: attrs, Key: key, Value: value}).AppendTo(nil)
	} else {
		out = (&kmsg.MessageV1{Offset: offset, Magic: magic, Attributes: attrs, Timestamp: ts, Key: key, Value: value}).AppendTo(nil)
	}
	binary.BigEndian.PutUint32(out[8:], uint32(len(out)-12))
	binary.BigEndian.PutUint32(out[12:], crc32.ChecksumIEEE(out[16:]))
	return out
}
