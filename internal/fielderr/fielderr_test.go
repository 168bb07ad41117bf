package fielderr

import (
	"errors"
	"fmt"
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
