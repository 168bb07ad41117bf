package avro

import "github.com/signalbox/signalbox/formats/value"

// DecodeReference is the library path's JSON, for checking the transcoder.
func (c *Codec) DecodeReference(body []byte) ([]byte, error) {
	_, js, err := c.decodeReference(body)
	return js, err
}

// LookupReference is Lookup on the library path's generic value.
func (c *Codec) LookupReference(body []byte, path []string) (value.Field, bool) {
	tree, _, err := c.decodeReference(body)
	if err != nil {
		return value.Field{}, false
	}
	return c.lookupReference(tree, path)
}
