package formats

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/signalbox/signalbox/formats/avro"
	"github.com/signalbox/signalbox/formats/protobuf"
	"github.com/signalbox/signalbox/formats/registry"
	"github.com/signalbox/signalbox/formats/value"
	"github.com/signalbox/signalbox/formats/wire"
	"github.com/signalbox/signalbox/internal/jsonfield"
	"github.com/signalbox/signalbox/record"
)

// Format is the format of a record's key or value, named as a job file
// names it (inputs[i].format, key_format).
type Format string

// The formats. A Decoder reads the schema'd ones (Schemad). JSON and Raw
// need none: JSON values are read by the engine's own field reader, and
// Raw keeps the bytes opaque (no field can be read from them).
const (
	JSON       Format = "json"
	Avro       Format = "avro"
	Protobuf   Format = "protobuf"
	JSONSchema Format = "json_schema"
	Raw        Format = "raw"
	// DefaultFormat is the format of a value whose format is not given.
	DefaultFormat = JSON
)

// Names are the formats' names, the default first: the one list of them.
func Names() []string {
	return []string{string(JSON), string(Avro), string(Protobuf), string(JSONSchema), string(Raw)}
}

// Schemad reports whether f is read with a schema from the registry (by a
// Decoder).
func (f Format) Schemad() bool { return f == Avro || f == Protobuf || f == JSONSchema }

// HasFields reports whether fields (a time or key field) can be read from
// values of format f: of every format but Raw.
func (f Format) HasFields() bool { return f != Raw }

// Field is the value at a dotted path of a decoded record.
type Field = value.Field

// ErrBadRecord is matched (errors.Is) by a *BadRecordError.
var ErrBadRecord = errors.New("bad record")

// ErrUnavailable is matched (errors.Is) by an error that means "the
// registry could not answer; hold the record and try again".
var ErrUnavailable = registry.ErrUnavailable

// ErrAuth is matched (errors.Is) by an error that means "the registry
// refused the credentials (401, 403)": it is marked retry.Fatal, and the
// caller stops.
var ErrAuth = registry.ErrAuth

// BadRecordError says why a record cannot be decoded. The reason is meant
// for the dead-letter sink.
type BadRecordError struct {
	SchemaID int // 0 when the record named none (or a GUID)
	Err      error
}

func (e *BadRecordError) Error() string { return e.Err.Error() }

// Is makes errors.Is(err, ErrBadRecord) true.
func (e *BadRecordError) Is(target error) bool { return target == ErrBadRecord }

func (e *BadRecordError) Unwrap() error { return e.Err }

// Registry is what a Decoder needs from a registry (*registry.Client).
type Registry interface {
	ByID(ctx context.Context, id int) (*registry.Schema, error)
	ByGUID(ctx context.Context, guid string) (*registry.Schema, error)
}

// Config configures a Decoder.
type Config struct {
	// Format is the wire format of the data. Required.
	Format Format
	// Registry resolves schema ids. Required, unless Codecs is set.
	Registry Registry
	// Codecs, when set, is where the Decoder keeps the schemas it
	// compiles, shared with every Decoder made with the same Codecs, and
	// the registry it reads them from (NewCodecs); Registry is then left
	// unset. When nil, the Decoder has Codecs of its own, of Registry.
	Codecs *Codecs
	// Key makes the Decoder read keys: the __key_schema_id header instead
	// of __value_schema_id.
	Key bool
}

// Codecs is the compiled schemas of one registry: every Decoder made with
// it (Config.Codecs) finds a schema another compiled, so each schema id is
// fetched and compiled once per format, whichever input, key or value
// first meets it. It is safe for concurrent use.
type Codecs struct {
	reg     Registry
	formats map[Format]*codecs // one per format: the same id compiles differently for each
}

// NewCodecs returns empty Codecs of reg.
func NewCodecs(reg Registry) *Codecs {
	c := &Codecs{reg: reg, formats: map[Format]*codecs{}}
	for _, f := range []Format{Avro, Protobuf, JSONSchema} {
		c.formats[f] = &codecs{}
		c.formats[f].table.Store(&codecTable{ids: map[int]*compiled{}, guids: map[string]*compiled{}})
	}
	return c
}

// codecs is the compiled schemas of one format.
type codecs struct {
	mu       sync.Mutex                 // serialises compiling and adding to table
	table    atomic.Pointer[codecTable] // read without a lock: copied on each addition
	compiles int                        // schemas compiled (under mu), for the tests
}

// Decoder decodes the keys or values of one input.
type Decoder struct {
	cfg    Config
	header string
	codecs *codecs // cfg.Codecs's, of cfg.Format
}

// codecTable is the compiled schemas by id and by GUID.
type codecTable struct {
	ids   map[int]*compiled
	guids map[string]*compiled
}

// get returns the compiled schema of a frame, if there is one.
func (t *codecTable) get(fr wire.Frame) (*compiled, bool) {
	if fr.GUID != "" {
		c, ok := t.guids[fr.GUID]
		return c, ok
	}
	c, ok := t.ids[fr.ID]
	return c, ok
}

type compiled struct {
	avro  *avro.Codec
	proto *protobuf.Codec
	id    int
	err   error // a compile error, a *BadRecordError kept for the id's life
}

// New checks cfg and returns a Decoder.
func New(cfg Config) (*Decoder, error) {
	if !cfg.Format.Schemad() {
		return nil, fmt.Errorf("formats: format %q is not one of avro, protobuf, json_schema", cfg.Format)
	}
	switch {
	case cfg.Codecs != nil && cfg.Registry != nil:
		return nil, errors.New("formats: set Registry or Codecs, not both (Codecs holds its registry)")
	case cfg.Codecs == nil && cfg.Registry != nil:
		cfg.Codecs = NewCodecs(cfg.Registry)
	case cfg.Codecs == nil || cfg.Codecs.reg == nil:
		return nil, errors.New("formats: a schema registry is required for format " + string(cfg.Format))
	}
	d := &Decoder{cfg: cfg, header: wire.ValueHeader, codecs: cfg.Codecs.formats[cfg.Format]}
	if cfg.Key {
		d.header = wire.KeyHeader
	}
	return d, nil
}

// Codecs is where d keeps the schemas it compiles (Config.Codecs): a
// Decoder made with them shares them.
func (d *Decoder) Codecs() *Codecs { return d.cfg.Codecs }

// Value is one decoded key or value (a value.Decoded).
type Value struct {
	json  []byte
	id    int
	guid  string
	avro  avro.Value // an Avro body (avro.c set)
	proto body       // a Protobuf body; nil otherwise
	raw   []byte     // a JSON body as it came, checked, until JSON compacts it
	kind  uint8      // valueAvro, valueProto, valueJSON; 0: a tombstone
}

// The bodies a Value holds.
const (
	valueAvro = 1 + iota
	valueProto
	valueJSON
)

// body is a decoded Protobuf body.
type body interface {
	JSON() []byte
	Lookup(path []string) (value.Field, bool)
}

// JSON is the decoded value as JSON, for text sinks. A Value from Check
// renders on the first call; it is not safe for concurrent use until then.
func (v *Value) JSON() []byte {
	switch {
	case v.json != nil:
	case v.kind == valueAvro:
		v.json = v.avro.JSON()
	case v.kind == valueJSON:
		v.json, _ = compactJSON(v.raw) // cannot fail: Check accepted it
	}
	return v.json
}

// SchemaID is the writer schema's registry id (0 for a tombstone).
func (v *Value) SchemaID() int { return v.id }

// SchemaGUID is the writer schema's GUID when the record named it by GUID
// (the header framing).
func (v *Value) SchemaGUID() string { return v.guid }

// Lookup returns the field at a split dotted path (value.SplitPath), and
// false when the value has none. A logical timestamp or date is KindTime
// (its Text left for Field.String to render).
func (v *Value) Lookup(path []string) (Field, bool) {
	switch v.kind {
	case valueAvro:
		return v.avro.Lookup(path)
	case valueProto:
		return v.proto.Lookup(path)
	case valueJSON:
		if v.json == nil {
			return jsonLookup(v.raw, path)
		}
		return jsonLookup(v.json, path)
	}
	return Field{}, false
}

var _ value.Decoded = (*Value)(nil)

var null = []byte("null")

// Decode decodes one payload with the headers of its record.
func (d *Decoder) Decode(ctx context.Context, payload []byte, headers []record.Header) (*Value, error) {
	return d.decode(ctx, payload, headers, false)
}

// Check is Decode, with the same errors, except that an Avro body is
// checked without being rendered (the Value's Lookup reads only the fields
// asked for) and a JSON body is validated without being compacted: the
// JSON renders on the first call. (A Protobuf body is decoded as by
// Decode.)
func (d *Decoder) Check(ctx context.Context, payload []byte, headers []record.Header) (*Value, error) {
	return d.decode(ctx, payload, headers, true)
}

// prefixed returns the compiled schema and the body of a payload framed by
// the 5-byte prefix, with no schema id header, whose schema id is compiled
// without error; false for any other payload (decode then frames it).
func (d *Decoder) prefixed(payload []byte, headers []record.Header) (*compiled, []byte, bool) {
	if d.cfg.Format == Protobuf {
		return nil, nil, false // the message indexes follow the prefix
	}
	if _, has := wire.Header(headers, d.header); has {
		return nil, nil, false
	}
	id, body, ok := wire.PrefixID(payload)
	if !ok {
		return nil, nil, false
	}
	c, ok := d.codecs.table.Load().ids[id]
	if !ok || c.err != nil {
		return nil, nil, false
	}
	return c, body, true
}

// CheckValue is Check returning the value.Decoded interface (the engine's
// ValueChecker).
func (d *Decoder) CheckValue(ctx context.Context, payload []byte, headers []record.Header) (value.Decoded, error) {
	v, err := d.Check(ctx, payload, headers)
	if err != nil {
		return nil, err
	}
	return v, nil
}

func (d *Decoder) decode(ctx context.Context, payload []byte, headers []record.Header, check bool) (*Value, error) {
	if payload == nil {
		return &Value{json: null}, nil
	}
	c, body, ok := d.prefixed(payload, headers)
	var fr wire.Frame
	if !ok {
		h, hasHeader := wire.Header(headers, d.header)
		var err error
		if fr, err = wire.Parse(payload, h, hasHeader, d.cfg.Format == Protobuf); err != nil {
			return nil, &BadRecordError{Err: err}
		}
		if c, err = d.codec(ctx, fr); err != nil {
			return nil, err
		}
		body = fr.Body
	}
	if c.avro != nil { // the common case, filled in place
		var av avro.Value
		var err error
		if check {
			av, err = c.avro.Check(body)
		} else {
			av, err = c.avro.Decode(body) // rendered now; after Check, on demand
		}
		if err != nil {
			return nil, badRecord(c.id, err)
		}
		v := values.Get().(*Value)
		v.id, v.guid, v.avro, v.kind = c.id, fr.GUID, av, valueAvro
		if !check {
			v.json = av.JSON()
		}
		return v, nil
	}
	v := &Value{id: c.id, guid: fr.GUID} // does not escape: copied into a pooled Value at the end
	var err error
	switch {
	case c.proto != nil:
		pv, err := c.proto.Decode(fr.Indexes, body)
		if err != nil {
			return nil, badRecord(c.id, err)
		}
		v.json, v.proto, v.kind = pv.JSON(), pv, valueProto
	default:
		if !utf8.Valid(body) {
			return nil, badRecord(c.id, errors.New("json: body is not valid UTF-8"))
		}
		v.kind = valueJSON
		if check && json.Valid(body) { // compacted only if JSON is asked for
			v.raw = body
			break
		}
		if v.json, err = compactJSON(body); err != nil { // the error Check gives too
			return nil, badRecord(c.id, fmt.Errorf("json: %w", err))
		}
	}
	pv := values.Get().(*Value)
	*pv = *v
	return pv, nil
}

// values holds Values handed back (ReleaseValue) for the next decode: the
// engine decodes every record and keeps only its JSON, so a Value per
// record would be garbage at once.
var values = sync.Pool{New: func() any { return new(Value) }}

// ReleaseValue hands back v, a value this Decoder returned (DecodeValue,
// CheckValue, Decode or Check), for reuse: the caller does not use v
// afterwards. The bytes of its JSON and the Fields its Lookup returned stay
// valid. It implements the engine's ValueReleaser.
func (d *Decoder) ReleaseValue(v value.Decoded) {
	if fv, ok := v.(*Value); ok && fv != nil {
		*fv = Value{}
		values.Put(fv)
	}
}

// badRecord is err, a fault of a record written with schema id, as its
// BadRecordError.
func badRecord(id int, err error) *BadRecordError {
	return &BadRecordError{SchemaID: id, Err: fmt.Errorf("schema id %d: %w", id, err)}
}

// DecodeValue is Decode returning the value.Decoded interface, the form an
// engine's per-input decoder hook takes.
func (d *Decoder) DecodeValue(ctx context.Context, payload []byte, headers []record.Header) (value.Decoded, error) {
	v, err := d.Decode(ctx, payload, headers)
	if err != nil {
		return nil, err
	}
	return v, nil
}

// codec returns the compiled schema of a frame, fetching and compiling it
// on first sight. It compiles under the lock, after looking again, so
// Decoders sharing Codecs compile an id once even when they meet it at the
// same moment; the fetch, which may wait on the registry, is outside it
// (the registry client fetches an id once for all its callers).
func (d *Decoder) codec(ctx context.Context, fr wire.Frame) (*compiled, error) {
	if c, ok := d.codecs.table.Load().get(fr); ok {
		return c, c.err
	}
	var s *registry.Schema
	var err error
	if fr.GUID != "" {
		s, err = d.cfg.Codecs.reg.ByGUID(ctx, fr.GUID)
	} else {
		s, err = d.cfg.Codecs.reg.ByID(ctx, fr.ID)
	}
	switch {
	case err == nil:
	case errors.Is(err, registry.ErrNotFound):
		return nil, &BadRecordError{SchemaID: fr.ID, Err: err}
	default:
		return nil, err // unavailable, refused credentials, or the context's error: not cached
	}
	cs := d.codecs
	cs.mu.Lock()
	defer cs.mu.Unlock()
	t := cs.table.Load()
	if prev, ok := t.get(fr); ok {
		return prev, prev.err
	}
	c := d.compile(ctx, s)
	cs.compiles++
	if c.err != nil && !errors.Is(c.err, ErrBadRecord) {
		return nil, c.err // the context ended mid-compile: not cached
	}
	n := &codecTable{ids: maps.Clone(t.ids), guids: maps.Clone(t.guids)}
	if fr.GUID != "" {
		n.guids[fr.GUID] = c
	} else {
		n.ids[fr.ID] = c
	}
	cs.table.Store(n)
	return c, c.err
}

func (d *Decoder) compile(ctx context.Context, s *registry.Schema) *compiled {
	c := &compiled{id: s.ID}
	bad := func(err error) *compiled {
		c.err = badRecord(s.ID, err)
		return c
	}
	want := map[Format]sr.SchemaType{Avro: sr.TypeAvro, Protobuf: sr.TypeProtobuf, JSONSchema: sr.TypeJSON}[d.cfg.Format]
	if s.Type != want {
		return bad(fmt.Errorf("the schema is %s, the input's format is %s", s.Type, d.cfg.Format))
	}
	var err error
	switch d.cfg.Format {
	case Avro:
		refs := make([]string, len(s.References))
		for i, r := range s.References {
			refs[i] = r.Text
		}
		c.avro, err = avro.Compile(s.Text, refs)
	case Protobuf:
		refs := make(map[string]string, len(s.References))
		for _, r := range s.References {
			refs[r.Name] = r.Text
		}
		c.proto, err = protobuf.Compile(ctx, s.Text, refs)
		if err != nil && ctx.Err() != nil {
			c.err = ctx.Err()
			return c
		}
	}
	if err != nil {
		return bad(err)
	}
	return c
}

// compactJSON is doc without insignificant space.
func compactJSON(doc []byte) ([]byte, error) {
	var out bytes.Buffer
	out.Grow(len(doc))
	if err := json.Compact(&out, doc); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// jsonLookup resolves a path in a JSON document (compacted or not: an
// object or array found is compacted).
func jsonLookup(doc []byte, path []string) (value.Field, bool) {
	p := make(jsonfield.Path, len(path))
	for i, s := range path {
		p[i] = []byte(s)
	}
	v, err := jsonfield.Get(doc, p)
	if err != nil {
		return value.Field{}, false
	}
	switch v.Kind {
	case jsonfield.String:
		var s string
		if json.Unmarshal(v.Raw, &s) != nil {
			return value.Field{}, false
		}
		return value.Field{Kind: value.KindString, Text: s}, true
	case jsonfield.Number:
		return value.Field{Kind: value.KindNumber, Text: string(v.Raw)}, true
	case jsonfield.Bool:
		return value.Field{Kind: value.KindBool, Text: string(v.Raw)}, true
	case jsonfield.Null:
		return value.Field{Kind: value.KindNull, Text: "null"}, true
	}
	js, err := compactJSON(v.Raw)
	if err != nil {
		return value.Field{}, false
	}
	return value.Field{Kind: value.KindOther, Text: string(js)}, true
}
