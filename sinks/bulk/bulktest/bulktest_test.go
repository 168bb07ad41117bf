package bulktest

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestReadActionsInOrder(t *testing.T) {
	body := `{"index":{"_index":"i","_id":"a","version":7,"version_type":"external"}}
{"x":1}
{"index":{"_index":"i","_id":"b"}}
{"x":2}
`
	got, err := Read(strings.NewReader(body), 1<<10)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != "a" || got[1].ID != "b" || string(got[0].Doc) != `{"x":1}` || string(got[1].Doc) != `{"x":2}` {
		t.Fatalf("read %+v", got)
	}
	if got[0].Version == nil || *got[0].Version != 7 || got[0].VersionType != "external" || got[1].Version != nil {
		t.Fatalf("versions: %+v", got)
	}
}

func TestReadRefusesMalformedRequests(t *testing.T) {
	for name, body := range map[string]string{
		"bad action":     "not json\n{}\n",
		"no document":    `{"index":{"_id":"a"}}` + "\n",
		"delete action":  `{"delete":{"_id":"a"}}` + "\n{}\n",
		"line too long":  `{"index":{"_id":"` + strings.Repeat("a", 100) + `"}}` + "\n{}\n",
		"second missing": `{"index":{"_id":"a"}}` + "\n{}\n" + `{"index":{"_id":"b"}}` + "\n",
	} {
		if got, err := Read(strings.NewReader(body), 64); err == nil {
			t.Errorf("%s: read %+v, want an error", name, got)
		}
	}
}

func TestAnswerFlagsErrors(t *testing.T) {
	for _, tc := range []struct {
		results []Result
		errors  bool
	}{
		{[]Result{{ID: "a", Status: 201}, {ID: "b", Status: 200}}, false},
		{[]Result{{ID: "a", Status: 201}, {ID: "b", Status: 429, ErrorType: "es_rejected_execution_exception"}}, true},
	} {
		w := httptest.NewRecorder()
		Answer(w, tc.results)
		var resp struct {
			Errors bool `json:"errors"`
			Items  []map[string]struct {
				ID     string `json:"_id"`
				Status int    `json:"status"`
				Error  *struct {
					Type string `json:"type"`
				} `json:"error"`
			} `json:"items"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &resp); err != nil {
			t.Fatal(err)
		}
		if resp.Errors != tc.errors || len(resp.Items) != len(tc.results) {
			t.Fatalf("answer %s", w.Body)
		}
		for i, r := range tc.results {
			it := resp.Items[i]["index"]
			if it.ID != r.ID || it.Status != r.Status || (it.Error != nil) != (r.ErrorType != "") {
				t.Errorf("item %d: %+v, want %+v", i, it, r)
			}
		}
	}
}
