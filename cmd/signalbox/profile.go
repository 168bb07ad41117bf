package main

import (
	"cmp"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"sync"
	"time"
)

// startAllocProfile creates path now (a bad path fails before the run) and
// returns the function that writes the process's allocation profile into it
// (`signalbox run --allocprofile`, a hidden flag for the scaling benchmark:
// `go tool pprof -sample_index=alloc_space` shows what the run allocated).
func startAllocProfile(path string) (write func() error, err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--allocprofile: %w", err)
	}
	return func() error { return writeProfile(f, "allocs") }, nil
}

// writeProfile writes the named runtime profile into f and closes it,
// returning the first error.
func writeProfile(f *os.File, name string) error {
	err := pprof.Lookup(name).WriteTo(f, 0)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// startHeapProfiles writes the live heap (`pprof.Lookup("heap")`, after a
// collection) to prefix-0000.pb.gz now, then every interval and once more
// when stop is called (`signalbox run --heapprofile`, hidden, for soaks:
// `go tool pprof -base early late -sample_index=inuse_space` shows growth).
func startHeapProfiles(prefix string, every time.Duration) (stop func() error, err error) {
	if every <= 0 {
		return nil, fmt.Errorf("--heapprofile-every: %v is not a positive duration", every)
	}
	n := 0
	write := func() error {
		path := fmt.Sprintf("%s-%04d.pb.gz", prefix, n)
		n++
		f, err := os.Create(path)
		if err != nil {
			return fmt.Errorf("--heapprofile: %w", err)
		}
		runtime.GC() // the profile shows the heap as of the last collection
		return writeProfile(f, "heap")
	}
	if err := write(); err != nil {
		return nil, err
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	var werr error // the first failed periodic write, reported by stop
	wg.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if err := write(); err != nil && werr == nil {
					werr = err
				}
			}
		}
	})
	return func() error {
		close(done)
		wg.Wait()
		return cmp.Or(werr, write())
	}, nil
}
