package process_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/signalbox/signalbox/process"
	"github.com/signalbox/signalbox/record"
)

// TestConcurrentErrors: expressions that end in cel-go's shared errors
// ("no such overload", "timestamp overflow"), and one that cel-go
// evaluates with its cost tracked, evaluated by several goroutines at
// once, as a fork and the run's goroutine do (docs/design.md K10), give
// their errors and results and, under -race, no data race (celrace.go
// labels the shared errors first).
func TestConcurrentErrors(t *testing.T) {
	r := &record.Record{Topic: "t", EventTime: 1, ValueJSON: true, Value: []byte(`{"a":"x","n":300000000000}`)}
	srcs := map[string]string{ // "": no error, the result below
		`dyn(value.a) + dyn(1)`:           "no such overload",
		`string(timestamp(int(value.n)))`: "timestamp overflow",
		`[1, 2, 3].map(i, i * 2)`:         "", // a comprehension: cel-go's own evaluation, cost tracked
	}
	var wg sync.WaitGroup
	for src, want := range srcs {
		x, err := process.Compile("k", src, process.Map)
		if err != nil {
			t.Fatal(err)
		}
		for range 4 {
			wg.Go(func() {
				for range 50 {
					out, err := x.Apply(nil, r)
					switch {
					case want == "" && (err != nil || string(out) != "[2,4,6]"):
						t.Errorf("%s: %s, %v; want [2,4,6]", src, out, err)
						return
					case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
						t.Errorf("%s: %v, want an error with %q", src, err, want)
						return
					}
				}
			})
		}
	}
	wg.Wait()
}
