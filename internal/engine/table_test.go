package engine

import (
	"slices"
	"testing"
	"time"
)

// spreadTable is a TableStore whose trim goes on over its next Trims
// (*tables.Table in pebble): each trim takes three Trims.
type spreadTable struct {
	trims []int64 // the watermarks Trim was called with
	left  int     // Trims left to the trim under way
}

func (*spreadTable) Name() string                    { return "products" }
func (*spreadTable) History() time.Duration          { return 16 * time.Second } // a Trim each second
func (*spreadTable) Put(string, int64, []byte, bool) {}
func (*spreadTable) Err() error                      { return nil }
func (s *spreadTable) Trimming() bool                { return s.left > 0 }
func (s *spreadTable) Trim(g int64) {
	s.trims = append(s.trims, g)
	if s.left == 0 {
		s.left = 3
	}
	s.left--
}

// TestTrimGoesOn: a table whose trim is under way (Trimming) is trimmed
// at every release until it is over, however little the watermark moved;
// then again once the watermark moved by a sixteenth of its history.
func TestTrimGoesOn(t *testing.T) {
	tb := &spreadTable{}
	c := testCore(t, 2, func(c *Config) { c.Tables = []Table{{Topic: "a", Into: tb}} })
	for g := int64(1000); g <= 2500; g += 100 {
		c.trimTables(g)
	}
	if want := []int64{1000, 1100, 1200, 2200, 2300, 2400}; !slices.Equal(tb.trims, want) {
		t.Fatalf("Trims at %v, want %v", tb.trims, want)
	}
}
