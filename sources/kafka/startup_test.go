package kafka

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/signalbox/signalbox/embedded"
	"github.com/signalbox/signalbox/internal/startup"
	"github.com/signalbox/signalbox/internal/startup/startuptest"
)

// startupBound is the StartupTimeout of these tests; a failure must arrive
// within startupSlack of it (generous: the bound is the feature).
const (
	startupBound = 2 * time.Second
	startupSlack = 5 * startupBound
)

// openOrFirstPoll opens src and, when Open succeeds (group mode), polls
// once: how long the start-up took to fail or succeed, and its error, if any.
func openOrFirstPoll(t *testing.T, ctx context.Context, src *Source) (time.Duration, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, hangGuard)
	defer cancel()
	start := time.Now()
	if err := src.Open(ctx); err != nil {
		return time.Since(start), err
	}
	_, err := src.Poll(ctx)
	took := time.Since(start)
	closed := time.Now()
	_ = src.Close()
	if d := time.Since(closed); d > startupSlack {
		t.Errorf("Close after the failed start-up took %v", d)
	}
	return took, err
}

// checkStartupFailure asserts a start-up failure within the bound that says
// what it waited for and names addr.
func checkStartupFailure(t *testing.T, err error, took time.Duration, wait, addr string) {
	t.Helper()
	t.Logf("failed after %v: %v", took.Round(time.Millisecond), err)
	if !errors.Is(err, ErrStartupTimeout) {
		t.Fatalf("start-up error %v, want ErrStartupTimeout", err)
	}
	if took > startupSlack {
		t.Errorf("failure after %v; the bound is %v", took, startupBound)
	}
	for _, want := range []string{wait, addr, "startup_timeout", "no answer"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}

// TestSilentBrokerFailsStartup: a broker that accepts connections and never
// answers fails start-up within StartupTimeout, with and without a group,
// and the error names it.
func TestSilentBrokerFailsStartup(t *testing.T) {
	t.Parallel()
	for _, group := range []string{"", "g"} {
		t.Run("group="+group, func(t *testing.T) {
			t.Parallel()
			addr := startuptest.SilentBroker(t)
			src, err := New(Config{Brokers: []string{addr}, Topics: []string{"t"}, Group: group, StartupTimeout: startupBound})
			if err != nil {
				t.Fatal(err)
			}
			took, err := openOrFirstPoll(t, context.Background(), src)
			checkStartupFailure(t, err, took, "metadata", addr)
		})
	}
}

// stall makes the broker stop answering on the connection that sends
// request number skip+1 of kind key, from then until the test ends.
func stall(t *testing.T, c *embedded.Cluster, key kmsg.Key, skip int) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	kf := c.Kfake()
	kf.ControlKey(int16(key), func(kmsg.Request) (kmsg.Response, error, bool) {
		if skip > 0 {
			skip--
			kf.KeepControl()
			return nil, nil, false
		}
		kf.SleepControl(func() { <-release })
		return nil, nil, false
	})
}

// slow delays every answer of kind key by d.
func slow(c *embedded.Cluster, key kmsg.Key, d time.Duration) {
	kf := c.Kfake()
	kf.ControlKey(int16(key), func(kmsg.Request) (kmsg.Response, error, bool) {
		kf.KeepControl()
		kf.SleepControl(func() { time.Sleep(d) })
		return nil, nil, false
	})
}

// TestStalledStartupStepFails: a broker that answers the first steps of the
// start-up and then stops fails it within StartupTimeout at every step —
// the snapshot, the group join, the committed-offset fetch — and the error
// names the step and the broker.
func TestStalledStartupStepFails(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		group string
		key   kmsg.Key
		skip  int // requests of kind key answered first
		wait  string
	}{
		{"", kmsg.Metadata, 1, "metadata"},
		{"", kmsg.ListOffsets, 0, "ListOffsets"},
		{"g", kmsg.FindCoordinator, 0, "FindCoordinator"},
		{"g", kmsg.DescribeGroups, 0, "DescribeGroups for group g from its coordinator"},
		{"g", kmsg.JoinGroup, 0, "the join of group g"},
		{"g", kmsg.SyncGroup, 0, "the join of group g"},
		{"g", kmsg.OffsetFetch, 0, "OffsetFetch for group g"}, // the source's; franz-go's own comes after the first assignment
		{"g", kmsg.ListOffsets, 0, "ListOffsets"},
	} {
		t.Run(fmt.Sprintf("group=%s/%s/%d", tc.group, tc.key.Name(), tc.skip), func(t *testing.T) {
			t.Parallel()
			c := startCluster(t, embedded.WithTopic("t", 1))
			stall(t, c, tc.key, tc.skip)
			// The join's wait for a rebalance is not counted, up to
			// the rebalance timeout: so the bound is twice startupBound.
			src, err := New(Config{Brokers: c.Addrs(), Topics: []string{"t"}, Group: tc.group,
				StartupTimeout: startupBound, RebalanceTimeout: startupBound})
			if err != nil {
				t.Fatal(err)
			}
			took, err := openOrFirstPoll(t, context.Background(), src)
			checkStartupFailure(t, err, took, tc.wait, c.Addrs()[0])
		})
	}
}

// TestStartupStepsShareOneDeadline: steps that each answer well within
// StartupTimeout but together exceed it fail the start-up; the same steps
// with a larger bound succeed.
func TestStartupStepsShareOneDeadline(t *testing.T) {
	t.Parallel()
	const step = 700 * time.Millisecond // metadata ×2 and ListOffsets ×2: 2.8s
	for _, group := range []string{"", "g"} {
		t.Run("group="+group, func(t *testing.T) {
			t.Parallel()
			for _, bound := range []time.Duration{startupBound, hangGuard - 10*time.Second} {
				c := startCluster(t, embedded.WithTopic("t", 1))
				slow(c, kmsg.Metadata, step)
				slow(c, kmsg.ListOffsets, step)
				src, err := New(Config{Brokers: c.Addrs(), Topics: []string{"t"}, Group: group, StartupTimeout: bound})
				if err != nil {
					t.Fatal(err)
				}
				took, err := openOrFirstPoll(t, context.Background(), src)
				if bound == startupBound {
					checkStartupFailure(t, err, took, "", c.Addrs()[0])
					continue
				}
				if err != nil {
					t.Fatalf("bound %v: start-up failed after %v: %v", bound, took, err)
				}
				t.Logf("bound %v: started in %v", bound, took.Round(time.Millisecond))
			}
		})
	}
}

// TestStartupDeadlineFromContext: a deadline carried by Open's context (the
// job's one start-up deadline, already partly spent on its sinks) bounds
// the source's start-up when it is earlier than StartupTimeout.
func TestStartupDeadlineFromContext(t *testing.T) {
	t.Parallel()
	addr := startuptest.SilentBroker(t)
	src, err := New(Config{Brokers: []string{addr}, Topics: []string{"t"}}) // default bound, 30s
	if err != nil {
		t.Fatal(err)
	}
	ctx := startup.WithDeadline(context.Background(), time.Now().Add(startupBound))
	took, err := openOrFirstPoll(t, ctx, src)
	checkStartupFailure(t, err, took, "the job's start-up deadline", addr)
}

// TestStartupJoinWaitsForRebalance: a join the coordinator holds while
// another member is slow to rejoin is the rebalance, not a silent broker:
// it may outlast StartupTimeout, up to RebalanceTimeout.
func TestStartupJoinWaitsForRebalance(t *testing.T) {
	t.Parallel()
	c := startCluster(t, embedded.WithTopic("t", 2))
	const revoke = 3 * startupBound // how long A keeps the rebalance waiting
	a := openSource(t, Config{Brokers: c.Addrs(), Topics: []string{"t"}, Group: "g",
		HeartbeatInterval: 100 * time.Millisecond, RevokeTimeout: revoke, ClientID: "a"})
	colA := newCollector(t, a)
	colA.until("A assigned everything", func() bool { return len(colA.assigned) == 2 })
	// A polls no more: its rejoin waits for RevokeTimeout.
	b, err := New(Config{Brokers: c.Addrs(), Topics: []string{"t"}, Group: "g", ClientID: "b",
		StartupTimeout: startupBound, RebalanceTimeout: hangGuard / 2})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	start := time.Now()
	if err := b.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	f, err := b.Poll(ctx)
	took := time.Since(start)
	if err != nil {
		t.Fatalf("B's start-up failed after %v: %v", took, err)
	}
	if len(f.Assigned) == 0 {
		t.Fatalf("B's first Fetch assigns nothing: %+v", f)
	}
	if took < startupBound {
		t.Fatalf("B joined in %v: the join did not wait beyond StartupTimeout, so this test shows nothing", took)
	}
	t.Logf("B assigned %d partitions after %v (StartupTimeout %v)", len(f.Assigned), took.Round(time.Millisecond), startupBound)
}

// TestCanceledStartupReturnsPromptly: Open's context, ended while a
// start-up step waits on a broker that stopped answering, ends Open within
// the slack: the abandoned step's client is closed in the background, not
// after the read timeout that still holds its request.
func TestCanceledStartupReturnsPromptly(t *testing.T) {
	t.Parallel()
	for _, group := range []string{"", "g"} {
		t.Run("group="+group, func(t *testing.T) {
			t.Parallel()
			c := startCluster(t, embedded.WithTopic("t", 1))
			key := kmsg.ListOffsets
			if group != "" {
				key = kmsg.DescribeGroups
			}
			stall(t, c, key, 0)
			src, err := New(Config{Brokers: c.Addrs(), Topics: []string{"t"}, Group: group, StartupTimeout: hangGuard})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), startupBound)
			defer cancel()
			start := time.Now()
			err = src.Open(ctx)
			took := time.Since(start)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Open: %v, want the context's error", err)
			}
			if took > startupSlack {
				t.Errorf("Open returned %v after its context ended at %v", took, startupBound)
			}
		})
	}
}
