package scaletest_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/embedded"
	"github.com/signalbox/signalbox/internal/crashtest"
	"github.com/signalbox/signalbox/internal/waitpar"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/sinks/jsonl"
	"github.com/signalbox/signalbox/sources/kafka"
	"github.com/signalbox/signalbox/timers/durable"
)

// Crash-test members run in a child process (this test binary again), so
// that SIGKILL is a real crash: the member's connections drop and it never
// leaves the group; the broker expires it after its session timeout.
const (
	childEnv       = "SCALETEST_CHILD" // brokers,output file[,state dir]
	sessionTimeout = time.Second
)

func TestMain(m *testing.M) {
	if spec := os.Getenv(childEnv); spec != "" {
		if err := runChild(strings.Split(spec, ",")); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	// The end-to-end tests (t.Parallel) mostly wait on throttled sinks,
	// session timeouts and rebalances: they all run at once.
	code := waitpar.Main(m, 8)
	crashtest.RemoveBinary() // TestWindowGroupMembers runs the binary
	os.Exit(code)
}

// memberConfig is the source configuration of the crash test's members.
func memberConfig(cfg *kafka.Config) {
	cfg.SessionTimeout, cfg.HeartbeatInterval = sessionTimeout, 100*time.Millisecond
}

// runChild runs one member until it is killed: brokers, output, state dir.
func runChild(args []string) error {
	cfg := sourceConfig([]string{args[0]}, "child")
	memberConfig(&cfg)
	src, err := kafka.New(cfg)
	if err != nil {
		return err
	}
	opts := []signalbox.Option{
		signalbox.WithSink(jsonl.Create(args[1], jsonl.Options{BufferSize: 2 << 10})),
		signalbox.WithDelay(delay), signalbox.WithCheckpointInterval(100 * time.Millisecond),
		signalbox.WithBatchSize(64), signalbox.WithMaxInflightBatches(2),
	}
	if len(args) > 2 {
		store, err := durable.OpenStore(args[2], durable.StoreOptions{MemoryBudget: 64 << 10})
		if err != nil {
			return err
		}
		defer store.Close()
		opts = append(opts, signalbox.WithParkedStore(store))
	}
	p, err := signalbox.New(src, opts...)
	if err != nil {
		return err
	}
	return p.Run(context.Background())
}

// child is a member running in a child process.
type child struct {
	cmd *exec.Cmd
	out string
	log bytes.Buffer
}

func startChild(t *testing.T, c *embedded.Cluster, out, state string) *child {
	spec := c.Addrs()[0] + "," + out
	if state != "" {
		spec += "," + state
	}
	ch := &child{cmd: exec.Command(os.Args[0], "-test.run=^$"), out: out}
	ch.cmd.Env = append(os.Environ(), childEnv+"="+spec)
	ch.cmd.Stderr = &ch.log
	if err := ch.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ch.kill(t) })
	return ch
}

func (ch *child) kill(t *testing.T) {
	if ch.cmd.ProcessState != nil {
		return
	}
	_ = ch.cmd.Process.Signal(syscall.SIGKILL)
	if err := ch.cmd.Wait(); err != nil && !strings.Contains(err.Error(), "killed") {
		t.Errorf("child: %v\n%s", err, ch.log.String())
	}
}

func (ch *child) lines(t *testing.T) []line {
	data, err := os.ReadFile(ch.out)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return parseLines(t, data)
}

// TestCrashedMemberTakenOver: member A (a child process) reads the history
// of two co-partitioned topics; B joins, the group splits the tasks, live
// producers write; A is SIGKILLed. Its session expires after the session
// timeout and B takes its tasks over from A's committed offsets. Every
// record comes out (A's output plus B's), none late, each instance's output
// in timer order within every task. With state.dir, A's store is restarted
// afterwards in a new process and takes tasks back: its stale parked
// records must not come out twice out of order, nor be lost.
func TestCrashedMemberTakenOver(t *testing.T) {
	t.Parallel()
	for _, withState := range []bool{false, true} {
		t.Run(map[bool]string{false: "jsonl", true: "jsonl+state.dir"}[withState], func(t *testing.T) {
			c, err := embedded.Start(embedded.WithTopic(topicA, nParts), embedded.WithTopic(topicB, nParts),
				embedded.WithKfakeOptions(kfake.GroupMinSessionTimeout(100*time.Millisecond)))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(c.Close)
			h := newHarness(t, c)
			ctx := context.Background()
			rng := rand.New(rand.NewPCG(11, 12))
			base := time.Now().Add(-time.Hour)
			for chunk := range 20 {
				var rs []*kgo.Record
				for _, topic := range topics {
					for p := range int32(nParts) {
						for j := range histChunk {
							i := chunk*histChunk + j
							r := embedded.Record(topic, p, keyOf(p, rng), fmt.Sprintf(`{"i":%d}`, i))
							r.Timestamp = base.Add(time.Duration(i)*10*time.Millisecond + time.Duration(rng.Int64N(int64(disorder))))
							rs = append(rs, r)
						}
					}
				}
				if err := c.Produce(ctx, rs...); err != nil {
					t.Fatal(err)
				}
			}
			dir := t.TempDir()
			state := ""
			if withState {
				state = filepath.Join(dir, "state")
			}
			a := startChild(t, c, filepath.Join(dir, "a1.jsonl"), state)
			waitFor(t, "A to emit", func() bool { return len(a.lines(t)) >= 100 })
			stopLive, slow := liveProducer(t, c, fixedCounts(nParts))
			b := newInstance(t, h, "B", c, memberConfig)
			stopB := b.start(t)
			waitFor(t, "B to own some tasks and catch up", func() bool {
				b.mu.Lock()
				defer b.mu.Unlock()
				return len(b.owned) > 0 && len(b.owned) < 2*nParts
			})
			waitFor(t, "B to catch up", b.replayed.Load)
			n := len(a.lines(t))
			waitFor(t, "A to emit live records of its tasks", func() bool { return len(a.lines(t)) > n+50 })
			a.kill(t)
			killed := time.Now()
			waitFor(t, "B to take A's tasks over", func() bool {
				b.mu.Lock()
				defer b.mu.Unlock()
				return len(b.owned) == 2*nParts
			})
			t.Logf("B owns every task %v after the kill (session timeout %v)", time.Since(killed).Round(10*time.Millisecond), sessionTimeout)
			outs := []func() []line{func() []line { return a.lines(t) }, func() []line { return b.sink.lines(t) }}
			if withState {
				a2 := startChild(t, c, filepath.Join(dir, "a2.jsonl"), state)
				outs = append(outs, func() []line { return a2.lines(t) })
				waitFor(t, "A to come back", func() bool {
					b.mu.Lock()
					defer b.mu.Unlock()
					return len(b.owned) < 2*nParts
				})
			}
			waitGrowth(t, "live records after the takeover", 100, lineCount(t, outs...))
			stopLive()
			all := func() [][]line {
				var out [][]line
				for _, o := range outs {
					out = append(out, o())
				}
				return out
			}
			end := highWater(t, c, map[string]int32{topicA: nParts, topicB: nParts})
			deadline := time.Now().Add(hangGuard)
			for !coveredBy(all(), end) && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			if err := stopB(); err != nil {
				t.Fatalf("B: %v", err)
			}
			for i, ls := range all() {
				seen := map[record.TopicPartition]map[int64]bool{}
				prevTask := map[int32]*line{}
				for k := range ls {
					l := &ls[k]
					if l.Late {
						if !slow.lateByProducer(*l) {
							t.Errorf("output %d: %+v late: no producer is late", i, *l)
						}
						continue // emitted out of turn, flagged
					}
					if seen[l.tp()][l.Offset] {
						continue // a re-read in the same output (at-least-once)
					}
					if seen[l.tp()] == nil {
						seen[l.tp()] = map[int64]bool{}
					}
					seen[l.tp()][l.Offset] = true
					if p := prevTask[l.Partition]; p != nil && cmpTimer(*p, *l) >= 0 {
						t.Errorf("output %d: %+v after %+v in task %d", i, *l, *p, l.Partition)
					}
					prevTask[l.Partition] = l
				}
				t.Logf("output %d: %d lines", i, len(ls))
			}
			if !coveredBy(all(), end) {
				t.Errorf("records lost: not every offset up to %v came out", end)
			}
		})
	}
}

// coveredBy reports whether the outputs together hold every offset below
// end.
func coveredBy(outs [][]line, end map[record.TopicPartition]int64) bool {
	seen := map[record.TopicPartition]map[int64]int{}
	for _, ls := range outs {
		for _, l := range ls {
			if seen[l.tp()] == nil {
				seen[l.tp()] = map[int64]int{}
			}
			seen[l.tp()][l.Offset]++
		}
	}
	return covered(seen, end)
}
