package file_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/sources/file"
	"github.com/signalbox/signalbox/sources/sourcetest"
)

// TestConformance runs the source conformance suite against the file source,
// with and without Follow.
func TestConformance(t *testing.T) {
	for _, follow := range []bool{false, true} {
		t.Run(fmt.Sprintf("follow=%v", follow), func(t *testing.T) {
			sourcetest.Run(t, func(t *testing.T, d sourcetest.Data) sourcetest.Target {
				dir := t.TempDir()
				var files []file.File
				for tp, values := range d {
					path := filepath.Join(dir, fmt.Sprintf("%s-%d.jsonl", tp.Topic, tp.Partition))
					body := strings.Join(values, "\n")
					if len(values) > 0 {
						body += "\n"
					}
					if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
						t.Fatal(err)
					}
					files = append(files, file.File{Path: path, Topic: tp.Topic, Partition: tp.Partition})
				}
				src, err := file.New(file.Options{Follow: follow, BatchSize: 4, Idle: time.Millisecond}, files...)
				if err != nil {
					t.Fatal(err)
				}
				return sourcetest.Target{Source: src, Committed: func(*testing.T) map[record.TopicPartition]int64 { return src.Committed() }}
			})
		})
	}
}
