package kafka

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/signalbox/signalbox/record"
)

// fetchVersion is the highest FetchRequest version the source speaks: v13
// names topics by id, and the fetcher names them.
const fetchVersion = 11

// clientOpts are the options of every franz-go client of the source: the
// connection (ConnOpts), plus Fetch capped at fetchVersion.
func (s *Source) clientOpts(extra ...kgo.Opt) ([]kgo.Opt, error) {
	opts, err := s.cfg.ConnOpts()
	if err != nil {
		return nil, err
	}
	vs := kversion.Stable()
	vs.SetMaxKeyVersion(kmsg.Fetch.Int16(), fetchVersion)
	// OffsetCommit v10 names topics by id; the commits name them.
	vs.SetMaxKeyVersion(kmsg.OffsetCommit.Int16(), 9)
	opts = append(opts, kgo.MaxVersions(vs), kgo.WithLogger(kgoLogger{s.log}),
		// An answer may be as large as FetchMaxBytes allows, plus its
		// headers.
		kgo.BrokerMaxReadBytes(max(s.cfg.FetchMaxBytes+1<<20, 100<<20)))
	return append(opts, extra...), nil
}

// brokers is what the source knows of the cluster from its last metadata
// answers: each partition's leader and each broker's address.
type brokers struct {
	mu      sync.Mutex
	leaders map[record.TopicPartition]int32
	addrs   map[int32]string
}

// learn records the leaders and addresses of a metadata answer.
func (b *brokers) learn(resp *kmsg.MetadataResponse) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.leaders == nil {
		b.leaders, b.addrs = make(map[record.TopicPartition]int32), make(map[int32]string)
	}
	for _, br := range resp.Brokers {
		b.addrs[br.NodeID] = net.JoinHostPort(br.Host, strconv.Itoa(int(br.Port)))
	}
	for _, t := range resp.Topics {
		if t.Topic == nil {
			continue
		}
		for _, p := range t.Partitions {
			tp := record.TopicPartition{Topic: *t.Topic, Partition: p.Partition}
			if p.ErrorCode == 0 && p.Leader >= 0 {
				b.leaders[tp] = p.Leader
			} else {
				delete(b.leaders, tp)
			}
		}
	}
}

func (b *brokers) leader(tp record.TopicPartition) (int32, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	id, ok := b.leaders[tp]
	return id, ok
}

// brokerAddr names broker id for logs and errors.
func (s *Source) brokerAddr(id int32) string {
	s.meta.mu.Lock()
	defer s.meta.mu.Unlock()
	if a, ok := s.meta.addrs[id]; ok {
		return a
	}
	return "an unknown address"
}

// metadataRequest asks for topics (nil: every topic), creating none.
func metadataRequest(topics []string) *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	req.AllowAutoTopicCreation = false
	if topics != nil {
		req.Topics = make([]kmsg.MetadataRequestTopic, len(topics))
		for i, t := range topics {
			req.Topics[i] = kmsg.NewMetadataRequestTopic()
			req.Topics[i].Topic = kmsg.StringPtr(t)
		}
	}
	return req
}

// metadata asks for the metadata of topics (nil: every topic) through the
// client, which learns the brokers from it, and records the leaders.
func (s *Source) metadata(ctx context.Context, topics []string) (*kmsg.MetadataResponse, error) {
	kresp, err := s.cl.Request(ctx, metadataRequest(topics))
	if err != nil {
		return nil, fmt.Errorf("kafka: metadata: %w", s.explain(err))
	}
	resp := kresp.(*kmsg.MetadataResponse)
	s.meta.learn(resp)
	return resp, nil
}

// probe asks each seed broker in turn, once, for the metadata of the
// configured topics, until one answers: when none does, the error names
// each broker's cause (a refused connection, a rejected authentication)
// at once, where the client's retries would hide it.
func (s *Source) probe(ctx context.Context) error {
	req := metadataRequest(s.cfg.Topics)
	var errs []error
	seeds := s.cl.SeedBrokers() // in the order of Config.Brokers
	for i, b := range seeds {
		kresp, err := b.Request(ctx, req)
		if err == nil {
			s.meta.learn(kresp.(*kmsg.MetadataResponse))
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		name := fmt.Sprintf("seed %d", i)
		if len(seeds) == len(s.cfg.Brokers) {
			name = s.cfg.Brokers[i]
		}
		errs = append(errs, fmt.Errorf("broker %s: %w", name, s.explain(err)))
	}
	if len(errs) == 0 {
		errs = append(errs, errors.New("no broker known"))
	}
	return fmt.Errorf("kafka: metadata: %w", errors.Join(errs...))
}

// explain adds the likely cause to an error that hides it: brokers close
// the connection on a failed authentication.
func (s *Source) explain(err error) error {
	if s.cfg.SASL.Mechanism != "" && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)) {
		return fmt.Errorf("the broker closed the connection, which with SASL %s means it most likely rejected user %q or its password: %w",
			s.cfg.SASL.Mechanism, s.cfg.SASL.User, err)
	}
	return err
}

// leader returns the partition's current leader, asking for the topic's
// metadata once when it is not known.
func (s *Source) leader(tp record.TopicPartition) (int32, error) {
	if id, ok := s.meta.leader(tp); ok {
		return id, nil
	}
	if _, err := s.metadata(s.ctx, []string{tp.Topic}); err != nil {
		return 0, fmt.Errorf("kafka: leader of %s/%d: %w", tp.Topic, tp.Partition, err)
	}
	if id, ok := s.meta.leader(tp); ok {
		return id, nil
	}
	return 0, fmt.Errorf("kafka: leader of %s/%d: %w", tp.Topic, tp.Partition, kerr.LeaderNotAvailable)
}

// refreshMetadata forgets the leaders and asks again for those of the
// topics read, after an answer said a leader moved or a broker failed.
func (s *Source) refreshMetadata() {
	s.meta.mu.Lock()
	topics := make([]string, 0, len(s.meta.leaders))
	seen := make(map[string]bool)
	for tp := range s.meta.leaders {
		if !seen[tp.Topic] {
			seen[tp.Topic] = true
			topics = append(topics, tp.Topic)
		}
	}
	clear(s.meta.leaders)
	s.meta.mu.Unlock()
	if len(topics) == 0 {
		return
	}
	if _, err := s.metadata(s.ctx, topics); err != nil {
		s.log.Warn("metadata refresh failed")
	}
}

// kgoLogger passes franz-go's own logs to the source's logger at debug
// level: the source reports what matters to the job itself.
type kgoLogger struct{ log *zap.Logger }

func (l kgoLogger) Level() kgo.LogLevel {
	if l.log.Core().Enabled(zapcore.DebugLevel) {
		return kgo.LogLevelInfo
	}
	return kgo.LogLevelNone
}

func (l kgoLogger) Log(_ kgo.LogLevel, msg string, keyvals ...any) {
	fields := make([]zap.Field, 0, len(keyvals)/2)
	for i := 0; i+1 < len(keyvals); i += 2 {
		fields = append(fields, zap.Any(fmt.Sprint(keyvals[i]), keyvals[i+1]))
	}
	l.log.Debug("franz-go: "+msg, fields...)
}

// topicSlot returns the index of topic in *topics, a request's topic list,
// appending an entry made by newTopic when it is not there yet; at maps
// the names seen to their indexes.
func topicSlot[T any](topics *[]T, at map[string]int, topic string, newTopic func(string) T) int {
	i, ok := at[topic]
	if !ok {
		i = len(*topics)
		at[topic] = i
		*topics = append(*topics, newTopic(topic))
	}
	return i
}
