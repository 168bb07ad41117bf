package main

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// startCPUProfile writes a CPU profile of the rest of the process to path
// (`signalbox run --cpuprofile`, a hidden flag for the scaling benchmark);
// the returned function stops it and closes the file.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// startAllocProfile creates path now (a bad path fails before the run) and
// returns the function that writes the process's allocation profile into it
// (`signalbox run --allocprofile`, a hidden flag for the scaling benchmark:
// `go tool pprof -sample_index=alloc_space` shows what the run allocated).
func startAllocProfile(path string) (write func() error, err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--allocprofile: %w", err)
	}
	return func() error {
		err := pprof.Lookup("allocs").WriteTo(f, 0)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	}, nil
}
