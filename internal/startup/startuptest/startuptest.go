// Package startuptest serves start-up tests: a broker that accepts
// connections and never answers.
package startuptest

import (
	"net"
	"sync"
	"testing"
)

// SilentBroker listens on a loopback port, accepts every connection and
// never writes a byte; it returns the address. The test's cleanup closes it.
func SilentBroker(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return ln.Addr().String()
}
