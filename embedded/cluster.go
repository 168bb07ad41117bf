package embedded

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// SASL mechanism names accepted by WithUser.
const (
	MechanismPlain       = "PLAIN"
	MechanismScramSHA256 = "SCRAM-SHA-256"
	MechanismScramSHA512 = "SCRAM-SHA-512"
)

// User is one SASL user of the cluster.
type User struct {
	Mechanism string // PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512
	Name      string
	Password  string
}

type config struct {
	listen      string
	brokers     int
	partitions  int
	topics      map[string]int32
	tls         *tls.Config
	clientTLS   *tls.Config
	users       []User
	autoCreate  bool
	kfakeExtras []kfake.Opt
	registry    string // schema registry listen address; "": none
}

// Option configures Start.
type Option func(*config)

// WithListen sets the address of the first broker, "host:port". Further
// brokers listen on the following ports (port+1, …), or on random ports when
// port is 0. Default "127.0.0.1:0".
func WithListen(addr string) Option { return func(c *config) { c.listen = addr } }

// WithBrokers sets the number of brokers. Default 1.
func WithBrokers(n int) Option { return func(c *config) { c.brokers = n } }

// WithDefaultPartitions sets the partition count of auto-created topics and
// of CreateTopic with partitions ≤ 0. Default 3.
func WithDefaultPartitions(n int) Option { return func(c *config) { c.partitions = n } }

// WithTopic pre-creates topic with the given number of partitions
// (≤ 0: the default). May be repeated.
func WithTopic(name string, partitions int32) Option {
	return func(c *config) {
		if c.topics == nil {
			c.topics = make(map[string]int32)
		}
		c.topics[name] = partitions
	}
}

// WithAutoCreateTopics lets metadata requests create unknown topics.
// Default off.
func WithAutoCreateTopics() Option { return func(c *config) { c.autoCreate = true } }

// WithTLS makes every listener speak TLS with server. client is the
// configuration the helpers use to connect (it must trust server's
// certificate); see SelfSignedTLS.
func WithTLS(server, client *tls.Config) Option {
	return func(c *config) { c.tls, c.clientTLS = server, client }
}

// WithUser enables SASL and adds a user. May be repeated. The helpers
// authenticate as the first user.
func WithUser(mechanism, name, password string) Option {
	return func(c *config) { c.users = append(c.users, User{mechanism, name, password}) }
}

// WithKfakeOptions passes raw kfake options through, for what this package
// does not wrap.
func WithKfakeOptions(opts ...kfake.Opt) Option {
	return func(c *config) { c.kfakeExtras = append(c.kfakeExtras, opts...) }
}

// Cluster is a running in-process cluster.
type Cluster struct {
	kf  *kfake.Cluster
	cfg config
	reg *Registry // nil without WithSchemaRegistry

	mu      sync.Mutex
	admin   *kgo.Client
	closed  bool
	cleanup []func()
}

// Start starts a cluster. See the Options for defaults.
func Start(opts ...Option) (*Cluster, error) {
	cfg := config{listen: "127.0.0.1:0", brokers: 1, partitions: 3}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.brokers < 1 {
		return nil, fmt.Errorf("embedded: brokers must be ≥ 1, got %d", cfg.brokers)
	}
	host, portStr, err := net.SplitHostPort(cfg.listen)
	if err != nil {
		return nil, fmt.Errorf("embedded: listen address %q: %w", cfg.listen, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return nil, fmt.Errorf("embedded: listen port %q: %w", portStr, err)
	}
	kopts := []kfake.Opt{
		kfake.NumBrokers(cfg.brokers),
		kfake.DefaultNumPartitions(cfg.partitions),
		kfake.ListenFn(func(network, address string) (net.Listener, error) {
			_, p, err := net.SplitHostPort(address)
			if err != nil {
				return nil, err
			}
			return net.Listen(network, net.JoinHostPort(host, p))
		}),
	}
	if port != 0 {
		ports := make([]int, cfg.brokers)
		for i := range ports {
			ports[i] = port + i
		}
		kopts = append(kopts, kfake.Ports(ports...))
	}
	if cfg.autoCreate {
		kopts = append(kopts, kfake.AllowAutoTopicCreation())
	}
	if cfg.tls != nil {
		kopts = append(kopts, kfake.TLS(cfg.tls))
	}
	if len(cfg.users) > 0 {
		kopts = append(kopts, kfake.EnableSASL())
		for _, u := range cfg.users {
			if _, err := mechanism(u); err != nil {
				return nil, err
			}
			kopts = append(kopts, kfake.Superuser(u.Mechanism, u.Name, u.Password))
		}
	}
	for name, p := range cfg.topics {
		kopts = append(kopts, kfake.SeedTopics(p, name))
	}
	kopts = append(kopts, cfg.kfakeExtras...)
	kf, err := kfake.NewCluster(kopts...)
	if err != nil {
		return nil, fmt.Errorf("embedded: %w", err)
	}
	c := &Cluster{kf: kf, cfg: cfg}
	if cfg.registry != "" {
		if c.reg, err = StartRegistry(cfg.registry); err != nil {
			kf.Close()
			return nil, err
		}
	}
	return c, nil
}

func mechanism(u User) (sasl.Mechanism, error) {
	switch u.Mechanism {
	case MechanismPlain:
		return plain.Auth{User: u.Name, Pass: u.Password}.AsMechanism(), nil
	case MechanismScramSHA256:
		return scram.Auth{User: u.Name, Pass: u.Password}.AsSha256Mechanism(), nil
	case MechanismScramSHA512:
		return scram.Auth{User: u.Name, Pass: u.Password}.AsSha512Mechanism(), nil
	}
	return nil, fmt.Errorf("embedded: unknown SASL mechanism %q (want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)", u.Mechanism)
}

// Addrs returns the "host:port" of every broker.
func (c *Cluster) Addrs() []string { return c.kf.ListenAddrs() }

// Registry returns the cluster's schema registry (WithSchemaRegistry), or
// nil.
func (c *Cluster) Registry() *Registry { return c.reg }

// RegistryURL returns the schema registry's URL, or "" without one.
func (c *Cluster) RegistryURL() string {
	if c.reg == nil {
		return ""
	}
	return c.reg.URL()
}

// Kfake returns the underlying kfake cluster, for hooks this package does
// not wrap.
func (c *Cluster) Kfake() *kfake.Cluster { return c.kf }

// ClientOptions returns kgo options that reach this cluster (seeds, TLS and
// the first SASL user).
func (c *Cluster) ClientOptions() []kgo.Opt {
	opts := []kgo.Opt{kgo.SeedBrokers(c.Addrs()...)}
	if c.cfg.clientTLS != nil {
		opts = append(opts, kgo.DialTLSConfig(c.cfg.clientTLS.Clone()))
	}
	if len(c.cfg.users) > 0 {
		m, _ := mechanism(c.cfg.users[0]) // validated in Start
		opts = append(opts, kgo.SASL(m))
	}
	return opts
}

// ErrClosed is returned by the helpers after Close.
var ErrClosed = errors.New("embedded: cluster closed")

// adminClient returns the shared helper client, creating it on first use.
func (c *Cluster) adminClient() (*kgo.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	if c.admin == nil {
		cl, err := kgo.NewClient(c.ClientOptions()...)
		if err != nil {
			return nil, err
		}
		c.admin = cl
	}
	return c.admin, nil
}

// onClose registers fn to run at Close.
func (c *Cluster) onClose(fn func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cleanup = append(c.cleanup, fn)
}

// Close stops the cluster and every helper client. Idempotent.
func (c *Cluster) Close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	admin, cleanup := c.admin, c.cleanup
	c.admin, c.cleanup = nil, nil
	c.mu.Unlock()
	for _, fn := range cleanup {
		fn()
	}
	if admin != nil {
		admin.Close()
	}
	if c.reg != nil {
		c.reg.Close()
	}
	c.kf.Close()
}

// Run starts a cluster listening on addr and blocks until ctx is done, then
// closes it. ready, if not nil, is called with the cluster once it listens
// (to print the addresses). It returns nil when ctx ends it.
func Run(ctx context.Context, addr string, ready func(*Cluster), opts ...Option) error {
	c, err := Start(append([]Option{WithListen(addr)}, opts...)...)
	if err != nil {
		return err
	}
	defer c.Close()
	if ready != nil {
		ready(c)
	}
	<-ctx.Done()
	return nil
}
