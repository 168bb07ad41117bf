package fencetest

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/embedded"
	"github.com/signalbox/signalbox/internal/pgtest"
	"github.com/signalbox/signalbox/record"
	kafkasink "github.com/signalbox/signalbox/sinks/kafka"
	"github.com/signalbox/signalbox/sinks/postgres"
	kafkasrc "github.com/signalbox/signalbox/sources/kafka"
)

const (
	input      = "in"
	output     = "out"
	group      = "fence"
	partitions = 4
	phase1     = 50  // records per partition before the lock
	phase2     = 150 // records per partition produced while the lock is held
	deadline   = 30 * time.Second
)

// plain hides the PostgreSQL sink's checkpoint methods: the sink is then an
// at-least-once sink flushed before the checkpoint sink.
type plain struct{ signalbox.Sink }

// member is one running pipeline of the group.
type member struct {
	name string
	p    *signalbox.Pipeline
	done chan struct{}
	err  error
	logs *observer.ObservedLogs

	mu     sync.Mutex
	owned  map[record.TopicPartition]bool
	fenced map[record.TopicPartition]bool
}

func (m *member) observe(e signalbox.Event) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch e.Kind {
	case signalbox.EventAssigned:
		m.owned[e.Partition] = true
	case signalbox.EventRevoked:
		delete(m.owned, e.Partition)
	case signalbox.EventFenced:
		m.fenced[e.Partition] = true
	}
}

func (m *member) ownedNow() map[record.TopicPartition]bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[record.TopicPartition]bool{}
	for tp := range m.owned {
		out[tp] = true
	}
	return out
}

func (m *member) fencedAny() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.fenced) > 0
}

func (m *member) alive() bool {
	select {
	case <-m.done:
		return false
	default:
		return true
	}
}

// env is one scenario's cluster, database and tables.
type env struct {
	t     *testing.T
	c     *embedded.Cluster
	dsn   string
	table string
	db    *pgx.Conn

	mu      sync.Mutex
	release func() // the table lock's, while held
}

// unlock releases the table lock if it is held.
func (e *env) unlock() {
	e.mu.Lock()
	release := e.release
	e.mu.Unlock()
	if release != nil {
		release()
	}
}

func newEnv(t *testing.T, topics ...embedded.Option) *env {
	dsn := pgtest.DSN(t)
	c, err := embedded.Start(topics...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	db, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close(context.Background()) })
	table := fmt.Sprintf("fence_%d", time.Now().UnixNano()%1e9)
	t.Cleanup(func() {
		for _, suffix := range []string{"", "_checkpoint", "_watermark", "_owner"} {
			_, _ = db.Exec(context.Background(), `DROP TABLE IF EXISTS `+table+suffix)
		}
	})
	return &env{t: t, c: c, dsn: dsn, table: table, db: db}
}

func (e *env) produce(from, n int) {
	var rs []*kgo.Record
	for p := range partitions {
		for i := from; i < from+n; i++ {
			rs = append(rs, &kgo.Record{Topic: input, Partition: int32(p), Key: []byte("k" + strconv.Itoa(i%7)),
				Value: []byte(fmt.Sprintf("%d/%d", p, i))})
		}
	}
	if err := e.c.Produce(context.Background(), rs...); err != nil {
		e.t.Fatal(err)
	}
}

// start runs a member whose sinks come from sinks.
func (e *env) start(name string, sinks ...signalbox.Sink) *member {
	core, logs := observer.New(zapcore.InfoLevel)
	src, err := kafkasrc.New(kafkasrc.Config{Brokers: e.c.Addrs(), Topics: []string{input}, Group: group,
		FetchMaxWait: 50 * time.Millisecond, RetryBackoff: 20 * time.Millisecond,
		RevokeTimeout: time.Second, SessionTimeout: 6 * time.Second, HeartbeatInterval: 300 * time.Millisecond,
		RebalanceTimeout: 20 * time.Second, Logger: zap.New(core).Named("source")})
	if err != nil {
		e.t.Fatal(err)
	}
	m := &member{name: name, done: make(chan struct{}), logs: logs,
		owned: map[record.TopicPartition]bool{}, fenced: map[record.TopicPartition]bool{}}
	opts := []signalbox.Option{signalbox.WithInputs(signalbox.Input{Topic: input}),
		signalbox.WithDelay(20 * time.Millisecond), signalbox.WithCheckpointInterval(50 * time.Millisecond),
		signalbox.WithLogger(zap.New(core)), signalbox.WithObserver(m.observe)}
	for _, s := range sinks {
		opts = append(opts, signalbox.WithSink(s))
	}
	m.p, err = signalbox.New(src, opts...)
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		defer close(m.done)
		m.err = m.p.Run(ctx)
	}()
	e.t.Cleanup(func() {
		e.unlock() // a failed test may still hold it
		cancel()
		<-m.done
	})
	return m
}

// until waits for cond, checking every 20ms, failing after deadline.
func (e *env) until(what string, cond func() bool, members ...*member) {
	e.t.Helper()
	end := time.Now().Add(deadline)
	for !cond() {
		for _, m := range members {
			if !m.alive() {
				e.t.Fatalf("waiting for %s: member %s stopped: %v\n%s", what, m.name, m.err, logText(m.logs))
			}
		}
		if time.Now().After(end) {
			e.t.Logf("committed %v", e.committed())
			for _, m := range members {
				e.t.Logf("%s %+v", m.name, m.p.Stats().Delivery)
				e.t.Logf("%s owns %v:\n%s", m.name, m.ownedNow(), logText(m.logs))
			}
			e.t.Fatalf("%s: not within %v", what, deadline)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func logText(l *observer.ObservedLogs) string {
	s := ""
	for _, e := range l.All() {
		s += e.Message + fmt.Sprint(e.ContextMap()) + "\n"
	}
	return s
}

func (e *env) count(query string) int {
	var n int
	if err := e.db.QueryRow(context.Background(), query).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

// lock takes an ACCESS EXCLUSIVE lock on the data table from a connection
// of its own and returns its release.
func (e *env) lock() (release func()) {
	c, err := pgx.Connect(context.Background(), e.dsn)
	if err != nil {
		e.t.Fatal(err)
	}
	tx, err := c.Begin(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := tx.Exec(context.Background(), `LOCK TABLE `+e.table+` IN ACCESS EXCLUSIVE MODE`); err != nil {
		e.t.Fatal(err)
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			_ = tx.Rollback(context.Background())
			_ = c.Close(context.Background())
		})
	}
	e.mu.Lock()
	e.release = release
	e.mu.Unlock()
	e.t.Cleanup(release)
	return release
}

// waiters is the number of backends waiting for a lock on the data table.
func (e *env) waiters() int {
	return e.count(`SELECT count(*) FROM pg_locks WHERE NOT granted AND relation = '` + e.table + `'::regclass`)
}

// committed is what the group holds in Kafka, by partition.
func (e *env) committed() map[record.TopicPartition]int64 {
	cl, err := kgo.NewClient(e.c.ClientOptions()...)
	if err != nil {
		e.t.Fatal(err)
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).FetchOffsets(context.Background(), group)
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[record.TopicPartition]int64{}
	resp.Each(func(o kadm.OffsetResponse) {
		if o.Err == nil && o.At >= 0 {
			out[record.TopicPartition{Topic: o.Topic, Partition: o.Partition}] = o.At
		}
	})
	return out
}

func (e *env) allCommitted(end int64) bool {
	c := e.committed()
	for p := range partitions {
		if c[record.TopicPartition{Topic: input, Partition: int32(p)}] != end {
			return false
		}
	}
	return true
}

// scenario runs the stall: A alone stores phase 1; the data table is
// locked; phase 2 is produced and A stalls on the lock; B joins and is
// assigned its partitions; the lock is released. stored reports how many
// distinct input records the job's output holds.
func (e *env) scenario(newSinks func(name string) []signalbox.Sink, claimed func(b *member) bool, stored func() int) (a, b *member) {
	e.produce(0, phase1)
	a = e.start("A", newSinks("A")...)
	e.until("A stores phase 1", func() bool { return stored() == partitions*phase1 }, a)
	release := e.lock()
	e.produce(phase1, phase2)
	e.until("A waits for the lock", func() bool { return e.waiters() > 0 }, a)
	b = e.start("B", newSinks("B")...)
	e.until("B is assigned partitions and has claimed them", func() bool { return len(b.ownedNow()) > 0 && claimed(b) }, a, b)
	if len(a.ownedNow()) != partitions {
		e.t.Fatalf("A took the revoke while its sink was stalled (owns %v): the scenario did not stall it", a.ownedNow())
	}
	release()
	total := partitions * (phase1 + phase2)
	e.until("every record stored and committed", func() bool {
		return stored() == total && e.allCommitted(phase1+phase2)
	}, a, b)
	e.until("A learns of the revoke", func() bool { return len(a.ownedNow())+len(b.ownedNow()) == partitions }, a, b)
	return a, b
}

// checkCommits: each member's last counted commit of a partition it owns
// is what Kafka holds, and the stale member counted a skipped commit.
func (e *env) checkCommits(a, b *member) {
	t := e.t
	held := e.committed()
	for _, m := range []*member{a, b} {
		d := m.p.Stats().Delivery
		for _, c := range d.Committed {
			if m.ownedNow()[c.TopicPartition] && held[c.TopicPartition] != c.Offset {
				t.Errorf("member %s counts a commit of %v at %d; Kafka holds %d", m.name, c.TopicPartition, c.Offset, held[c.TopicPartition])
			}
		}
		if d.CommitFailures != 0 {
			t.Errorf("member %s: %d commit failures", m.name, d.CommitFailures)
		}
	}
	if !a.fencedAny() {
		t.Errorf("A's stale checkpoint was not fenced")
	}
	if n := a.p.Stats().Delivery.CommitsSkipped; n == 0 {
		t.Errorf("A skipped no commit; want its stale checkpoint's commit counted as skipped")
	}
	if n := a.logs.FilterMessageSnippet("fenced").Len(); n == 0 {
		t.Errorf("A logged no fenced checkpoint at warn:\n%s", logText(a.logs))
	}
	if !a.alive() || !b.alive() {
		t.Fatalf("a member stopped: A %v, B %v", a.err, b.err)
	}
}

// The PostgreSQL checkpoint sink: A's stalled transaction carries the
// checkpoint of partitions B claimed meanwhile; it is refused, A commits
// the rest, B never fails on A's rows, and every record is stored once.
func TestPostgresStallAcrossJoin(t *testing.T) {
	e := newEnv(t, embedded.WithTopic(input, partitions))
	newSink := func(string) []signalbox.Sink {
		return []signalbox.Sink{postgres.New(postgres.Config{DSN: e.dsn, Table: e.table, Name: "job"})}
	}
	claimed := func(*member) bool {
		if e.count(`SELECT count(*) FROM pg_tables WHERE tablename = '`+e.table+`_owner'`) == 0 {
			return true // a build without owner epochs
		}
		return e.count(`SELECT count(*) FROM `+e.table+`_owner WHERE epoch > 1`) > 0
	}
	stored := func() int {
		var n int
		err := e.db.QueryRow(context.Background(), `SELECT count(*) FROM `+e.table).Scan(&n)
		if err != nil {
			return -1 // not created yet
		}
		return n
	}
	a, b := e.scenario(newSink, claimed, stored)
	if n := e.count(`SELECT count(DISTINCT (partition, "offset")) FROM ` + e.table); n != partitions*(phase1+phase2) {
		t.Errorf("%d distinct records stored, want %d", n, partitions*(phase1+phase2))
	}
	e.checkCommits(a, b)
}

// The transactional Kafka sink, behind an at-least-once PostgreSQL sink
// whose table is locked: A's stalled transaction commits offsets under the
// generation it was assigned in; the coordinator refuses them, the
// transaction is aborted, and the output holds every record once.
func TestKafkaStallAcrossJoin(t *testing.T) {
	e := newEnv(t, embedded.WithTopic(input, partitions), embedded.WithTopic(output, partitions))
	var mu sync.Mutex
	sinks := map[string]*kafkasink.Sink{}
	newSinks := func(name string) []signalbox.Sink {
		k := kafkasink.New(kafkasink.Config{Brokers: e.c.Addrs(), Topic: output, TransactionalID: "fence-" + name, GroupID: group})
		mu.Lock()
		sinks[name] = k
		mu.Unlock()
		return []signalbox.Sink{plain{postgres.New(postgres.Config{DSN: e.dsn, Table: e.table, Name: "job"})}, k}
	}
	claimed := func(*member) bool { return true } // B's Claim precedes its EventAssigned
	stored := func() int {
		vs, err := e.c.ReadUpTo(context.Background(), output, kgo.ReadCommitted())
		if err != nil {
			return -1
		}
		seen := map[string]int{}
		for _, v := range vs {
			seen[string(v)]++
		}
		for v, n := range seen {
			if n > 1 {
				t.Fatalf("record %s is in the output %d times", v, n)
			}
		}
		return len(vs)
	}
	a, b := e.scenario(newSinks, claimed, stored)
	e.checkCommits(a, b)
}
