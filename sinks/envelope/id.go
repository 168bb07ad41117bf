package envelope

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
	"unsafe"
)

// IDPrefix starts every id that ID encodes in base64url.
const IDPrefix = "~b64:"

// ID maps a key to a text id, injectively over all byte strings (invariant
// 6): a key that is valid UTF-8 and does not start with IDPrefix is its
// own id, so text keys keep the ids they always had; any other key becomes
// IDPrefix followed by its bytes in unpadded base64url (RFC 4648 §5), which
// no key of the first kind starts with. Text keys cost one UTF-8 check and
// no allocation.
func ID(key string) string {
	if utf8.ValidString(key) && !strings.HasPrefix(key, IDPrefix) {
		return key
	}
	return encodeID(unsafe.Slice(unsafe.StringData(key), len(key)))
}

// IDBytes is ID of a key held as bytes (record.Record.Key), in one
// allocation whatever the key.
func IDBytes(key []byte) string {
	if utf8.Valid(key) && !bytes.HasPrefix(key, idPrefix) {
		return string(key)
	}
	return encodeID(key)
}

var idPrefix = []byte(IDPrefix)

// encodeID returns IDPrefix and key in unpadded base64url; key is only read.
func encodeID(key []byte) string {
	b := make([]byte, 0, len(IDPrefix)+base64.RawURLEncoding.EncodedLen(len(key)))
	b = base64.RawURLEncoding.AppendEncode(append(b, IDPrefix...), key)
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// ParseID returns the key whose ID is id.
func ParseID(id string) ([]byte, error) {
	rest, ok := strings.CutPrefix(id, IDPrefix)
	if !ok {
		if !utf8.ValidString(id) {
			return nil, errors.New("envelope: an id is valid UTF-8")
		}
		return []byte(id), nil
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(rest)
	if err != nil {
		return nil, errors.New("envelope: " + IDPrefix + " id with bad base64url: " + err.Error())
	}
	if ID(string(b)) != id { // a text key without the prefix is its own id
		return nil, errors.New("envelope: " + IDPrefix + " id of a key that is its own id")
	}
	return b, nil
}

// Decoded is what an envelope carries about a record's bytes.
type Decoded struct {
	Topic     string
	Partition int32
	Offset    int64
	// Key is the key's bytes, from key or key_b64; nil for "key":null.
	Key []byte
	// Value is the payload's bytes: value_b64 decoded, a string value's
	// text, or the JSON of any other value (compacted if the payload
	// spanned lines); nil for "value":null.
	Value []byte
}

// Decode reads one envelope back (invariant 3): the inverse of Append for
// keys, and for values that are not JSON (a payload that is a JSON string
// or null reads back as its text or nil). Tests hold every sink to it.
func Decode(line []byte) (Decoded, error) {
	var e struct {
		Topic     string          `json:"topic"`
		Partition int32           `json:"partition"`
		Offset    int64           `json:"offset"`
		Key       json.RawMessage `json:"key"`
		KeyB64    *string         `json:"key_b64"`
		Value     json.RawMessage `json:"value"`
		ValueB64  *string         `json:"value_b64"`
	}
	if err := json.Unmarshal(line, &e); err != nil {
		return Decoded{}, err
	}
	d := Decoded{Topic: e.Topic, Partition: e.Partition, Offset: e.Offset}
	var err error
	if d.Key, err = member("key", e.Key, e.KeyB64); err != nil {
		return d, err
	}
	d.Value, err = member("value", e.Value, e.ValueB64)
	return d, err
}

// member returns the bytes that the member name (JSON raw) or its _b64
// form holds: nil for null or neither, a string's text, other JSON as is.
func member(name string, raw json.RawMessage, b64 *string) ([]byte, error) {
	switch {
	case b64 != nil && raw != nil:
		return nil, errors.New("envelope: both " + name + " and " + name + "_b64")
	case b64 != nil:
		b, err := base64.StdEncoding.Strict().DecodeString(*b64)
		if err != nil {
			return nil, fmt.Errorf("envelope: %s_b64: %w", name, err)
		}
		return b, nil
	case len(raw) == 0 || string(raw) == "null":
		return nil, nil
	case raw[0] == '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		return []byte(s), nil
	}
	return raw, nil
}
