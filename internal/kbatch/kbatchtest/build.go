// Package kbatchtest builds Kafka v2 record batches for tests, with kmsg
// for the encoding and franz-go's compressors, independently of kbatch's
// decoder.
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
	codec := int16(0)
	if spec.Xerial {
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
		raw, codec = framed, 2
	} else if spec.Codec != (kgo.CompressionCodec{}) {
		c, err := kgo.DefaultCompressor(spec.Codec)
		if err != nil {
			t.Fatal(err)
		}
		out, typ := c.Compress(new(bytes.Buffer), raw)
		raw, codec = append([]byte(nil), out...), int16(typ)
	}
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
