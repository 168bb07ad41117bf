package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Murmur2 exposes the hash to the tests.
var Murmur2 = murmur2[[]byte]

// Wait waits for every produced record's acknowledgement without
// committing, so a test can leave a transaction open.
func (s *Sink) Wait(ctx context.Context) error { return s.wait(ctx) }

// Slabs returns how many slabs of output records the sink made.
func (s *Sink) Slabs() int { return s.slabs }

// Client returns the sink's producer.
func (s *Sink) Client() *kgo.Client { return s.cl }
