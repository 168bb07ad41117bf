package process_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/signalbox/signalbox/process"
	"github.com/signalbox/signalbox/record"
)

// atoms and ops build expressions from the fuzzer's bytes, so that most
// inputs compile and evaluate rather than fail to parse.
var (
	atoms = []string{"value", "value.a", "value.b.c", "value.l", "key", "key_bytes", "headers", "topic", "partition", "offset",
		"event_time", "kafka_timestamp", "late", "1", "2.5", `"s"`, "null", "true", "[1, 2]", `{"k": value.a}`, "b\"\\xff\"", "-0.0"}
	ops = []string{"%s + %s", "%s * %s", "%s / %s", "%s == %s", "%s > %s", "has(%s.x) ? %s : 0", "%s.size() + size(%s)", "[%s, %s]",
		`{"a": %s, "b": %s}`, "%s.exists(i, i == %s)", "%s.map(i, %s)", "string(%s) + string(%s)", "math.greatest(%s, %s)",
		"%s.lowerAscii().contains(%s)", "base64.encode(%s) + %s", "int(%s) %% int(%s)", "%s in %s", "timestamp(%s) < %s",
		"%s != %s", "%s <= %s", "%s - %s", "(%s && %s)", "(%s || !%s)", `{"z": %s, "a": {"b": %s}}`}
)

func build(prog []byte) string {
	var stack []string
	for _, b := range prog {
		if b < 128 || len(stack) < 2 {
			stack = append(stack, atoms[int(b)%len(atoms)])
			continue
		}
		x, y := stack[len(stack)-2], stack[len(stack)-1]
		op := ops[int(b)%len(ops)]
		if strings.Count(op, "%s") == 2 {
			stack = append(stack[:len(stack)-2], strings.NewReplacer("%%", "%").Replace(strings.Replace(strings.Replace(op, "%s", x, 1), "%s", y, 1)))
		}
	}
	if len(stack) == 0 {
		return "value"
	}
	return stack[len(stack)-1]
}

// FuzzEval compiles random expressions (built from the bytes, and the raw
// text) and evaluates them over random values: no panic, the same result
// twice, a map's result one line of valid JSON within MaxValueBytes, a
// filter's a bool or an error naming it; every evaluation ends under the
// cost limit; and the fast path (fast.go) gives exactly what cel-go's
// interpreter gives, bytes and error text.
func FuzzEval(f *testing.F) {
	f.Add([]byte{1, 2, 130}, "", []byte(`{"a":1,"b":{"c":"x"},"l":[1,2,3]}`))
	f.Add([]byte{3, 3, 137}, "value.l.map(x, x * 2.0)", []byte(`{"l":[1e308,2]}`))
	f.Add([]byte{0, 13, 140, 19, 145}, `{"t": value.a * value.a}`, []byte(`{"a":"s"}`))
	f.Add([]byte{10, 11, 138}, "", []byte(`[1,{"a":null}]`))
	f.Add([]byte{}, `value.a / 0`, []byte(`{"a":0}`))
	f.Add([]byte{}, `{"id": value.id, "t": value.q * value.p, "ok": value.s != "test"}`, []byte(`{"id":"\u00e9","q":1e308,"p":10,"s":"x"}`))
	f.Fuzz(func(t *testing.T, prog []byte, text string, val []byte) {
		if len(prog) > 64 || len(text) > 512 || len(val) > 4096 {
			return
		}
		r := &record.Record{Topic: "t", Key: val[:len(val)/2], Value: val, Headers: []record.Header{{Key: "h", Value: val}}}
		for _, src := range []string{build(prog), text} {
			for _, k := range []process.Kind{process.Map, process.Filter} {
				x, err := process.Compile("e", src, k)
				if err != nil {
					continue
				}
				sameAsInterpreter(t, x, src, r)
				if k == process.Filter {
					b1, err1 := x.Bool(r)
					b2, err2 := x.Bool(r)
					if b1 != b2 || (err1 == nil) != (err2 == nil) {
						t.Fatalf("%q: %v %v then %v %v", src, b1, err1, b2, err2)
					}
					if err1 != nil && !strings.HasPrefix(err1.Error(), "e: ") {
						t.Fatalf("%q: error %v does not name the expression", src, err1)
					}
					continue
				}
				v1, err1 := x.Apply(nil, r)
				v2, _ := x.Apply(nil, r)
				if string(v1) != string(v2) {
					t.Fatalf("%q: %s then %s", src, v1, v2)
				}
				if err1 != nil {
					continue
				}
				if !json.Valid(v1) || strings.ContainsAny(string(v1), "\r\n") || len(v1) > process.MaxValueBytes {
					t.Fatalf("%q over %q: %q is not one line of JSON within the bound", src, val, v1)
				}
			}
		}
	})
}
