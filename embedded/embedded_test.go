package embedded

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr"
)

// Run listens on the given address until its context ends.
func TestRunListensUntilCancelled(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()

	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan []string, 1)
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, addr, func(c *Cluster) { ready <- c.Addrs() }, WithTopic("t", 2))
	}()
	select {
	case addrs := <-ready:
		if len(addrs) != 1 || addrs[0] != addr {
			t.Fatalf("listening on %v, want [%s]", addrs, addr)
		}
	case err := <-done:
		t.Fatalf("Run returned early: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("hang: Run never became ready")
	}
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("broker not reachable: %v", err)
	}
	_ = conn.Close()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("hang: Run did not return after cancel")
	}
}

// The helpers' writes show in the offsets: plain records, an aborted
// transaction (records + marker), DeleteRecords moving the log start.
func TestHelpersOffsets(t *testing.T) {
	c, err := Start(WithTopic("h", 1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	if err := c.Produce(ctx, Record("h", 0, "a", "1"), Record("h", 0, "b", "2")); err != nil {
		t.Fatal(err)
	}
	if err := c.ProduceTxn(ctx, false, Record("h", 0, "c", "3")); err != nil {
		t.Fatal(err)
	}
	offs, err := c.ListOffsets(ctx, "h", 0)
	if err != nil {
		t.Fatal(err)
	}
	if offs != (Offsets{LogStart: 0, LastStable: 4, HighWater: 4}) {
		t.Fatalf("offsets %+v, want start 0, LSO = HWM = 4", offs)
	}
	if start, err := c.DeleteRecords(ctx, "h", 0, 2); err != nil || start != 2 {
		t.Fatalf("DeleteRecords: %d, %v", start, err)
	}
	if offs, err = c.ListOffsets(ctx, "h", 0); err != nil || offs.LogStart != 2 {
		t.Fatalf("after DeleteRecords: %+v, %v", offs, err)
	}
	if err := c.CreateTopic(ctx, "new", 4); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListOffsets(ctx, "new", 3); err != nil {
		t.Fatalf("created topic lacks partition 3: %v", err)
	}
}

func TestStartRejectsBadOptions(t *testing.T) {
	if _, err := Start(WithUser("KERBEROS", "u", "p")); err == nil {
		t.Fatal("unknown SASL mechanism accepted")
	}
	if _, err := Start(WithBrokers(0)); err == nil {
		t.Fatal("zero brokers accepted")
	}
	if _, err := Start(WithListen("nonsense")); err == nil {
		t.Fatal("bad listen address accepted")
	}
}

// A client of the cluster's schema registry registers a schema over HTTP
// and fetches it back by id; after Close the registry refuses connections.
func TestSchemaRegistry(t *testing.T) {
	c, err := Start(WithSchemaRegistry("127.0.0.1:0"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	url := c.RegistryURL()
	if !strings.HasPrefix(url, "http://127.0.0.1:") || c.Registry() == nil {
		t.Fatalf("registry URL %q", url)
	}
	cl, err := sr.NewClient(sr.URLs(url))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const schema = `{"type":"record","name":"Sale","fields":[{"name":"sku","type":"string"}]}`
	ss, err := cl.CreateSchema(ctx, "sales-value", sr.Schema{Schema: schema, Type: sr.TypeAvro})
	if err != nil {
		t.Fatal(err)
	}
	got, err := cl.SchemaByID(ctx, ss.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Schema != schema || got.Type != sr.TypeAvro {
		t.Fatalf("schema %d fetched back as %+v", ss.ID, got)
	}
	if _, err := cl.SchemaByID(ctx, ss.ID+1); err == nil {
		t.Fatal("an unknown schema id was found")
	}
	c.Close()
	if _, err := http.Get(url + "/subjects"); err == nil {
		t.Fatal("the registry still answers after Close")
	}
}

// Without WithSchemaRegistry there is none.
func TestNoSchemaRegistry(t *testing.T) {
	c, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Registry() != nil || c.RegistryURL() != "" {
		t.Fatalf("registry %q started unasked", c.RegistryURL())
	}
	if _, err := Start(WithSchemaRegistry("nonsense")); err == nil {
		t.Fatal("bad registry address accepted")
	}
}
