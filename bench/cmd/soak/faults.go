package main

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// fault is one action of the fault plan, at a time since the start.
type fault struct {
	at time.Duration
	do func(ctx context.Context)
}

// faultEnv is what the faults act on.
type faultEnv struct {
	cut  *cutter
	bulk *bulkServer
	dsn  string
	tbl  string
	ms   *members
	ev   *eventLog
	long sync.WaitGroup // faults that last (locks, outages, member changes)

	memberMu sync.Mutex // member changes run in turn, off the plan's clock
	stopWait time.Duration

	mu   sync.Mutex
	over bool // runFaults is waiting for the lasting faults: no new one
}

// begin registers a lasting fault; false once the plan is over.
func (e *faultEnv) begin() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.over {
		return false
	}
	e.long.Add(1)
	return true
}

// progress is when a member incarnation's released count last moved.
type progress struct {
	run      int
	released float64
	since    time.Time
}

// watchdog finds members that release nothing for a while.
type watchdog struct {
	after time.Duration // 0: never
	last  map[string]progress
}

// stalled takes a sample taken at now and says whether its member has
// released nothing for the watchdog's time.
func (w *watchdog) stalled(s sample, now time.Time) bool {
	p, ok := w.last[s.Member]
	if !ok || p.run != s.Run || p.released != s.Released {
		w.last[s.Member] = progress{run: s.Run, released: s.Released, since: now}
		return false
	}
	if w.after <= 0 || now.Sub(p.since) < w.after {
		return false
	}
	w.last[s.Member] = progress{run: s.Run, released: s.Released, since: now} // once per period
	return true
}

// stall reports a stalled member, has it dump its goroutines (SIGQUIT) and
// restarts it.
func (e *faultEnv) stall(ctx context.Context, m *member, s sample, after time.Duration) {
	e.ev.add("stall", fmt.Sprintf("member %s run %d released nothing for %v (%.0f records so far): SIGQUIT, goroutine dump in %s", m.name, m.run, after, s.Released, m.log))
	e.member(func() {
		if !e.ms.current(m) {
			return // stopped or replaced meanwhile
		}
		e.ms.stop(m.name, syscall.SIGQUIT, e.stopWait)
		e.up(m.name)
	})(ctx)
}

// every lists the times offset + k·period below d (none for period 0).
func every(period, offset, d time.Duration) []time.Duration {
	var ts []time.Duration
	for t := offset; period > 0 && t < d; t += period {
		ts = append(ts, t)
	}
	return ts
}

// plan is the fault plan of the soak, sorted by time: each kind of fault on
// its own period, at its own phase, so that they rarely coincide.
func plan(c config, e *faultEnv) []fault {
	var fs []fault
	add := func(ts []time.Duration, do func(context.Context)) {
		for _, t := range ts {
			fs = append(fs, fault{at: t, do: do})
		}
	}
	add(every(c.DropEvery, c.DropEvery/2, c.Duration), func(context.Context) {
		e.ev.add("drop", fmt.Sprintf("closed %d member connections to the broker", e.cut.cut()))
	})
	add(every(c.PGLockEvery, c.PGLockEvery/4, c.Duration), func(ctx context.Context) { e.lockTable(ctx, c.PGLockFor) })
	n := 0
	add(every(c.BulkEvery, 3*c.BulkEvery/4, c.Duration), func(ctx context.Context) {
		status := []int{http.StatusTooManyRequests, http.StatusServiceUnavailable}[n%2]
		n++
		e.outage(ctx, status, c.BulkFor)
	})
	p := c.MemberPeriod
	add(every(p, p/4, c.Duration), e.member(func() { e.up("b") }))
	add(every(p, p/2, c.Duration), e.member(func() {
		e.ms.stop("b", syscall.SIGKILL, time.Minute)
		e.up("b")
	}))
	add(every(p, 3*p/4, c.Duration), e.member(func() { e.ms.stop("b", syscall.SIGTERM, c.StopWait) }))
	slices.SortStableFunc(fs, func(a, b fault) int { return int(a.at - b.at) })
	return fs
}

// member runs fn in the background, after the member changes before it: a
// member slow to stop delays the next change, not the other faults.
func (e *faultEnv) member(fn func()) func(context.Context) {
	return func(context.Context) {
		if !e.begin() {
			return
		}
		go func() {
			defer e.long.Done()
			e.memberMu.Lock()
			defer e.memberMu.Unlock()
			fn()
		}()
	}
}

func (e *faultEnv) up(name string) {
	if err := e.ms.up(name); err != nil {
		e.ev.add("error", fmt.Sprintf("starting member %s: %v", name, err))
	}
}

// lockTable holds an ACCESS EXCLUSIVE lock on the data table for d (or
// until ctx ends), from a connection of its own.
func (e *faultEnv) lockTable(ctx context.Context, d time.Duration) {
	if !e.begin() {
		return
	}
	go func() {
		defer e.long.Done()
		conn, err := pgx.Connect(ctx, e.dsn)
		if err != nil {
			e.ev.add("error", fmt.Sprintf("pg-lock: connect: %v", err))
			return
		}
		defer conn.Close(context.WithoutCancel(ctx))
		tx, err := conn.Begin(ctx)
		if err != nil {
			e.ev.add("error", fmt.Sprintf("pg-lock: begin: %v", err))
			return
		}
		defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // releases the lock
		if _, err := tx.Exec(ctx, "LOCK TABLE "+pgx.Identifier{e.tbl}.Sanitize()+" IN ACCESS EXCLUSIVE MODE"); err != nil {
			e.ev.add("error", fmt.Sprintf("pg-lock: %v", err))
			return
		}
		e.ev.add("pg-lock", fmt.Sprintf("LOCK TABLE %s IN ACCESS EXCLUSIVE MODE for %v", e.tbl, d))
		sleep(ctx, d)
		e.ev.add("pg-unlock", e.tbl)
	}()
}

// outage makes the _bulk server answer status for d (or until ctx ends).
func (e *faultEnv) outage(ctx context.Context, status int, d time.Duration) {
	if !e.begin() {
		return
	}
	e.bulk.setOutage(status)
	e.ev.add("bulk-outage", fmt.Sprintf("every _bulk request answered %d for %v", status, d))
	go func() {
		defer e.long.Done()
		sleep(ctx, d)
		e.bulk.setOutage(0)
		e.ev.add("bulk-ok", "_bulk serves again")
	}()
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// runFaults runs the plan from start until ctx ends, then waits for the
// lasting faults to end.
func runFaults(ctx context.Context, start time.Time, e *faultEnv, fs []fault) {
	for _, f := range fs {
		sleep(ctx, time.Until(start.Add(f.at)))
		if ctx.Err() != nil {
			break
		}
		f.do(ctx)
	}
	<-ctx.Done()
	e.mu.Lock()
	e.over = true
	e.mu.Unlock()
	e.long.Wait()
}
