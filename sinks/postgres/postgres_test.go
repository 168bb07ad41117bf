package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/signalbox/signalbox/internal/pgtest"

	"github.com/jackc/pgx/v5"

	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/retry"
	"github.com/signalbox/signalbox/sinks/postgres"
	"github.com/signalbox/signalbox/sinks/sinktest"
)

var ctx = context.Background()

// dsn returns the test server's DSN (pgtest.DSN).
func dsn(t *testing.T) string { return pgtest.DSN(t) }

// fixture is one isolated table set on the real server.
type fixture struct {
	dsn, table string
	admin      *pgx.Conn
}

func newFixture(t *testing.T) *fixture {
	d := dsn(t)
	c, err := pgx.Connect(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{dsn: d, table: fmt.Sprintf("sbt_%d", rand.Uint64()%1e12), admin: c}
	t.Cleanup(func() {
		for _, suffix := range []string{"", "_checkpoint", "_watermark", "_owner", "_broken"} {
			_, _ = c.Exec(ctx, "DROP TABLE IF EXISTS "+f.table+suffix)
		}
		_ = c.Close(ctx)
	})
	return f
}

func (f *fixture) sink(extra ...func(*postgres.Config)) *postgres.Sink {
	cfg := postgres.Config{DSN: f.dsn, Table: f.table}
	for _, e := range extra {
		e(&cfg)
	}
	return postgres.New(cfg)
}

// values returns the value column's JSON of every row, or its value_bytes.
func (f *fixture) values(t *testing.T) [][]byte {
	var vs [][]byte
	for _, r := range f.rows(t) {
		vs = append(vs, r.value)
	}
	return vs
}

// row is one stored row's offset, key and value, as a reader decodes them:
// key_bytes, else key; value_bytes, else value's JSON (json holds it).
type row struct {
	offset     int64
	key, value []byte
	json       bool
}

func (f *fixture) rows(t *testing.T) []row {
	rows, err := f.admin.Query(ctx, `SELECT "offset", key, key_bytes, value::text, value_bytes FROM `+f.table+" ORDER BY seq")
	if err != nil {
		return nil // not created yet
	}
	rs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
		var o row
		var key, value *string
		var keyBytes, valueBytes []byte
		err := r.Scan(&o.offset, &key, &keyBytes, &value, &valueBytes)
		switch {
		case keyBytes != nil:
			o.key = keyBytes
		case key != nil:
			o.key = []byte(*key)
		}
		switch {
		case valueBytes != nil:
			o.value = valueBytes
		case value != nil:
			o.value, o.json = []byte(*value), true
		}
		return o, err
	})
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// stored decodes the rows as sinktest.Stored: a value stored as a JSON
// string is its text.
func (f *fixture) stored(t *testing.T) []sinktest.Stored {
	var out []sinktest.Stored
	for _, r := range f.rows(t) {
		if r.json && len(r.value) > 0 && r.value[0] == '"' {
			var s string
			if err := json.Unmarshal(r.value, &s); err != nil {
				t.Fatal(err)
			}
			r.value = []byte(s)
		}
		out = append(out, sinktest.Stored{Offset: r.offset, Key: r.key, Value: r.value})
	}
	return out
}

// lock holds an exclusive lock on table until the returned func is called.
func (f *fixture) lock(t *testing.T, table string) func() {
	tx, err := f.admin.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "LOCK TABLE "+table+" IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	return func() { _ = tx.Rollback(ctx) }
}

// poison gives r a value that is valid JSON but that jsonb refuses: a
// number out of numeric's range (22003) or a lone surrogate escape
// (22P02 "invalid input syntax for type json"), alternately.
func poison(r *record.Record) bool {
	bad := `,"x":1e1000000}`
	if r.Offset%2 == 1 {
		bad = `,"x":"\ud800"}`
	}
	r.Value = append(r.Value[:len(r.Value)-1:len(r.Value)-1], bad...)
	return true
}

func TestConformance(t *testing.T) { conformance(t, postgres.DefaultMaxBatch, "jsonb") }

// TestConformanceSmallBatches makes Write commit (and find rejections)
// every few rows (Config.MaxBatch).
func TestConformanceSmallBatches(t *testing.T) { conformance(t, 8, "jsonb") }

// TestConformanceText stores values as text (Config.ValueType).
func TestConformanceText(t *testing.T) { conformance(t, postgres.DefaultMaxBatch, "text") }

func conformance(t *testing.T, maxBatch int, valueType string) {
	sinktest.Run(t, func(t *testing.T) sinktest.Target {
		f := newFixture(t)
		// A short lock_timeout turns a held table lock into a transient error.
		sink := func() sinktest.Sink {
			return f.sink(func(c *postgres.Config) {
				c.DSN = pgtest.WithParam(t, c.DSN, "lock_timeout", "100")
				c.MaxBatch, c.ValueType = maxBatch, valueType
			})
		}
		poison := poison
		if valueType == "text" {
			poison = nil // text stores any value
		}
		return sinktest.Target{
			Sink:          sink(),
			Restart:       sink,
			Read:          f.values,
			ReadRecords:   f.stored,
			TotalOrder:    true,
			CloseDiscards: true,
			Poison:        poison,
			Fail: func(t *testing.T, retryable bool) (func(), bool) {
				if !retryable { // the table disappears: undefined_table is fatal
					if _, err := f.admin.Exec(ctx, "ALTER TABLE "+f.table+" RENAME TO "+f.table+"_broken"); err != nil {
						t.Fatal(err)
					}
					return func() {
						_, _ = f.admin.Exec(ctx, "ALTER TABLE "+f.table+"_broken RENAME TO "+f.table)
					}, true
				}
				return f.lock(t, f.table), true
			},
			// The checkpoint table is locked: the checkpoint part times out.
			FailCheckpoint: func(t *testing.T) func() { return f.lock(t, f.table+"_checkpoint") },
			StoresOnWrite:  maxBatch < 100, // Write commits once MaxBatch rows wait; the cases buffer fewer
		}
	})
}

func TestCheckpointAtomicAndRestartExactlyOnce(t *testing.T) {
	f := newFixture(t)
	all := sinktest.Records(0, 100, 6)
	all[7].Late, all[7].LateBy = true, 40
	all[8].Timeless = true
	all[9].Key = []byte("nul\x00and\xffbad")
	all[9].Headers = []record.Header{{Key: record.ReasonHeader, Value: []byte("late")}}
	all[10].Value = []byte("not json \x00")
	all[11].Value = []byte(`{"seq":11,"key":"k5","s":"\u0000"}`)

	s := f.sink()
	if err := s.Open(ctx); err != nil {
		t.Fatal(err)
	}
	if cp, err := s.Restore(ctx); err != nil || cp != nil {
		t.Fatalf("Restore on empty tables: %v %v", cp, err)
	}
	cp1 := record.Checkpoint{Watermark: 1_800_000_000_049, Partitions: []record.PartitionCheckpoint{
		{TopicPartition: record.TopicPartition{Topic: "in", Partition: 0}, Low: 48, Position: 51, End: 99, Replaying: true, Watermark: 1_800_000_000_063},
		{TopicPartition: record.TopicPartition{Topic: "in", Partition: 1}, Low: 49, Position: 50, End: 100, Watermark: 1_800_000_000_049},
	}}
	if err := s.Write(ctx, all[:50]); err != nil {
		t.Fatal(err)
	}
	if err := s.FlushCheckpoint(ctx, cp1); err != nil {
		t.Fatal(err)
	}
	// Records 50..79 are committed by a plain Flush, 80..99 never: crash.
	if err := s.Write(ctx, all[50:80]); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	_ = s.Write(ctx, all[80:])
	// (no Close: the process dies)

	s2 := f.sink()
	if err := s2.Open(ctx); err != nil {
		t.Fatal(err)
	}
	cp, err := s2.Restore(ctx)
	if err != nil || cp == nil || !reflect.DeepEqual(*cp, cp1) {
		t.Fatalf("Restore = %+v, %v; want %+v", cp, err, cp1)
	}
	// The engine re-reads from Low and re-emits from 48 on.
	if err := s2.Write(ctx, all[48:]); err != nil {
		t.Fatal(err)
	}
	cp2 := record.Checkpoint{Watermark: 1_800_000_000_090, Partitions: []record.PartitionCheckpoint{
		{TopicPartition: record.TopicPartition{Topic: "in", Partition: 0}, Low: 99, Position: 99, End: 99, Watermark: 1_800_000_000_095},
	}}
	if err := s2.FlushCheckpoint(ctx, cp2); err != nil {
		t.Fatal(err)
	}
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
	vs := f.values(t)
	if len(vs) != 100 {
		t.Fatalf("%d rows, want each of 100 records once", len(vs))
	}
	for i, v := range vs {
		var p sinktest.Payload
		if json.Unmarshal(v, &p) == nil && p.Seq != i {
			t.Fatalf("row %d holds seq %d", i, p.Seq)
		}
	}
	var key *string
	var keyBytes []byte
	var reason string
	var late bool
	var lateBy *int64
	var evt *int64
	if err := f.admin.QueryRow(ctx, "SELECT key, key_bytes, reason FROM "+f.table+` WHERE "offset" = 9`).Scan(&key, &keyBytes, &reason); err != nil || key != nil || string(keyBytes) != "nul\x00and\xffbad" || reason != "late" {
		t.Fatalf("row 9: %v %q %q %v", key, keyBytes, reason, err)
	}
	if rs := f.rows(t); string(rs[10].value) != "not json \x00" || string(rs[11].value) != string(all[11].Value) {
		t.Fatalf("rows 10 and 11 hold %q and %q, want the bytes of their values", rs[10].value, rs[11].value)
	}
	if err := f.admin.QueryRow(ctx, "SELECT late, late_by_ms FROM "+f.table+` WHERE "offset" = 7`).Scan(&late, &lateBy); err != nil || !late || *lateBy != 40 {
		t.Fatalf("row 7: %v %v %v", late, lateBy, err)
	}
	if err := f.admin.QueryRow(ctx, "SELECT event_time_ms FROM "+f.table+` WHERE "offset" = 8`).Scan(&evt); err != nil || evt != nil {
		t.Fatalf("timeless row 8: %v %v", evt, err)
	}
	cp, _ = postgres.New(postgres.Config{DSN: f.dsn, Table: f.table}).Restore(ctx)
	_ = cp // not open: must error, not panic
	s3 := f.sink()
	_ = s3.Open(ctx)
	// The second checkpoint replaces the rows of its partitions and keeps
	// the others' (in a group, another member's); the restored watermark is
	// the lowest partition's.
	want2 := record.Checkpoint{Watermark: cp1.Partitions[1].Watermark, Partitions: []record.PartitionCheckpoint{cp2.Partitions[0], cp1.Partitions[1]}}
	if cp, err := s3.Restore(ctx); err != nil || cp == nil || !reflect.DeepEqual(*cp, want2) {
		t.Fatalf("second checkpoint: Restore = %+v, %v; want %+v", cp, err, want2)
	}
	if err := s3.Purge(ctx); err != nil {
		t.Fatal(err)
	}
	if cp, err := s3.Restore(ctx); err != nil || cp != nil || len(f.values(t)) != 0 {
		t.Fatalf("after Purge: %v %v %d rows", cp, err, len(f.values(t)))
	}
	_ = s3.Close()
}

// TestCheckpointTableFromEarlierBuild: Open adds the watermark column to a
// checkpoint table created without it; its old rows restore with the
// checkpoint watermark, and new checkpoints store per-partition watermarks.
func TestCheckpointTableFromEarlierBuild(t *testing.T) {
	f := newFixture(t)
	for _, q := range []string{
		`CREATE TABLE ` + f.table + `_checkpoint (name text NOT NULL, topic text NOT NULL, partition integer NOT NULL,
			low bigint NOT NULL, position bigint NOT NULL, end_offset bigint NOT NULL, replaying boolean NOT NULL,
			PRIMARY KEY (name, topic, partition))`,
		`CREATE TABLE ` + f.table + `_watermark (name text PRIMARY KEY, watermark bigint NOT NULL,
			updated_at timestamptz NOT NULL DEFAULT now())`,
		`INSERT INTO ` + f.table + `_checkpoint VALUES ('default', 'in', 0, 3, 4, 9, false), ('default', 'in', 1, 5, 6, 9, true)`,
		`INSERT INTO ` + f.table + `_watermark (name, watermark) VALUES ('default', 77)`,
	} {
		if _, err := f.admin.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.sink(func(c *postgres.Config) { c.NoCreate = true }).Open(ctx); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := f.admin.QueryRow(ctx, `SELECT count(*) FROM information_schema.columns
		WHERE table_name = $1 AND column_name = 'watermark'`, f.table+"_checkpoint").Scan(&n); err != nil || n != 0 {
		t.Fatalf("NoCreate added the column: %d %v", n, err)
	}

	s := f.sink()
	if err := s.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	want := record.Checkpoint{Watermark: 77, Partitions: []record.PartitionCheckpoint{
		{TopicPartition: record.TopicPartition{Topic: "in", Partition: 0}, Low: 3, Position: 4, End: 9, Watermark: 77},
		{TopicPartition: record.TopicPartition{Topic: "in", Partition: 1}, Low: 5, Position: 6, End: 9, Replaying: true, Watermark: 77},
	}}
	if cp, err := s.Restore(ctx); err != nil || cp == nil || !reflect.DeepEqual(*cp, want) {
		t.Fatalf("Restore of old rows = %+v, %v; want %+v", cp, err, want)
	}
	want.Watermark = math.MinInt64
	want.Partitions[0].Watermark, want.Partitions[1].Watermark = 1_800_000_000_000, math.MinInt64
	if err := s.FlushCheckpoint(ctx, want); err != nil {
		t.Fatal(err)
	}
	s2 := f.sink()
	if err := s2.Open(ctx); err != nil { // the column exists: a no-op
		t.Fatal(err)
	}
	defer s2.Close()
	if cp, err := s2.Restore(ctx); err != nil || cp == nil || !reflect.DeepEqual(*cp, want) {
		t.Fatalf("Restore = %+v, %v; want %+v", cp, err, want)
	}
}

// TestFailedCheckpointCommitsNothing: when the checkpoint part of the
// transaction fails, the rows of that transaction are not committed either.
func TestFailedCheckpointCommitsNothing(t *testing.T) {
	f := newFixture(t)
	s := f.sink()
	if err := s.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := f.admin.Exec(ctx, "ALTER TABLE "+f.table+"_watermark ADD CONSTRAINT no_neg CHECK (watermark >= 0)"); err != nil {
		t.Fatal(err)
	}
	_ = s.Write(ctx, sinktest.Records(0, 10, 2))
	if err := s.FlushCheckpoint(ctx, record.Checkpoint{Watermark: -1}); err == nil {
		t.Fatal("FlushCheckpoint succeeded despite the failing checkpoint row")
	}
	if n := len(f.values(t)); n != 0 {
		t.Fatalf("%d rows committed without their checkpoint", n)
	}
}

func TestTextValueType(t *testing.T) {
	f := newFixture(t)
	s := f.sink(func(c *postgres.Config) { c.ValueType = "text" })
	_ = s.Open(ctx)
	recs := sinktest.Records(0, 3, 1)
	recs[1].Value = []byte("raw\x00text")
	_ = s.Write(ctx, recs)
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	vs := f.values(t)
	if len(vs) != 3 || string(vs[1]) != `"raw\u0000text"` || string(vs[0]) != string(recs[0].Value) {
		t.Fatalf("values %q", vs)
	}
}

// TestGroupMembersKeepEachOthersCheckpoints: in a consumer group every
// member stores the checkpoint of the partitions it owns under the same
// name. One member's checkpoint must not erase the other's rows, and the
// restored watermark is never above a partition's own, whoever wrote last.
func TestGroupMembersKeepEachOthersCheckpoints(t *testing.T) {
	f := newFixture(t)
	a, b := f.sink(), f.sink()
	for _, s := range []*postgres.Sink{a, b} {
		if err := s.Open(ctx); err != nil {
			t.Fatal(err)
		}
		defer s.Close()
	}
	p0 := record.PartitionCheckpoint{TopicPartition: record.TopicPartition{Topic: "in", Partition: 0}, Low: 10, Position: 12, End: 20, Watermark: 1_000}
	p1 := record.PartitionCheckpoint{TopicPartition: record.TopicPartition{Topic: "in", Partition: 1}, Low: 30, Position: 31, End: 40, Watermark: 5_000}
	if err := a.FlushCheckpoint(ctx, record.Checkpoint{Watermark: 1_000, Partitions: []record.PartitionCheckpoint{p0}}); err != nil {
		t.Fatal(err)
	}
	if err := b.FlushCheckpoint(ctx, record.Checkpoint{Watermark: 5_000, Partitions: []record.PartitionCheckpoint{p1}}); err != nil {
		t.Fatal(err)
	}
	s := f.sink()
	if err := s.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	want := record.Checkpoint{Watermark: 1_000, Partitions: []record.PartitionCheckpoint{p0, p1}}
	if cp, err := s.Restore(ctx); err != nil || cp == nil || !reflect.DeepEqual(*cp, want) {
		t.Fatalf("Restore = %+v, %v; want %+v", cp, err, want)
	}
}

// TestDataErrorOutsideTheRowsIsNotSwallowed: a data error (class 22) that
// no single row causes — here the checkpoint's own row, a topic name with
// a NUL byte — fails FlushCheckpoint: the transaction was rolled back, so
// nothing may be acknowledged, and no row is stored.
func TestDataErrorOutsideTheRowsIsNotSwallowed(t *testing.T) {
	f := newFixture(t)
	s := f.sink()
	if err := s.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Write(ctx, sinktest.Records(0, 5, 1)); err != nil {
		t.Fatal(err)
	}
	cp := record.Checkpoint{Partitions: []record.PartitionCheckpoint{{TopicPartition: record.TopicPartition{Topic: "in\x00"}, Low: 5, Position: 5}}}
	if err := s.FlushCheckpoint(ctx, cp); err == nil {
		t.Fatal("FlushCheckpoint acknowledged a rolled-back transaction")
	}
	if n := len(f.values(t)); n != 0 {
		t.Fatalf("%d rows stored by a failed checkpoint", n)
	}
}

// TestDataTableFromEarlierBuild: Open adds key_bytes and value_bytes to a
// data table created without them; old rows keep their values, and a
// binary key and value written now are stored as bytes.
func TestDataTableFromEarlierBuild(t *testing.T) {
	f := newFixture(t)
	for _, q := range []string{
		`CREATE TABLE ` + f.table + ` (seq bigserial PRIMARY KEY, topic text NOT NULL, partition integer NOT NULL,
			"offset" bigint NOT NULL, key text, event_time timestamptz, event_time_ms bigint, value jsonb,
			late boolean NOT NULL, late_by_ms bigint, reason text, UNIQUE (topic, partition, "offset"))`,
		`INSERT INTO ` + f.table + ` (topic, partition, "offset", key, value, late) VALUES ('in', 0, 999, 'old', '"v"', false)`,
	} {
		if _, err := f.admin.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	s := f.sink()
	if err := s.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	recs := sinktest.BinaryRecords()[128:130]
	if err := s.Write(ctx, recs); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	got := f.stored(t)
	if len(got) != 3 || string(got[0].Key) != "old" || string(got[0].Value) != "v" {
		t.Fatalf("rows %+v", got)
	}
	for i, r := range recs {
		if g := got[i+1]; g.Offset != r.Offset || string(g.Key) != string(r.Key) || string(g.Value) != string(r.Value) {
			t.Fatalf("row %d: %+v, want key %q value %q", i+1, g, r.Key, r.Value)
		}
	}
}

// rowsOf is the data table's offsets of partition p, in order.
func (f *fixture) rowsOf(t *testing.T, p int32) []int64 {
	rows, err := f.admin.Query(ctx, `SELECT "offset" FROM `+f.table+` WHERE partition = $1 ORDER BY "offset"`, p)
	if err != nil {
		t.Fatal(err)
	}
	offs, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		t.Fatal(err)
	}
	return offs
}

// wantRows fails unless partition p has n rows.
func (f *fixture) wantRows(t *testing.T, p int32, n int, what string) {
	t.Helper()
	if got := f.rowsOf(t, p); len(got) != n {
		t.Fatalf("%s: offsets %v stored, want %d rows", what, got, n)
	}
}

func claim(t *testing.T, s *postgres.Sink, tps ...record.TopicPartition) {
	t.Helper()
	if err := s.Claim(ctx, nil, tps); err != nil {
		t.Fatal(err)
	}
}

func tp(p int32) record.TopicPartition { return record.TopicPartition{Topic: "in", Partition: p} }

func recordsOf(p int32, from, n int) []record.Record {
	rs := make([]record.Record, n)
	for i := range rs {
		rs[i] = record.Record{Topic: "in", Partition: p, Offset: int64(from + i), Key: []byte("k"), Value: []byte(`{"i":1}`), EventTime: 1_000}
	}
	return rs
}

func cpOf(ps ...int32) record.Checkpoint {
	cp := record.Checkpoint{Watermark: 1_000}
	for _, p := range ps {
		cp.Partitions = append(cp.Partitions, record.PartitionCheckpoint{TopicPartition: tp(p), Low: 5, Position: 5, End: 9, Watermark: 1_000})
	}
	return cp
}

func openSinks(t *testing.T, ss ...*postgres.Sink) {
	for _, s := range ss {
		if err := s.Open(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
	}
}

func wantFenced(t *testing.T, err error, want ...record.TopicPartition) {
	t.Helper()
	fe := retry.AsFenced(err)
	if fe == nil || !reflect.DeepEqual(fe.Partitions, want) {
		t.Fatalf("FlushCheckpoint = %v, want fenced %v", err, want)
	}
}

// TestStaleOwnerIsFenced (invariant 10): once b claimed partition 1, a's
// checkpoint of it is refused with its rows, a's other partition commits,
// and a's later rows of partition 1 are dropped until it claims it again.
func TestStaleOwnerIsFenced(t *testing.T) {
	f := newFixture(t)
	a, b := f.sink(), f.sink()
	openSinks(t, a, b)
	claim(t, a, tp(0), tp(1))
	claim(t, b, tp(1))
	_ = a.Write(ctx, append(recordsOf(0, 0, 5), recordsOf(1, 0, 5)...))
	wantFenced(t, a.FlushCheckpoint(ctx, cpOf(0, 1)), tp(1))
	f.wantRows(t, 0, 5, "partition 0 (still a's)")
	f.wantRows(t, 1, 0, "partition 1 (b's)")
	// b never fails on a's rows; a stays fenced out of partition 1.
	_ = b.Write(ctx, recordsOf(1, 0, 3))
	if err := b.FlushCheckpoint(ctx, cpOf(1)); err != nil {
		t.Fatal(err)
	}
	_ = a.Write(ctx, recordsOf(1, 3, 2))
	wantFenced(t, a.FlushCheckpoint(ctx, cpOf(0, 1)), tp(1))
	f.wantRows(t, 1, 3, "partition 1 (b's rows only)")
	// Claimed again, partition 1 is a's, and b is the stale one.
	claim(t, a, tp(1))
	_ = a.Write(ctx, recordsOf(1, 3, 2))
	if err := a.FlushCheckpoint(ctx, cpOf(1)); err != nil {
		t.Fatal(err)
	}
	wantFenced(t, b.FlushCheckpoint(ctx, cpOf(1)), tp(1))
	f.wantRows(t, 1, 5, "partition 1")
}

// TestStaleWriterHeldByALockIsFenced: a's transaction waits on a lock of
// the data table while b claims one of its partitions; when the lock
// lifts, a's transaction is rolled back (nothing of partition 1, no
// unique violation for anyone) and the rest committed.
func TestStaleWriterHeldByALockIsFenced(t *testing.T) {
	f := newFixture(t)
	a, b := f.sink(), f.sink()
	openSinks(t, a, b)
	claim(t, a, tp(0), tp(1))
	_ = a.Write(ctx, recordsOf(1, 0, 2))
	if err := a.FlushCheckpoint(ctx, cpOf(0, 1)); err != nil { // both rows exist
		t.Fatal(err)
	}
	tx, err := f.admin.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `LOCK TABLE `+f.table+` IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	_ = a.Write(ctx, append(recordsOf(0, 0, 5), recordsOf(1, 2, 3)...))
	done := make(chan error, 1)
	go func() { done <- a.FlushCheckpoint(ctx, cpOf(0, 1)) }()
	waiter, err := pgx.Connect(ctx, f.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer waiter.Close(ctx)
	for deadline := time.Now().Add(30 * time.Second); ; {
		var n int
		if err := waiter.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE NOT granted AND relation = $1::regclass`, f.table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a's transaction never waited for the lock")
		}
		time.Sleep(10 * time.Millisecond)
	}
	claim(t, b, tp(1)) // not held up by the lock
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	wantFenced(t, <-done, tp(1))
	f.wantRows(t, 1, 2, "partition 1 (a's rows from before b's claim)")
	f.wantRows(t, 0, 5, "partition 0")
	_ = b.Write(ctx, recordsOf(1, 2, 3))
	if err := b.FlushCheckpoint(ctx, cpOf(1)); err != nil {
		t.Fatalf("the new owner failed on the old owner's rows: %v", err)
	}
}

// TestFencedFinalCheckpointThenClose (invariant 10, the close path): the
// last checkpoint before Close is fenced for one partition. Close then
// succeeds (a fence is not a sink failure), the partition a still owns
// keeps its rows and checkpoint, and the fenced one keeps its new owner's:
// a restart restores both, nothing of a's refused rows stored.
func TestFencedFinalCheckpointThenClose(t *testing.T) {
	f := newFixture(t)
	a, b := f.sink(), f.sink()
	openSinks(t, b)
	if err := a.Open(ctx); err != nil {
		t.Fatal(err)
	}
	claim(t, a, tp(0), tp(1))
	claim(t, b, tp(1))
	bcp := record.Checkpoint{Watermark: 1_000, Partitions: []record.PartitionCheckpoint{{TopicPartition: tp(1), Low: 3, Position: 3, End: 9, Watermark: 1_000}}}
	_ = b.Write(ctx, recordsOf(1, 0, 3))
	if err := b.FlushCheckpoint(ctx, bcp); err != nil {
		t.Fatal(err)
	}
	_ = a.Write(ctx, append(recordsOf(0, 0, 5), recordsOf(1, 0, 5)...))
	acp := cpOf(0, 1)
	wantFenced(t, a.FlushCheckpoint(ctx, acp), tp(1))
	if err := a.Close(); err != nil {
		t.Fatalf("Close after a fenced final checkpoint: %v", err)
	}
	f.wantRows(t, 0, 5, "partition 0 (a's)")
	f.wantRows(t, 1, 3, "partition 1 (b's rows only)")
	s := f.sink()
	openSinks(t, s)
	want := record.Checkpoint{Watermark: 1_000, Partitions: []record.PartitionCheckpoint{acp.Partitions[0], bcp.Partitions[0]}}
	if cp, err := s.Restore(ctx); err != nil || cp == nil || !reflect.DeepEqual(*cp, want) {
		t.Fatalf("Restore = %+v, %v; want %+v", cp, err, want)
	}
}
