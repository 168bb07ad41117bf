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
	"testing"
	"time"

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
	out = append(out, legacyMessage(off)...)
	out = append(out, build(t, kbatchtest.Spec{First: off + 1, Attrs: attrLogAppendTime, Records: testRecords(4, true)})...)
	return out
}

// legacyMessage is a magic-1 message set entry.
func legacyMessage(off int64) []byte {
	msg := []byte{0, 0, 0, 0, 1, 0} // crc, magic 1, attributes
	msg = binary.BigEndian.AppendUint64(msg, 0)
	msg = binary.BigEndian.AppendUint32(msg, 0xffffffff)
	msg = binary.BigEndian.AppendUint32(msg, 1)
	msg = append(msg, 'x')
	out := binary.BigEndian.AppendUint64(nil, uint64(off))
	out = binary.BigEndian.AppendUint32(out, uint32(len(msg)))
	return append(out, msg...)
}

// refBatch is a batch as kmsg decodes it.
type refBatch struct {
	hdr  kmsg.RecordBatch
	recs []kmsg.Record
}

// reference decodes raw with kmsg and kgo's decompressor, allocating
// freely, following the same rules (skip legacy magics; stop at a cut
// batch; a bad CRC or bad records is an error).
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
			g.Transactional != (w.Attributes&attrTransactional != 0) || g.Control != (w.Attributes&attrControl != 0) {
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
		if !g.Control && g.Records != nil {
			return fmt.Sprintf("batch %d: Scan decoded the records of a batch that is not a control one", i)
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
				if dec[i].LogAppendTime {
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
	if len(got) != len(codecs)+3 {
		t.Fatalf("%d batches, want %d (the legacy message skipped)", len(got), len(codecs)+3)
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
	if !last.LogAppendTime || !got[len(got)-2].Control || !got[len(got)-3].Transactional {
		t.Errorf("attributes lost: %+v", got[len(got)-3:])
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
