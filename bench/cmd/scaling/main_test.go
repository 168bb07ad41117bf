package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain lets the test binary serve as the raw consumers' child process,
// as the command's own binary does.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "-child" {
		main()
		return
	}
	os.Exit(m.Run())
}

// TestTinyRun runs the whole benchmark on a tiny history, one round, with a
// profile, into a bench.md that has other content. run fails if any
// consumer reads a different number of records than the history holds;
// the test checks the section's rows (the -vs rows too: -vs-gogc alone runs
// the same binary again with another GOGC), the profile, the kept CPU and
// allocation profiles and the splice. It asserts no timing.
func TestTinyRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds signalbox and runs a broker process")
	}
	md := filepath.Join(t.TempDir(), "bench.md")
	if err := os.WriteFile(md, []byte("# Benchmarks\n\nhand-written notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bin, err := build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	profiles := t.TempDir()
	if err := run([]string{"-sizes", "2400", "-rounds", "1", "-profile-size", "2400", "-profile-dir", profiles, "-out", md, "-signalbox", bin, "-vs-gogc", "100", "-broker-count", "2"}, &out); err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	s := string(doc)
	if !strings.HasPrefix(s, "# Benchmarks\n\nhand-written notes\n") || !strings.Contains(s, beginMark) || !strings.Contains(s, out.String()) {
		t.Fatalf("bench.md not spliced:\n%s", s)
	}
	if !strings.Contains(out.String(), "One broker process of 2 brokers") {
		t.Errorf("the data note does not say the run's 2 brokers:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "run with GOGC=100") {
		t.Errorf("the A/B note does not say the -vs runs' GOGC:\n%s", out.String())
	}
	for _, c := range consumers {
		if !strings.Contains(out.String(), "| 3K | "+labels[c]+" |") {
			t.Errorf("no row for %s (3400 records):\n%s", c, out.String())
		}
	}
	if n := strings.Count(out.String(), "flat  flat%"); n != 2 {
		t.Errorf("%d CPU profiles in the section, want 2:\n%s", n, out.String())
	}
	for _, mode := range []string{sbTimestamp, sbField} {
		for _, name := range []string{mode + ".pprof", mode + ".allocs.pprof"} {
			if st, err := os.Stat(filepath.Join(profiles, name)); err != nil || st.Size() == 0 {
				t.Errorf("profile %s not kept in -profile-dir (%v)", name, err)
			}
		}
	}
}

// TestProcCPU: the broker's CPU column reads /proc/PID/stat's utime and
// stime; for this process it rises with work done and never exceeds the
// CPU time Go's runtime reports for it, and a missing process is an error.
func TestProcCPU(t *testing.T) {
	before, err := procCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	var ru syscall.Rusage
	deadline := time.Now().Add(2 * time.Second)
	for x := 0; ; x++ { // burn CPU until the kernel's tick count moves
		if x%1_000_000 == 0 {
			if now, _ := procCPU(os.Getpid()); now > before || time.Now().After(deadline) {
				break
			}
		}
	}
	after, err := procCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	rusage := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	if after <= before || after > rusage+20*time.Millisecond {
		t.Fatalf("procCPU %v → %v; rusage says %v", before, after, rusage)
	}
	if _, err := procCPU(-1); err == nil {
		t.Fatal("procCPU of a missing process: no error")
	}
}
