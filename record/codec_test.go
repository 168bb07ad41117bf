package record

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// randomRecord fills every field, including the nil/empty distinctions and
// the extremes of the integer fields.
func randomRecord(rng *rand.Rand) Record {
	bs := func() []byte {
		switch rng.IntN(4) {
		case 0:
			return nil
		case 1:
			return []byte{}
		}
		b := make([]byte, rng.IntN(40))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		return b
	}
	ints := []int64{0, 1, -1, math.MaxInt64, math.MinInt64, rng.Int64(), -rng.Int64()}
	r := Record{
		Topic:     string(bs()),
		Partition: int32(ints[rng.IntN(len(ints))]),
		Offset:    ints[rng.IntN(len(ints))],
		Key:       bs(),
		Value:     bs(),
		EventTime: ints[rng.IntN(len(ints))],
		OrderKey:  string(bs()),
		Timeless:  rng.IntN(2) == 0,
		Late:      rng.IntN(2) == 0,
		LateBy:    ints[rng.IntN(len(ints))],
	}
	for range rng.IntN(4) {
		r.Headers = append(r.Headers, Header{Key: string(bs()), Value: bs()})
	}
	switch rng.IntN(3) {
	case 0: // zero time
	case 1:
		r.Timestamp = time.UnixMilli(rng.Int64N(1 << 45))
	default:
		r.Timestamp = time.Unix(rng.Int64()-math.MaxInt64/2, rng.Int64N(1e9))
	}
	return r
}

// sameRecord compares all fields; the timestamp by instant.
func sameRecord(a, b Record) bool {
	if !a.Timestamp.Equal(b.Timestamp) {
		return false
	}
	a.Timestamp, b.Timestamp = time.Time{}, time.Time{}
	return reflect.DeepEqual(a, b)
}

func TestCodecRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var buf []byte
	for i := range 5000 {
		r := randomRecord(rng)
		buf = AppendBinary(buf[:0], &r)
		var got Record
		if err := DecodeBinary(buf, &got); err != nil {
			t.Fatalf("#%d: decode: %v\n%+v", i, err, r)
		}
		if !sameRecord(r, got) {
			t.Fatalf("#%d: round trip\n got %+v\nwant %+v", i, got, r)
		}
		// nil vs empty survives (DeepEqual already checks; be explicit).
		if (r.Key == nil) != (got.Key == nil) || (r.Value == nil) != (got.Value == nil) {
			t.Fatalf("#%d: nil-ness lost", i)
		}
	}
}

func TestCodecAppendKeepsPrefix(t *testing.T) {
	r := Record{Topic: "t", Offset: 7, Value: []byte("v")}
	enc := AppendBinary([]byte("prefix"), &r)
	if !bytes.HasPrefix(enc, []byte("prefix")) {
		t.Fatalf("prefix overwritten: %q", enc)
	}
	var got Record
	if err := DecodeBinary(enc[len("prefix"):], &got); err != nil || !sameRecord(r, got) {
		t.Fatalf("decode after prefix: %v %+v", err, got)
	}
}

// Every strict prefix and every one-byte extension of a valid encoding is
// rejected with ErrMalformed.
func TestCodecRejectsTruncatedAndTrailing(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 200 {
		r := randomRecord(rng)
		enc := AppendBinary(nil, &r)
		for n := range len(enc) {
			var got Record
			if err := DecodeBinary(enc[:n], &got); !errors.Is(err, ErrMalformed) {
				t.Fatalf("prefix %d/%d: err = %v", n, len(enc), err)
			}
		}
		var got Record
		if err := DecodeBinary(append(enc, 0), &got); !errors.Is(err, ErrMalformed) {
			t.Fatalf("trailing byte: err = %v", err)
		}
	}
}

func TestCodecRejectsBadHeaderFields(t *testing.T) {
	for name, b := range map[string][]byte{
		"empty":         nil,
		"version":       {2, 0},
		"unknown flags": {codecVersion, 0x80},
		"huge length":   {codecVersion, 0, 0xff, 0xff, 0xff, 0xff, 0x0f},
		// topic "", partition 2^40 (zigzag varint) does not fit int32
		"partition": {codecVersion, 0, 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x40},
	} {
		var r Record
		if err := DecodeBinary(b, &r); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: err = %v, want ErrMalformed", name, err)
		}
	}
}

// fuzzDecoder checks a decoder on arbitrary bytes: it never panics, its
// errors wrap ErrMalformed, and whatever it accepts re-encodes to bytes that
// decode to the same value.
func fuzzDecoder[T any](f *testing.F, seeds [][]byte, decode func([]byte, *T) error, encode func(*T) []byte, same func(a, b T) bool) {
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var v T
		if err := decode(b, &v); err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error does not wrap ErrMalformed: %v", err)
			}
			return
		}
		var again T
		if err := decode(encode(&v), &again); err != nil || !same(v, again) {
			t.Fatalf("unstable round trip: %v\n%+v\n%+v", err, v, again)
		}
	})
}

// FuzzDecodeBinary: the record decoder never panics on garbage.
//
//	go test -run=^$ -fuzz=FuzzDecodeBinary ./record/
func FuzzDecodeBinary(f *testing.F) {
	rng := rand.New(rand.NewPCG(5, 6))
	seeds := [][]byte{{}, {codecVersion, flagsKnown}}
	for range 16 {
		r := randomRecord(rng)
		seeds = append(seeds, AppendBinary(nil, &r))
	}
	fuzzDecoder(f, seeds, DecodeBinary, func(r *Record) []byte { return AppendBinary(nil, r) }, sameRecord)
}

func randomCheckpoint(rng *rand.Rand) Checkpoint {
	cp := Checkpoint{Watermark: rng.Int64() - math.MaxInt64/2}
	for i := range rng.IntN(5) {
		cp.Partitions = append(cp.Partitions, PartitionCheckpoint{
			TopicPartition: TopicPartition{Topic: string(rune('a' + i)), Partition: rng.Int32() - math.MaxInt32/2},
			Low:            rng.Int64N(1 << 40),
			Position:       rng.Int64N(1 << 40),
			End:            rng.Int64N(1<<40) - 1,
			Replaying:      rng.IntN(2) == 0,
			Watermark:      cp.Watermark + rng.Int64N(1<<40),
		})
	}
	return cp
}

func TestCheckpointCodec(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for i := range 1000 {
		cp := randomCheckpoint(rng)
		enc := AppendCheckpoint(nil, &cp)
		var got Checkpoint
		if err := DecodeCheckpoint(enc, &got); err != nil || !reflect.DeepEqual(cp, got) {
			t.Fatalf("#%d: err %v\n got %+v\nwant %+v", i, err, got, cp)
		}
		for n := range len(enc) {
			if err := DecodeCheckpoint(enc[:n], &got); !errors.Is(err, ErrMalformed) {
				t.Fatalf("#%d: prefix %d/%d: err = %v", i, n, len(enc), err)
			}
		}
		if err := DecodeCheckpoint(append(enc, 0), &got); !errors.Is(err, ErrMalformed) {
			t.Fatalf("#%d: trailing byte: err = %v", i, err)
		}
	}
}

// TestCheckpointCodecWatermarks: distinct per-partition watermarks, including
// the extremes, survive the round trip, and an encoding of the earlier format
// (no per-partition watermark) is refused rather than misread.
func TestCheckpointCodecWatermarks(t *testing.T) {
	cp := Checkpoint{Watermark: math.MinInt64, Partitions: []PartitionCheckpoint{
		{TopicPartition: TopicPartition{Topic: "t", Partition: 0}, Low: 1, Position: 2, End: 3, Watermark: math.MinInt64},
		{TopicPartition: TopicPartition{Topic: "t", Partition: 1}, Low: 4, Position: 5, End: 6, Replaying: true, Watermark: 42},
		{TopicPartition: TopicPartition{Topic: "u", Partition: 0}, Low: 7, Position: 8, End: -1, Watermark: math.MaxInt64},
	}}
	enc := AppendCheckpoint(nil, &cp)
	var got Checkpoint
	if err := DecodeCheckpoint(enc, &got); err != nil || !reflect.DeepEqual(cp, got) {
		t.Fatalf("err %v\n got %+v\nwant %+v", err, got, cp)
	}
	// Version 1: watermark, count, then topic, partition, low, position,
	// end, replaying per partition.
	v1 := []byte{1, 0, 1, 1, 't', 0, 2, 4, 6, 0}
	if err := DecodeCheckpoint(v1, &got); !errors.Is(err, ErrMalformed) {
		t.Fatalf("version 1 encoding: err = %v", err)
	}
}

// FuzzDecodeCheckpoint: the checkpoint decoder never panics on garbage.
//
//	go test -run=^$ -fuzz=FuzzDecodeCheckpoint ./record/
func FuzzDecodeCheckpoint(f *testing.F) {
	rng := rand.New(rand.NewPCG(9, 10))
	var seeds [][]byte
	for range 8 {
		cp := randomCheckpoint(rng)
		seeds = append(seeds, AppendCheckpoint(nil, &cp))
	}
	fuzzDecoder(f, seeds, DecodeCheckpoint, func(cp *Checkpoint) []byte { return AppendCheckpoint(nil, cp) },
		func(a, b Checkpoint) bool { return reflect.DeepEqual(a, b) })
}
