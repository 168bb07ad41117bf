package topicpattern

import (
	"strings"
	"testing"
)

func TestCompileMatchesWholeNames(t *testing.T) {
	re, err := Compile("ev-.*|orders")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{"ev-1": true, "orders": true, "my-orders": false, "orders-2": false, "xev-1": false} {
		if re.MatchString(name) != want {
			t.Errorf("%q: match %v, want %v", name, !want, want)
		}
	}
	for _, bad := range []string{"", "("} {
		if _, err := Compile(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestCheckNameIsKafkas: Kafka's legal topic names, and nothing else; an
// error repeats at most fielderr.MaxEcho characters of the name.
func TestCheckNameIsKafkas(t *testing.T) {
	for _, good := range []string{"a", "orders", "Orders.v2_eu-1", "...", strings.Repeat("t", MaxNameLen)} {
		if err := CheckName(good); err != nil {
			t.Errorf("%q refused: %v", good, err)
		}
	}
	for _, bad := range []string{"", ".", "..", "a b", "bad topic/with:chars", "é", "a\x00", strings.Repeat("t", MaxNameLen+1), strings.Repeat("t", 900_000)} {
		err := CheckName(bad)
		if err == nil {
			t.Errorf("%.20q accepted", bad)
		} else if len(err.Error()) > 200 {
			t.Errorf("%d bytes of error: %.120s", len(err.Error()), err)
		}
	}
}

// TestCompileBoundsPatterns: a pattern longer than MaxPatternLen is refused
// before it is compiled, and no error repeats all of a long pattern.
func TestCompileBoundsPatterns(t *testing.T) {
	if _, err := Compile(strings.Repeat("a", MaxPatternLen)); err != nil {
		t.Errorf("%d bytes refused: %v", MaxPatternLen, err)
	}
	for _, bad := range []string{strings.Repeat("a", MaxPatternLen+1), strings.Repeat("(", 4000), strings.Repeat("x", 900_000)} {
		_, err := Compile(bad)
		if err == nil {
			t.Errorf("%.20q (%d bytes) accepted", bad, len(bad))
		} else if len(err.Error()) > 200 {
			t.Errorf("%d bytes of error: %.120s", len(err.Error()), err)
		}
	}
}
