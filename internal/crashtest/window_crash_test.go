package crashtest

import (
	"fmt"
	"testing"
)

// TestCrashWindowKafka: a window job with an exactly-once window sink
// (transactional Kafka) and no group, SIGKILLed during the replay of the
// history again and again (each restart resumes from the sink's
// checkpoint: design K5-K8), then run to the end offsets. Every window of
// the history is in the output topic, read with read_committed, exactly
// once, with the oracle's count, sum, min and max, in the order of the
// windows' ends; the raw records on stdout are complete and in order.
func TestCrashWindowKafka(t *testing.T) {
	t.Parallel()
	const outTopic, size = "windows", 1000
	r := setUpGroup(t, "", []string{outTopic + ":1"}, func(string, *Broker) (string, string) {
		return "", fmt.Sprintf("windows:\n  - name: per_second\n    tumbling: 1s\n%s    sinks:\n      - type: kafka\n        topic: %s\n        transactional_id: crashtest-windows\n",
			WindowAggregates, outTopic)
	})
	r.c.ReplayOnly = true
	kills := r.sc.kills / 2
	r.c.Crash(kills)
	r.c.Finish()
	produced := r.prod.Records()
	r.checkStdout(produced)
	replay, _ := r.c.Phases()
	t.Logf("seed %d: %d kills, %d during the replay; %d records", r.seed, len(r.c.Kills), replay, len(produced))
	if replay == 0 {
		t.Errorf("no kill landed in a replay")
	}
	windows := map[[2]int64]bool{}
	keys := map[string]int64{}
	for _, p := range produced {
		if keys[p.Key] == 0 {
			keys[p.Key] = int64(len(keys) + 1)
		}
		windows[[2]int64{keys[p.Key], p.TS / size}] = true
	}
	var results []WindowResult
	for _, rec := range readCommittedRecords(t, r.broker, outTopic, len(windows)) {
		w, err := ParseWindowResult(rec.Value, fmt.Sprintf("%s@%d", rec.Topic, rec.Offset))
		if err != nil {
			t.Fatal(err)
		}
		results = append(results, w)
	}
	t.Logf("%d window results, %d windows in the oracle", len(results), len(windows))
	for _, p := range CheckWindows(produced, results, size) {
		t.Error(p)
	}
}
