package kafka

import (
	"testing"
	"time"
)

// TestEvidenceDemandShortensFetchWait: a demand shortens the next fetch's
// wait to the due time, never below minEvidenceWait, never above
// FetchMaxWait; withdrawing it restores FetchMaxWait.
func TestEvidenceDemandShortensFetchWait(t *testing.T) {
	s := &Source{cfg: Config{FetchMaxWait: 50 * time.Millisecond}}
	now := time.Unix(1_700_000_000, 0)
	for _, c := range []struct {
		due  time.Time
		want time.Duration
	}{
		{time.Time{}, 50 * time.Millisecond},
		{now.Add(20 * time.Millisecond), 20 * time.Millisecond},
		{now.Add(time.Second), 50 * time.Millisecond},
		{now.Add(-time.Second), minEvidenceWait},
		{now.Add(time.Millisecond), minEvidenceWait},
		{time.Time{}, 50 * time.Millisecond},
	} {
		s.WantEvidence(c.due)
		if got := s.fetchWait(now); got != c.want {
			t.Errorf("due %v: fetch wait %v, want %v", c.due, got, c.want)
		}
	}
}
