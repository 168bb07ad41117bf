package protobuf

import "github.com/signalbox/signalbox/formats/value"

// Transcode runs the transcoder alone; ok is false when the message's
// shapes are not on its path.
func (c *Codec) Transcode(indexes []int, body []byte) (js []byte, ok bool, err error) {
	md, err := c.Message(indexes)
	if err != nil {
		return nil, false, err
	}
	p := c.plans[md.FullName()]
	if p == nil || !p.fast {
		return nil, false, nil
	}
	js, err = transcode(nil, body, p, 0)
	return js, true, err
}

// DecodeReference runs the dynamicpb/protojson path alone.
func (c *Codec) DecodeReference(indexes []int, body []byte) ([]byte, error) {
	md, err := c.Message(indexes)
	if err != nil {
		return nil, err
	}
	v, err := c.decodeReference(md, body)
	if err != nil {
		return nil, err
	}
	return v.JSON(), nil
}

// LookupDynamic is Lookup on the dynamic message alone.
func (c *Codec) LookupDynamic(indexes []int, body []byte, path []string) (value.Field, bool) {
	md, err := c.Message(indexes)
	if err != nil {
		return value.Field{}, false
	}
	v, err := c.decodeReference(md, body)
	if err != nil {
		return value.Field{}, false
	}
	return v.Lookup(path)
}
