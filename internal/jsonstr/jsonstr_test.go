package jsonstr_test

import (
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/signalbox/signalbox/internal/jsonstr"
)

func TestAppendEscapes(t *testing.T) {
	for _, c := range []struct {
		in, want string
		valid    bool
	}{
		{"plain", `"plain"`, true},
		{"a\"b\\c\n\t\x00é<&>", `"a\"b\\c\n\t\u0000é<&>"`, true},
		{"\x1f\u2028x\u2029\ufffd\r", `"\u001f\u2028x\u2029` + "\ufffd" + `\r"`, true},
		{"bad\xffbyte", `"bad\ufffdbyte"`, false},
	} {
		got, valid := jsonstr.Append([]byte("x"), c.in)
		if string(got) != "x"+c.want || valid != c.valid {
			t.Errorf("Append(%q) = %s %v, want %s %v", c.in, got[1:], valid, c.want, c.valid)
		}
	}
}

// FuzzAppend: the output is valid JSON that reads back as the input with
// invalid UTF-8 replaced, and valid says whether anything was replaced.
func FuzzAppend(f *testing.F) {
	f.Add("plain")
	f.Add("\x00\xff\"\\\u2028")
	f.Fuzz(func(t *testing.T, s string) {
		out, valid := jsonstr.Append(nil, s)
		var back string
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatalf("%q renders as invalid JSON %s: %v", s, out, err)
		}
		if want := string([]rune(s)); back != want { // []rune makes each invalid byte a U+FFFD
			t.Fatalf("%q reads back as %q", s, back)
		}
		if valid != utf8.ValidString(s) {
			t.Fatalf("%q: valid = %v", s, valid)
		}
	})
}
