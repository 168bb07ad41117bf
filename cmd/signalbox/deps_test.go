package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestBinaryLinksNoBenchmark checks that the product binary does not link
// the benchmark packages (bench/...): the demo's scenario lives in
// internal/demo and internal/workload, the baselines stay under bench/.
func TestBinaryLinksNoBenchmark(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	const module = "github.com/signalbox/signalbox/"
	var linked int
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, module) {
			linked++
		}
		if strings.HasPrefix(pkg, module+"bench/") {
			t.Errorf("cmd/signalbox links %s", pkg)
		}
	}
	if linked == 0 {
		t.Fatalf("go list -deps listed no package of %s; the check would pass vacuously", module)
	}
}
