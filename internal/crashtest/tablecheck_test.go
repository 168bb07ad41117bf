package crashtest

import (
	"slices"
	"strings"
	"testing"
)

// TestTableAsOf: the oracle joins a version exactly at the record's time, not
// one 1 ms later, and answers null before the first version and after a
// tombstone.
func TestTableAsOf(t *testing.T) {
	vs := []Version{{"a", 10, []byte("1")}, {"b", 5, []byte("b")}, {"a", 20, []byte("2")}, {"a", 30, nil}}
	for _, c := range []struct {
		t    int64
		want string
	}{{9, ""}, {10, "1"}, {19, "1"}, {20, "2"}, {29, "2"}, {30, ""}, {99, ""}} {
		if got := string(AsOf(vs, "a", c.t)); got != c.want {
			t.Errorf("AsOf(a, %d) = %q, want %q", c.t, got, c.want)
		}
	}
}

// TestTableCheckEnriched: the oracle's own output passes; a wrong product, a
// product where the oracle has null and null where it has one are named;
// a table's record is no enriched order.
func TestTableCheckEnriched(t *testing.T) {
	orders := []Produced{{ID: "o1", Key: "a", TS: 15}, {ID: "o2", Key: "a", TS: 5}, {ID: "o3", Key: "a", TS: 40}}
	vs := []Version{{"a", 10, []byte(`{"v":1,"name":"p"}`)}, {"a", 20, []byte(`{"v":2}`)}, {"a", 30, nil}}
	parse := func(lines ...string) []Enriched {
		var es []Enriched
		for _, l := range lines {
			e, err := ParseEnriched([]byte(l), "test")
			if err != nil {
				t.Fatal(err)
			}
			es = append(es, e)
		}
		return es
	}
	good := parse(`{"id":"o1","product":{"name":"p","v":1}}`, `{"topic":"orders","partition":0,"offset":1,"value":{"product":null,"id":"o2"}}`, `{"id":"o3","product":null}`)
	if p := CheckEnriched(orders, vs, good); len(p) != 0 {
		t.Fatalf("the oracle's own output: %q", p)
	}
	for name, out := range map[string]string{
		"other version":  `{"id":"o1","product":{"v":2}}`,
		"before first":   `{"id":"o2","product":{"name":"p","v":1}}`,
		"after tomb":     `{"id":"o3","product":{"v":2}}`,
		"null for a hit": `{"id":"o1","product":null}`,
	} {
		p := CheckEnriched(orders, vs, parse(out))
		if !slices.ContainsFunc(p, func(s string) bool { return strings.Contains(s, "the oracle's") }) {
			t.Errorf("%s: problems %q, want a wrong product", name, p)
		}
	}
	for _, bad := range []string{`{"name":"p","v":1}`, `{"topic":"products","value":{"v":2}}`, `{"id":"o1"}`, `{"id":"o1","product":null,"x":1}`, `not json`} {
		if _, err := ParseEnriched([]byte(bad), "test"); err == nil {
			t.Errorf("ParseEnriched(%s): no error, want not an enriched order", bad)
		}
	}
}
