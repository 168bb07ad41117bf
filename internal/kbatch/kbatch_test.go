package kbatch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/signalbox/signalbox/internal/kbatch/kbatchtest"
	"github.com/signalbox/signalbox/record"
)

func testRecords(n int, withHeaders bool) []kmsg.Record {
	recs := make([]kmsg.Record, n)
	for i := range recs {
		r := kmsg.Record{TimestampDelta64: int64(i * 7), OffsetDelta: int32(i)}
		if i%3 != 0 {
			r.Key = []byte(fmt.Sprintf("key-%d", i%5))
		}
		if i%4 != 1 {
			r.Value = bytes.Repeat([]byte(fmt.Sprintf(`{"i":%d}`, i)), 1+i%3)
		}
		if i%5 == 0 {
			r.Value = []byte{} // empty, not null
		}
		if withHeaders && i%2 == 0 {
			r.Headers = []kmsg.Header{{Key: "h", Value: []byte("v")}, {Key: "", Value: nil}}
		}
		recs[i] = r
	}
	return recs
}

// build is kbatchtest.Build with kbatch's tests' producer.
func build(t testing.TB, spec kbatchtest.Spec) []byte {
	spec.ProducerID, spec.ProducerEpoch = 42, 3
	return kbatchtest.Build(t, spec)
}

var codecs = []struct {
	name   string
	codec  kgo.CompressionCodec
	xerial bool
}{
	{"none", kgo.CompressionCodec{}, false},
	{"gzip", kgo.GzipCompression(), false},
	{"snappy", kgo.SnappyCompression(), false},
	{"snappy-xerial", kgo.CompressionCodec{}, true},
	{"lz4", kgo.Lz4Compression(), false},
	{"zstd", kgo.ZstdCompression(), false},
}

// seedPartition is a partition's bytes: batches of every codec, a control
// batch, a transactional one, one with LogAppendTime and a legacy message.
func seedPartition(t testing.TB) []byte {
	var out []byte
	off := int64(100)
	for i, c := range codecs {
		recs := testRecords(20+i, i%2 == 0)
		out = append(out, build(t, kbatchtest.Spec{First: off, Codec: c.codec, Xerial: c.xerial, Records: recs})...)
		off += int64(len(recs))
	}
	out = append(out, build(t, kbatchtest.Spec{First: off, Attrs: attrTransactional, Records: testRecords(3, false)})...)
	off += 3
	ctl := []kmsg.Record{{Key: []byte{0, 0, 0, 0}, Value: []byte{0, 0, 0, 0, 0, 0}}}
	out = append(out, build(t, kbatchtest.Spec{First: off, Attrs: attrTransactional | attrControl, Records: ctl})...)
	off++
	for _, spec := range legacySets(off) {
		out = append(out, kbatchtest.Legacy(t, spec)...)
		off += int64(len(spec.Messages))
	}
	out = append(out, build(t, kbatchtest.Spec{First: off, Attrs: attrLogAppendTime, Records: testRecords(4, true)})...)
	return out
}

// legacyMessages are n messages of a legacy message set: offsets from
// first on, timestamps 1_600_000_000_000 + 10 × their offset, keys and
// values as testRecords' (null and empty ones among them).
func legacyMessages(first int64, n int) []kbatchtest.Message {
	var ms []kbatchtest.Message
	for i, r := range testRecords(n, false) {
		ms = append(ms, kbatchtest.Message{Offset: first + int64(i), Timestamp: 1_600_000_000_000 + 10*(first+int64(i)), Key: r.Key, Value: r.Value})
	}
	return ms
}

// legacyCodecs are the codecs of legacy message sets: gzip, snappy
// (franz-go's raw blocks, and Kafka's xerial stream) and lz4.
var legacyCodecs = codecs[1:5]

// legacySets is a legacy message set of every form from offset off on,
// one message per offset: uncompressed messages of magic 0 and 1, then
// wrappers of either magic for every codec (a magic-1 wrapper's inner
// offsets relative, a magic-0 one's absolute), and a magic-1 wrapper
// under LogAppendTime.
func legacySets(off int64) []kbatchtest.LegacySpec {
	specs := []kbatchtest.LegacySpec{
		{Magic: 0, Messages: legacyMessages(off, 2)},
		{Magic: 1, Messages: legacyMessages(off+2, 3)},
	}
	off += 5
	for _, magic := range []int8{0, 1} {
		for _, c := range legacyCodecs {
			ms := legacyMessages(off, 4)
			spec := kbatchtest.LegacySpec{Magic: magic, Codec: c.codec, Xerial: c.xerial, Offset: off + 3, Timestamp: ms[3].Timestamp, Messages: ms}
			if magic == 1 {
				for i := range ms {
					ms[i].Offset = int64(i)
				}
			}
			specs = append(specs, spec)
			off += 4
		}
	}
	ms := legacyMessages(0, 3)
	specs = append(specs, kbatchtest.LegacySpec{Magic: 1, Codec: kgo.GzipCompression(), Offset: off + 2, Timestamp: 1_700_000_000_000, Attrs: 0x08, Messages: ms})
	return specs
}

// refBatch is a batch as kmsg decodes it; a legacy one has its offsets,
// timestamps and attributes in hdr as Batch says.
type refBatch struct {
	hdr    kmsg.RecordBatch
	recs   []kmsg.Record
	legacy bool
}

// refMessage is a legacy message as kmsg decodes it.
type refMessage struct {
	offset, timestamp int64
	magic, attrs      int8
	key, value        []byte
}

// readMessage decodes whole, one legacy message, with kmsg: what kmsg
// encodes back must be whole (no byte left over, lengths that hold), and
// its CRC, magic and attributes must be right.
func readMessage(whole []byte) (m refMessage, err error) {
	if len(whole) < 17 || whole[16] > 1 {
		return m, errors.New("short message or magic")
	}
	var back []byte
	if whole[16] == 0 {
		var v kmsg.MessageV0
		err = v.ReadFrom(whole)
		m = refMessage{v.Offset, -1, v.Magic, v.Attributes, v.Key, v.Value}
		back = v.AppendTo(nil)
	} else {
		var v kmsg.MessageV1
		err = v.ReadFrom(whole)
		m = refMessage{v.Offset, v.Timestamp, v.Magic, v.Attributes, v.Key, v.Value}
		back = v.AppendTo(nil)
	}
	switch {
	case err != nil:
		return m, err
	case !bytes.Equal(back, whole) || int(binary.BigEndian.Uint32(whole[8:])) != len(whole)-12:
		return m, errors.New("message lengths")
	case binary.BigEndian.Uint32(whole[12:]) != crc32.ChecksumIEEE(whole[16:]):
		return m, errors.New("message crc")
	case m.attrs&^0x0f != 0 || (m.magic == 0 && m.attrs&0x08 != 0):
		return m, errors.New("message attributes")
	}
	return m, nil
}

// referenceLegacy decodes whole, one entry of a legacy message set, with
// kmsg and kgo's decompressor, by franz-go's rules (processV0OuterMessage
// and processV1OuterMessage: inner offsets absolute under magic 0,
// relative under magic 1 but for a wrapper at 0), and kbatch's checks:
// inner messages of the wrapper's magic, uncompressed, in offset order.
func referenceLegacy(whole []byte, dec kgo.Decompressor) (refBatch, error) {
	w, err := readMessage(whole)
	if err != nil {
		return refBatch{}, err
	}
	rb := refBatch{legacy: true, hdr: kmsg.RecordBatch{FirstOffset: w.offset, MaxTimestamp: w.timestamp, ProducerID: -1, ProducerEpoch: -1, Attributes: int16(w.attrs)}}
	codec := w.attrs & 0x07
	if codec == 0 {
		rb.recs = []kmsg.Record{{TimestampDelta64: w.timestamp, Key: w.key, Value: w.value}}
		return rb, nil
	}
	if codec > 3 {
		return rb, errors.New("legacy codec")
	}
	in, err := dec.Decompress(w.value, kgo.CompressionCodecType(codec))
	if err != nil {
		return rb, err
	}
	var inner []refMessage
	for len(in) > 0 {
		if len(in) < 12 || int64(len(in)) < 12+int64(binary.BigEndian.Uint32(in[8:])) {
			return rb, errors.New("inner message cut")
		}
		n := 12 + int(binary.BigEndian.Uint32(in[8:]))
		m, err := readMessage(in[:n])
		if err != nil {
			return rb, err
		}
		if m.magic != w.magic || m.attrs&0x07 != 0 {
			return rb, errors.New("inner magic or codec")
		}
		if w.attrs&0x08 != 0 {
			m.timestamp = w.timestamp
		}
		inner = append(inner, m)
		in = in[n:]
	}
	if len(inner) == 0 {
		return rb, nil
	}
	base, last := int64(0), inner[len(inner)-1].offset
	if w.magic == 1 && w.offset != 0 {
		if w.offset < last {
			return rb, errors.New("wrapper offset below the last inner one")
		}
		base = w.offset - last
	}
	rb.hdr.FirstOffset = inner[0].offset + base
	prev := int64(math.MinInt64)
	for _, m := range inner {
		abs := m.offset + base
		if abs <= prev || abs < 0 || abs-rb.hdr.FirstOffset > math.MaxInt32 {
			return rb, errors.New("inner offsets")
		}
		rb.recs = append(rb.recs, kmsg.Record{OffsetDelta: int32(abs - rb.hdr.FirstOffset), TimestampDelta64: m.timestamp, Key: m.key, Value: m.value})
		prev = abs
	}
	if max(prev, w.offset)-rb.hdr.FirstOffset > math.MaxInt32 {
		return rb, errors.New("wrapper offset")
	}
	rb.hdr.LastOffsetDelta = int32(max(prev, w.offset) - rb.hdr.FirstOffset)
	return rb, nil
}

// reference decodes raw with kmsg and kgo's decompressor, allocating
// freely, following the same rules (legacy message sets as
// referenceLegacy says; stop at a cut batch; a bad CRC or bad records is
// an error).
func reference(raw []byte) (out []refBatch, partial bool, err error) {
	dec := kgo.DefaultDecompressor()
	for len(raw) > 0 {
		if len(raw) < 17 {
			return out, true, nil
		}
		var b kmsg.RecordBatch
		length := int32(binary.BigEndian.Uint32(raw[8:]))
		if length < 5 {
			return out, false, errors.New("length")
		}
		if int64(len(raw)) < 12+int64(length) {
			return out, true, nil
		}
		whole := raw[:12+length]
		raw = raw[12+length:]
		if whole[16] < 2 {
			rb, err := referenceLegacy(whole, dec)
			if err != nil {
				return out, false, err
			}
			out = append(out, rb)
			continue
		}
		if whole[16] > 2 || len(whole) < headerLen {
			return out, false, errors.New("magic or header")
		}
		if err := b.ReadFrom(whole); err != nil {
			return out, false, err
		}
		if uint32(b.CRC) != crc32.Checksum(whole[21:], castagnoli) {
			return out, false, errors.New("crc")
		}
		body := b.Records
		if c := b.Attributes & attrCodec; c != 0 {
			if body, err = dec.Decompress(body, kgo.CompressionCodecType(c)); err != nil {
				return out, false, err
			}
		}
		rb := refBatch{hdr: b}
		for i := int32(0); i < b.NumRecords; i++ {
			l, n := binary.Varint(body)
			if n <= 0 || l < 0 || l > int64(len(body)-n) {
				return out, false, errors.New("record length")
			}
			var r kmsg.Record
			if err := r.ReadFrom(body[:n+int(l)]); err != nil {
				return out, false, err
			}
			rb.recs = append(rb.recs, r)
			body = body[n+int(l):]
		}
		if len(body) != 0 || b.NumRecords < 0 {
			return out, false, errors.New("trailing")
		}
		out = append(out, rb)
	}
	return out, false, nil
}

// same compares Decode's answer with the reference's; "" when they agree.
func same(got []Batch, gotPartial bool, gotErr error, want []refBatch, wantPartial bool, wantErr error) string {
	if (gotErr != nil) != (wantErr != nil) {
		return fmt.Sprintf("error %v, reference error %v", gotErr, wantErr)
	}
	if gotErr == nil && gotPartial != wantPartial {
		return fmt.Sprintf("partial %v, reference %v", gotPartial, wantPartial)
	}
	if gotErr != nil && !errors.Is(gotErr, ErrCorrupt) {
		return fmt.Sprintf("error %v does not wrap ErrCorrupt", gotErr)
	}
	if len(got) != len(want) {
		return fmt.Sprintf("%d batches, reference %d", len(got), len(want))
	}
	for i, g := range got {
		w := want[i].hdr
		if g.FirstOffset != w.FirstOffset || g.LastOffsetDelta != w.LastOffsetDelta || g.FirstTimestamp != w.FirstTimestamp ||
			g.MaxTimestamp != w.MaxTimestamp || g.ProducerID != w.ProducerID || g.ProducerEpoch != w.ProducerEpoch ||
			int16(g.Codec) != w.Attributes&attrCodec || g.LogAppendTime != (w.Attributes&attrLogAppendTime != 0) ||
			g.Transactional != (w.Attributes&attrTransactional != 0) || g.Control != (w.Attributes&attrControl != 0) ||
			g.Legacy != want[i].legacy {
			return fmt.Sprintf("batch %d: header %+v, reference %+v", i, g, w)
		}
		if len(g.Records) != len(want[i].recs) {
			return fmt.Sprintf("batch %d: %d records, reference %d", i, len(g.Records), len(want[i].recs))
		}
		for j, r := range g.Records {
			wr := want[i].recs[j]
			if r.OffsetDelta != wr.OffsetDelta || r.TimestampDelta != wr.TimestampDelta64 ||
				!sameBytes(r.Key, wr.Key) || !sameBytes(r.Value, wr.Value) || len(r.Headers) != len(wr.Headers) {
				return fmt.Sprintf("batch %d record %d: %+v, reference %+v", i, j, r, wr)
			}
			for k, h := range r.Headers {
				if h.Key != wr.Headers[k].Key || !sameBytes(h.Value, wr.Headers[k].Value) {
					return fmt.Sprintf("batch %d record %d header %d: %+v, reference %+v", i, j, k, h, wr.Headers[k])
				}
			}
		}
	}
	return ""
}

// sameBytes compares contents and nullness (nil is a null key or value).
func sameBytes(a, b []byte) bool { return bytes.Equal(a, b) && (a == nil) == (b == nil) }

func check(t *testing.T, d *Decoder, raw []byte) []Batch {
	t.Helper()
	got, gp, ge := d.Decode(raw)
	want, wp, we := reference(raw)
	if diff := same(got, gp, ge, want, wp, we); diff != "" {
		t.Fatal(diff)
	}
	if diff := sameScan(raw, got, gp, ge); diff != "" {
		t.Fatal(diff)
	}
	return got
}

// sameScan checks Scan, then AppendTo (every other batch: Check) on
// each batch in order, against Decode's answer dec, partial and err: the
// same batches and records, the same first error. "" when they agree.
func sameScan(raw []byte, dec []Batch, partial bool, err error) string {
	var d Decoder // its own: dec's records are in the caller's slabs
	got, gp, scanErr := d.Scan(raw)
	if len(got) < len(dec) || (err == nil && (len(got) != len(dec) || scanErr != nil || gp != partial)) {
		return fmt.Sprintf("Scan: %d batches, partial %v, err %v; Decode: %d, %v, %v", len(got), gp, scanErr, len(dec), partial, err)
	}
	const topic, partition = "t", 3
	var firstErr error
	for i := range got {
		g := &got[i]
		if !g.Control && !g.Legacy && g.Records != nil {
			return fmt.Sprintf("batch %d: Scan decoded the records of a batch that is neither a control nor a legacy one", i)
		}
		if i%2 == 1 {
			if e := g.Check(); e != nil {
				firstErr = e
				break
			}
			continue
		}
		from := g.FirstOffset + int64(g.LastOffsetDelta)/2 // half of them, in offset order
		recs, e := g.AppendTo(make([]record.Record, 1, 1+g.Len()), topic, partition, from)
		if e != nil {
			firstErr = e
			break
		}
		if i >= len(dec) {
			return fmt.Sprintf("batch %d: decoded by AppendTo, but not by Decode (error %v)", i, err)
		}
		var want []record.Record
		for _, r := range dec[i].Records {
			if off := dec[i].FirstOffset + int64(r.OffsetDelta); off >= from {
				ts := dec[i].FirstTimestamp + r.TimestampDelta
				if dec[i].LogAppendTime && !dec[i].Legacy { // a legacy record's own is its wrapper's then
					ts = dec[i].MaxTimestamp
				}
				want = append(want, record.Record{Topic: topic, Partition: partition, Offset: off, Key: r.Key, Value: r.Value, Headers: r.Headers,
					Timestamp: time.UnixMilli(ts)})
				if ts < 0 {
					want[len(want)-1].Timestamp = time.Time{}
				}
			}
		}
		if recs[0].Topic != "" || len(recs)-1 != len(want) {
			return fmt.Sprintf("batch %d: AppendTo gave %d records after the one there, want %d", i, len(recs)-1, len(want))
		}
		for j, r := range recs[1:] {
			w := want[j]
			if r.Topic != w.Topic || r.Partition != w.Partition || r.Offset != w.Offset || !sameBytes(r.Key, w.Key) ||
				!sameBytes(r.Value, w.Value) || !r.Timestamp.Equal(w.Timestamp) || r.Timestamp.IsZero() != w.Timestamp.IsZero() ||
				!slices.EqualFunc(r.Headers, w.Headers, func(a, b record.Header) bool { return a.Key == b.Key && sameBytes(a.Value, b.Value) }) {
				return fmt.Sprintf("batch %d record %d: %+v, want %+v", i, j, r, w)
			}
		}
	}
	if firstErr == nil {
		firstErr = scanErr
	}
	if (firstErr == nil) != (err == nil) || (err != nil && firstErr.Error() != err.Error()) {
		return fmt.Sprintf("Scan and AppendTo: error %v; Decode: %v", firstErr, err)
	}
	return ""
}

func TestDecodeAgreesWithKmsg(t *testing.T) {
	raw := seedPartition(t)
	var d Decoder
	got := check(t, &d, raw)
	// The legacy sets' uncompressed messages are a batch each.
	if want := len(codecs) + 3 + 2 + 3 + len(legacySets(0)) - 2; len(got) != want {
		t.Fatalf("%d batches, want %d", len(got), want)
	}
	for i, c := range codecs {
		want := int8(0)
		if c.codec != (kgo.CompressionCodec{}) || c.xerial {
			want = int8(map[string]int{"gzip": 1, "snappy": 2, "snappy-xerial": 2, "lz4": 3, "zstd": 4}[c.name])
		}
		if got[i].Codec != want {
			t.Errorf("%s: codec %d, want %d (the seed must really be compressed)", c.name, got[i].Codec, want)
		}
	}
	last := got[len(got)-1]
	if !last.LogAppendTime || last.Legacy || !got[len(codecs)+1].Control || !got[len(codecs)].Transactional {
		t.Errorf("attributes lost: %+v", got[len(codecs):len(codecs)+2])
	}
	for i, spec := range legacySets(0)[2:] { // the wrappers, after five uncompressed messages
		b := got[len(codecs)+2+5+i]
		if !b.Legacy || b.Codec == CodecNone || len(b.Records) != len(spec.Messages) || b.LogAppendTime != (spec.Attrs&0x08 != 0) {
			t.Errorf("legacy wrapper %d: %+v, want %d records compressed", i, b, len(spec.Messages))
		}
	}
}

func TestDecodeTruncatedTrailingBatch(t *testing.T) {
	raw := seedPartition(t)
	first := 12 + int(binary.BigEndian.Uint32(raw[8:]))
	var d Decoder
	for _, cut := range []int{1, 16, 17, first - 1, first + 5, len(raw) - 1} {
		got, partial, err := d.Decode(raw[:cut])
		if err != nil || !partial {
			t.Fatalf("cut at %d: partial %v, err %v; want partial", cut, partial, err)
		}
		if cut > first && len(got) == 0 {
			t.Fatalf("cut at %d: the complete first batch is lost", cut)
		}
		check(t, &d, raw[:cut])
	}
}

func TestDecodeBadCRC(t *testing.T) {
	raw := seedPartition(t)
	second := 12 + int(binary.BigEndian.Uint32(raw[8:]))
	raw[second+70] ^= 1 // inside the second batch's records
	var d Decoder
	got, _, err := d.Decode(raw)
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("err %v, want ErrCorrupt", err)
	}
	if len(got) != 1 {
		t.Fatalf("%d batches before the bad one, want 1", len(got))
	}
}

// A compressed batch larger than MaxDecompressed is an error, whatever its
// codec (zstd's included, whose decoder was made before the limit
// changed); the default is the documented 256 MiB.
func TestDecodeTooLarge(t *testing.T) {
	if MaxDecompressed != 256<<20 {
		t.Fatalf("MaxDecompressed %d, documented as 256 MiB", MaxDecompressed)
	}
	defer func(m int) { MaxDecompressed = m }(MaxDecompressed)
	for _, c := range codecs[1:] {
		raw := build(t, kbatchtest.Spec{Codec: c.codec, Xerial: c.xerial, Records: testRecords(200, false)})
		var d Decoder
		MaxDecompressed = 256 << 20
		if _, _, err := d.Decode(raw); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		MaxDecompressed = 1 << 10
		if _, _, err := d.Decode(raw); !errors.Is(err, ErrCorrupt) || !errors.Is(err, errTooLarge) {
			t.Errorf("%s: err %v, want ErrCorrupt wrapping errTooLarge", c.name, err)
		}
	}
}

func TestDecodeAllocations(t *testing.T) {
	raw := build(t, kbatchtest.Spec{First: 0, Records: testRecords(500, false)})
	var d Decoder
	d.Decode(raw) // grow the slabs
	if n := testing.AllocsPerRun(20, func() { d.Decode(raw) }); n > 0 {
		t.Fatalf("%v allocations per Decode of an uncompressed 500-record batch, want 0", n)
	}
}

func FuzzDecode(f *testing.F) {
	MaxDecompressed = 1 << 20 // before the zstd decoder is made; keeps the fuzzer's inputs cheap
	raw := seedPartition(f)
	f.Add(raw)
	for _, c := range codecs {
		f.Add(build(f, kbatchtest.Spec{First: 7, Codec: c.codec, Xerial: c.xerial, Records: testRecords(5, true)}))
	}
	f.Add(raw[:len(raw)/2])
	var d Decoder
	f.Fuzz(func(t *testing.T, raw []byte) {
		if _, _, err := d.Decode(raw); errors.Is(err, errTooLarge) {
			return // the reference has no such bound
		}
		check(t, &d, raw)
	})
}

func BenchmarkDecode(b *testing.B) {
	raw := build(b, kbatchtest.Spec{First: 0, Records: testRecords(1000, false)})
	var d Decoder
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		d.Decode(raw)
	}
}

// TestReleaseDropsReferences: after Release no slot of the Decoder's slabs
// points into decoded bytes, not even past a later, shorter decode's
// records, so a long-lived Decoder keeps no fetch response reachable.
func TestReleaseDropsReferences(t *testing.T) {
	raw := seedPartition(t)
	first := 12 + int(binary.BigEndian.Uint32(raw[8:]))
	var d Decoder
	if _, _, err := d.Decode(raw); err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.Decode(raw[:first]); err != nil { // fewer records than the slab holds
		t.Fatal(err)
	}
	d.Release()
	for i, r := range d.recs[:cap(d.recs)] {
		if r.Key != nil || r.Value != nil || r.Headers != nil {
			t.Fatalf("record slot %d still points into decoded bytes", i)
		}
	}
	for i, b := range d.batches[:cap(d.batches)] {
		if b.Records != nil {
			t.Fatalf("batch slot %d still points into the record slab", i)
		}
	}
	check(t, &d, raw) // and it decodes as before
}

// A compressed batch's decompression allocates its output once, at its
// size, whatever the codec: not a growing buffer (about twice the size in
// all), nor a decompressor per batch. Beyond that, the runs may allocate
// one block buffer of the lz4 reader's (franz-go writes 4 MiB blocks),
// which its sync.Pool misses when the goroutine moves to another P; the
// garbage collector is off while it counts, as it would empty that pool.
func TestDecompressAllocatesOutputOnce(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector drops pooled buffers at random")
	}
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	recs := testRecords(20000, false)
	size := 0
	for _, r := range recs {
		size += len(r.AppendTo(nil))
	}
	const runs, lz4Block = 20, 4 << 20
	for _, c := range codecs[1:] {
		raw := build(t, kbatchtest.Spec{Codec: c.codec, Xerial: c.xerial, Records: recs})
		var d Decoder
		got, _, err := d.Decode(raw) // warm: the decompressor, the scratch, the slabs
		if err != nil || len(got) != 1 || len(got[0].Records) != len(recs) {
			t.Fatalf("%s: %d batches, err %v", c.name, len(got), err)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range runs {
			if _, _, err := d.Decode(raw); err != nil {
				t.Fatal(err)
			}
		}
		runtime.ReadMemStats(&after)
		if all := after.TotalAlloc - before.TotalAlloc; float64(all) > runs*1.1*float64(size)+lz4Block {
			t.Errorf("%s: %d bytes allocated by %d Decodes of a batch of %d bytes decompressed, want at most 1.1 times that each and %d more",
				c.name, all, runs, size, lz4Block)
		}
	}
}

// The bytes a record aliases stay as they were after the Decoder decodes
// other batches of the same codec and is released (invariant 1): what the
// decompressors reuse (their readers, the scratch) is never handed out.
func TestDecodedBytesOutliveTheDecoder(t *testing.T) {
	for _, c := range codecs {
		var d Decoder
		var kept []Record // Scan's records, then Decode's, of the first batch
		var want [][]byte // their values as produced
		for i := range 3 {
			recs := testRecords(300, false)
			for j := range recs {
				if recs[j].Value != nil {
					recs[j].Value = fmt.Appendf(nil, "batch %d record %d %s", i, j, bytes.Repeat([]byte{'a' + byte(i)}, j%50))
				}
			}
			raw := build(t, kbatchtest.Spec{Codec: c.codec, Xerial: c.xerial, Records: recs})
			if i == 0 {
				got, _, err := d.Decode(raw)
				if err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
				kept = append(kept, got[0].Records...)
				for _, r := range recs {
					want = append(want, r.Value)
				}
			} else if _, _, err := d.Scan(raw); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			d.Release()
		}
		for j, r := range kept {
			if !sameBytes(r.Value, want[j]) {
				t.Fatalf("%s: record %d of the first batch reads %q after later batches, want %q", c.name, j, r.Value, want[j])
			}
		}
	}
}

// TestAppendToTimestamps: a record's CreateTime is exactly (==, location
// included) the batch's first timestamp plus its delta as time.Time.Add
// gives it, for deltas of either sign and at the ends of their range, and
// the zero time plus the delta for a batch without a first timestamp.
func TestAppendToTimestamps(t *testing.T) {
	check := func(first, delta int64) {
		t.Helper()
		b := Batch{FirstTimestamp: first, Records: []Record{{TimestampDelta: delta}}}
		got, err := b.AppendTo(nil, "t", 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		want := millisTime(first).Add(time.Duration(delta) * time.Millisecond)
		if got[0].Timestamp != want {
			t.Fatalf("first %d, delta %d: timestamp %#v, want %#v", first, delta, got[0].Timestamp, want)
		}
	}
	firsts := []int64{-1, 0, 1, 999, 1_764_479_604_123, math.MaxInt64 - 5, math.MaxInt64}
	deltas := []int64{0, 1, -1, 999, -1001, maxDelta, -maxDelta, maxDelta + 1, -maxDelta - 1, math.MaxInt64, math.MinInt64}
	for _, first := range firsts {
		for _, delta := range deltas {
			check(first, delta)
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		check(rng.Int64N(1<<50)-1<<40, rng.Int64N(1<<20)-1<<19)
	}
}

// TestDecodeLegacy: the records of legacy message sets of every form
// (legacySets) come out of AppendTo with Kafka's offsets and timestamps:
// one offset after the other, whatever the wrapper's magic (relative
// inner offsets under magic 1, absolute under magic 0); no timestamp
// under magic 0, each message's own under magic 1, and the wrapper's
// under LogAppendTime.
func TestDecodeLegacy(t *testing.T) {
	const first = 40
	specs := legacySets(first)
	var raw []byte
	n := 0
	for _, spec := range specs {
		raw = append(raw, kbatchtest.Legacy(t, spec)...)
		n += len(spec.Messages)
	}
	for _, scan := range []bool{false, true} {
		var d Decoder
		decode := d.Decode
		if scan {
			decode = d.Scan
		}
		batches, partial, err := decode(raw)
		if err != nil || partial {
			t.Fatalf("scan %v: partial %v, err %v", scan, partial, err)
		}
		var recs []record.Record
		for i := range batches {
			if !batches[i].Legacy || batches[i].ProducerID != -1 {
				t.Fatalf("batch %d: %+v, want a legacy one", i, batches[i])
			}
			if recs, err = batches[i].AppendTo(recs, "old", 2, first+1); err != nil {
				t.Fatal(err)
			}
		}
		if len(recs) != n-1 {
			t.Fatalf("scan %v: %d records from offset %d, want %d", scan, len(recs), first+1, n-1)
		}
		at := 0 // index of the spec of recs[i]
		left := len(specs[0].Messages) - 1
		for i, r := range recs {
			for left == 0 {
				at++
				left = len(specs[at].Messages)
			}
			left--
			spec := specs[at]
			off := int64(first + 1 + i)
			want := time.UnixMilli(1_600_000_000_000 + 10*off)
			switch {
			case spec.Magic == 0:
				want = time.Time{}
			case spec.Attrs&0x08 != 0:
				want = time.UnixMilli(spec.Timestamp)
			}
			if r.Offset != off || r.Topic != "old" || r.Partition != 2 || !r.Timestamp.Equal(want) || r.Timestamp.IsZero() != want.IsZero() {
				t.Fatalf("scan %v: record %d (set %d, magic %d, codec %v): offset %d, time %v; want %d, %v",
					scan, i, at, spec.Magic, spec.Codec, r.Offset, r.Timestamp, off, want)
			}
			m := spec.Messages[len(spec.Messages)-1-left]
			if !sameBytes(r.Key, m.Key) || !sameBytes(r.Value, m.Value) {
				t.Fatalf("scan %v: record %d: key %q value %q, want %q %q", scan, i, r.Key, r.Value, m.Key, m.Value)
			}
		}
	}
}

// TestDecodeLegacyBadLZ4Checksum: a magic-0 lz4 wrapper whose frame header
// checksum is wrong, as Kafka wrote them (KAFKA-3160), decodes; under
// magic 1 the same frame is an error.
func TestDecodeLegacyBadLZ4Checksum(t *testing.T) {
	for _, magic := range []int8{0, 1} {
		ms := legacyMessages(7, 3)
		if magic == 1 {
			for i := range ms {
				ms[i].Offset = int64(i)
			}
		}
		raw := kbatchtest.Legacy(t, kbatchtest.LegacySpec{Magic: magic, Codec: kgo.Lz4Compression(), Offset: 9, BadLZ4Checksum: true, Messages: ms})
		var d Decoder
		got, _, err := d.Decode(raw)
		if magic == 1 {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("magic 1 with a bad lz4 header checksum: %v, want ErrCorrupt", err)
			}
			continue
		}
		if err != nil || len(got) != 1 || len(got[0].Records) != 3 || got[0].FirstOffset != 7 || got[0].LastOffset() != 9 ||
			!sameBytes(got[0].Records[2].Value, ms[2].Value) {
			t.Fatalf("magic 0 with Kafka's lz4 header checksum: %+v, %v", got, err)
		}
	}
}

// TestXXH32LZ4Header: the header checksum decompressLegacy writes is the
// one lz4 writes, with and without the frame's optional content size.
func TestXXH32LZ4Header(t *testing.T) {
	for _, opts := range [][]lz4.Option{nil, {lz4.SizeOption(12345)}, {lz4.ChecksumOption(false), lz4.BlockSizeOption(lz4.Block64Kb)}} {
		var buf bytes.Buffer
		w := lz4.NewWriter(&buf)
		if err := w.Apply(opts...); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(bytes.Repeat([]byte("x"), 12345)); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		frame := buf.Bytes()
		n, ok := lz4Header(frame)
		if !ok {
			t.Fatalf("options %v: no lz4 header in % x", opts, frame[:min(20, len(frame))])
		}
		if got := byte(xxh32(frame[4:n-1]) >> 8); got != frame[n-1] {
			t.Fatalf("options %v: header checksum %#x, lz4 wrote %#x", opts, got, frame[n-1])
		}
	}
}

// TestDecodeLegacyUndecodable: a legacy form kbatch cannot decode is an
// error that names it, with the complete batches before it; nothing is
// skipped.
func TestDecodeLegacyUndecodable(t *testing.T) {
	rel := func(ms []kbatchtest.Message) []kbatchtest.Message {
		for i := range ms {
			ms[i].Offset = int64(i)
		}
		return ms
	}
	badCRC := kbatchtest.Legacy(t, kbatchtest.LegacySpec{Magic: 1, Messages: legacyMessages(3, 1)})
	badCRC[len(badCRC)-1] ^= 1
	for _, c := range []struct {
		name string
		raw  []byte
		want string
	}{
		{"zstd wrapper", kbatchtest.Legacy(t, kbatchtest.LegacySpec{Magic: 1, Codec: kgo.ZstdCompression(), Offset: 4, Messages: rel(legacyMessages(3, 2))}),
			"magic-1 message set at offset 4: compression codec 4"},
		{"nested wrapper", kbatchtest.Legacy(t, kbatchtest.LegacySpec{Magic: 0, Codec: kgo.GzipCompression(), Offset: 4, Messages: []kbatchtest.Message{
			{Offset: 3, Attrs: 1, Value: []byte("gzip")}}}), "inner message 0 is compressed too"},
		{"wrapper below its inner offsets", kbatchtest.Legacy(t, kbatchtest.LegacySpec{Magic: 1, Codec: kgo.Lz4Compression(), Offset: 1,
			Messages: rel(legacyMessages(0, 3))}), "the last inner offset 2 is above the wrapper's"},
		{"inner offsets out of order", kbatchtest.Legacy(t, kbatchtest.LegacySpec{Magic: 0, Codec: kgo.GzipCompression(), Offset: 5,
			Messages: []kbatchtest.Message{{Offset: 5}, {Offset: 4}}}), "inner offset 4 after 5"},
		{"bad CRC", badCRC, "message at offset 3: CRC mismatch"},
	} {
		good := kbatchtest.Legacy(t, kbatchtest.LegacySpec{Magic: 1, Messages: legacyMessages(0, 3)})
		var d Decoder
		got, _, err := d.Decode(append(good, c.raw...))
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), c.want) || len(got) != 3 {
			t.Errorf("%s: %d batches, err %v; want the 3 before it and an error saying %q", c.name, len(got), err, c.want)
		}
	}
}
