package crashtest

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Version is one record of a table topic as produced: a version of Key
// valid from Time (its version time, Unix ms) on; a nil Value is a
// tombstone.
type Version struct {
	Key   string
	Time  int64
	Value []byte
}

// AsOf is the oracle of lookup(table, key) for a record at event time t:
// the value of key's latest version whose time is at or before t (of two
// at the same time, the later in versions), nil when there is none or it
// is a tombstone.
func AsOf(versions []Version, key string, t int64) []byte {
	var best *Version
	for i := range versions {
		if v := &versions[i]; v.Key == key && v.Time <= t && (best == nil || v.Time >= best.Time) {
			best = v
		}
	}
	if best == nil {
		return nil
	}
	return best.Value
}

// Enriched is one output record of the table crash test's job, whose map
// is {"id": value.id, "product": lookup("products", value.sku)}.
type Enriched struct {
	ID      string
	Product json.RawMessage // "null" when the lookup found nothing
	Where   string
}

// ParseEnriched reads an enriched record: a bare one (a Kafka value) or the
// value of an envelope (a JSONL line). Anything else, a table's record
// among them, is an error.
func ParseEnriched(b []byte, where string) (Enriched, error) {
	b, err := unwrap(b, where)
	if err != nil {
		return Enriched{}, err
	}
	var m map[string]json.RawMessage
	var id string
	if json.Unmarshal(b, &m) != nil || len(m) != 2 || m["product"] == nil || json.Unmarshal(m["id"], &id) != nil || id == "" {
		return Enriched{}, fmt.Errorf("%s: not an enriched order (a table's record?): %.200s", where, b)
	}
	return Enriched{ID: id, Product: m["product"], Where: where}, nil
}

// Outs returns the records as Check reads them.
func Outs(es []Enriched) []Out {
	outs := make([]Out, len(es))
	for i, e := range es {
		outs[i] = Out{ID: e.ID, Where: e.Where}
	}
	return outs
}

// CheckEnriched checks that each output order carries its product as of
// its event time: AsOf(versions, its key, its event time), the orders
// being keyed by their sku. Outputs that are no produced order are left to
// Check. It is pure, and returns the problems.
func CheckEnriched(orders []Produced, versions []Version, outs []Enriched) []string {
	byID := make(map[string]*Produced, len(orders))
	for i := range orders {
		byID[orders[i].ID] = &orders[i]
	}
	var problems []string
	wrong := 0
	for _, o := range outs {
		p := byID[o.ID]
		if p == nil {
			continue
		}
		want := AsOf(versions, p.Key, p.TS)
		if want == nil {
			want = []byte("null")
		}
		if got, exp := canonicalJSON(o.Product), canonicalJSON(want); got != exp {
			if wrong++; wrong <= maxPerKind {
				problems = append(problems, fmt.Sprintf("%s: order %s (sku %s, ts %d) has product %s, the oracle's %s", o.Where, o.ID, p.Key, p.TS, got, exp))
			}
		}
	}
	if wrong > maxPerKind {
		problems = append(problems, fmt.Sprintf("%d orders with another product than the oracle's in all", wrong))
	}
	return problems
}

// canonicalJSON re-encodes b with sorted keys and no spaces (b itself when
// it is not JSON), so that equal values compare equal.
func canonicalJSON(b []byte) string {
	var v any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return string(b)
	}
	c, _ := json.Marshal(v)
	return string(c)
}
