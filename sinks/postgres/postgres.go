package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/signalbox/signalbox/internal/fielderr"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/retry"
	"github.com/signalbox/signalbox/sinks/envelope"
)

// Defaults used by Config.EnsureDefaults.
const (
	DefaultTable    = "signalbox_records"
	DefaultName     = "default"
	DefaultMaxBatch = 10000
)

// ErrClosed is returned by calls made after Close.
var ErrClosed = errors.New("postgres: sink closed")

// Config configures the sink. Zero fields take the documented defaults.
type Config struct {
	// DSN is the connection string, e.g.
	// postgres://u:p@127.0.0.1:5432/db?sslmode=disable. Required. The sink
	// uses one connection (all calls come from one goroutine) and
	// reconnects after a connection failure.
	DSN string
	// Table is the data table, optionally schema-qualified. Default
	// "signalbox_records".
	Table string
	// Name identifies this job's checkpoint rows. Default "default".
	Name string
	// ValueType is the value column type when the sink creates the table:
	// "jsonb" (default) or "text".
	ValueType string
	// NoCreate skips CREATE TABLE IF NOT EXISTS in Open, and the ALTER
	// TABLEs that add the watermark column to a <Table>_checkpoint and the
	// key_bytes and value_bytes columns to a data table created by an
	// earlier build: the tables must then already have them.
	NoCreate bool
	// MaxBatch is the number of buffered rows at which Write commits them
	// before accepting more. Default 10000; at most MaxMaxBatch.
	MaxBatch int
}

// EnsureDefaults fills zero fields with their defaults.
func (c *Config) EnsureDefaults() {
	if c.Table == "" {
		c.Table = DefaultTable
	}
	if c.Name == "" {
		c.Name = DefaultName
	}
	if c.ValueType == "" {
		c.ValueType = "jsonb"
	}
	if c.MaxBatch == 0 {
		c.MaxBatch = DefaultMaxBatch
	}
}

// MaxMaxBatch bounds Config.MaxBatch: the rows are buffered in memory.
const MaxMaxBatch = 1_000_000

// MaxTable is the longest table name (without its schema): PostgreSQL's
// identifiers have 63 bytes, and the checkpoint table appends _checkpoint.
const MaxTable = 63 - len("_checkpoint")

// Validate reports every configuration error, each naming its field as the
// job file does (dsn, table, value_type, max_batch), joined in one error. Call
// EnsureDefaults first to accept zero values.
func (c *Config) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("postgres: %w", fielderr.New(field, format, args...)))
	}
	if c.DSN == "" {
		bad("dsn", "required")
	}
	if name := c.Table[strings.LastIndex(c.Table, ".")+1:]; name == "" || len(name) > MaxTable {
		bad("table", "%q must be 1 to %d bytes (the checkpoint table appends _checkpoint)", name, MaxTable)
	}
	if c.ValueType != "jsonb" && c.ValueType != "text" {
		bad("value_type", "%q is not one of jsonb, text", c.ValueType)
	}
	if c.MaxBatch < 1 || c.MaxBatch > MaxMaxBatch {
		bad("max_batch", "%d is out of range: must be from 1 to 1000000 rows", c.MaxBatch)
	}
	return errors.Join(errs...)
}

// Sink is the PostgreSQL sink.
type Sink struct {
	cfg  Config
	conn *pgx.Conn
	open bool
	rows [][]any
	recs []record.Record // the records of rows, for rejections
	err  error

	data, cp, wm, owner string // quoted table names
	// cmu serialises the connection's use: Claim comes from the engine
	// goroutine, the other calls from the sink goroutine.
	cmu sync.Mutex
	// epochs are the owner epochs this sink claimed, by partition; fenced
	// are the partitions another sink claimed since (invariant 10). fmu
	// guards both; it is taken after cmu, never before.
	fmu    sync.Mutex
	epochs map[record.TopicPartition]int64
	fenced map[record.TopicPartition]bool
}

// New returns a sink; call Open before use.
func New(cfg Config) *Sink {
	cfg.EnsureDefaults()
	return &Sink{cfg: cfg}
}

func quote(name string) string {
	return pgx.Identifier(strings.Split(name, ".")).Sanitize()
}

// Open connects and creates the tables if needed, adding the per-partition
// watermark column to a checkpoint table created by an earlier build.
func (s *Sink) Open(ctx context.Context) error {
	if err := s.cfg.Validate(); err != nil {
		return err
	}
	s.data, s.cp, s.wm, s.owner = quote(s.cfg.Table), quote(s.cfg.Table+"_checkpoint"), quote(s.cfg.Table+"_watermark"), quote(s.cfg.Table+"_owner")
	s.epochs, s.fenced = map[record.TopicPartition]int64{}, map[record.TopicPartition]bool{}
	s.open = true
	if s.cfg.NoCreate {
		return nil
	}
	ddl := fmt.Sprintf(`
CREATE TABLE IF NOT EXISTS %[1]s (
	seq bigserial PRIMARY KEY,
	topic text NOT NULL,
	partition integer NOT NULL,
	"offset" bigint NOT NULL,
	key text,
	event_time timestamptz,
	event_time_ms bigint,
	value %[4]s,
	late boolean NOT NULL,
	late_by_ms bigint,
	reason text,
	key_bytes bytea,
	value_bytes bytea,
	schema_id integer,
	UNIQUE (topic, partition, "offset"));
CREATE TABLE IF NOT EXISTS %[2]s (
	name text NOT NULL,
	topic text NOT NULL,
	partition integer NOT NULL,
	low bigint NOT NULL,
	position bigint NOT NULL,
	end_offset bigint NOT NULL,
	replaying boolean NOT NULL,
	watermark bigint NOT NULL DEFAULT %[5]d,
	PRIMARY KEY (name, topic, partition));
CREATE TABLE IF NOT EXISTS %[3]s (
	name text PRIMARY KEY,
	watermark bigint NOT NULL,
	updated_at timestamptz NOT NULL DEFAULT now());
CREATE TABLE IF NOT EXISTS %[6]s (
	name text NOT NULL,
	topic text NOT NULL,
	partition integer NOT NULL,
	epoch bigint NOT NULL,
	member text NOT NULL DEFAULT '',
	claimed_at timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (name, topic, partition));`, s.data, s.cp, s.wm, s.cfg.ValueType, int64(math.MinInt64), s.owner)
	return s.do(ctx, func(c *pgx.Conn) error {
		if _, err := c.Exec(ctx, ddl); err != nil {
			return err
		}
		return s.addColumns(ctx, c)
	})
}

// addColumns adds the columns of this build to tables an earlier build
// created. It alters a table only when a column is missing: ALTER TABLE
// waits for every lock on the table, and a member joining while another's
// transaction holds the data table must not wait for it.
func (s *Sink) addColumns(ctx context.Context, c *pgx.Conn) error {
	cols := []struct{ table, column, def string }{
		{s.data, "key_bytes", "bytea"},
		{s.data, "value_bytes", "bytea"},
		{s.data, "schema_id", "integer"},
		{s.cp, "watermark", fmt.Sprintf("bigint NOT NULL DEFAULT %d", int64(math.MinInt64))},
	}
	tables, names := make([]string, len(cols)), make([]string, len(cols))
	for i, m := range cols {
		tables[i], names[i] = m.table, m.column
	}
	// One round trip finds the missing columns, by their index in cols.
	rows, err := c.Query(ctx, `SELECT m.i - 1 FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS m(t, c, i)
		WHERE NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass(m.t) AND attname = m.c AND NOT attisdropped)
		ORDER BY m.i`, tables, names)
	if err != nil {
		return err
	}
	missing, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return err
	}
	for _, i := range missing {
		m := cols[i]
		if _, err := c.Exec(ctx, fmt.Sprintf("ALTER TABLE %s ADD COLUMN IF NOT EXISTS %s %s", m.table, m.column, m.def)); err != nil {
			return err
		}
	}
	return nil
}

// do runs fn on the connection, connecting first if needed, and drops the
// connection after a failure that may have broken it.
func (s *Sink) do(ctx context.Context, fn func(*pgx.Conn) error) error {
	s.cmu.Lock()
	defer s.cmu.Unlock()
	if s.conn == nil || s.conn.IsClosed() {
		c, err := pgx.Connect(ctx, s.cfg.DSN)
		if err != nil {
			return classify(fmt.Errorf("postgres: %w", err))
		}
		s.conn = c
	}
	err := fn(s.conn)
	if err != nil {
		err = classify(fmt.Errorf("postgres: %w", err))
		if retry.IsRetryable(err) {
			_ = s.conn.Close(context.Background())
			s.conn = nil
		}
	}
	return err
}

var columns = []string{"ord", "topic", "partition", "offset", "key", "event_time", "event_time_ms", "value", "late", "late_by_ms", "reason", "key_bytes", "value_bytes", "schema_id"}

// Info describes the sink a configuration makes (signalbox.SinkDescriber):
// "postgres", exactly once (it stores the checkpoint in the transaction of
// its rows), writing rendered values.
func (c Config) Info() record.SinkInfo { return record.SinkInfo{Name: "postgres", ExactlyOnce: true} }

// Info is the sink's description: its configuration's (Config.Info).
func (s *Sink) Info() record.SinkInfo { return s.cfg.Info() }

// Write buffers batch, committing first when MaxBatch rows are waiting.
func (s *Sink) Write(ctx context.Context, batch []record.Record) error {
	if err := s.ready(); err != nil {
		return err
	}
	if len(s.rows) >= s.cfg.MaxBatch {
		if err := s.commit(ctx, nil); err != nil {
			return err
		}
	}
	for i := range batch {
		s.rows = append(s.rows, s.row(&batch[i]))
	}
	s.recs = append(s.recs, batch...)
	return nil
}

// Flush commits the buffered rows.
func (s *Sink) Flush(ctx context.Context) error {
	if err := s.ready(); err != nil {
		return err
	}
	return s.commit(ctx, nil)
}

// FlushCheckpoint commits the buffered rows and cp in one transaction.
func (s *Sink) FlushCheckpoint(ctx context.Context, cp record.Checkpoint) error {
	if err := s.ready(); err != nil {
		return err
	}
	return s.commit(ctx, &cp)
}

// Restore returns the checkpoint stored for Config.Name, or nil.
// Checkpoint.Watermark comes from <Table>_watermark, each partition's
// Watermark from its <Table>_checkpoint row, raised to at least
// Checkpoint.Watermark: a row written before the column existed holds the
// default math.MinInt64, and the checkpoint watermark was then the bound for
// every partition.
func (s *Sink) Restore(ctx context.Context) (*record.Checkpoint, error) {
	if err := s.ready(); err != nil {
		return nil, err
	}
	var cp *record.Checkpoint
	err := s.do(ctx, func(c *pgx.Conn) error {
		return pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error { // one snapshot for both tables
			cp = &record.Checkpoint{}
			err := tx.QueryRow(ctx, `SELECT watermark FROM `+s.wm+` WHERE name = $1`, s.cfg.Name).Scan(&cp.Watermark)
			if errors.Is(err, pgx.ErrNoRows) {
				cp = nil
				return nil
			}
			if err != nil {
				return err
			}
			rows, err := tx.Query(ctx, `SELECT topic, partition, low, position, end_offset, replaying, watermark FROM `+s.cp+
				` WHERE name = $1 ORDER BY topic, partition`, s.cfg.Name)
			if err != nil {
				return err
			}
			cp.Partitions, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (record.PartitionCheckpoint, error) {
				var p record.PartitionCheckpoint
				err := r.Scan(&p.Topic, &p.Partition, &p.Low, &p.Position, &p.End, &p.Replaying, &p.Watermark)
				return p, err
			})
			// Each row carries its own task's watermark. The name's
			// watermark row is the last writer's, which in a consumer
			// group is another member's: the restored watermark is the
			// lowest of the rows, never above any partition's own. Rows
			// from a build before the per-partition column hold its
			// default, −∞, and take the name's row as they did then.
			shared := cp.Watermark
			for i := range cp.Partitions {
				p := &cp.Partitions[i]
				if p.Watermark == math.MinInt64 {
					p.Watermark = shared
				}
				if i == 0 || p.Watermark < cp.Watermark {
					cp.Watermark = p.Watermark
				}
			}
			return err
		})
	})
	if err != nil {
		return nil, err
	}
	return cp, nil
}

// Purge deletes every row of the data table and this job's checkpoint,
// and drops buffered rows.
func (s *Sink) Purge(ctx context.Context) error {
	if err := s.ready(); err != nil {
		return err
	}
	s.rows, s.recs = nil, nil
	s.fmu.Lock()
	clear(s.epochs)
	clear(s.fenced)
	s.fmu.Unlock()
	return s.do(ctx, func(c *pgx.Conn) error {
		return pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `TRUNCATE `+s.data); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `DELETE FROM `+s.cp+` WHERE name = $1`, s.cfg.Name); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `DELETE FROM `+s.owner+` WHERE name = $1`, s.cfg.Name); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `DELETE FROM `+s.wm+` WHERE name = $1`, s.cfg.Name)
			return err
		})
	})
}

// Claim makes this sink the owner of partitions (invariant 10): each gets
// a new owner epoch, higher than any before it, and a checkpoint of them
// from a sink that claimed them earlier is refused from then on. The engine
// calls it when the partitions are assigned, before Restore. member names
// the claimant in the owner table (empty outside a consumer group).
func (s *Sink) Claim(ctx context.Context, member *record.GroupMember, partitions []record.TopicPartition) error {
	if err := s.ready(); err != nil {
		return err
	}
	if len(partitions) == 0 {
		return nil
	}
	who := ""
	if member != nil {
		who = member.MemberID + " generation " + strconv.Itoa(int(member.Generation))
	}
	var got map[record.TopicPartition]int64
	err := s.do(ctx, func(c *pgx.Conn) error {
		var err error
		got, err = s.claim(ctx, c, who, partitions)
		return err
	})
	if err != nil {
		return err
	}
	s.fmu.Lock()
	defer s.fmu.Unlock()
	for tp, e := range got {
		s.epochs[tp] = e
		delete(s.fenced, tp)
	}
	return nil
}

// claim raises the owner epoch of partitions (inserting it at 1) and
// returns the new epochs.
func (s *Sink) claim(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, who string, partitions []record.TopicPartition) (map[record.TopicPartition]int64, error) {
	topics, parts := split(partitions)
	rows, err := q.Query(ctx, `INSERT INTO `+s.owner+` AS o (name, topic, partition, epoch, member)
		SELECT $1, t, p, 1, $4 FROM unnest($2::text[], $3::int[]) AS u(t, p)
		ON CONFLICT (name, topic, partition) DO UPDATE SET epoch = o.epoch + 1, member = EXCLUDED.member, claimed_at = now()
		RETURNING topic, partition, epoch`, s.cfg.Name, topics, parts, who)
	if err != nil {
		return nil, err
	}
	got := map[record.TopicPartition]int64{}
	var tp record.TopicPartition
	var e int64
	_, err = pgx.ForEachRow(rows, []any{&tp.Topic, &tp.Partition, &e}, func() error {
		got[tp] = e
		return nil
	})
	return got, err
}

func split(tps []record.TopicPartition) ([]string, []int32) {
	topics, parts := make([]string, len(tps)), make([]int32, len(tps))
	for i, tp := range tps {
		topics[i], parts[i] = tp.Topic, tp.Partition
	}
	return topics, parts
}

// Close drops the buffered rows, never committing them (invariant 8), and
// closes the connection.
func (s *Sink) Close() error {
	if errors.Is(s.err, ErrClosed) {
		return ErrClosed
	}
	err := s.err
	s.rows, s.recs = nil, nil
	if s.conn != nil {
		_ = s.conn.Close(context.Background())
		s.conn = nil
	}
	s.err = ErrClosed
	return err
}

func (s *Sink) ready() error {
	if s.err != nil {
		return s.err
	}
	if !s.open {
		return errors.New("postgres: sink not open")
	}
	return nil
}

// commit runs one transaction: buffered rows, then cp if not nil. When a
// row's data fails (invariant 9), it finds the failing rows, drops them and
// returns them as a rejection, committing nothing.
//
// A checkpoint is written only for the partitions this sink still owns
// (invariant 10): when another sink claimed some since, the transaction is
// rolled back, their rows are dropped and the rest is committed in a new
// one; the call then returns a *retry.FencedError naming them.
func (s *Sink) commit(ctx context.Context, cp *record.Checkpoint) error {
	var fenced []record.TopicPartition
	if cp != nil {
		own := *cp
		own.Partitions, fenced = s.owned(cp.Partitions)
		cp = &own
	}
	for {
		s.dropFenced()
		err := s.commitOnce(ctx, cp)
		var fe *fencedNow
		if !errors.As(err, &fe) {
			if err == nil && len(fenced) > 0 {
				return retry.Fenced(errors.New("postgres: another sink claimed the partitions (owner epoch)"), fenced...)
			}
			return err
		}
		s.fmu.Lock()
		for _, tp := range fe.partitions {
			s.fenced[tp] = true
			delete(s.epochs, tp)
		}
		s.fmu.Unlock()
		var moved []record.TopicPartition
		cp.Partitions, moved = s.owned(cp.Partitions)
		fenced = append(fenced, moved...)
	}
}

// fencedNow rolls back a transaction whose checkpoint names partitions
// another sink claimed.
type fencedNow struct{ partitions []record.TopicPartition }

func (*fencedNow) Error() string { return "postgres: checkpoint fenced" }

// owned splits ps into the partitions not fenced and the fenced ones.
func (s *Sink) owned(ps []record.PartitionCheckpoint) (own []record.PartitionCheckpoint, fenced []record.TopicPartition) {
	s.fmu.Lock()
	defer s.fmu.Unlock()
	for _, p := range ps {
		if s.fenced[p.TopicPartition] {
			fenced = append(fenced, p.TopicPartition)
		} else {
			own = append(own, p)
		}
	}
	return own, fenced
}

// dropFenced drops the buffered rows of fenced partitions: their owner
// writes them.
func (s *Sink) dropFenced() {
	s.fmu.Lock()
	defer s.fmu.Unlock()
	if len(s.fenced) == 0 {
		return
	}
	rows, recs := s.rows[:0], s.recs[:0]
	for i := range s.rows {
		if !s.fenced[record.TopicPartition{Topic: s.recs[i].Topic, Partition: s.recs[i].Partition}] {
			rows, recs = append(rows, s.rows[i]), append(recs, s.recs[i])
		}
	}
	clear(s.rows[len(rows):])
	clear(s.recs[len(recs):])
	s.rows, s.recs = rows, recs
}

// commitOnce is one transaction of commit.
func (s *Sink) commitOnce(ctx context.Context, cp *record.Checkpoint) error {
	if len(s.rows) == 0 && cp == nil {
		return nil
	}
	for i := range s.rows {
		s.rows[i][0] = int32(i)
	}
	var claimed map[record.TopicPartition]int64
	err := s.do(ctx, func(c *pgx.Conn) error {
		claimed = nil
		return pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error {
			if len(s.rows) > 0 {
				if err := s.insert(ctx, tx, 0, len(s.rows)); err != nil {
					return err
				}
			}
			if cp != nil {
				var err error
				claimed, err = s.saveCheckpoint(ctx, tx, cp)
				return err
			}
			return nil
		})
	})
	if err == nil {
		s.fmu.Lock()
		for tp, e := range claimed {
			s.epochs[tp] = e
		}
		s.fmu.Unlock()
	}
	if err != nil && dataError(err) != nil && len(s.rows) > 0 {
		// The rows that fail alone are rejected; when none does (the
		// checkpoint row, or rows that fail only together), the original
		// error stands: the transaction was rolled back, nothing is
		// acknowledged.
		if rerr := s.reject(ctx); rerr != nil {
			err = rerr
		}
	}
	if err != nil {
		var fe *fencedNow
		if !retry.IsRetryable(err) && retry.AsRejected(err) == nil && !errors.As(err, &fe) {
			s.err = err
		}
		return err
	}
	s.rows, s.recs = s.rows[:0], s.recs[:0]
	return nil
}

// reject finds the buffered rows whose data PostgreSQL refuses, by
// bisection under savepoints in a transaction that is rolled back, drops
// them from the buffer and returns them as a *retry.RejectedError. It
// returns the error of the search itself if that fails otherwise, and nil
// when no row fails alone (the failure was not about one row's data).
func (s *Sink) reject(ctx context.Context) error {
	var bad []retry.Rejection
	var badAt []int
	err := s.do(ctx, func(c *pgx.Conn) error {
		tx, err := c.Begin(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback(context.Background()) //nolint:errcheck // never committed: only a search
		var try func(lo, hi int) error
		try = func(lo, hi int) error {
			if _, err := tx.Exec(ctx, `SAVEPOINT signalbox_rows`); err != nil {
				return err
			}
			err := s.insert(ctx, tx, lo, hi)
			pgErr := dataError(err)
			if err != nil && pgErr == nil {
				return err
			}
			if err != nil {
				if _, err := tx.Exec(ctx, `ROLLBACK TO SAVEPOINT signalbox_rows`); err != nil {
					return err
				}
			}
			if _, err := tx.Exec(ctx, `RELEASE SAVEPOINT signalbox_rows`); err != nil || pgErr == nil {
				return err
			}
			if hi-lo == 1 {
				bad = append(bad, retry.Rejection{Record: s.recs[lo], Reason: "postgres: " + pgErr.Code + ": " + pgErr.Message})
				badAt = append(badAt, lo)
				return nil
			}
			mid := lo + (hi-lo)/2
			if err := try(lo, mid); err != nil {
				return err
			}
			return try(mid, hi)
		}
		return try(0, len(s.rows))
	})
	if err != nil || len(bad) == 0 {
		return err
	}
	rows, recs := s.rows[:0], s.recs[:0]
	for i := range s.rows {
		if len(badAt) > 0 && badAt[0] == i {
			badAt = badAt[1:]
			continue
		}
		rows, recs = append(rows, s.rows[i]), append(recs, s.recs[i])
	}
	clear(s.rows[len(rows):])
	clear(s.recs[len(recs):])
	s.rows, s.recs = rows, recs
	return retry.Rejected(bad...)
}

// insert stages rows [lo, hi) with COPY and inserts them into the data
// table in order. Ordinals (row[0]) are set by commit.
func (s *Sink) insert(ctx context.Context, tx pgx.Tx, lo, hi int) error {
	_, err := tx.Exec(ctx, fmt.Sprintf(`CREATE TEMP TABLE IF NOT EXISTS signalbox_stage (
	ord integer, topic text, partition integer, "offset" bigint, key text, event_time timestamptz,
	event_time_ms bigint, value %s, late boolean, late_by_ms bigint, reason text, key_bytes bytea, value_bytes bytea, schema_id integer)
	ON COMMIT DELETE ROWS`, s.cfg.ValueType))
	if err != nil {
		return err
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"signalbox_stage"}, columns, pgx.CopyFromRows(s.rows[lo:hi])); err != nil {
		return err
	}
	cols := `topic, partition, "offset", key, event_time, event_time_ms, value, late, late_by_ms, reason, key_bytes, value_bytes, schema_id`
	_, err = tx.Exec(ctx, `INSERT INTO `+s.data+` (`+cols+`) SELECT `+cols+
		` FROM signalbox_stage WHERE ord >= $1 AND ord < $2 ORDER BY ord ON CONFLICT (topic, partition, "offset") DO NOTHING`, lo, hi)
	return err
}

// saveCheckpoint writes cp in tx, after checking, under a share lock on
// the owner rows (a concurrent Claim waits for tx), that this sink still
// owns every partition of cp. Partitions it never claimed are claimed in tx
// (a sink used without the engine's Claim); their epochs are returned.
func (s *Sink) saveCheckpoint(ctx context.Context, tx pgx.Tx, cp *record.Checkpoint) (map[record.TopicPartition]int64, error) {
	var unclaimed []record.TopicPartition
	mine := make(map[record.TopicPartition]int64, len(cp.Partitions))
	s.fmu.Lock()
	for _, p := range cp.Partitions {
		if e, ok := s.epochs[p.TopicPartition]; ok {
			mine[p.TopicPartition] = e
		} else {
			unclaimed = append(unclaimed, p.TopicPartition)
		}
	}
	s.fmu.Unlock()
	var claimed map[record.TopicPartition]int64
	if len(unclaimed) > 0 {
		var err error
		if claimed, err = s.claim(ctx, tx, "", unclaimed); err != nil {
			return nil, err
		}
	}
	n := len(cp.Partitions)
	topics, parts := make([]string, n), make([]int32, n)
	epochs, lows, positions, ends := make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
	replaying, wms := make([]bool, n), make([]int64, n)
	for i, p := range cp.Partitions {
		e, ok := mine[p.TopicPartition]
		if !ok {
			e = claimed[p.TopicPartition]
		}
		topics[i], parts[i], epochs[i] = p.Topic, p.Partition, e
		lows[i], positions[i], ends[i], replaying[i], wms[i] = p.Low, p.Position, p.End, p.Replaying, p.Watermark
	}
	rows, err := tx.Query(ctx, `SELECT m.t, m.p FROM unnest($2::text[], $3::int[], $4::bigint[]) AS m(t, p, e)
		LEFT JOIN (SELECT topic, partition, epoch FROM `+s.owner+` WHERE name = $1 FOR SHARE) AS o ON o.topic = m.t AND o.partition = m.p
		WHERE o.epoch IS DISTINCT FROM m.e`, s.cfg.Name, topics, parts, epochs)
	if err != nil {
		return nil, err
	}
	var moved []record.TopicPartition
	var tp record.TopicPartition
	if _, err := pgx.ForEachRow(rows, []any{&tp.Topic, &tp.Partition}, func() error {
		moved = append(moved, tp)
		return nil
	}); err != nil {
		return nil, err
	}
	if len(moved) > 0 {
		return nil, &fencedNow{partitions: moved}
	}
	// An upsert, never DELETE then INSERT: members of a group write their
	// own partitions' rows under the same name concurrently.
	if _, err := tx.Exec(ctx, `INSERT INTO `+s.cp+` (name, topic, partition, low, position, end_offset, replaying, watermark)
		SELECT $1, * FROM unnest($2::text[], $3::int[], $4::bigint[], $5::bigint[], $6::bigint[], $7::boolean[], $8::bigint[])
		ON CONFLICT (name, topic, partition) DO UPDATE SET low = EXCLUDED.low, position = EXCLUDED.position,
			end_offset = EXCLUDED.end_offset, replaying = EXCLUDED.replaying, watermark = EXCLUDED.watermark`,
		s.cfg.Name, topics, parts, lows, positions, ends, replaying, wms); err != nil {
		return nil, err
	}
	_, err = tx.Exec(ctx, `INSERT INTO `+s.wm+` (name, watermark, updated_at) VALUES ($1, $2, now())
		ON CONFLICT (name) DO UPDATE SET watermark = EXCLUDED.watermark, updated_at = EXCLUDED.updated_at`,
		s.cfg.Name, cp.Watermark)
	return claimed, err
}

// row converts r to the staging row (ord is filled in at commit).
func (s *Sink) row(r *record.Record) []any {
	row := make([]any, len(columns))
	row[1], row[2], row[3] = r.Topic, r.Partition, r.Offset
	switch {
	case r.DecodedKey != nil: // the decoded key's JSON (an input with a key decoder)
		row[4] = text(r.DecodedKey)
	case r.Key == nil:
	case utf8.Valid(r.Key) && bytes.IndexByte(r.Key, 0) < 0:
		row[4] = string(r.Key)
	default: // invariant 7
		row[11] = r.Key
	}
	if !r.Timeless {
		row[5], row[6] = time.UnixMilli(r.EventTime).UTC(), r.EventTime
	}
	if r.ValueSchemaID != 0 {
		row[13] = int32(r.ValueSchemaID)
	}
	switch {
	case r.DecodedValue != nil: // the decoded value (an input with a decoder): JSON
		if s.cfg.ValueType != "jsonb" || !bytes.Contains(r.DecodedValue, []byte(`\u0000`)) {
			row[7] = string(r.DecodedValue)
		} else {
			row[12] = r.Value // the original bytes, as for any value jsonb refuses
		}
	case r.Value != nil:
		// jsonb refuses the \u0000 escape; text holds it as written.
		if v, ok := envelope.AppendValue(nil, r.Value); ok && (s.cfg.ValueType != "jsonb" || !bytes.Contains(v, []byte(`\u0000`))) {
			row[7] = string(v)
		} else {
			row[12] = r.Value
		}
	}
	row[8] = r.Late
	if r.Late {
		row[9] = r.LateBy
	}
	if reason, ok := envelope.Reason(r); ok {
		row[10] = text(reason)
	}
	return row
}

// text makes b acceptable to a text column (invariant 7).
func text(b []byte) string {
	return strings.ReplaceAll(strings.ToValidUTF8(string(b), string(utf8.RuneError)), "\x00", string(utf8.RuneError))
}

// dataError returns err's PostgreSQL error when it is about the data of a
// row (SQLSTATE class 22, data exception: 22003 numeric value out of range,
// 22P02 invalid text representation, 22021 bad encoding, ...), else nil.
func dataError(err error) *pgconn.PgError {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && strings.HasPrefix(pgErr.Code, "22") {
		return pgErr
	}
	return nil
}

// classify marks transient PostgreSQL and network errors retryable
// (invariant 6).
func classify(err error) error {
	if err == nil || retry.IsRetryable(err) {
		return err
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case strings.HasPrefix(pgErr.Code, "08"), // connection exception
			strings.HasPrefix(pgErr.Code, "53"), // insufficient resources
			pgErr.Code == "40001",               // serialization_failure
			pgErr.Code == "40P01",               // deadlock_detected
			pgErr.Code == "55P03",               // lock_not_available
			pgErr.Code == "57014",               // query_canceled (statement_timeout)
			pgErr.Code == "57P01", pgErr.Code == "57P02", pgErr.Code == "57P03":
			return retry.Retryable(err)
		}
		return err
	}
	if pgconn.SafeToRetry(err) || pgconn.Timeout(err) {
		return retry.Retryable(err)
	}
	var netErr *pgconn.ConnectError
	if errors.As(err, &netErr) || errors.Is(err, context.DeadlineExceeded) {
		return retry.Retryable(err)
	}
	return err
}
