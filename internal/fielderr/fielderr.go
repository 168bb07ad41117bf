// Package fielderr is the error of a validation rule about one named field.
// The library's validators (signalbox.Input.Validate, the pipeline options,
// kafka.Config.Validate) return them, joined, so that the CLI's job file can
// name each problem by its YAML path and line without a second copy of the
// rules (package config).
//
// Invariants:
//
//  1. Field is the field's name as the job file spells it, relative to what
//     was validated (e.g. "time_field", "brokers[0]", "tls.cert_file").
//  2. All finds every *Error in a tree of joined and wrapped errors, in
//     order; it never loses one.
//  3. Quote repeats at most MaxEcho characters of a value, so that a
//     message about a huge value stays short.
package fielderr

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// Error is one problem with one field.
type Error struct {
	Field string
	Msg   string
}

func (e *Error) Error() string { return e.Field + ": " + e.Msg }

// New returns an *Error about field.
func New(field, format string, args ...any) error {
	return &Error{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// All returns every *Error in err, which may join or wrap them.
func All(err error) []*Error {
	if err == nil {
		return nil
	}
	if fe, ok := err.(*Error); ok {
		return []*Error{fe}
	}
	switch u := err.(type) {
	case interface{ Unwrap() []error }:
		var out []*Error
		for _, e := range u.Unwrap() {
			out = append(out, All(e)...)
		}
		return out
	case interface{ Unwrap() error }:
		return All(u.Unwrap())
	}
	return nil
}

// MaxEcho is how many characters of a refused value a message repeats.
const MaxEcho = 100

// Quote is v quoted as %q quotes it, for a message that repeats a value: a
// value longer than MaxEcho characters is cut there, marked with "…" and
// followed by its length in bytes.
func Quote(v string) string {
	if utf8.RuneCountInString(v) <= MaxEcho {
		return strconv.Quote(v)
	}
	cut, n := 0, 0
	for i := range v {
		if n == MaxEcho {
			cut = i
			break
		}
		n++
	}
	return strconv.Quote(v[:cut]+"…") + " (" + strconv.Itoa(len(v)) + " bytes)"
}
