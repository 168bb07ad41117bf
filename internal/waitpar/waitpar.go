package waitpar

import (
	"flag"
	"runtime"
	"strconv"
	"testing"
)

// Main parses the test flags, sets -parallel to n (when the command line
// did not set it, and n is above the default, GOMAXPROCS) and runs the
// tests: call it as os.Exit(waitpar.Main(m, n)) from TestMain.
func Main(m *testing.M, n int) int {
	if !flag.Parsed() {
		flag.Parse()
	}
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "test.parallel" })
	if !explicit && n > runtime.GOMAXPROCS(0) {
		if err := flag.Set("test.parallel", strconv.Itoa(n)); err != nil {
			panic(err)
		}
	}
	return m.Run()
}
