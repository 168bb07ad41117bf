package config

import (
	"testing"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/formats"
)

// TestDecodersShareCodecs: every schema'd input of a job, keys and values,
// Avro and Protobuf, keeps its compiled schemas in the one formats.Codecs
// of the job's registry client, so a schema id two inputs read compiles
// once (formats TestCodecsSharedByInputs).
func TestDecodersShareCodecs(t *testing.T) {
	doc := "schema_registry: {url: 'http://127.0.0.1:1'}\n" + minimal +
		"  - {topic: b, format: avro, key_format: avro}\n  - {topic: c, format: avro}\n  - {topic: d, format: protobuf}\n"
	j, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	lib := make([]signalbox.Input, len(j.Inputs))
	for i, in := range j.Inputs {
		lib[i] = in.library()
	}
	if err := j.decoders(lib); err != nil {
		t.Fatal(err)
	}
	var shared *formats.Codecs
	for i, d := range []signalbox.ValueDecoder{lib[1].Decoder, lib[1].KeyDecoder, lib[2].Decoder, lib[3].Decoder} {
		fd, ok := d.(*formats.Decoder)
		if !ok {
			t.Fatalf("decoder %d: %T", i, d)
		}
		if shared == nil {
			shared = fd.Codecs()
		}
		if fd.Codecs() != shared {
			t.Fatalf("decoder %d keeps codecs of its own", i)
		}
	}
}
