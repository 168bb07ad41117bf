package early

import (
	"github.com/signalbox/signalbox/internal/decode"
	"github.com/signalbox/signalbox/record"
)

// Func prepares a record just decoded; m holds its value's members when
// the decode scanned them (decode.Members.OK).
type Func func(r *record.Record, m *decode.Members)

// With returns the signalbox.Option (as an any, set by package signalbox
// when it is initialized) that makes a run call forTopic(topic)'s Func, if
// not nil, on every record of topic it decodes. forTopic is called once
// per topic, from one goroutine.
var With func(forTopic func(topic string) Func) any
