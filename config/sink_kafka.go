package config

import (
	"cmp"
	"fmt"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/internal/topicpattern"
	kafkasink "github.com/signalbox/signalbox/sinks/kafka"
	"github.com/signalbox/signalbox/sources/kafka"
)

// KafkaSink are the settings of a `type: kafka` sink. Brokers default to
// the job's; Group, to the job's group, is used only with TransactionalID.
type KafkaSink struct {
	Brokers            []string `yaml:"brokers"`
	Topic              string   `yaml:"topic"`
	TransactionalID    string   `yaml:"transactional_id"`
	Group              string   `yaml:"group"`
	MaxBufferedRecords int      `yaml:"max_buffered_records"`
}

func (s *KafkaSink) validate(v *validator, p string) {
	if s.Topic == "" {
		v.bad(p+".topic", "required for a kafka sink: the output topic, which must exist")
	} else if err := topicpattern.CheckName(s.Topic); err != nil {
		v.bad(p+".topic", "%v", err)
	}
	for i, b := range s.Brokers {
		if err := kafka.CheckBroker(b); err != nil {
			v.bad(fmt.Sprintf("%s.brokers[%d]", p, i), "%v", err)
		}
	}
	cfg := kafkasink.Config{MaxBufferedRecords: s.MaxBufferedRecords}
	cfg.EnsureDefaults()
	v.asWritten(p+".max_buffered_records", &cfg.MaxBufferedRecords, s.MaxBufferedRecords)
	v.fields(p, cfg.Validate())
	if s.Group != "" && s.TransactionalID == "" {
		v.bad(p+".group", "only used with transactional_id (exactly-once mode)")
	}
}

// sinkConfig is the sink's library configuration but the connection
// (build adds it). With a transactional id the transaction commits the
// job's consumer offsets itself (AddOffsetsToTxn), to the sink's group or
// the job's: the sink is then exactly once (kafkasink.Config.Info).
func (s *KafkaSink) sinkConfig(j *Job) kafkasink.Config {
	cfg := kafkasink.Config{Brokers: s.Brokers, Topic: s.Topic, TransactionalID: s.TransactionalID, MaxBufferedRecords: s.MaxBufferedRecords}
	if cfg.TransactionalID != "" {
		cfg.GroupID = cmp.Or(s.Group, j.Group)
	}
	if len(cfg.Brokers) == 0 {
		cfg.Brokers = j.Brokers
	}
	return cfg
}

func (s *KafkaSink) info(j *Job) signalbox.SinkInfo { return s.sinkConfig(j).Info() }

func (s *KafkaSink) build(j *Job) (signalbox.Sink, error) {
	conn, err := j.connection()
	if err != nil {
		return nil, err
	}
	co, err := conn.ConnOpts() // the job's client id, TLS and SASL
	if err != nil {
		return nil, fmt.Errorf("kafka sink: %w", err)
	}
	cfg := s.sinkConfig(j)
	cfg.Conn, cfg.StartupTimeout = co, conn.StartupTimeout
	return kafkasink.New(cfg), nil
}
