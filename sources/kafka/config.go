package kafka

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/signalbox/signalbox/internal/fielderr"
	"github.com/signalbox/signalbox/internal/topicpattern"
)

// Start values.
const (
	StartEarliest = "earliest"
	StartLatest   = "latest"
)

// Isolation values.
const (
	ReadCommitted   = "read_committed"
	ReadUncommitted = "read_uncommitted"
)

// SASL mechanisms.
const (
	SASLPlain       = "PLAIN"
	SASLScramSHA256 = "SCRAM-SHA-256"
	SASLScramSHA512 = "SCRAM-SHA-512"
	SASLOAuthBearer = "OAUTHBEARER"
)

// TLS configures an encrypted connection. All files are PEM.
type TLS struct {
	Enable             bool   // default false
	CAFile             string // default: the system roots
	CertFile, KeyFile  string // client certificate; both or neither
	InsecureSkipVerify bool   // default false; for tests only
}

// SASL configures authentication. The caller resolves the password and a
// fixed token (e.g. from an environment variable); neither is ever logged.
type SASL struct {
	Mechanism string // "" (off), PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER
	// User and Password: PLAIN and SCRAM.
	User     string
	Password string
	// Token or TokenFile: OAUTHBEARER, one of them. TokenFile is read
	// again at every authentication (each new connection, and each
	// re-authentication the broker asks for), so a token that an outside
	// agent rotates in the file (a Kubernetes projected token, a sidecar)
	// is picked up without a restart.
	Token     string
	TokenFile string
}

// Config configures a Source. The zero value of every field but Brokers and
// Topics takes the documented default (see EnsureDefaults): a struct cannot
// tell a field left out from one set to 0, so a field that can be turned
// off (DiscoveryInterval) is off when negative. The root package's options,
// which can tell, use 0 for off instead (signalbox.Option).
type Config struct {
	Brokers []string // bootstrap "host:port" list; required
	// Topics are the topics to read, every partition. Topics or
	// TopicPatterns is required.
	Topics []string
	// TopicPatterns are regular expressions (Go syntax, anchored: the
	// whole name must match); every topic whose name matches one is read,
	// found at Open and then every DiscoveryInterval.
	TopicPatterns []string
	// Tables are topics of Topics read whole (signalbox.WithTables): in a
	// group, the task balancer gives every member every partition of
	// them, whatever the tasks; they always start at the earliest offset,
	// whatever Start, a committed offset or StartAt say, so that every
	// run, and every member, rebuilds each table from its whole topic.
	Tables []string
	// DiscoveryInterval is how often the source looks for new partitions
	// of its topics, new topics matching TopicPatterns and deleted topics.
	// The evidence clock (record.Fetch.At) never passes the start of the
	// last completed look plus one interval (invariant 9, design G7): a
	// record written into a new partition is not late unless its producer
	// lagged by more than the delay minus the interval, and while looks
	// fail the watermark is held. Default 1s; negative disables discovery
	// (the partitions found at Open are read, in group mode those of each
	// rebalance). From MinDiscoveryInterval (100ms) to 1h.
	DiscoveryInterval time.Duration
	// GroupInstanceID makes the member static (Kafka's
	// group.instance.id, KIP-345): a restart within SessionTimeout
	// takes its partitions back without a rebalance. Unique per instance;
	// requires Group. Default empty (dynamic membership).
	GroupInstanceID string
	// Group is the consumer group. Empty: no group, every partition of
	// Topics is assigned statically and Commit is a no-op.
	Group string
	// Start is where a partition without a committed offset (or a
	// StartAt offset) starts: "earliest" (default), "latest", a time
	// (RFC 3339, "2026-03-01T00:00:00Z") or a duration before Open ("-7d",
	// "-36h", "-90m"). From a time, each partition starts at the first
	// offset whose Kafka timestamp is at or after it (ListOffsets by
	// timestamp), or at its end when there is none. A committed offset
	// outranks it, as Kafka's auto.offset.reset applies only without one:
	// a restart resumes where the job stopped, not at the range's start
	// again. See ParseStart.
	Start string
	// Isolation is "read_committed" (default) or "read_uncommitted".
	Isolation string
	ClientID  string // default "signalbox"
	TLS       TLS
	SASL      SASL
	// FetchMaxWait is how long a broker may hold a fetch open waiting for
	// data. Each answer is fresh evidence (record.Fetch.At), so this is
	// also how long a parked record may wait beyond the delay once its
	// partitions fall quiet. Default 50ms (Kafka's consumers use 500ms).
	FetchMaxWait time.Duration
	// FetchMaxBytes bounds one fetch response. Default 64 MiB.
	FetchMaxBytes int32
	// PartitionMaxBytes caps one partition of a fetch response (it grows
	// automatically for a larger batch). Default 1 MiB, as Kafka's own
	// consumers. Within it, PartitionMaxRecords sizes each request.
	PartitionMaxBytes int32
	// PartitionMaxRecords is about how many records one fetch answer may
	// carry for one partition: the fetcher sizes each partition's byte
	// limit (within PartitionMaxBytes) from the bytes per record it has
	// seen: the broker counts bytes compressed, so bytes alone can hand
	// one partition hours of event time in one answer. Default 768 (a
	// Kafka consumer's max.poll.records is 500; Kafka Streams buffers 1000
	// records per partition). Smaller keeps the parked set smaller: a
	// record array stays until its last record is released, so each
	// partition pins one to two answers' worth of records (their arrays
	// and decompressed batches). Larger makes fewer, bigger requests. The
	// estimate counts delivered records only, so aborted transactions or
	// an answer cut short by FetchMaxBytes make one request too large; the
	// next answer corrects it.
	PartitionMaxRecords int
	// EvidenceInterval is how often paused partitions get fresh end-offset
	// evidence by ListOffsets. Default 1s; it must be positive. While a
	// partition is paused, the evidence clock (record.Fetch.At) is its last
	// ListOffsets, so this bounds how far that clock lags: without it a
	// paused partition would freeze the clock.
	EvidenceInterval time.Duration
	// RetryBackoff is the first delay before re-fetching a failed
	// partition; it doubles up to 20× on repeated failure. Default 100ms.
	RetryBackoff time.Duration
	// RevokeTimeout bounds how long a rebalance waits for the caller to
	// take a Revoked (group mode). Default 30s.
	RevokeTimeout time.Duration
	// StartupTimeout bounds the whole start-up, one deadline shared by
	// every step: connecting, metadata, the end-offset snapshot and, in
	// group mode, finding and asking the coordinator, the join, the
	// committed-offset fetch and the snapshot of the first assignment.
	// Only the join's wait for the group's other members to rejoin is not
	// counted, up to RebalanceTimeout: the coordinator has answered by
	// then, and Kafka holds a JoinGroup that long. A broker that does not
	// answer in time fails Open (static mode) or the first Poll (group
	// mode) with ErrStartupTimeout, naming what was waited for and from
	// which broker. A deadline carried by Open's context
	// (internal/startup) is kept when it is earlier. Default 30s.
	StartupTimeout time.Duration
	// SessionTimeout, HeartbeatInterval and RebalanceTimeout are the
	// consumer-group timings (group mode). Defaults: 10s, 3s and 60s
	// (DefaultSessionTimeout and the rest). A member that dies is replaced
	// after SessionTimeout, which
	// brokers bound by group.min.session.timeout.ms (6s by default).
	SessionTimeout    time.Duration
	HeartbeatInterval time.Duration
	RebalanceTimeout  time.Duration
	// Logger receives the source's logs. Default: a no-op logger.
	Logger *zap.Logger
}

// DefaultPartitionMaxRecords is Config.PartitionMaxRecords's default: each
// partition pins one to two answers' worth of record arrays, so smaller
// answers lower peak RSS and cost more requests; 768 keeps a 12M replay's
// peak within 1.3× of a 1M replay's (figures: docs/bench.md, "Notes on the
// scaling figures", fetch answers of 768 records).
const DefaultPartitionMaxRecords = 768

// MinDiscoveryInterval is the shortest DiscoveryInterval: each look is a
// metadata request, and shorter intervals cost the job and the broker a core.
const MinDiscoveryInterval = 100 * time.Millisecond

// DefaultDiscoveryInterval is Config.DiscoveryInterval's default: well below
// the delays jobs use (seconds to minutes), and one small metadata request
// per interval.
const DefaultDiscoveryInterval = time.Second

// DefaultStartupTimeout is Config.StartupTimeout's default. A refused
// connection or a rejected authentication fails at once; this bounds a
// cluster that accepts connections and does not answer.
const DefaultStartupTimeout = 30 * time.Second

// The consumer-group timings' defaults (Config.SessionTimeout,
// HeartbeatInterval, RebalanceTimeout).
const (
	DefaultSessionTimeout    = 10 * time.Second
	DefaultHeartbeatInterval = 3 * time.Second
	DefaultRebalanceTimeout  = 60 * time.Second
)

// EnsureDefaults fills every unset field with its default.
func (c *Config) EnsureDefaults() {
	if c.Start == "" {
		c.Start = StartEarliest
	}
	if c.Isolation == "" {
		c.Isolation = ReadCommitted
	}
	if c.ClientID == "" {
		c.ClientID = "signalbox"
	}
	if c.FetchMaxWait == 0 {
		c.FetchMaxWait = 50 * time.Millisecond
	}
	if c.FetchMaxBytes == 0 {
		c.FetchMaxBytes = 64 << 20
	}
	if c.PartitionMaxBytes == 0 {
		c.PartitionMaxBytes = 1 << 20
	}
	if c.PartitionMaxRecords == 0 {
		c.PartitionMaxRecords = DefaultPartitionMaxRecords
	}
	if c.EvidenceInterval == 0 {
		c.EvidenceInterval = time.Second
	}
	if c.RetryBackoff == 0 {
		c.RetryBackoff = 100 * time.Millisecond
	}
	if c.RevokeTimeout == 0 {
		c.RevokeTimeout = 30 * time.Second
	}
	if c.DiscoveryInterval == 0 {
		c.DiscoveryInterval = DefaultDiscoveryInterval
	}
	if c.StartupTimeout == 0 {
		c.StartupTimeout = DefaultStartupTimeout
	}
	if c.SessionTimeout == 0 {
		c.SessionTimeout = DefaultSessionTimeout
	}
	if c.HeartbeatInterval == 0 {
		c.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if c.RebalanceTimeout == 0 {
		c.RebalanceTimeout = DefaultRebalanceTimeout
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
}

// Validate reports every invalid field, each named (as the job file names
// it) and joined in one error. It checks the config as given; call
// EnsureDefaults first to accept zero values.
func (c *Config) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("kafka: %w", fielderr.New(field, format, args...)))
	}
	if len(c.Brokers) == 0 {
		bad("brokers", "at least one broker is required")
	}
	for i, b := range c.Brokers {
		if err := CheckBroker(b); err != nil {
			bad(fmt.Sprintf("brokers[%d]", i), "%v", err)
		}
	}
	if len(c.Topics) == 0 && len(c.TopicPatterns) == 0 {
		bad("topics", "at least one topic or topic pattern is required")
	}
	for i, p := range c.TopicPatterns {
		if _, err := topicpattern.Compile(p); err != nil {
			bad(fmt.Sprintf("topic_patterns[%d]", i), "%v", err)
		}
	}
	if c.GroupInstanceID != "" && c.Group == "" {
		bad("group_instance_id", "requires a group")
	}
	for i, t := range c.Tables {
		if !slices.Contains(c.Topics, t) {
			bad(fmt.Sprintf("tables[%d]", i), "%q is not one of topics: a table's topic is read as one", t)
		}
	}
	for i, t := range c.Topics {
		if err := topicpattern.CheckName(t); err != nil {
			bad(fmt.Sprintf("topics[%d]", i), "%v", err)
		}
	}
	if _, _, err := ParseStart(c.Start, time.Now()); err != nil {
		bad("start", "%v", err)
	}
	if c.Isolation != ReadCommitted && c.Isolation != ReadUncommitted {
		bad("isolation", "%q is not one of %s, %s", c.Isolation, ReadCommitted, ReadUncommitted)
	}
	// The ranges of the sizes and intervals: beyond them a value costs
	// memory or a core, or means nothing.
	if c.DiscoveryInterval >= 0 && (c.DiscoveryInterval < MinDiscoveryInterval || c.DiscoveryInterval > time.Hour) {
		bad("discovery_interval", "%v is out of range: must be from 100ms to 1h", c.DiscoveryInterval)
	}
	if c.FetchMaxWait < 0 || c.FetchMaxWait > 10*time.Second {
		bad("fetch_max_wait", "%v is out of range: must be from 0 to 10s", c.FetchMaxWait)
	}
	if c.FetchMaxBytes < 1 || c.FetchMaxBytes > 1<<30 {
		bad("fetch_max_bytes", "%d bytes is out of range: must be from 1 B to 1 GiB", c.FetchMaxBytes)
	}
	if c.PartitionMaxBytes < 1 || c.PartitionMaxBytes > 1<<30 {
		bad("partition_max_bytes", "%d bytes is out of range: must be from 1 B to 1 GiB", c.PartitionMaxBytes)
	}
	if c.RetryBackoff < time.Millisecond || c.RetryBackoff > time.Minute {
		bad("retry_backoff", "%v is out of range: must be from 1ms to 1m", c.RetryBackoff)
	}
	if c.PartitionMaxRecords < 1 || c.PartitionMaxRecords > 1_000_000 {
		bad("partition_max_records", "%d is out of range: must be from 1 to 1000000", c.PartitionMaxRecords)
	}
	if c.StartupTimeout < 100*time.Millisecond || c.StartupTimeout > time.Hour {
		bad("startup_timeout", "%v is out of range: must be from 100ms to 1h", c.StartupTimeout)
	}
	if c.EvidenceInterval < time.Millisecond || c.EvidenceInterval > time.Minute {
		bad("evidence_interval", "%v is out of range: must be from 1ms to 1m: a paused partition needs end-offset evidence", c.EvidenceInterval)
	}
	for _, fe := range fielderr.All(c.TLS.Validate()) {
		bad("tls."+fe.Field, "%s", fe.Msg)
	}
	switch s := c.SASL; s.Mechanism {
	case "":
		if s.User != "" || s.Password != "" || s.Token != "" || s.TokenFile != "" {
			bad("sasl.mechanism", "required when user, password or a token is set")
		}
	case SASLPlain, SASLScramSHA256, SASLScramSHA512:
		if s.User == "" {
			bad("sasl.user", "required with mechanism %s", s.Mechanism)
		}
		if s.Token != "" || s.TokenFile != "" {
			bad("sasl.token_file", "a token is for mechanism %s, not %s", SASLOAuthBearer, s.Mechanism)
		}
	case SASLOAuthBearer:
		switch {
		case s.Token == "" && s.TokenFile == "":
			bad("sasl.token_file", "required with mechanism %s, unless token_env is set", s.Mechanism)
		case s.Token != "" && s.TokenFile != "":
			bad("sasl.token_env", "set token_env or token_file, not both")
		}
		if s.User != "" || s.Password != "" {
			bad("sasl.user", "not used with mechanism %s: the token names the principal", s.Mechanism)
		}
	default:
		bad("sasl.mechanism", "%q is not one of %s, %s, %s, %s", s.Mechanism, SASLPlain, SASLScramSHA256, SASLScramSHA512, SASLOAuthBearer)
	}
	return errors.Join(errs...)
}

// CheckBroker reports whether addr is a broker address, host:port with a
// port number: the one check of a broker address, for the source's and the
// sinks' brokers alike.
func CheckBroker(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return fmt.Errorf("%q is not host:port", addr)
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
		return fmt.Errorf("%q is not host:port: the port must be a number from 1 to 65535", addr)
	}
	return nil
}

func (c *Config) readCommitted() bool { return c.Isolation == ReadCommitted }

// Config is the *tls.Config t describes, certificates read from their files.
func (t *TLS) Config() (*tls.Config, error) { return t.config() }

// Validate reports the settings of t that do not go together, each naming
// its field as a job file's tls block does (enabled, cert_file,
// key_file): the one copy of these rules, which Config.Validate and the
// job file's schema_registry.tls apply. It reads no file.
func (t TLS) Validate() error {
	var errs []error
	bad := func(field, msg string) { errs = append(errs, fielderr.New(field, "%s", msg)) }
	if !t.Enable && (t.CAFile != "" || t.CertFile != "" || t.KeyFile != "" || t.InsecureSkipVerify) {
		bad("enabled", "TLS files or options are set but enabled is false")
	}
	if t.CertFile != "" && t.KeyFile == "" {
		bad("key_file", "required with cert_file")
	}
	if t.KeyFile != "" && t.CertFile == "" {
		bad("cert_file", "required with key_file")
	}
	return errors.Join(errs...)
}

func (t *TLS) config() (*tls.Config, error) {
	tc := &tls.Config{InsecureSkipVerify: t.InsecureSkipVerify, MinVersion: tls.VersionTLS12} //nolint:gosec // opt-in, documented
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("kafka: tls.ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("kafka: tls.ca_file: no certificate in %s", t.CAFile)
		}
		tc.RootCAs = pool
	}
	if t.CertFile != "" {
		pair, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("kafka: tls.cert_file: %w", err)
		}
		tc.Certificates = []tls.Certificate{pair}
	}
	return tc, nil
}

// ParseStart resolves a Config.Start value against now: for a time or a
// duration before now it returns that instant and true; for "earliest" and
// "latest" false. A duration is negative, in Go's syntax ("-36h", "-90m")
// or whole days ("-7d").
func ParseStart(start string, now time.Time) (time.Time, bool, error) {
	switch start {
	case StartEarliest, StartLatest:
		return time.Time{}, false, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, start); err == nil {
		return t, true, nil
	}
	if d, ok := parseBefore(start); ok {
		if d >= 0 {
			return time.Time{}, false, fmt.Errorf("%q is not before now: a duration before now is negative, such as -7d or -36h", start)
		}
		return now.Add(d), true, nil
	}
	return time.Time{}, false, fmt.Errorf("%q is not %s, %s, an RFC 3339 time (2026-03-01T00:00:00Z) or a duration before now (-7d, -36h)",
		start, StartEarliest, StartLatest)
}

// parseBefore parses a Go duration or a whole number of days ("-7d").
func parseBefore(s string) (time.Duration, bool) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseInt(days, 10, 32)
		if err != nil || n > 100*365 || n < -100*365 {
			return 0, false
		}
		return time.Duration(n) * 24 * time.Hour, true
	}
	d, err := time.ParseDuration(s)
	return d, err == nil
}
