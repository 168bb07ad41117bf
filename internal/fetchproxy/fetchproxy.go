package fetchproxy

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Rewrite returns the record batches to answer for a partition of a Fetch
// answer, given those the broker answered (raw may be returned as is). A
// topic named by id (Fetch v13+) is named as the Metadata answers that
// came through the proxy named it ("" if none did).
// It runs on the proxy's goroutines, one call at a time per connection.
type Rewrite func(topic string, partition int32, raw []byte) []byte

// Proxy proxies a cluster's brokers, one listener per broker.
type Proxy struct {
	rewrite Rewrite
	lns     []net.Listener
	byAddr  map[string]string // a broker's address → its proxy's
	mu      sync.Mutex
	names   map[[16]byte]string // topic ids → names, from the Metadata answers
	conns   map[net.Conn]struct{}
	closed  bool
	wg      sync.WaitGroup
}

// Start proxies brokers (host:port each, as the cluster advertises them)
// on loopback ports, rewriting Fetch answers with rewrite.
func Start(brokers []string, rewrite Rewrite) (*Proxy, error) {
	p := &Proxy{rewrite: rewrite, byAddr: map[string]string{}, names: map[[16]byte]string{}, conns: map[net.Conn]struct{}{}}
	for _, b := range brokers {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			p.Close()
			return nil, err
		}
		p.lns = append(p.lns, ln)
		p.byAddr[b] = ln.Addr().String()
	}
	for i, ln := range p.lns {
		p.wg.Add(1)
		go p.accept(ln, brokers[i])
	}
	return p, nil
}

// Addrs are the proxies' addresses, in the order of Start's brokers.
func (p *Proxy) Addrs() []string {
	out := make([]string, len(p.lns))
	for i, ln := range p.lns {
		out[i] = ln.Addr().String()
	}
	return out
}

// Close stops the proxy (invariant 3).
func (p *Proxy) Close() {
	p.mu.Lock()
	p.closed = true
	for _, ln := range p.lns {
		_ = ln.Close()
	}
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// track registers c for Close; false when the proxy is closed.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		_ = c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) accept(ln net.Listener, broker string) {
	defer p.wg.Done()
	for {
		client, err := ln.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go p.serve(client, broker)
	}
}

// request is what a response needs of its request.
type request struct{ key, version int16 }

// serve proxies one client connection.
func (p *Proxy) serve(client net.Conn, broker string) {
	defer p.wg.Done()
	if !p.track(client) {
		return
	}
	defer client.Close()
	server, err := net.Dial("tcp", broker)
	if err != nil || !p.track(server) {
		return
	}
	defer server.Close()
	var mu sync.Mutex
	pending := map[int32]request{}
	p.wg.Add(1)
	go func() { // requests: client to broker
		defer p.wg.Done()
		defer server.Close()
		for {
			frame, err := readFrame(client)
			if err != nil {
				return
			}
			if len(frame) >= 12 {
				mu.Lock()
				pending[int32(binary.BigEndian.Uint32(frame[8:]))] = request{int16(binary.BigEndian.Uint16(frame[4:])), int16(binary.BigEndian.Uint16(frame[6:]))}
				mu.Unlock()
			}
			if _, err := server.Write(frame); err != nil {
				return
			}
		}
	}()
	for { // responses: broker to client
		frame, err := readFrame(server)
		if err != nil || len(frame) < 8 {
			return
		}
		corr := int32(binary.BigEndian.Uint32(frame[4:]))
		mu.Lock()
		req, ok := pending[corr]
		delete(pending, corr)
		mu.Unlock()
		if ok {
			if frame, err = p.answer(req, frame); err != nil {
				return // a response the proxy cannot read: the client sees the connection drop
			}
		}
		if _, err := client.Write(frame); err != nil {
			return
		}
	}
}

// readFrame reads one size-prefixed frame, its size included.
func readFrame(r io.Reader) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n > 1<<30 {
		return nil, fmt.Errorf("fetchproxy: frame of %d bytes", n)
	}
	frame := make([]byte, 4+n)
	copy(frame, size[:])
	_, err := io.ReadFull(r, frame[4:])
	return frame, err
}

// answer rewrites frame, the response to req, when it is one the proxy
// rewrites (invariant 1).
func (p *Proxy) answer(req request, frame []byte) ([]byte, error) {
	var resp kmsg.Response
	switch req.key {
	case kmsg.Fetch.Int16(), kmsg.Metadata.Int16(), kmsg.FindCoordinator.Int16():
		resp = kmsg.RequestForKey(req.key).ResponseKind()
	default:
		return frame, nil
	}
	resp.SetVersion(req.version)
	hdr := 8 // size, correlation id
	if resp.IsFlexible() {
		// The response header's tagged fields: a count, then per field
		// a tag, a size and its bytes.
		n, skip, err := uvarint(frame[hdr:])
		if err != nil {
			return nil, err
		}
		hdr += skip
		for range n {
			for range 2 { // the tag, then the size and the bytes
				v, skip, err := uvarint(frame[hdr:])
				if err != nil {
					return nil, err
				}
				hdr += skip
				if hdr += int(v); hdr > len(frame) {
					return nil, errors.New("fetchproxy: response header cut short")
				}
			}
		}
	}
	if err := resp.ReadFrom(frame[hdr:]); err != nil {
		return nil, fmt.Errorf("fetchproxy: key %d v%d: %w", req.key, req.version, err)
	}
	switch r := resp.(type) {
	case *kmsg.FetchResponse:
		for i := range r.Topics {
			t := &r.Topics[i]
			name := t.Topic
			if name == "" { // v13+ names topics by id
				p.mu.Lock()
				name = p.names[t.TopicID]
				p.mu.Unlock()
			}
			for j := range t.Partitions {
				t.Partitions[j].RecordBatches = p.rewrite(name, t.Partitions[j].Partition, t.Partitions[j].RecordBatches)
			}
		}
	case *kmsg.MetadataResponse:
		for i := range r.Brokers {
			p.readdress(&r.Brokers[i].Host, &r.Brokers[i].Port)
		}
		p.mu.Lock()
		for _, t := range r.Topics {
			if t.Topic != nil {
				p.names[t.TopicID] = *t.Topic
			}
		}
		p.mu.Unlock()
	case *kmsg.FindCoordinatorResponse:
		p.readdress(&r.Host, &r.Port)
		for i := range r.Coordinators {
			p.readdress(&r.Coordinators[i].Host, &r.Coordinators[i].Port)
		}
	}
	out := append([]byte(nil), frame[:hdr]...)
	out = resp.AppendTo(out)
	binary.BigEndian.PutUint32(out, uint32(len(out)-4))
	return out, nil
}

// readdress replaces a broker's address by its proxy's.
func (p *Proxy) readdress(host *string, port *int32) {
	to, ok := p.byAddr[net.JoinHostPort(*host, strconv.Itoa(int(*port)))]
	if !ok {
		return
	}
	h, ps, err := net.SplitHostPort(to)
	if err != nil {
		return
	}
	n, _ := strconv.Atoi(ps)
	*host, *port = h, int32(n)
}

// uvarint reads an unsigned varint from b: its value and its length.
func uvarint(b []byte) (uint64, int, error) {
	v, n := binary.Uvarint(b)
	if n <= 0 {
		return 0, 0, errors.New("fetchproxy: bad varint in a response header")
	}
	return v, n, nil
}
