// Package report holds what the benchmark commands share to write their
// sections of docs/bench.md: splicing a generated section between its
// markers, and formatting sizes.
//
// Invariant: Splice keeps every byte of the document outside the markers of
// the section it replaces, so hand-written notes and the other commands'
// sections survive a regeneration.
package report

import (
	"fmt"
	"strings"
)

// Splice replaces the section of doc between the lines begin and end with
// sec (markers kept), or appends it when doc has no such section.
func Splice(doc, begin, end, sec string) string {
	sec = begin + "\n" + sec + end + "\n"
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	if i >= 0 && j > i {
		return doc[:i] + sec + strings.TrimPrefix(doc[j+len(end):], "\n")
	}
	if doc == "" {
		return "# Benchmarks\n\n" + sec
	}
	if !strings.HasSuffix(doc, "\n") {
		doc += "\n"
	}
	return doc + "\n" + sec
}

// MiB formats a byte count for a table: "n/a" for 0, KiB below 1 MiB.
func MiB(b int64) string {
	switch {
	case b == 0:
		return "n/a"
	case b < 1<<20:
		return fmt.Sprintf("%d KiB", b>>10)
	}
	return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20))
}
