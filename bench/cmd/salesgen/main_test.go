package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/signalbox/signalbox/config"
	"github.com/signalbox/signalbox/embedded"
)

// TestSalesgen: two runs write the same bytes (invariant 1); each line's
// key is its value's sku and each file is in event-time order (2); the
// job files (plain, window, process) pass validate, the second run's
// with TLS and SASL.
func TestSalesgen(t *testing.T) {
	var first [][]byte
	for run2 := range 2 {
		dir := t.TempDir()
		args := []string{"-n", "3000", "-out", dir}
		if run2 == 1 {
			args = append(args, "-tls-ca", "/tmp/broker.pem", "-sasl-user", "bench", "-sasl-password-env", "SALES_PASSWORD", "-products")
		}
		if err := run(args, io.Discard); err != nil {
			t.Fatal(err)
		}
		var files [][]byte
		lines := 0
		for _, name := range []string{"sales0.txt", "sales1.txt", "sales2.txt"} {
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, b)
			last := int64(0)
			for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
				key, value, ok := strings.Cut(l, "|")
				var v struct {
					SKU string `json:"sku"`
					TS  int64  `json:"ts"`
				}
				if !ok || json.Unmarshal([]byte(value), &v) != nil || v.SKU != key || v.TS < last {
					t.Fatalf("%s: line %q (previous event time %d)", name, l, last)
				}
				last = v.TS
				lines++
			}
		}
		if lines != 3000 {
			t.Fatalf("%d lines, want 3000", lines)
		}
		names := []string{"plain.yaml", "window.yaml", "process.yaml"}
		if run2 == 1 {
			names = append(names, "lookup.yaml")
			b, err := os.ReadFile(filepath.Join(dir, "products.txt"))
			if err != nil {
				t.Fatal(err)
			}
			skus := map[string]bool{}
			for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
				key, value, _ := strings.Cut(l, "|")
				var v struct {
					SKU string `json:"sku"`
					TS  int64  `json:"ts"`
				}
				if json.Unmarshal([]byte(value), &v) != nil || v.SKU != key || v.TS != saleBase-60_000 || skus[key] {
					t.Fatalf("products.txt: line %q", l)
				}
				skus[key] = true
			}
			if len(skus) != 1000 {
				t.Fatalf("products.txt has %d skus, want 1000", len(skus))
			}
		}
		for _, name := range names {
			doc, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			j, err := config.Parse(doc)
			if err != nil {
				t.Fatal(err)
			}
			if err := j.Validate(); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if name == "window.yaml" && len(j.Windows) != 1 {
				t.Fatalf("window.yaml has %d windows", len(j.Windows))
			}
			if name == "lookup.yaml" && (len(j.Tables) != 1 || j.Process == nil || !strings.Contains(j.Process.Map, `lookup("products", value.sku)`)) {
				t.Fatalf("lookup.yaml has no table and lookup:\n%s", doc)
			}
			if name == "process.yaml" && (j.Process == nil || j.Process.Filter == "" || j.Process.Map == "") {
				t.Fatalf("process.yaml has no filter and map: %+v", j.Process)
			}
			if secured := strings.Contains(string(doc), "ca_file: /tmp/broker.pem") && strings.Contains(string(doc), "password_env: SALES_PASSWORD"); secured != (run2 == 1) {
				t.Fatalf("%s, run %d: tls and sasl sections %v:\n%s", name, run2, secured, doc)
			}
		}
		if first == nil {
			first = files
			continue
		}
		for i := range files {
			if !bytes.Equal(files[i], first[i]) {
				t.Fatalf("sales%d.txt differs between two runs", i)
			}
		}
	}
}

// TestProduce: -produce writes every sale into its partition of a broker
// that asks for TLS and SCRAM, as the jobs are told to speak to it.
func TestProduce(t *testing.T) {
	cert, err := embedded.SelfSignedTLS()
	if err != nil {
		t.Fatal(err)
	}
	c, err := embedded.Start(embedded.WithTopic("sales", 3), embedded.WithTopic("products", 3), embedded.WithTLS(cert.Server, cert.Client),
		embedded.WithUser(embedded.MechanismScramSHA256, "bench", "pw-for-the-test"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, cert.CertPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SALES_PASSWORD", "pw-for-the-test")
	if err := run([]string{"-n", "3000", "-out", dir, "-brokers", c.Addrs()[0], "-produce", "-batch", "16384", "-products", "-keys", "50",
		"-tls-ca", ca, "-sasl-user", "bench", "-sasl-password-env", "SALES_PASSWORD"}, io.Discard); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(c.ClientOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(context.Background(), "sales", "products")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("SALES_EMPTY", "")
	if err := run([]string{"-n", "30", "-out", t.TempDir(), "-brokers", c.Addrs()[0], "-produce",
		"-sasl-user", "bench", "-sasl-password-env", "SALES_EMPTY"}, io.Discard); err == nil || !strings.Contains(err.Error(), "SALES_EMPTY is unset or empty") {
		t.Errorf("an empty password: %v, want the variable named", err)
	}
	want := map[string]int64{"sales": 1000, "products": 17} // 50 products over 3 partitions: 17, 17, 16
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil || o.Offset != want[o.Topic] && !(o.Topic == "products" && o.Partition == 2 && o.Offset == 16) {
			t.Errorf("%s[%d] ends at %d (%v), want its file's lines", o.Topic, o.Partition, o.Offset, o.Err)
		}
	})
}
