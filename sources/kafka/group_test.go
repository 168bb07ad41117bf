package kafka

import (
	"slices"
	"testing"

	"github.com/signalbox/signalbox/embedded"
	"github.com/signalbox/signalbox/record"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// Group mode: a restart starts from the committed offsets; when
// DeleteRecords moved the log start past the committed offset, the source
// logs it and continues from the log start.
func TestGroupRestartAndDeleteRecords(t *testing.T) {
	c := startCluster(t, embedded.WithTopic("g", 1))
	mustProduce(t, c, recs("g", 0, 10, "v")...)
	tp := record.TopicPartition{Topic: "g", Partition: 0}
	cfg := Config{Brokers: c.Addrs(), Topics: []string{"g"}, Group: "grp"}

	first := openSource(t, cfg)
	col := newCollector(t, first)
	col.until("caught up", col.caughtUp)
	if a := col.assigned[tp]; a.Start != 0 || a.End != 10 {
		t.Fatalf("first run assigned %+v, want Start 0 End 10", a)
	}
	if err := first.Commit(bg, map[record.TopicPartition]int64{tp: 4}); err != nil {
		t.Fatal(err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}

	// Restart: the committed offset is the start position.
	second := openSource(t, cfg)
	col2 := newCollector(t, second)
	col2.until("assignment", func() bool { return len(col2.assigned) == 1 })
	if a := col2.assigned[tp]; a.Start != 4 || a.End != 10 {
		t.Fatalf("restart assigned %+v, want Start 4 (committed) End 10", a)
	}
	col2.until("caught up", col2.caughtUp)
	if got := col2.values[tp]; !slices.Equal(got, []string{"v4", "v5", "v6", "v7", "v8", "v9"}) {
		t.Fatalf("restart read %q", got)
	}
	if err := second.Close(); err != nil {
		t.Fatal(err)
	}

	// DeleteRecords past the committed offset.
	if start, err := c.DeleteRecords(bg, "g", 0, 7); err != nil || start != 7 {
		t.Fatalf("DeleteRecords: start %d, %v", start, err)
	}
	core, logs := observer.New(zapcore.WarnLevel)
	cfg.Logger = zap.New(core)
	col3 := newCollector(t, openSource(t, cfg))
	col3.until("caught up after DeleteRecords", col3.caughtUp)
	if a := col3.assigned[tp]; a.Start != 4 {
		t.Fatalf("assigned %+v, want Start 4 (the committed offset)", a)
	}
	if got := col3.values[tp]; !slices.Equal(got, []string{"v7", "v8", "v9"}) {
		t.Fatalf("after DeleteRecords read %q, want v7..v9", got)
	}
	if logs.FilterMessageSnippet("outside the partition's log").Len() == 0 {
		t.Fatal("the jump to the log start was not logged")
	}
}
