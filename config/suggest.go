package config

import (
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"
)

// didYouMean is the hint for a misspelt key: " (did you mean X?)" naming
// the known key nearest to key, or "" when none is near enough to be the
// likely intent: at most 2 edits away, and at most one edit per 3
// characters of key (one for a shorter key), so that short keys are never
// "corrected" into unrelated ones. Of equally near keys, the first known.
func didYouMean(key string, known []string) string {
	k := normalKey(key)
	best, bestD := "", 3
	for _, c := range known {
		if len(k) > len(c)+2 || len(c) > len(k)+2 {
			continue // more than 2 edits apart: skip the O(len(k)·len(c)) table
		}
		if d := editDistance(k, c); d < bestD && d*3 <= max(len(k), 3) {
			best, bestD = c, d
		}
	}
	if best == "" {
		return ""
	}
	return " (did you mean " + best + "?)"
}

// normalKey spells key as job files spell keys: lower case with
// underscores, so that "deadLetter" and "dead-letter" are near dead_letter.
func normalKey(key string) string {
	var b strings.Builder
	lower := false // the previous character was a lower-case letter
	for _, r := range key {
		next := r >= 'a' && r <= 'z'
		switch {
		case r == '-' || r == ' ':
			r = '_'
		case r >= 'A' && r <= 'Z':
			if lower {
				b.WriteByte('_')
			}
			r += 'a' - 'A'
		}
		lower = next
		b.WriteRune(r)
	}
	return b.String()
}

// editDistance is the optimal string alignment distance between a and b:
// insertions, deletions, substitutions and transpositions of adjacent
// bytes each cost 1.
func editDistance(a, b string) int {
	prev2, prev, cur := make([]int, len(b)+1), make([]int, len(b)+1), make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

// knownKeys are the keys the mapping n may hold when decoded into the
// struct v: its yaml tags; for a sink whose type n names, only that type's
// keys, so that a misspelt key is matched against the keys it can mean.
func knownKeys(v reflect.Value, n *yaml.Node) []string {
	if v.Type() == sinkUnion {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == "type" {
				if kind := sinkKindOf(n.Content[i+1].Value); kind != nil {
					return append([]string{"type"}, kind.fields...)
				}
			}
		}
	}
	t := v.Type()
	keys := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		if tag, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); tag != "" && t.Field(i).IsExported() {
			keys = append(keys, tag)
		}
	}
	return keys
}
