package decode_test

import (
	"testing"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/internal/decode"
)

// TestSpecNamesMatchInput: the names a Spec is compiled with are the root
// package's, so that compileInput passes them through unchanged.
func TestSpecNamesMatchInput(t *testing.T) {
	for got, want := range map[string]string{
		string(signalbox.TimeFromTimestamp):     decode.TimeFromTimestamp,
		string(signalbox.TimeFromField):         decode.TimeFromField,
		string(signalbox.TimeFromHeader):        decode.TimeFromHeader,
		string(signalbox.TimeNone):              decode.TimeNone,
		string(signalbox.FormatAuto):            decode.FormatAuto,
		string(signalbox.FormatUnixMs):          decode.FormatUnixMs,
		string(signalbox.FormatUnixS):           decode.FormatUnixS,
		string(signalbox.FormatUnixUs):          decode.FormatUnixUs,
		string(signalbox.FormatUnixNs):          decode.FormatUnixNs,
		string(signalbox.FormatRFC3339):         decode.FormatRFC3339,
		"key:" + string(signalbox.KeyFromKafka): "key:" + decode.KeyFromKafka,
		"key:" + string(signalbox.KeyFromField): "key:" + decode.KeyFromField,
	} {
		if got != want {
			t.Errorf("signalbox names %q, decode %q", got, want)
		}
	}
}
