package config

import (
	"bytes"
	"errors"
	"io"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// yamlWhere is the position yaml.v3 puts before a syntax error's message.
var yamlWhere = regexp.MustCompile(`^(?:yaml: )?line (\d+): `)

// maxLocate bounds the job files whose syntax errors are located by
// reading prefixes (each read costs a parse of the prefix): a hand-written
// job is a few kilobytes; a larger file keeps yaml.v3's line.
const maxLocate = 64 << 10

// syntaxError is err, a YAML syntax error in data, at the line that makes
// the file unreadable; yaml.v3 had read data up to byte read when it
// failed. yaml.v3 names the line where the enclosing block starts (the
// parent key of a wrongly indented list, counted from 0) rather than the
// faulty one, so the faulty line is found by reading prefixes of data: it
// is the line whose addition makes a readable prefix fail with err's
// message. It lies after yaml.v3's line and at or before the line of byte
// read, near the latter (the parser reads ahead a few kilobytes at most):
// the search gallops back from there and then bisects.
func syntaxError(data []byte, read int, err error) *FieldError {
	where := yamlWhere.FindStringSubmatch(err.Error())
	msg := yamlWhere.ReplaceAllString(err.Error(), "")
	keep := &FieldError{Msg: strings.TrimPrefix(err.Error(), "yaml: ")}
	if len(data) > maxLocate {
		return keep
	}
	lines := bytes.SplitAfter(data[:min(max(read, 0), len(data))], []byte("\n"))
	fails := func(n int) bool { // the first n lines fail with msg
		e := readAll(bytes.Join(lines[:n], nil))
		return e != nil && yamlWhere.ReplaceAllString(e.Error(), "") == msg
	}
	ok, bad := 0, len(lines) // !fails(ok) and fails(bad)
	if !fails(bad) {
		lines = bytes.SplitAfter(data, []byte("\n"))
		if bad = len(lines); !fails(bad) { // not the error data has
			return keep
		}
	}
	if where != nil {
		n, _ := strconv.Atoi(where[1])
		if ok = min(max(n-1, 0), bad-1); ok > 0 && fails(ok) {
			ok = 0
		}
	}
	for step := 1; bad-step > ok; step *= 2 {
		if !fails(bad - step) {
			ok = bad - step
			break
		}
		bad -= step
	}
	for bad-ok > 1 {
		if mid := (ok + bad) / 2; fails(mid) {
			bad = mid
		} else {
			ok = mid
		}
	}
	return &FieldError{Line: bad, Msg: msg}
}

// readAll reads every document of data and returns the first error.
func readAll(data []byte) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var n yaml.Node
		if err := dec.Decode(&n); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return err
		}
	}
}
