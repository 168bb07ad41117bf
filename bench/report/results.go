package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// SVGPath is where the chart of the results file at path goes: beside it,
// .json replaced by .svg.
func SVGPath(path string) string { return strings.TrimSuffix(path, ".json") + ".svg" }

// WriteResults writes v to path as indented JSON and draw(v) to SVGPath(path).
func WriteResults[T any](path string, v T, draw func(T) []byte) error {
	js, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(js, '\n'), 0o644); err != nil {
		return err
	}
	return os.WriteFile(SVGPath(path), draw(v), 0o644)
}

// ReadResults reads the results file at path.
func ReadResults[T any](path string) (T, error) {
	var v T
	b, err := os.ReadFile(path)
	if err != nil {
		return v, err
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return v, fmt.Errorf("results %s: %w", path, err)
	}
	return v, nil
}

// Replot redraws the chart of the results file at path beside it.
func Replot[T any](path string, draw func(T) []byte) error {
	v, err := ReadResults[T](path)
	if err != nil {
		return err
	}
	return os.WriteFile(SVGPath(path), draw(v), 0o644)
}

// CheckChart reports an error unless the chart beside the results file at
// path is exactly draw of its results: a checked-in chart that drifted
// from its data or was edited by hand.
func CheckChart[T any](path string, draw func(T) []byte) error {
	v, err := ReadResults[T](path)
	if err != nil {
		return err
	}
	got, err := os.ReadFile(SVGPath(path))
	if err != nil {
		return err
	}
	if !bytes.Equal(got, draw(v)) {
		return fmt.Errorf("%s differs from the chart of %s; redraw it from the results (the command's -replot)", SVGPath(path), path)
	}
	return nil
}
