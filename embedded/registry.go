package embedded

import (
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/twmb/franz-go/pkg/sr/srfake"
)

// Registry is an in-process, Confluent-compatible schema registry
// (github.com/twmb/franz-go/pkg/sr/srfake) served over HTTP on a TCP
// listener. Its data lives in memory.
type Registry struct {
	fake *srfake.Registry
	srv  *http.Server
	ln   net.Listener
	done chan struct{}
}

// StartRegistry serves a new, empty registry on addr ("host:port"; port 0:
// any free port). It returns once the listener accepts connections.
func StartRegistry(addr string) (*Registry, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("embedded: schema registry: %w", err)
	}
	fake := srfake.NewRegistry()
	r := &Registry{fake: fake, ln: ln, done: make(chan struct{}),
		srv: &http.Server{Handler: fake.Handler(), ReadHeaderTimeout: 10 * time.Second}}
	go func() {
		defer close(r.done)
		_ = r.srv.Serve(ln) // ErrServerClosed after Close; a failed listener shows to clients as refused connections
	}()
	return r, nil
}

// URL is the registry's base URL, "http://host:port".
func (r *Registry) URL() string { return "http://" + r.ln.Addr().String() }

// Fake returns the underlying srfake registry, to register or seed schemas
// in-process or to intercept requests.
func (r *Registry) Fake() *srfake.Registry { return r.fake }

// Close stops serving and closes every connection. Idempotent.
func (r *Registry) Close() {
	_ = r.srv.Close() // also closes the listener
	<-r.done
}

// WithSchemaRegistry makes Start also serve a schema registry on addr
// ("host:port"; port 0: any free port); see Cluster.Registry. Default: none.
func WithSchemaRegistry(addr string) Option { return func(c *config) { c.registry = addr } }
