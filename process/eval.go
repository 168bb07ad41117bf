package process

// Evaluation over a record: the activation that resolves the variables,
// Bool and Apply, and the cost estimator.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"
	"unicode/utf8"
	"unsafe"

	"cel.dev/cel-go/checker"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/interpreter"

	"github.com/signalbox/signalbox/internal/jsonfield"
	"github.com/signalbox/signalbox/record"
)

// activation resolves the variables of one record, each only when the
// expression reads it; value is converted once per activation.
type activation struct {
	rec   *record.Record
	doc   []byte // the value's JSON: the mapped value, else Doc(rec)
	json  bool   // doc is known to be valid JSON
	value ref.Val
	shape docShape // what doc is, once looked at

	// Kept across uses (the pool): the scan of an object doc's top-level
	// members, shared by every field the fast path reads (scanning: 0 not
	// started, 1 started, -1 the doc is no object), and the buffer a map's
	// result is rendered in.
	scan     memberScan
	scanning int8
	buf      []byte
	// values is where Steps.Run carves new values from (newValue).
	values []byte
	// tmpl is the template Early makes (partial.go).
	tmpl ptemplate
}

// valueChunk is the size of the chunks new values are carved from; a value
// larger than a quarter of it gets an allocation of its own.
const valueChunk = 16 << 10

// newValue is a copy of v in memory of its own, carved from the
// activation's chunk: one allocation per chunk instead of one per record.
// Each value starts on an 8-byte boundary and is capped at its length, so
// nothing written through one value (an append) reaches another. A chunk is
// never written again where a value was carved; it lives as long as one of
// its values does.
func (a *activation) newValue(v []byte) []byte {
	n := len(v)
	if n > valueChunk/4 {
		return append([]byte(nil), v...)
	}
	if cap(a.values) < n {
		a.values = make([]byte, 0, valueChunk)
	}
	out := append(a.values[:0:n], v...) // within a.values' array: cap(a.values) >= n
	skip := min((n+7)&^7, cap(a.values))
	a.values = a.values[skip:skip]
	return out
}

// maxPooledBuf bounds the buffer an activation keeps for the next record.
const maxPooledBuf = 64 << 10

// errNoObject is member's error for a value that is no JSON object.
var errNoObject = errors.New("value is no JSON object")

// member is the top-level member key of the object doc, exactly as
// jsonfield.Get(doc, Path{key}) reads it, or errNoObject.
func (a *activation) member(key string) (jsonfield.Value, error) {
	if a.scanning == 0 {
		a.scanning = -1
		if doc, ok := a.object(); ok {
			a.scan.reset(doc)
			a.scanning = 1
		}
	}
	if a.scanning < 0 {
		return jsonfield.Value{}, errNoObject
	}
	return a.scan.find(key)
}

// prefill gives a's member scan the members of its doc found by another
// scan (jsonfield.ScanMembers, ok): all of them, of a valid object. find
// then reads them as it reads the members it scanned itself
// (jsonfield's invariants 5 and 6: they are the members Get reads).
// The scan reads spans themselves, capped (never appended to), until the
// activation is cleared.
func (a *activation) prefill(spans []jsonfield.Span) {
	a.shape, a.scanning = shapeObject, 1
	s := &a.scan
	s.doc, s.pos, s.done, s.bad, s.ms = a.doc, len(a.doc), true, false, spans[:len(spans):len(spans)]
}

// docShape is what an activation's doc is.
type docShape uint8

const (
	shapeUnknown docShape = iota
	shapeObject           // a valid JSON object
	shapeOther            // valid JSON, not an object
	shapeInvalid          // not JSON
)

// docShape looks at the doc once: validated (jsonfield.Scan) unless known
// to be JSON.
func (a *activation) docShape() docShape {
	if a.shape == shapeUnknown {
		switch {
		case !a.json && !jsonfield.Scan(a.doc, nil).Valid:
			a.shape = shapeInvalid
		case isObject(a.doc):
			a.shape = shapeObject
		default:
			a.shape = shapeOther
		}
	}
	return a.shape
}

// object is the doc when `value` is a JSON object; ok is false otherwise
// (no value, not JSON, not an object).
func (a *activation) object() (doc []byte, ok bool) {
	return a.doc, a.doc != nil && a.docShape() == shapeObject
}

// bounded reports whether what the fast path reads is within the sizes
// the cost estimate assumed (MaxInputBytes): then an expression estimated
// at most MaxCost cannot pass MaxCost, and needs no cost tracking.
func (a *activation) bounded() bool {
	return len(a.doc) <= MaxInputBytes && len(a.rec.Key) <= MaxInputBytes && len(a.rec.Topic) <= MaxInputBytes
}

var pool = sync.Pool{New: func() any { return new(activation) }}

func getActivation(r *record.Record) *activation {
	a := pool.Get().(*activation)
	a.start(r)
	return a
}

// start makes a read r: a cleared activation (clear, or a new one).
func (a *activation) start(r *record.Record) {
	a.rec, a.doc, a.json, a.value = r, Doc(r), r.ValueJSON || r.DecodedValue != nil, nil
}

// put returns a to the pool, cleared.
func (a *activation) put() {
	a.clear()
	pool.Put(a)
}

// clear drops everything of the record, keeping a's buffers (start sets
// the rest; a scan starts with reset).
func (a *activation) clear() {
	if cap(a.buf) > maxPooledBuf {
		a.buf = nil
	}
	if cap(a.tmpl.blob) > maxPooledBuf || cap(a.tmpl.lit) > maxPooledBuf {
		a.tmpl = ptemplate{}
	}
	a.rec, a.doc, a.value, a.scan.doc, a.scan.ms, a.shape, a.scanning = nil, nil, nil, nil, nil, shapeUnknown, 0
}

// Doc is the bytes `value` reads from r: the value's JSON rendering when
// the input decodes values (record.Record.DecodedValue, as the sinks
// render it), else its bytes.
func Doc(r *record.Record) []byte {
	if r.DecodedValue != nil {
		return r.DecodedValue
	}
	return r.Value
}

func (a *activation) Parent() interpreter.Activation { return nil }

func (a *activation) ResolveName(name string) (any, bool) {
	r := a.rec
	switch name {
	case "value":
		if a.value == nil {
			a.value = a.readValue()
		}
		return a.value, true
	case "key":
		k, ok := keyText(r)
		if !ok {
			return types.NewErr("key is not valid UTF-8: read key_bytes"), true
		}
		return types.String(k), true
	case "key_bytes":
		return types.Bytes(r.Key), true
	case "headers":
		m := make(map[ref.Val]ref.Val, len(r.Headers))
		for _, h := range r.Headers {
			m[types.String(h.Key)] = types.Bytes(h.Value) // the last of a name wins
		}
		return types.NewRefValMap(types.DefaultTypeAdapter, m), true
	case "topic":
		return types.String(r.Topic), true
	case "partition":
		return types.Int(r.Partition), true
	case "offset":
		return types.Int(r.Offset), true
	case "event_time":
		if r.Timeless {
			return types.NewErr("event_time: the record's input has time: none"), true
		}
		return types.Timestamp{Time: time.UnixMilli(r.EventTime).UTC()}, true
	case "kafka_timestamp":
		return types.Timestamp{Time: r.Timestamp.UTC()}, true
	case "late":
		return types.Bool(r.Late), true
	case asOfVar: // lookup's time (lookup.go)
		if r.Timeless {
			return types.Int(math.MaxInt64), true
		}
		return types.Int(r.EventTime), true
	}
	return nil, false
}

// readValue is `value`: null for a record without a value (a tombstone),
// an error when the bytes are not JSON.
func (a *activation) readValue() ref.Val {
	if a.doc == nil {
		return types.NullValue
	}
	if a.docShape() == shapeInvalid {
		return types.NewErr("value is not JSON")
	}
	return jsonValue(a.doc)
}

// Bool evaluates a Filter or Where over r.
func (x *Expr) Bool(r *record.Record) (bool, error) {
	a := getActivation(r)
	defer a.put()
	return x.boolOf(a)
}

func (x *Expr) boolOf(a *activation) (bool, error) {
	if x.fast != nil && a.bounded() {
		if v, ok := x.fast(a); ok && v.k == fBool {
			return v.i != 0, nil
		}
	}
	out, err := x.eval(a)
	if err != nil {
		return false, err
	}
	b, ok := out.(ref.Val).(types.Bool)
	if !ok { // a dyn expression checked as bool cannot get here; refuse rather than guess
		return false, x.fail(fmt.Errorf("result %s is not a bool", describe(out.(ref.Val))))
	}
	return bool(b), nil
}

// Apply evaluates a Map over r and appends its result's JSON to dst
// (AppendJSON). A result longer than MaxValueBytes is an error.
func (x *Expr) Apply(dst []byte, r *record.Record) ([]byte, error) {
	a := getActivation(r)
	defer a.put()
	return x.apply(dst, a)
}

func (x *Expr) apply(dst []byte, a *activation) ([]byte, error) {
	// rendered in the activation's buffer, then copied once: dst grows
	// once, to the exact size
	if buf, ok := x.renderFast(a); ok {
		return append(dst, buf...), nil
	}
	return x.applySlow(dst, a)
}

// renderFast is the fast path's rendering of the result, in the
// activation's buffer (valid until its next use); ok is false when the
// fast path gave up, or the result is longer than MaxValueBytes.
func (x *Expr) renderFast(a *activation) ([]byte, bool) {
	if x.render == nil || !a.bounded() {
		return nil, false
	}
	buf, ok := x.render(a.buf[:0], a)
	if cap(buf) <= maxPooledBuf {
		a.buf = buf[:0]
	}
	return buf, ok && len(buf) <= MaxValueBytes
}

// applySlow is apply through cel-go.
func (x *Expr) applySlow(dst []byte, a *activation) ([]byte, error) {
	n := len(dst)
	out, err := x.eval(a)
	if err != nil {
		return dst, err
	}
	dst, err = AppendJSON(dst, out.(ref.Val))
	if err != nil {
		return dst[:n], x.fail(err)
	}
	if len(dst)-n > MaxValueBytes {
		return dst[:n], x.fail(fmt.Errorf("the result is %d bytes of JSON, more than %d", len(dst)-n, MaxValueBytes))
	}
	return dst, nil
}

// newValue is apply's result as a record's new value: rendered in the
// activation's buffer, then copied into memory of its own
// (activation.newValue).
func (x *Expr) newValue(a *activation) ([]byte, error) {
	if buf, ok := x.renderFast(a); ok {
		return a.newValue(buf), nil // one copy, from the buffer it was rendered in
	}
	buf, err := x.applySlow(a.buf[:0], a)
	if cap(buf) <= maxPooledBuf {
		a.buf = buf[:0]
	}
	if err != nil {
		return nil, err
	}
	return a.newValue(buf), nil
}

// estimator bounds the size of what the variables hold for the cost
// estimate: a value, key or header at most MaxInputBytes long (a list in
// a value at most half as many elements, "0," each).
type estimator struct{}

func (estimator) EstimateSize(n checker.AstNode) *checker.SizeEstimate {
	p := n.Path()
	if len(p) == 0 {
		return nil
	}
	switch p[0] {
	case "value", "key", "key_bytes", "headers", "topic":
		return &checker.SizeEstimate{Min: 0, Max: MaxInputBytes}
	}
	return nil
}

func (estimator) EstimateCallCost(function, overloadID string, target *checker.AstNode, args []checker.AstNode) *checker.CallEstimate {
	return nil
}

// keyText is `key`: the record's key as a string. A schema'd key (its
// input decodes keys: record.Record.DecodedKey) is its decoded value: a
// string key's text, any other key's JSON; a plain key is its bytes, and
// ok is false when they are not UTF-8. The string may share the record's
// memory.
func keyText(r *record.Record) (k string, ok bool) {
	if d := r.DecodedKey; d != nil {
		if len(d) >= 2 && d[0] == '"' && bytes.IndexByte(d[1:len(d)-1], '\\') < 0 && bytes.IndexByte(d[1:len(d)-1], '"') < 0 {
			d = d[1 : len(d)-1] // no escape: the text is the bytes between the quotes
			return unsafe.String(unsafe.SliceData(d), len(d)), true
		}
		if len(d) > 0 && d[0] == '"' {
			var s string
			if json.Unmarshal(d, &s) == nil {
				return s, true
			}
		}
		return unsafe.String(unsafe.SliceData(d), len(d)), true
	}
	return unsafe.String(unsafe.SliceData(r.Key), len(r.Key)), utf8.Valid(r.Key)
}

// describe is v for an error message: its CEL type and its JSON, cut to 64
// bytes ("map {\"a\":1}").
func describe(v ref.Val) string {
	j, err := AppendJSON(nil, v)
	if err != nil {
		return v.Type().TypeName()
	}
	if len(j) > 64 {
		j = append(j[:61], "..."...)
	}
	return v.Type().TypeName() + " " + string(j)
}
