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
