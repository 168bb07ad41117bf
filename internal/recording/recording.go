package recording

import (
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"runtime/trace"
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
