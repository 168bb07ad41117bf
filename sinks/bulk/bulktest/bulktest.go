package bulktest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// Action is one index action of a _bulk request, with its document.
type Action struct {
	Index       string `json:"_index"`
	ID          string `json:"_id"`
	Version     *int64 `json:"version"`
	VersionType string `json:"version_type"`
	// Doc is the document line that follows the action, a copy.
	Doc []byte `json:"-"`
}

// Read parses a _bulk request body of index actions, each line followed by
// its document line. A line longer than maxLine bytes is an error.
func Read(body io.Reader, maxLine int) ([]Action, error) {
	sc := bufio.NewScanner(body)
	sc.Buffer(nil, maxLine)
	var out []Action
	for sc.Scan() {
		var action map[string]Action
		if err := json.Unmarshal(sc.Bytes(), &action); err != nil {
			return nil, fmt.Errorf("bad action line: %w", err)
		}
		a, ok := action["index"]
		if !ok || !sc.Scan() {
			return nil, errors.New("expected an index action and a document")
		}
		a.Doc = bytes.Clone(sc.Bytes())
		out = append(out, a)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// Result is the outcome of one action, an item of the answer.
type Result struct {
	Index  string
	ID     string
	Status int
	// ErrorType, when set, makes the item an error of that type, with
	// Reason.
	ErrorType, Reason string
}

// Answer writes the _bulk reply for results, in action order.
func Answer(w http.ResponseWriter, results []Result) {
	items := make([]map[string]any, 0, len(results))
	anyErr := false
	for _, r := range results {
		item := map[string]any{"_index": r.Index, "_id": r.ID, "status": r.Status}
		if r.ErrorType != "" {
			anyErr = true
			item["error"] = map[string]string{"type": r.ErrorType, "reason": r.Reason}
		}
		items = append(items, map[string]any{"index": item})
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"took": 1, "errors": anyErr, "items": items})
}
