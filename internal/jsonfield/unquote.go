package jsonfield

import (
	"encoding/json"
)

// jsonUnquote handles the rare escapes strconv.Unquote does not; it is off the
// hot path.
func jsonUnquote(inner []byte) (string, error) {
	var s string
	b := make([]byte, 0, len(inner)+2)
	b = append(b, '"')
	b = append(b, inner...)
	b = append(b, '"')
	if err := json.Unmarshal(b, &s); err != nil {
		return "", ErrMalformed
	}
	return s, nil
}
