package logging

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"go.uber.org/zap"
)

func TestFormats(t *testing.T) {
	for _, tc := range []struct {
		format string
		tty    bool
		json   bool
	}{{"", false, true}, {"", true, false}, {"json", true, true}, {"console", false, false}} {
		var buf bytes.Buffer
		log, err := New(tc.format, "", &buf, tc.tty)
		if err != nil {
			t.Fatal(err)
		}
		log.Info("hello", zap.String("k", "v"))
		var m map[string]any
		isJSON := json.Unmarshal(buf.Bytes(), &m) == nil
		if isJSON != tc.json || !strings.Contains(buf.String(), "hello") {
			t.Errorf("format %q tty %v: output %q, want JSON %v", tc.format, tc.tty, buf.String(), tc.json)
		}
	}
}

func TestLevel(t *testing.T) {
	var buf bytes.Buffer
	log, err := New("json", "warn", &buf, false)
	if err != nil {
		t.Fatal(err)
	}
	log.Info("quiet")
	log.Warn("loud")
	if strings.Contains(buf.String(), "quiet") || !strings.Contains(buf.String(), "loud") {
		t.Fatalf("output %q", buf.String())
	}
}

func TestBadSettings(t *testing.T) {
	if _, err := New("xml", "", &bytes.Buffer{}, false); err == nil || !strings.Contains(err.Error(), "console, json") {
		t.Errorf("format xml: %v", err)
	}
	if _, err := New("", "loud", &bytes.Buffer{}, false); err == nil || !strings.Contains(err.Error(), "debug, info, warn, error") {
		t.Errorf("level loud: %v", err)
	}
}
