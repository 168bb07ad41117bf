package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/internal/progress"
	"github.com/signalbox/signalbox/internal/version"
	"github.com/signalbox/signalbox/metrics"
	"github.com/signalbox/signalbox/tables"
)

// DefaultAddr is the admin address when the job and the flags name none:
// the loopback interface, any free port.
const DefaultAddr = "127.0.0.1:0"

// Off is the address value that turns the admin server off.
const Off = "off"

// DefaultStallAfter is how long /healthz tolerates an engine loop that
// publishes nothing before it answers 503.
const DefaultStallAfter = time.Minute

// The connection timeouts.
const (
	writeTimeout = 30 * time.Second
	idleTimeout  = 60 * time.Second
)

// readTimeout is the connection read timeout: a variable only so that the
// test of idle connections (export_test.go) need not wait 10 s.
var readTimeout = 10 * time.Second

// Options configure the server.
type Options struct {
	// Addr is host:port. An empty host means the loopback interface.
	Addr string
	// Setting names where Addr came from, for errors ("admin.addr",
	// "--admin-addr").
	Setting string
	// Stats returns the pipeline's snapshot (Pipeline.Stats).
	Stats func() signalbox.Stats
	// Tables, when set, are the sizes of the job's tables
	// (tables.Set.Sizes), exported by /metrics (metrics.TableCollector)
	// and /status (progress.Status.Tables).
	Tables func() []tables.Size
	// StallAfter: see DefaultStallAfter (used when zero).
	StallAfter time.Duration
	// Now is the wall clock; nil means time.Now.
	Now    func() time.Time
	Logger *zap.Logger
}

// Server is a running admin server.
type Server struct {
	// URL is http://host:port with the port actually bound.
	URL string
	srv *http.Server
	log *zap.Logger
}

// ListenAddr resolves addr as Start binds it: an empty host becomes
// 127.0.0.1. It checks the syntax only.
func ListenAddr(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("%q is not host:port (e.g. 127.0.0.1:9321, :0 for any free loopback port, or %s)", addr, Off)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return "", fmt.Errorf("%q: port %q is not a number between 0 and 65535", addr, port)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), nil
}

// network is the network Start listens on for addr (as ListenAddr
// resolves it): an IPv4 address binds IPv4 only, as named, never the
// dual-stack wildcard Go makes of 0.0.0.0 on "tcp".
func network(addr string) string {
	host, _, _ := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); ip != nil && ip.To4() != nil {
		return "tcp4"
	}
	return "tcp"
}

// Start listens on o.Addr and serves until Close.
func Start(o Options) (*Server, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.StallAfter <= 0 {
		o.StallAfter = DefaultStallAfter
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	addr, err := ListenAddr(o.Addr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", o.Setting, err)
	}
	ln, err := net.Listen(network(addr), addr)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, fmt.Errorf("%s: %s is already in use: name another port, or port 0 for any free one", o.Setting, addr)
		}
		return nil, fmt.Errorf("%s: %w", o.Setting, err)
	}
	host, _, _ := net.SplitHostPort(addr)
	s := &Server{
		URL: "http://" + net.JoinHostPort(host, strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)),
		srv: &http.Server{Handler: Handler(o), ReadHeaderTimeout: readTimeout, ReadTimeout: readTimeout,
			WriteTimeout: writeTimeout, IdleTimeout: idleTimeout},
		log: o.Logger,
	}
	fields := []zap.Field{zap.String("url", s.URL), zap.String("endpoints", "/metrics /status /healthz /readyz")}
	if ip := ln.Addr().(*net.TCPAddr).IP; !ip.IsLoopback() {
		o.Logger.Warn("admin server listening on a non-loopback interface: reachable from other hosts", fields...)
	} else {
		o.Logger.Info("admin server listening", fields...)
	}
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			o.Logger.Warn("admin server stopped", zap.Error(err))
		}
	}()
	return s, nil
}

// Close stops the server, waiting a few seconds for requests in flight.
func (s *Server) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		s.log.Debug("admin server shutdown", zap.Error(err))
	}
}

// Handler serves /metrics, /status, /healthz and /readyz for o.Stats; o.Now
// must be set.
func Handler(o Options) http.Handler {
	reg := prometheus.NewRegistry()
	build := version.Get()
	reg.MustRegister(metrics.NewCollector(o.Stats, o.Now), metrics.NewBuildInfo(build.Version, build.Commit, build.GoVersion),
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if o.Tables != nil {
		reg.MustRegister(metrics.NewTableCollector(o.Tables))
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorLog: zap.NewStdLog(o.Logger)}))
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		st := progress.FromStats(o.Stats())
		if o.Tables != nil {
			st.Tables = progress.TablesOf(o.Tables())
		}
		enc.Encode(st) //nolint:errcheck // the client went away
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		ok, why := Healthy(o.Stats(), o.Now(), o.StallAfter)
		answer(w, ok, why)
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		ok, why := Ready(o.Stats())
		answer(w, ok, why)
	})
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "signalbox admin: /metrics /status /healthz /readyz")
	})
	return mux
}

// Healthy reports whether the process is alive and its engine loop turning:
// false only when the loop published before and has not for stallAfter.
func Healthy(s signalbox.Stats, now time.Time, stallAfter time.Duration) (bool, string) {
	if s.Published.IsZero() {
		return true, "starting: the engine loop has not started yet"
	}
	if d := now.Sub(s.Published); d > stallAfter {
		return false, fmt.Sprintf("the engine loop has published nothing for %s (more than %s)", d.Round(time.Second), stallAfter)
	}
	return true, "ok"
}

// Ready reports whether the job is ready: every sink open, and, in a
// consumer group, the member joined (whether or not the group gave it a
// partition: with more members than tasks some own none, and a rolling
// update must not wait on them), else at least one partition assigned.
func Ready(s signalbox.Stats) (bool, string) {
	var not []string
	if !s.SinksOpen {
		not = append(not, "the sinks are not open")
	}
	switch {
	case s.Group != "" && s.Member == nil:
		not = append(not, fmt.Sprintf("not a member of group %s now (joining, or rebalancing)", s.Group))
	case s.Group == "" && len(s.Partitions) == 0:
		not = append(not, "no partition is assigned")
	}
	if len(not) > 0 {
		return false, "not ready: " + strings.Join(not, ", ")
	}
	if s.Group != "" {
		return true, fmt.Sprintf("ready: sinks open, member of group %s (generation %d), %d partitions assigned", s.Group, s.Member.Generation, len(s.Partitions))
	}
	return true, fmt.Sprintf("ready: sinks open, %d partitions assigned", len(s.Partitions))
}

func answer(w http.ResponseWriter, ok bool, why string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if !ok {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	fmt.Fprintln(w, why)
}
