package config

import (
	"bytes"
	"errors"
	"io"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

// yamlWhere is the position yaml.v3 puts before a syntax error's message.
var yamlWhere = regexp.MustCompile(`^(yaml: )?line \d+: `)

// syntaxError is err, a YAML syntax error in data, at the line that makes
// the file unreadable. yaml.v3 names the line where the enclosing block
// starts (the parent key of a wrongly indented list, counted from 0)
// rather than the faulty one, so the faulty line is found by reading
// prefixes of data: it is the line whose addition makes a readable prefix
// fail with err's message, found by bisection in O(log lines) reads.
func syntaxError(data []byte, err error) *FieldError {
	msg := yamlWhere.ReplaceAllString(err.Error(), "")
	lines := bytes.SplitAfter(data, []byte("\n"))
	fails := func(n int) bool { // the first n lines fail with msg
		e := readAll(bytes.Join(lines[:n], nil))
		return e != nil && yamlWhere.ReplaceAllString(e.Error(), "") == msg
	}
	if !fails(len(lines)) {
		return &FieldError{Msg: strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	ok, bad := 0, len(lines) // fails(bad) and, reading nothing, !fails(ok)
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
