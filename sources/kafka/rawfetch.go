package kafka

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"time"

	"github.com/IBM/sarama"
	"github.com/signalbox/signalbox/record"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The raw fetch transport: the fetcher's own connection to each leader,
// speaking FetchRequest v11 with kmsg, so that a response's record batches
// stay raw bytes that kbatch decodes without a heap object per record
// (sarama decodes every record eagerly and keeps no raw bytes). It is used
// when SASL is not configured; with SASL the fetcher uses sarama's broker
// connections (authenticating a raw connection is not implemented). TLS
// uses the tls.Config given to sarama.

// fetchVersion is the FetchRequest version of both transports.
const fetchVersion = 11

// maxResponseBytes bounds a fetch response's size prefix: above it the
// connection is treated as broken rather than allocating that much.
const maxResponseBytes = 1 << 30

// rawConn is one connection of the raw transport, to one broker.
type rawConn struct {
	addr string
	conn net.Conn
	stop func() bool // unregisters the close-on-cancel hook
	corr int32
	buf  []byte // request encoding, reused
	// last is the buffer of the response being parsed; spare is a parsed
	// response's buffer that no delivered record aliases (done), for the
	// next response to be read into when it fits.
	last, spare []byte
}

// maxSpareBody bounds the response buffer a connection keeps for reuse.
const maxSpareBody = 16 << 20

// body returns a buffer of n bytes for a response: the spare when it is
// large enough, else a new one.
func (c *rawConn) body(n int) []byte {
	b := c.spare
	c.spare = nil
	if cap(b) < n {
		b = make([]byte, n)
	}
	c.last = b[:n]
	return c.last
}

// done is called once the last response is parsed: its buffer becomes the
// spare unless a delivered record aliases it. Only records of uncompressed
// batches do (a compressed batch's records alias its decompressed buffer,
// which is never reused), and their bytes are the pipeline's
// (signalbox.Source).
func (c *rawConn) done(aliased bool) {
	if !aliased && cap(c.last) <= maxSpareBody {
		c.spare = c.last[:0]
	}
	c.last = nil
}

func (c *rawConn) close() {
	c.stop()
	_ = c.conn.Close()
}

// useRaw reports whether fetches go through the raw transport.
func (s *Source) useRaw() bool { return s.cfg.SASL.Mechanism == "" && !s.saramaFetch }

// rawConnTo returns the fetcher's connection to b, dialing it if needed.
// The connection closes when ctx ends, which interrupts a fetch in flight.
func (f *fetcher) rawConnTo(ctx context.Context, b *sarama.Broker) (*rawConn, error) {
	if c := f.conns[b.ID()]; c != nil {
		if c.addr == b.Addr() {
			return c, nil
		}
		c.close() // the broker moved
		delete(f.conns, b.ID())
	}
	sc := f.s.client.Config()
	d := net.Dialer{Timeout: sc.Net.DialTimeout, KeepAlive: sc.Net.KeepAlive}
	conn, err := d.DialContext(ctx, "tcp", b.Addr())
	if err != nil {
		return nil, err
	}
	if sc.Net.TLS.Enable {
		tc := sc.Net.TLS.Config.Clone()
		if tc.ServerName == "" {
			if host, _, err := net.SplitHostPort(b.Addr()); err == nil {
				tc.ServerName = host
			}
		}
		tconn := tls.Client(conn, tc)
		_ = tconn.SetDeadline(time.Now().Add(sc.Net.DialTimeout))
		if err := tconn.HandshakeContext(ctx); err != nil {
			_ = conn.Close()
			return nil, err
		}
		_ = tconn.SetDeadline(time.Time{})
		conn = tconn
	}
	c := &rawConn{addr: b.Addr(), conn: conn, stop: context.AfterFunc(ctx, func() { _ = conn.Close() })}
	if f.conns == nil {
		f.conns = make(map[int32]*rawConn)
	}
	f.conns[b.ID()] = c
	return c, nil
}

// closeConns closes every raw connection (the fetcher is stopping).
func (f *fetcher) closeConns() {
	for id, c := range f.conns {
		c.close()
		delete(f.conns, id)
	}
}

// fetchRaw sends group's fetch to b over the raw transport and returns the
// answer per partition. Any error closes the connection; the next fetch
// redials.
func (f *fetcher) fetchRaw(ctx context.Context, b *sarama.Broker, group []*partState) (map[record.TopicPartition]*fetchBlock, error) {
	c, err := f.rawConnTo(ctx, b)
	if err != nil {
		return nil, err
	}
	resp, err := f.roundTrip(c, group)
	if err != nil {
		c.close()
		delete(f.conns, b.ID())
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	if resp.ErrorCode != 0 {
		return nil, sarama.KError(resp.ErrorCode)
	}
	blocks := make(map[record.TopicPartition]*fetchBlock, len(group))
	for i := range resp.Topics {
		t := &resp.Topics[i]
		for j := range t.Partitions {
			p := &t.Partitions[j]
			fb := &fetchBlock{err: sarama.KError(p.ErrorCode), hwm: p.HighWatermark, lso: p.LastStableOffset, raw: p.RecordBatches}
			for _, a := range p.AbortedTransactions {
				fb.aborted = append(fb.aborted, abortedTxn{a.ProducerID, a.FirstOffset})
			}
			blocks[record.TopicPartition{Topic: t.Topic, Partition: p.Partition}] = fb
		}
	}
	return blocks, nil
}

// roundTrip writes one FetchRequest on c and reads its response.
func (f *fetcher) roundTrip(c *rawConn, group []*partState) (*kmsg.FetchResponse, error) {
	wait := f.s.fetchWait(time.Now(), f.hasPaused)
	req := kmsg.NewPtrFetchRequest()
	req.Version = fetchVersion
	req.MaxWaitMillis = int32(wait / time.Millisecond)
	req.MinBytes = 1
	req.MaxBytes = f.s.cfg.FetchMaxBytes
	req.SessionEpoch = -1 // sessionless: every request names every partition
	if f.s.cfg.readCommitted() {
		req.IsolationLevel = 1
	}
	// A random partition order, so that no partition is systematically
	// last in the broker's filling of the response (KIP-74), as sarama's
	// map-ordered encoding does; partitions are grouped under their topic
	// in the order the topics first appear.
	order := make([]*partState, len(group))
	copy(order, group)
	rand.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	topicAt := make(map[string]int, 1)
	for _, p := range order {
		i, ok := topicAt[p.tp.Topic]
		if !ok {
			i = len(req.Topics)
			topicAt[p.tp.Topic] = i
			t := kmsg.NewFetchRequestTopic()
			t.Topic = p.tp.Topic
			req.Topics = append(req.Topics, t)
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = p.tp.Partition
		rp.FetchOffset = p.pos
		rp.PartitionMaxBytes = p.maxBytes
		rp.LogStartOffset = -1
		rp.CurrentLeaderEpoch = -1
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	c.corr++
	c.buf = kmsg.NewRequestFormatter(kmsg.FormatterClientID(f.s.cfg.ClientID)).AppendRequest(c.buf[:0], req, c.corr)
	sc := f.s.client.Config()
	if err := c.conn.SetDeadline(time.Now().Add(sc.Net.WriteTimeout + wait + sc.Net.ReadTimeout)); err != nil {
		return nil, err
	}
	if _, err := c.conn.Write(c.buf); err != nil {
		return nil, fmt.Errorf("kafka: fetch request to %s: %w", c.addr, err)
	}
	var hdr [8]byte // size, correlation id
	if _, err := io.ReadFull(c.conn, hdr[:]); err != nil {
		return nil, fmt.Errorf("kafka: fetch response from %s: %w", c.addr, err)
	}
	size := int32(binary.BigEndian.Uint32(hdr[:]))
	if size < 4 || size > maxResponseBytes {
		return nil, fmt.Errorf("kafka: fetch response from %s: size %d bytes, want 4 to %d", c.addr, size, maxResponseBytes)
	}
	if corr := int32(binary.BigEndian.Uint32(hdr[4:])); corr != c.corr {
		return nil, fmt.Errorf("kafka: fetch response from %s: correlation id %d, want %d", c.addr, corr, c.corr)
	}
	body := c.body(int(size - 4)) // reused only when no record aliases it (done)
	if _, err := io.ReadFull(c.conn, body); err != nil {
		return nil, fmt.Errorf("kafka: fetch response from %s: %w", c.addr, err)
	}
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = fetchVersion
	if err := resp.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("kafka: fetch response from %s: %w", c.addr, err)
	}
	return resp, nil
}
