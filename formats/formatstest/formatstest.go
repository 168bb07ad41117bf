package formatstest

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	hamba "github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	_ "google.golang.org/protobuf/types/known/timestamppb" // registers google/protobuf/timestamp.proto

	"github.com/signalbox/signalbox/formats/registry"
)

// Registry is srfake over HTTP; while Down is set it answers 503 to schema
// lookups (paths under /schemas/) and counts them in Refused.
type Registry struct {
	*srfake.Registry
	Down    atomic.Bool
	Refused atomic.Int64
}

// NewRegistry starts a Registry that is closed when t ends.
func NewRegistry(t testing.TB) *Registry {
	t.Helper()
	r := &Registry{Registry: srfake.New()}
	t.Cleanup(r.Close)
	r.Intercept(func(w http.ResponseWriter, req *http.Request) bool {
		if r.Down.Load() && strings.HasPrefix(req.URL.Path, "/schemas/") {
			r.Refused.Add(1)
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
			return true
		}
		return false
	})
	return r
}

// Register registers s under subject and returns its id.
func (r *Registry) Register(t testing.TB, subject string, s sr.Schema) int {
	t.Helper()
	id, _, err := r.RegisterSchema(subject, s)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// avroSchemas caches parsed writer schemas by text.
var avroSchemas sync.Map

// AvroRecord encodes v with the Avro schema text and frames it with the
// registry id (Confluent wire format).
func AvroRecord(t testing.TB, schema string, id int, v any) []byte {
	t.Helper()
	s, ok := avroSchemas.Load(schema)
	if !ok {
		s, _ = avroSchemas.LoadOrStore(schema, hamba.MustParse(schema))
	}
	b, err := sr.Encode(v, new(sr.ConfluentHeader), id, nil, func(v any) ([]byte, error) { return hamba.Marshal(s.(hamba.Schema), v) })
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// ProtoRecord encodes m and frames it with the registry id and the message
// index of m's type in its schema.
func ProtoRecord(t testing.TB, id int, index []int, m proto.Message) []byte {
	t.Helper()
	b, err := sr.Encode(m, new(sr.ConfluentHeader), id, index, func(v any) ([]byte, error) { return proto.Marshal(v.(proto.Message)) })
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// ProtoField is an optional field of a hand-built message descriptor;
// typeName names the message type of a TYPE_MESSAGE field, else "".
func ProtoField(name string, n int32, typ descriptorpb.FieldDescriptorProto_Type, typeName string) *descriptorpb.FieldDescriptorProto {
	f := &descriptorpb.FieldDescriptorProto{Name: proto.String(name), Number: proto.Int32(n), Type: typ.Enum(),
		Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(), JsonName: proto.String(name)}
	if typeName != "" {
		f.TypeName = proto.String(typeName)
	}
	return f
}

// SetTimestamp sets the google.protobuf.Timestamp field name of m to at.
func SetTimestamp(m protoreflect.Message, name protoreflect.Name, at time.Time) {
	ts := m.Mutable(m.Descriptor().Fields().ByName(name)).Message()
	ts.Set(ts.Descriptor().Fields().ByName("seconds"), protoreflect.ValueOfInt64(at.Unix()))
	ts.Set(ts.Descriptor().Fields().ByName("nanos"), protoreflect.ValueOfInt32(int32(at.Nanosecond())))
}

// The schemas of the shared fixtures: an Avro inventory record whose v2
// adds the optional site (a backward-compatible change), and a Protobuf
// Sale that is the file's second message, so its message index is not the
// default.
const (
	InvV1 = `{"type":"record","name":"Inv","namespace":"shop","fields":[
		{"name":"sku","type":"string"},
		{"name":"meta","type":{"type":"record","name":"Meta","fields":[{"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}}]}},
		{"name":"seq","type":"long"}]}`
	InvV2 = `{"type":"record","name":"Inv","namespace":"shop","fields":[
		{"name":"sku","type":"string"},
		{"name":"meta","type":{"type":"record","name":"Meta","fields":[{"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}}]}},
		{"name":"seq","type":"long"},
		{"name":"site","type":["null","string"],"default":null}]}`
	SaleProto = `syntax = "proto3";
package shop;
import "google/protobuf/timestamp.proto";
message Other { int32 x = 1; }
message Sale { string sku = 1; google.protobuf.Timestamp at = 2; int64 seq = 3; }
`
)

// SaleIndex is Sale's message index in SaleProto.
var SaleIndex = []int{1}

// SaleDescriptor is SaleProto's Sale, built by hand with protodesc.
func SaleDescriptor(t testing.TB) protoreflect.MessageDescriptor {
	t.Helper()
	fd, err := protodesc.NewFile(&descriptorpb.FileDescriptorProto{
		Name: proto.String("sale.proto"), Package: proto.String("shop"), Syntax: proto.String("proto3"),
		Dependency: []string{"google/protobuf/timestamp.proto"},
		MessageType: []*descriptorpb.DescriptorProto{
			{Name: proto.String("Other"), Field: []*descriptorpb.FieldDescriptorProto{ProtoField("x", 1, descriptorpb.FieldDescriptorProto_TYPE_INT32, "")}},
			{Name: proto.String("Sale"), Field: []*descriptorpb.FieldDescriptorProto{
				ProtoField("sku", 1, descriptorpb.FieldDescriptorProto_TYPE_STRING, ""),
				ProtoField("at", 2, descriptorpb.FieldDescriptorProto_TYPE_MESSAGE, ".google.protobuf.Timestamp"),
				ProtoField("seq", 3, descriptorpb.FieldDescriptorProto_TYPE_INT64, ""),
			}},
		},
	}, protoregistry.GlobalFiles)
	if err != nil {
		t.Fatal(err)
	}
	return fd.Messages().ByName("Sale")
}

// MemRegistry serves schemas by id from memory, for fuzzing and benchmarks
// where HTTP would only add noise; an unknown id or any GUID is a
// registry.NotFoundError.
type MemRegistry map[int]*registry.Schema

// ByID returns the schema of id.
func (m MemRegistry) ByID(_ context.Context, id int) (*registry.Schema, error) {
	if s, ok := m[id]; ok {
		return s, nil
	}
	return nil, &registry.NotFoundError{What: "schema id " + strconv.Itoa(id), Reason: "404"}
}

// ByGUID finds nothing: MemRegistry has no GUIDs.
func (m MemRegistry) ByGUID(_ context.Context, guid string) (*registry.Schema, error) {
	return nil, &registry.NotFoundError{What: "schema guid " + guid, Reason: "404"}
}
