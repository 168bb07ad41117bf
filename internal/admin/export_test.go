package admin

import (
	"testing"
	"time"
)

// ShortenReadTimeout sets the servers' read timeout to d until t ends.
func ShortenReadTimeout(t *testing.T, d time.Duration) {
	old := readTimeout
	readTimeout = d
	t.Cleanup(func() { readTimeout = old })
}
