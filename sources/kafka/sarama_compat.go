package kafka

import (
	"time"

	"github.com/IBM/sarama"
	"github.com/xdg-go/scram"
)

// SaramaConfig returns the sarama configuration of the cluster's connection
// for the Kafka sink until it moves to franz-go (ConnOpts); remove this file
// then. Nothing in the source uses it.
// It applies the defaults to a copy of c: client id, version, TLS and
// SASL.
func (c Config) SaramaConfig() (*sarama.Config, error) {
	c.EnsureDefaults()
	return c.sarama()
}

// sarama builds the sarama configuration.
func (c *Config) sarama() (*sarama.Config, error) {
	sc := sarama.NewConfig()
	sc.ClientID = c.ClientID
	sc.Version = sarama.V2_8_0_0
	sc.Net.ReadTimeout = 30*time.Second + c.FetchMaxWait
	sc.Metadata.Full = false
	sc.Metadata.Timeout = c.StartupTimeout
	// A deleted topic must not be re-created by asking for it.
	sc.Metadata.AllowAutoTopicCreation = false
	sc.Consumer.Return.Errors = true
	sc.Consumer.Offsets.AutoCommit.Enable = false
	sc.Consumer.Offsets.Initial = sarama.OffsetOldest
	if c.Start == StartLatest {
		sc.Consumer.Offsets.Initial = sarama.OffsetNewest
	}
	if c.readCommitted() {
		sc.Consumer.IsolationLevel = sarama.ReadCommitted
	}
	if c.SessionTimeout > 0 {
		sc.Consumer.Group.Session.Timeout = c.SessionTimeout
	}
	if c.HeartbeatInterval > 0 {
		sc.Consumer.Group.Heartbeat.Interval = c.HeartbeatInterval
	}
	if c.RebalanceTimeout > 0 {
		sc.Consumer.Group.Rebalance.Timeout = c.RebalanceTimeout
	}
	// A JoinGroup may wait the whole rebalance timeout for the other
	// members; a shorter read deadline abandons it and rejoins, which can
	// loop forever (IBM/sarama#2820). Kafka's Java client waits the
	// rebalance timeout + 5s.
	sc.Net.ReadTimeout = max(sc.Net.ReadTimeout, sc.Consumer.Group.Rebalance.Timeout+5*time.Second)
	if c.DiscoveryInterval > 0 && c.Group != "" {
		// The group leader's own check for grown topics (sarama) runs
		// at the discovery interval too.
		sc.Metadata.RefreshFrequency = c.DiscoveryInterval
	}
	sc.Consumer.Group.InstanceId = c.GroupInstanceID
	if c.TLS.Enable {
		tc, err := c.TLS.config()
		if err != nil {
			return nil, err
		}
		sc.Net.TLS.Enable, sc.Net.TLS.Config = true, tc
	}
	if c.SASL.Mechanism != "" {
		sc.Net.SASL.Enable = true
		sc.Net.SASL.Handshake = true
		sc.Net.SASL.User, sc.Net.SASL.Password = c.SASL.User, c.SASL.Password
		sc.Net.SASL.Mechanism = sarama.SASLMechanism(c.SASL.Mechanism)
		switch c.SASL.Mechanism {
		case SASLScramSHA256:
			sc.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &scramClient{hash: scram.SHA256} }
		case SASLScramSHA512:
			sc.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &scramClient{hash: scram.SHA512} }
		}
	}
	return sc, nil
}

// scramClient adapts an xdg-go/scram conversation (RFC 5802 and 7677, with
// SASLprep of user name and password) to sarama's SCRAMClient interface;
// sarama ships no SCRAM client of its own.
type scramClient struct {
	hash scram.HashGeneratorFcn
	conv *scram.ClientConversation
}

func (s *scramClient) Begin(user, pass, authzID string) error {
	c, err := s.hash.NewClient(user, pass, authzID)
	if err != nil {
		return err
	}
	s.conv = c.NewConversation()
	return nil
}

func (s *scramClient) Step(challenge string) (string, error) { return s.conv.Step(challenge) }

func (s *scramClient) Done() bool { return s.conv.Done() }
