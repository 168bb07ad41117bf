package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/embedded"
	"github.com/signalbox/signalbox/internal/ci"
	"github.com/signalbox/signalbox/sinks/jsonl"
	"github.com/signalbox/signalbox/sources/kafka"
	"github.com/signalbox/signalbox/timers"
)

func kcatPath(t *testing.T) string {
	p, err := exec.LookPath("kcat")
	if err != nil {
		ci.Missing(t, "kcat not installed (scripts/test.sh installs it)")
	}
	return p
}

type line struct {
	Topic       string          `json:"topic"`
	Partition   int32           `json:"partition"`
	Offset      int64           `json:"offset"`
	Key         string          `json:"key"`
	EventTimeMs int64           `json:"event_time_ms"`
	Value       json.RawMessage `json:"value"`
	Late        bool            `json:"late"`
}

// TestKcatProducedInputIsReleasedInOrder produces keyed JSON records with
// kcat into three partitions of two topics, with disorder across them, and
// checks that a bounded signalbox run releases every record once, sorted by
// (event time, key, topic, partition, offset).
func TestKcatProducedInputIsReleasedInOrder(t *testing.T) {
	kcat := kcatPath(t)
	c, err := embedded.Start(embedded.WithTopic("orders", 2), embedded.WithTopic("stock", 1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	broker := c.Addrs()[0]

	rng := rand.New(rand.NewPCG(7, 7))
	produced := 0
	for _, tp := range []struct {
		topic string
		part  int
	}{{"orders", 0}, {"orders", 1}, {"stock", 0}} {
		var in bytes.Buffer
		ts := int64(1_700_000_000_000)
		for i := 0; i < 200; i++ {
			ts += int64(rng.IntN(50)) // increasing within a partition; interleaved across
			fmt.Fprintf(&in, "item-%d|{\"ts\":%d,\"n\":%d,\"src\":\"%s/%d\"}\n", rng.IntN(20), ts, i, tp.topic, tp.part)
			produced++
		}
		cmd := exec.Command(kcat, "-P", "-b", broker, "-t", tp.topic, "-p", fmt.Sprint(tp.part), "-K", "|")
		cmd.Stdin = &in
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("kcat -P %s/%d: %v\n%s", tp.topic, tp.part, err, out)
		}
	}

	src, err := kafka.New(kafka.Config{Brokers: c.Addrs(), Topics: []string{"orders", "stock"}, FetchMaxWait: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	p, err := signalbox.New(src,
		signalbox.WithInputs(
			signalbox.Input{Topic: "orders", Time: signalbox.TimeFromField, TimeField: "ts"},
			signalbox.Input{Topic: "stock", Time: signalbox.TimeFromField, TimeField: "ts"},
		),
		signalbox.WithSink(jsonl.New(&out, jsonl.Options{})),
		signalbox.WithUntil(signalbox.UntilEndOffsets),
	)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := p.Run(ctx); err != nil {
		t.Fatal(err)
	}

	var got []line
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var x line
		if err := json.Unmarshal([]byte(l), &x); err != nil {
			t.Fatalf("bad output line %q: %v", l, err)
		}
		got = append(got, x)
	}
	if len(got) != produced {
		t.Fatalf("released %d records, kcat produced %d", len(got), produced)
	}
	pos := func(l line) timers.Pos {
		return timers.Pos{EventTime: l.EventTimeMs, Key: l.Key, Input: l.Topic, Partition: l.Partition, Offset: l.Offset}
	}
	sorted := sort.SliceIsSorted(got, func(i, j int) bool { return timers.Less(pos(got[i]), pos(got[j])) })
	if !sorted {
		t.Fatal("output is not in (event time, key, topic, partition, offset) order")
	}
	seen := map[string]bool{}
	for _, x := range got {
		id := fmt.Sprintf("%s/%d@%d", x.Topic, x.Partition, x.Offset)
		if seen[id] || x.Late {
			t.Fatalf("record %s duplicated or late", id)
		}
		seen[id] = true
		var v struct{ TS int64 }
		if err := json.Unmarshal(x.Value, &v); err != nil || v.TS != x.EventTimeMs {
			t.Fatalf("record %s: value %s does not carry its event time %d", id, x.Value, x.EventTimeMs)
		}
	}
}
