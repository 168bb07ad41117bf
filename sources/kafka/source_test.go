package kafka

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/signalbox/signalbox/embedded"
	"github.com/signalbox/signalbox/record"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

var bg = context.Background()

// A transactional partition whose end offset is a commit marker: the
// position reaches the snapshot (no hang on "last offset + 1"), and aborted
// records are never delivered.
func TestTransactionalEndIsCommitMarker(t *testing.T) {
	c := startCluster(t, embedded.WithTopic("tx", 1))
	mustProduce(t, c, recs("tx", 0, 3, "plain")...)
	if err := c.ProduceTxn(bg, false, recs("tx", 0, 2, "aborted")...); err != nil {
		t.Fatal(err)
	}
	if err := c.ProduceTxn(bg, true, recs("tx", 0, 2, "committed")...); err != nil {
		t.Fatal(err)
	}
	offs := mustOffsets(t, c, "tx")
	// 3 plain + 2 aborted + abort marker + 2 committed + commit marker.
	if offs.HighWater != 9 || offs.LastStable != 9 {
		t.Fatalf("offsets %+v, want HWM = LSO = 9", offs)
	}
	col := openAssigned(t, 1, Config{Brokers: c.Addrs(), Topics: []string{"tx"}})
	tp := record.TopicPartition{Topic: "tx", Partition: 0}
	if a := col.assigned[tp]; a.Start != 0 || a.End != 9 {
		t.Fatalf("assigned %+v, want Start 0 End 9", a)
	}
	col.until("caught up", col.caughtUp)
	want := []string{"plain0", "plain1", "plain2", "committed0", "committed1"}
	if got := col.values[tp]; !slices.Equal(got, want) {
		t.Fatalf("values %q, want %q", got, want)
	}
	if col.pos[tp] != 9 {
		t.Fatalf("position %d, want 9 (past the commit marker)", col.pos[tp])
	}
}

// During an open transaction the snapshot is the last stable offset, not
// the high-water mark; the open transaction's records arrive once committed.
func TestOpenTransactionSnapshotIsLSO(t *testing.T) {
	c := startCluster(t, embedded.WithTopic("open", 1))
	mustProduce(t, c, recs("open", 0, 3, "before")...)
	txn, err := c.OpenTxn(bg, recs("open", 0, 2, "intxn")...)
	if err != nil {
		t.Fatal(err)
	}
	offs := mustOffsets(t, c, "open")
	if offs.LastStable != 3 || offs.HighWater != 5 {
		t.Fatalf("offsets %+v, want LSO 3 < HWM 5", offs)
	}
	col := openAssigned(t, 1, Config{Brokers: c.Addrs(), Topics: []string{"open"}})
	tp := record.TopicPartition{Topic: "open", Partition: 0}
	if a := col.assigned[tp]; a.End != 3 {
		t.Fatalf("snapshot End %d, want the LSO 3 (HWM is 5)", a.End)
	}
	col.until("caught up", col.caughtUp)
	if got := col.values[tp]; !slices.Equal(got, []string{"before0", "before1", "before2"}) {
		t.Fatalf("values %q: uncommitted records delivered", got)
	}
	if err := txn.Commit(bg); err != nil {
		t.Fatal(err)
	}
	col.until("committed records", func() bool { return len(col.values[tp]) == 5 })
	col.until("evidence past the marker", func() bool { return col.end[tp] == 6 && col.pos[tp] == 6 })
}

// Empty partitions are assigned with End == Start and deliver nothing.
func TestEmptyPartitions(t *testing.T) {
	t.Parallel()
	c := startCluster(t, embedded.WithTopic("empty", 3))
	col := openAssigned(t, 3, Config{Brokers: c.Addrs(), Topics: []string{"empty"}})
	for tp, a := range col.assigned {
		if a.Start != 0 || a.End != 0 {
			t.Errorf("%v assigned %+v, want Start = End = 0", tp, a)
		}
	}
	if !col.caughtUp() {
		t.Fatal("empty partitions are not caught up at once")
	}
	col.pollFor(500 * time.Millisecond)
	for tp, v := range col.values {
		if len(v) > 0 {
			t.Errorf("%v delivered %q", tp, v)
		}
	}
}

// latest starts at the end snapshot and reads only what comes after.
func TestStartLatest(t *testing.T) {
	c := startCluster(t, embedded.WithTopic("late", 1))
	mustProduce(t, c, recs("late", 0, 4, "old")...)
	col := openAssigned(t, 1, Config{Brokers: c.Addrs(), Topics: []string{"late"}, Start: StartLatest})
	tp := record.TopicPartition{Topic: "late", Partition: 0}
	if a := col.assigned[tp]; a.Start != 4 || a.End != 4 {
		t.Fatalf("assigned %+v, want Start = End = 4", a)
	}
	mustProduce(t, c, recs("late", 0, 2, "new")...)
	col.until("new records", func() bool { return len(col.values[tp]) == 2 })
	if got := col.values[tp]; !slices.Equal(got, []string{"new0", "new1"}) {
		t.Fatalf("values %q", got)
	}
}

// A topic whose fetches fail reports Err and no evidence until they succeed;
// the other topic keeps flowing meanwhile.
func TestFailingTopic(t *testing.T) {
	c := startCluster(t, embedded.WithTopic("bad", 1), embedded.WithTopic("good", 1))
	for _, topic := range []string{"bad", "good"} {
		mustProduce(t, c, recs(topic, 0, 5, topic)...)
	}
	stop := c.FailFetches("bad", time.Now().Add(time.Hour))
	col := newCollector(t, openSource(t, Config{Brokers: c.Addrs(), Topics: []string{"bad", "good"}}))
	bad := record.TopicPartition{Topic: "bad", Partition: 0}
	good := record.TopicPartition{Topic: "good", Partition: 0}
	col.until("an error for the failing topic and data for the other", func() bool {
		return len(col.values[good]) == 5 && slices.ContainsFunc(col.fetches, func(pf record.PartitionFetch) bool {
			return pf.TopicPartition == bad && pf.Err != nil
		})
	})
	for _, pf := range col.fetches {
		if pf.TopicPartition == bad && pf.Err == nil {
			t.Fatalf("the failing topic reported success while failing: %+v", pf)
		}
	}
	stop()
	col.until("caught up after the failure ends", col.caughtUp)
	if len(col.values[bad]) != 5 {
		t.Fatalf("bad topic delivered %q", col.values[bad])
	}
}

// A topic slow to connect delivers no evidence while delayed; the others
// are served.
func TestDelayedTopic(t *testing.T) {
	c := startCluster(t, embedded.WithTopic("slow", 1), embedded.WithTopic("fast", 1))
	for _, topic := range []string{"slow", "fast"} {
		mustProduce(t, c, recs(topic, 0, 5, topic)...)
	}
	stop := c.DelayFetches("slow", time.Hour)
	col := newCollector(t, openSource(t, Config{Brokers: c.Addrs(), Topics: []string{"slow", "fast"}}))
	slow := record.TopicPartition{Topic: "slow", Partition: 0}
	fast := record.TopicPartition{Topic: "fast", Partition: 0}
	col.until("the fast topic", func() bool { return len(col.values[fast]) == 5 })
	col.pollFor(300 * time.Millisecond)
	for _, pf := range col.fetches {
		if pf.TopicPartition == slow {
			t.Fatalf("delayed topic reported %+v while delayed", pf)
		}
	}
	if col.caughtUp() {
		t.Fatal("caught up while a topic had delivered nothing")
	}
	stop()
	col.until("caught up after the delay", col.caughtUp)
	if len(col.values[slow]) != 5 {
		t.Fatalf("slow topic delivered %q", col.values[slow])
	}
}

// Paused partitions deliver nothing until resumed.
func TestPauseResume(t *testing.T) {
	c := startCluster(t, embedded.WithTopic("p", 2))
	src := openSource(t, Config{Brokers: c.Addrs(), Topics: []string{"p"}})
	p0 := record.TopicPartition{Topic: "p", Partition: 0}
	p1 := record.TopicPartition{Topic: "p", Partition: 1}
	src.Pause(p0)
	for _, p := range []int32{0, 1} {
		mustProduce(t, c, recs("p", p, 3, "v")...)
	}
	col := newCollector(t, src)
	col.until("partition 1", func() bool { return len(col.values[p1]) == 3 })
	col.pollFor(300 * time.Millisecond)
	if len(col.values[p0]) != 0 || col.pos[p0] != 0 {
		t.Fatalf("paused partition delivered %q (position %d)", col.values[p0], col.pos[p0])
	}
	src.Resume(p0)
	col.until("partition 0 after resume", func() bool { return len(col.values[p0]) == 3 })
}

func TestTLS(t *testing.T) {
	cert, err := embedded.SelfSignedTLS()
	if err != nil {
		t.Fatal(err)
	}
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, cert.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	c := startCluster(t, embedded.WithTopic("sec", 1), embedded.WithTLS(cert.Server, cert.Client))
	mustProduce(t, c, recs("sec", 0, 3, "tls")...)
	col := newCollector(t, openSource(t, Config{Brokers: c.Addrs(), Topics: []string{"sec"}, TLS: TLS{Enable: true, CAFile: ca}}))
	col.until("caught up over TLS", col.caughtUp)
	if n := len(col.values[record.TopicPartition{Topic: "sec"}]); n != 3 {
		t.Fatalf("got %d records over TLS, want 3", n)
	}

	// Without trusting the certificate, the connection must fail.
	s, err := New(Config{Brokers: c.Addrs(), Topics: []string{"sec"}, TLS: TLS{Enable: true}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(bg, hangGuard)
	defer cancel()
	if err := s.Open(ctx); err == nil {
		_ = s.Close()
		t.Fatal("Open succeeded against an untrusted certificate")
	}
}

func TestSASL(t *testing.T) {
	for _, mech := range []string{SASLPlain, SASLScramSHA256, SASLScramSHA512} {
		t.Run(mech, func(t *testing.T) {
			c := startCluster(t, embedded.WithTopic("auth", 1), embedded.WithUser(mech, "alice", "s3cret"))
			mustProduce(t, c, recs("auth", 0, 3, "sasl")...)
			core, logs := observer.New(zapcore.DebugLevel)
			col := newCollector(t, openSource(t, Config{
				Brokers: c.Addrs(), Topics: []string{"auth"}, Logger: zap.New(core),
				SASL: SASL{Mechanism: mech, User: "alice", Password: "s3cret"},
			}))
			col.until("caught up with SASL", col.caughtUp)
			if n := len(col.values[record.TopicPartition{Topic: "auth"}]); n != 3 {
				t.Fatalf("got %d records, want 3", n)
			}
			for _, e := range logs.All() {
				for _, f := range e.Context {
					if strings.Contains(f.String, "s3cret") {
						t.Fatalf("password logged: %+v", e)
					}
				}
			}

			s, err := New(Config{Brokers: c.Addrs(), Topics: []string{"auth"},
				SASL: SASL{Mechanism: mech, User: "alice", Password: "wrong"}})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(bg, hangGuard)
			defer cancel()
			if err := s.Open(ctx); err == nil {
				_ = s.Close()
				t.Fatal("Open succeeded with a wrong password")
			}
		})
	}
}

func TestValidateNamesFields(t *testing.T) {
	cfg := Config{Brokers: []string{"nohostport"}, Start: "middle", Isolation: "dirty",
		SASL: SASL{Mechanism: "GSSAPI"}, TLS: TLS{CertFile: "c.pem"}, PartitionMaxRecords: -1, EvidenceInterval: -time.Second}
	cfg.EnsureDefaults()
	err := cfg.Validate()
	if err == nil {
		t.Fatal("invalid config accepted")
	}
	for _, field := range []string{"brokers[0]", "topics", "start", "isolation", "sasl.mechanism", "tls.key_file", "tls.enabled", "partition_max_records", "evidence_interval"} {
		if !strings.Contains(err.Error(), field+":") {
			t.Errorf("error does not name %s: %v", field, err)
		}
	}
	good := Config{Brokers: []string{"localhost:9092"}, Topics: []string{"t"}}
	good.EnsureDefaults()
	if err := good.Validate(); err != nil {
		t.Fatalf("defaulted config rejected: %v", err)
	}
}

// TestDocumentedDefaults holds EnsureDefaults to the defaults Config's
// field comments state.
func TestDocumentedDefaults(t *testing.T) {
	var c Config
	c.EnsureDefaults()
	got := []any{c.FetchMaxWait, c.FetchMaxBytes, c.PartitionMaxBytes, c.PartitionMaxRecords, c.EvidenceInterval, c.RetryBackoff, c.StartupTimeout}
	want := []any{50 * time.Millisecond, int32(64 << 20), int32(1 << 20), 768, time.Second, 100 * time.Millisecond, 30 * time.Second}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("default %d: %v, want %v as documented", i, got[i], want[i])
		}
	}
}

// TestCheckBroker: the one check of a broker address (the job file's source
// and sink brokers use it too).
func TestCheckBroker(t *testing.T) {
	for _, ok := range []string{"localhost:9092", "10.0.0.1:1", "[::1]:9092", "kafka-1.internal:65535"} {
		if err := CheckBroker(ok); err != nil {
			t.Errorf("CheckBroker(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "nohost", "host:", ":9092", "host:port", "host:0", "host:65536", "::1:9092"} {
		if err := CheckBroker(bad); err == nil || !strings.Contains(err.Error(), "is not host:port") {
			t.Errorf("CheckBroker(%q) = %v, want an error", bad, err)
		}
	}
}
