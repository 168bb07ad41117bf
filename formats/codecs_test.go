package formats_test

import (
	"bytes"
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/signalbox/signalbox/formats"
	"github.com/signalbox/signalbox/formats/formatstest"
	"github.com/signalbox/signalbox/formats/registry"
)

// countingRegistry counts the schema lookups a Decoder makes (one per
// compile: a Decoder asks only for an id it has not compiled), and, with
// wait set, holds each until wait callers are in, so that they compile at
// the same moment.
type countingRegistry struct {
	formats.Registry
	byID    atomic.Int64
	wait    int64
	arrived chan struct{}
}

func (c *countingRegistry) ByID(ctx context.Context, id int) (*registry.Schema, error) {
	if n := c.byID.Add(1); c.wait > 0 {
		if n == c.wait {
			close(c.arrived)
		}
		select {
		case <-c.arrived:
		case <-time.After(5 * time.Second):
		}
	}
	return c.Registry.ByID(ctx, id)
}

// TestCodecsSharedByInputs: two inputs' value decoders and a key decoder
// made with the same Codecs (as config makes them, one Codecs per registry
// client) fetch and compile a schema id once between them, and decode
// alike.
func TestCodecsSharedByInputs(t *testing.T) {
	r := formatstest.NewRegistry(t)
	id := r.Register(t, "inventory-value", sr.Schema{Schema: invV2})
	payload := formatstest.AvroRecord(t, invV2, id, inv{Sku: "a", Seq: 1, Meta: meta{Ts: time.UnixMilli(1700000000000)}})
	reg := &countingRegistry{Registry: client(t, r)}
	codecs := formats.NewCodecs(reg)
	var decoders []*formats.Decoder
	for _, key := range []bool{false, false, true} {
		d, err := formats.New(formats.Config{Format: formats.Avro, Codecs: codecs, Key: key})
		if err != nil {
			t.Fatal(err)
		}
		if d.Codecs() != codecs {
			t.Fatal("the decoder does not keep the Codecs it was made with")
		}
		decoders = append(decoders, d)
	}
	var first []byte
	for i, d := range decoders {
		v, err := d.Decode(context.Background(), payload, nil)
		if err != nil {
			t.Fatalf("decoder %d: %v", i, err)
		}
		if first == nil {
			first = v.JSON()
		} else if !bytes.Equal(v.JSON(), first) {
			t.Fatalf("decoder %d: %s, decoder 0: %s", i, v.JSON(), first)
		}
	}
	if n, c := reg.byID.Load(), codecs.Compiles(formats.Avro); n != 1 || c != 1 {
		t.Fatalf("3 decoders sharing Codecs looked schema id %d up %d times and compiled it %d times, want once", id, n, c)
	}
	// A Decoder of its own Codecs compiles the id again.
	own, err := formats.New(formats.Config{Format: formats.Avro, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := own.Decode(context.Background(), payload, nil); err != nil {
		t.Fatal(err)
	}
	if n := reg.byID.Load(); n != 2 || own.Codecs() == codecs {
		t.Fatalf("a decoder of its own Codecs: %d lookups in all, want 2", n)
	}
}

// TestCodecsCompileOnceConcurrently: decoders sharing Codecs that meet a
// new schema id at the same moment (all past the registry lookup before
// any compiles) compile it once, and each decodes with it.
func TestCodecsCompileOnceConcurrently(t *testing.T) {
	const n = 8
	r := formatstest.NewRegistry(t)
	id := r.Register(t, "inventory-value", sr.Schema{Schema: invV2})
	payload := formatstest.AvroRecord(t, invV2, id, inv{Sku: "b", Seq: 2, Meta: meta{Ts: time.UnixMilli(1700000000000)}})
	reg := &countingRegistry{Registry: client(t, r), wait: n, arrived: make(chan struct{})}
	codecs := formats.NewCodecs(reg)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		d, err := formats.New(formats.Config{Format: formats.Avro, Codecs: codecs})
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			_, err := d.Check(context.Background(), payload, nil)
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := reg.byID.Load(); got != n {
		t.Fatalf("%d lookups, want %d: the decoders did not meet the id at the same moment", got, n)
	}
	if c := codecs.Compiles(formats.Avro); c != 1 {
		t.Fatalf("%d decoders meeting schema id %d at once compiled it %d times, want once", n, id, c)
	}
}

// TestNewCodecsConfig: Codecs and Registry together are refused, as is
// neither.
func TestNewCodecsConfig(t *testing.T) {
	reg := formatstest.MemRegistry{}
	if _, err := formats.New(formats.Config{Format: formats.Avro, Registry: reg, Codecs: formats.NewCodecs(reg)}); err == nil {
		t.Fatal("Registry and Codecs together: no error")
	}
	if _, err := formats.New(formats.Config{Format: formats.Avro, Codecs: formats.NewCodecs(nil)}); err == nil {
		t.Fatal("Codecs of no registry: no error")
	}
}
