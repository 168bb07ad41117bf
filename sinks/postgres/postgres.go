package postgres

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
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
	// TABLE that adds the watermark column to a <Table>_checkpoint created
	// by an earlier build: the tables must then already have it.
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

	data, cp, wm string // quoted table names
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
	s.data, s.cp, s.wm = quote(s.cfg.Table), quote(s.cfg.Table+"_checkpoint"), quote(s.cfg.Table+"_watermark")
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
ALTER TABLE %[2]s ADD COLUMN IF NOT EXISTS watermark bigint NOT NULL DEFAULT %[5]d;
CREATE TABLE IF NOT EXISTS %[3]s (
	name text PRIMARY KEY,
	watermark bigint NOT NULL,
	updated_at timestamptz NOT NULL DEFAULT now());`, s.data, s.cp, s.wm, s.cfg.ValueType, int64(math.MinInt64))
	return s.do(ctx, func(c *pgx.Conn) error {
		_, err := c.Exec(ctx, ddl)
		return err
	})
}

// do runs fn on the connection, connecting first if needed, and drops the
// connection after a failure that may have broken it.
func (s *Sink) do(ctx context.Context, fn func(*pgx.Conn) error) error {
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

var columns = []string{"ord", "topic", "partition", "offset", "key", "event_time", "event_time_ms", "value", "late", "late_by_ms", "reason"}

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
	return s.do(ctx, func(c *pgx.Conn) error {
		return pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `TRUNCATE `+s.data); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `DELETE FROM `+s.cp+` WHERE name = $1`, s.cfg.Name); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `DELETE FROM `+s.wm+` WHERE name = $1`, s.cfg.Name)
			return err
		})
	})
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
func (s *Sink) commit(ctx context.Context, cp *record.Checkpoint) error {
	if len(s.rows) == 0 && cp == nil {
		return nil
	}
	for i := range s.rows {
		s.rows[i][0] = int32(i)
	}
	err := s.do(ctx, func(c *pgx.Conn) error {
		return pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error {
			if len(s.rows) > 0 {
				if err := s.insert(ctx, tx, 0, len(s.rows)); err != nil {
					return err
				}
			}
			if cp != nil {
				return s.saveCheckpoint(ctx, tx, cp)
			}
			return nil
		})
	})
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
		if !retry.IsRetryable(err) && retry.AsRejected(err) == nil {
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
	event_time_ms bigint, value %s, late boolean, late_by_ms bigint, reason text) ON COMMIT DELETE ROWS`, s.cfg.ValueType))
	if err != nil {
		return err
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"signalbox_stage"}, columns, pgx.CopyFromRows(s.rows[lo:hi])); err != nil {
		return err
	}
	cols := `topic, partition, "offset", key, event_time, event_time_ms, value, late, late_by_ms, reason`
	_, err = tx.Exec(ctx, `INSERT INTO `+s.data+` (`+cols+`) SELECT `+cols+
		` FROM signalbox_stage WHERE ord >= $1 AND ord < $2 ORDER BY ord ON CONFLICT (topic, partition, "offset") DO NOTHING`, lo, hi)
	return err
}

func (s *Sink) saveCheckpoint(ctx context.Context, tx pgx.Tx, cp *record.Checkpoint) error {
	// Only this checkpoint's partitions are replaced: in a consumer group
	// every member checkpoints the partitions it owns under the same name,
	// and must not erase the rows of the others.
	topics, parts := make([]string, len(cp.Partitions)), make([]int32, len(cp.Partitions))
	for i, p := range cp.Partitions {
		topics[i], parts[i] = p.Topic, p.Partition
	}
	if _, err := tx.Exec(ctx, `DELETE FROM `+s.cp+` WHERE name = $1 AND (topic, partition) IN
		(SELECT * FROM unnest($2::text[], $3::int[]))`, s.cfg.Name, topics, parts); err != nil {
		return err
	}
	rows := make([][]any, len(cp.Partitions))
	for i, p := range cp.Partitions {
		rows[i] = []any{s.cfg.Name, p.Topic, p.Partition, p.Low, p.Position, p.End, p.Replaying, p.Watermark}
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier(strings.Split(s.cfg.Table+"_checkpoint", ".")),
		[]string{"name", "topic", "partition", "low", "position", "end_offset", "replaying", "watermark"}, pgx.CopyFromRows(rows)); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `INSERT INTO `+s.wm+` (name, watermark, updated_at) VALUES ($1, $2, now())
		ON CONFLICT (name) DO UPDATE SET watermark = EXCLUDED.watermark, updated_at = EXCLUDED.updated_at`,
		s.cfg.Name, cp.Watermark)
	return err
}

// row converts r to the staging row (ord is filled in at commit).
func (s *Sink) row(r *record.Record) []any {
	row := make([]any, len(columns))
	row[1], row[2], row[3] = r.Topic, r.Partition, r.Offset
	if r.Key != nil {
		row[4] = text(r.Key)
	}
	if !r.Timeless {
		row[5], row[6] = time.UnixMilli(r.EventTime).UTC(), r.EventTime
	}
	v := string(envelope.AppendValue(nil, r.Value))
	if s.cfg.ValueType == "jsonb" {
		v = strings.ReplaceAll(v, `\u0000`, `\ufffd`)
	}
	row[7], row[8] = v, r.Late
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
