package ci

import "testing"

func TestActive(t *testing.T) {
	for v, want := range map[string]bool{"": false, "true": true, "1": true, "TRUE": true, "false": false, "0": false, "yes": false} {
		t.Setenv("CI", v)
		if got := Active(); got != want {
			t.Errorf("CI=%q: Active() = %v, want %v", v, got, want)
		}
	}
}
