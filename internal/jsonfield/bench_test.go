package jsonfield

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// benchValue has the shape of the scaling benchmark's values
// (internal/workload): about 100 bytes, event time in field ts.
var benchValue = func() string {
	b := []byte(`{"item":"i-042","ts":`)
	b = strconv.AppendInt(b, 1_764_456_000_123, 10)
	b = append(b, `,"kind":"sold"`...)
	b = append(b, `,"pad":"`...)
	for i := range 100 - len(b) - len(`"}`) {
		b = append(b, 'a'+byte(i%26))
	}
	return string(append(b, `"}`...))
}()

// benchOrder is issue 36's order (bench/cmd/procreplay's values): seven
// members, the event time first.
const benchOrder = `{"ts":1700000000123,"id":"o-0000123","sku":"sku-000042","qty":3,"price":7.25,"status":"ok","site":"oslo"}`

// benchObject is a ~1 KiB object with nested objects and arrays, escapes and
// non-ASCII text, its time field nested (meta.ts).
var benchObject = `{"id":"7f3c9a2e-51b4-4c1d-9e6f-0a8b2c4d6e8f","type":"order.updated","source":"shop/eu-west-1",` +
	`"meta":{"ts":"2026-11-30T05:13:24.123Z","trace":{"id":"4bf92f3577b34da6a3ce929d0e0e4736","sampled":true},"retries":0},` +
	`"customer":{"name":"Zoë Ångström-Müller","email":"zoe@example.com","address":{"street":"Straße des 17. Juni 135",` +
	`"city":"Berlin","zip":"10623","country":"DE"},"tier":"gold","since":2019},` +
	`"items":[{"sku":"sku-000042","title":"Café \"Crème\" beans 1 kg","qty":2,"price":18.5,"tags":["coffee","organic"]},` +
	`{"sku":"sku-000777","title":"Tea \u2014 Sencha \/ green","qty":1,"price":7.25,"tags":["tea"]},` +
	`{"sku":"sku-001234","title":"日本の緑茶 (抹茶)","qty":3,"price":12,"tags":["tea","matcha","import"]}],` +
	`"totals":{"net":80.75,"tax":15.34,"gross":96.09,"currency":"EUR"},"notes":"leave at door\nring twice\t(tab)",` +
	`"flags":[true,false,null],"discount":-0.0e+0,"channel":"web","session":{"ua":"Mozilla/5.0 (X11; Linux x86_64)",` +
	`"ip":"203.0.113.7","locale":"de-DE"},"history":[[1,2,3],[4,5,6],{"k":[{"v":"x"}]}],"tags":["a","b"],"ts":1764479604123}`

// oldValid is the envelope's validation before Scan: utf8.Valid, then a
// JSON Valid, then two passes for CR and LF. The envelope used
// github.com/segmentio/encoding/json's Valid (same verdict, about 3× faster);
// the baseline is encoding/json's so that a benchmark does not keep a
// module dependency.
func oldValid(v []byte) (valid, multiline bool) {
	if !utf8.Valid(v) || !json.Valid(v) {
		return false, false
	}
	return true, bytes.IndexByte(v, '\n') >= 0 || bytes.IndexByte(v, '\r') >= 0
}

// BenchmarkScan compares the old validation (oldValid, plus Get for the
// field) with one Scan, and with one ScanMembers (the top-level members
// recorded on the way):
//
//	go test -run '^$' -bench Scan -benchmem -count 6 ./internal/jsonfield/
func BenchmarkScan(b *testing.B) {
	ts := Path{[]byte("ts")}
	metaTS := Path{[]byte("meta"), []byte("ts")}
	for _, c := range []struct {
		name string
		doc  string
		path Path
	}{
		{"value100", benchValue, ts},
		{"order7", benchOrder, ts},
		{"object1K", benchObject, metaTS},
	} {
		doc := []byte(c.doc)
		var spans []Span // ScanMembers': kept from one call to the next
		if d := Scan(doc, c.path); !d.Valid || d.Err != nil {
			b.Fatalf("%s: %+v", c.name, d)
		}
		for _, v := range []struct {
			name string
			ok   func() bool
		}{
			{"old-valid", func() bool { ok, _ := oldValid(doc); return ok }},
			{"scan-valid", func() bool { return Scan(doc, nil).Valid }},
			{"old-valid+get", func() bool {
				ok, _ := oldValid(doc)
				_, err := Get(doc, c.path)
				return ok && err == nil
			}},
			{"scan-field", func() bool { d := Scan(doc, c.path); return d.Valid && d.Err == nil }},
			{"scan-field+members", func() bool {
				d, sp, ok := ScanMembers(doc, c.path, spans[:0])
				spans = sp
				return ok && d.Err == nil
			}},
		} {
			b.Run(c.name+"/"+v.name, func(b *testing.B) {
				b.SetBytes(int64(len(doc)))
				b.ReportAllocs()
				for b.Loop() {
					if !v.ok() {
						b.Fatal("invalid")
					}
				}
			})
		}
	}
}

func TestBenchDocs(t *testing.T) {
	if len(benchValue) != 100 || !strings.Contains(benchValue, `"ts":`) {
		t.Fatalf("benchValue %d bytes: %s", len(benchValue), benchValue)
	}
	if n := len(benchObject); n < 900 || n > 1200 {
		t.Fatalf("benchObject is %d bytes", n)
	}
	for _, doc := range []string{benchValue, benchObject} {
		if ok, _ := oldValid([]byte(doc)); !ok {
			t.Fatalf("not valid: %s", doc)
		}
	}
}
