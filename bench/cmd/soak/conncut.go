package main

import (
	"context"
	"net"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// cutter is the broker's listener and this process's dialer: it tracks every
// connection the broker accepts and closes, on cut, those that did not come
// from this process (the members').
type cutter struct {
	mu    sync.Mutex
	conns map[net.Conn]struct{}
	own   map[string]struct{} // local addresses of this process's client connections
}

func newCutter() *cutter {
	return &cutter{conns: map[net.Conn]struct{}{}, own: map[string]struct{}{}}
}

// listen is a kfake.ListenFn: it listens on the loopback interface.
func (c *cutter) listen(network, address string) (net.Listener, error) {
	_, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen(network, net.JoinHostPort("127.0.0.1", port))
	if err != nil {
		return nil, err
	}
	return &trackedListener{Listener: ln, c: c}, nil
}

// dial is a kgo.Dialer for this process's clients; their connections are
// never cut.
func (c *cutter) dial(ctx context.Context, network, host string) (net.Conn, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, network, host)
	if err != nil {
		return nil, err
	}
	local := conn.LocalAddr().String()
	c.mu.Lock()
	c.own[local] = struct{}{}
	c.mu.Unlock()
	return &trackedConn{Conn: conn, done: func() {
		c.mu.Lock()
		delete(c.own, local)
		c.mu.Unlock()
	}}, nil
}

// cut closes every accepted connection of another process and returns how
// many it closed.
func (c *cutter) cut() int {
	c.mu.Lock()
	var victims []net.Conn
	for conn := range c.conns {
		if _, ok := c.own[conn.RemoteAddr().String()]; !ok {
			victims = append(victims, conn)
		}
	}
	c.mu.Unlock()
	for _, conn := range victims {
		conn.Close()
	}
	return len(victims)
}

// remote reaches the broker through the cutter's dialer (workload.Broker).
type remote struct {
	addrs []string
	c     *cutter
}

func (r remote) ClientOptions() []kgo.Opt {
	return []kgo.Opt{kgo.SeedBrokers(r.addrs...), kgo.Dialer(r.c.dial)}
}

type trackedListener struct {
	net.Listener
	c *cutter
}

func (l *trackedListener) Accept() (net.Conn, error) {
	conn, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	t := &trackedConn{Conn: conn}
	t.done = func() {
		l.c.mu.Lock()
		delete(l.c.conns, t)
		l.c.mu.Unlock()
	}
	l.c.mu.Lock()
	l.c.conns[t] = struct{}{}
	l.c.mu.Unlock()
	return t, nil
}

// trackedConn runs done once, at its first Close.
type trackedConn struct {
	net.Conn
	once sync.Once
	done func()
}

func (t *trackedConn) Close() error {
	t.once.Do(t.done)
	return t.Conn.Close()
}
