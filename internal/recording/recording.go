package recording

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"sync"
	"time"
)

// CPUProfile writes a CPU profile of the rest of the process to path
// (`go tool pprof`); flag names the option in errors.
func CPUProfile(flag, path string) (stop func() error, err error) {
	return start(flag, path, pprof.StartCPUProfile, pprof.StopCPUProfile)
}

// Trace writes an execution trace of the rest of the process to path
// (`go tool trace`: what each goroutine ran and waited for); flag names
// the option in errors.
func Trace(flag, path string) (stop func() error, err error) {
	return start(flag, path, trace.Start, trace.Stop)
}

// start creates path and starts a recording into it with begin; stop ends
// it with end and closes the file.
func start(flag, path string, begin func(io.Writer) error, end func()) (stop func() error, err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	if err := begin(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	return func() error {
		end()
		return f.Close()
	}, nil
}

// AllocProfile creates path now and writes the process's allocation
// profile into it when stop is called (`go tool pprof
// -sample_index=alloc_space`: what the process allocated); flag names the
// option in errors.
func AllocProfile(flag, path string) (stop func() error, err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	return func() error { return writeProfile(f, "allocs") }, nil
}

// HeapProfiles writes the live heap (the "heap" profile, after a
// collection) to prefix-0000.pb.gz now, then every interval, and once more
// when stop is called (`go tool pprof -base early late
// -sample_index=inuse_space` shows what grew); flag names the option in
// errors, and flag + "-every" the interval's. A periodic write that fails
// is reported by stop.
func HeapProfiles(flag, prefix string, every time.Duration) (stop func() error, err error) {
	if every <= 0 {
		return nil, fmt.Errorf("%s-every: %v is not a positive duration", flag, every)
	}
	n := 0
	write := func() error {
		path := fmt.Sprintf("%s-%04d.pb.gz", prefix, n)
		n++
		f, err := os.Create(path)
		if err != nil {
			return fmt.Errorf("%s: %w", flag, err)
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

// writeProfile writes the named runtime profile into f and closes it,
// returning the first error.
func writeProfile(f *os.File, name string) error {
	err := pprof.Lookup(name).WriteTo(f, 0)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
