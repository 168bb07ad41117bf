package topicpattern

import "testing"

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
