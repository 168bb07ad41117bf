package kafka

import "github.com/xdg-go/scram"

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
