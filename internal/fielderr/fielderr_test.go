package fielderr

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestAllFindsEveryFieldError(t *testing.T) {
	err := errors.Join(
		New("a", "bad %d", 1),
		fmt.Errorf("kafka: %w", New("b", "worse")),
		errors.New("not about a field"),
		fmt.Errorf("wrapped: %w", errors.Join(New("c", "x"), New("d", "y"))),
	)
	var got []string
	for _, e := range All(err) {
		got = append(got, e.Error())
	}
	want := []string{"a: bad 1", "b: worse", "c: x", "d: y"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("All = %q, want %q", got, want)
	}
	if All(nil) != nil || All(errors.New("plain")) != nil {
		t.Fatal("All of an error without fields must be empty")
	}
}

// TestQuoteIsBounded: a short value is quoted as %q quotes it; a long one
// is cut at MaxEcho characters (runes, never inside one), with its length.
func TestQuoteIsBounded(t *testing.T) {
	if got := Quote(`a "b"`); got != `"a \"b\""` {
		t.Errorf("Quote = %s", got)
	}
	if got, want := Quote(strings.Repeat("é", MaxEcho)), fmt.Sprintf("%q", strings.Repeat("é", MaxEcho)); got != want {
		t.Errorf("Quote of MaxEcho runes = %s, want %s", got, want)
	}
	long := strings.Repeat("é", 900_000)
	if got, want := Quote(long), `"`+strings.Repeat("é", MaxEcho)+`…" (1800000 bytes)`; got != want {
		t.Errorf("Quote of 900,000 runes = %.300s, want %s", got, want)
	}
}
