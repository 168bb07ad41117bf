package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestCutClosesOnlyOtherProcesses: a cut closes connections dialled
// without the cutter's dialer and keeps the soak's own.
func TestCutClosesOnlyOtherProcesses(t *testing.T) {
	c := newCutter()
	ln, err := c.listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go io.Copy(conn, conn) //nolint:errcheck // echo until closed
		}
	}()
	other, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	own, err := c.dial(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close()
	echo := func(conn net.Conn) error {
		conn.SetDeadline(time.Now().Add(30 * time.Second)) //nolint:errcheck // hang guard only
		if _, err := conn.Write([]byte("x")); err != nil {
			return err
		}
		_, err := io.ReadFull(conn, make([]byte, 1))
		return err
	}
	for _, conn := range []net.Conn{other, own} { // both accepted and tracked
		if err := echo(conn); err != nil {
			t.Fatal(err)
		}
	}
	if n := c.cut(); n != 1 {
		t.Fatalf("cut closed %d connections, want 1", n)
	}
	if err := echo(other); err == nil {
		t.Fatal("the other process's connection survived the cut")
	}
	if err := echo(own); err != nil {
		t.Fatalf("the soak's own connection was cut: %v", err)
	}
}

func TestBulkServerIndexesAndRefuses(t *testing.T) {
	b := newBulkServer(time.Now())
	srv := httptest.NewServer(b)
	defer srv.Close()
	body := `{"index":{"_index":"soak","_id":"t/0/0"}}
{"topic":"t","partition":0,"offset":0,"key":"k","event_time_ms":5,"value":{},"late":false}
{"index":{"_index":"soak","_id":"t/0/1"}}
{"topic":"t","partition":0,"offset":1,"key":"k","event_time_ms":6,"value":{},"late":true,"late_by_ms":3}
`
	post := func() *http.Response {
		resp, err := http.Post(srv.URL+"/_bulk", "application/x-ndjson", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if resp := post(); resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	b.setOutage(http.StatusTooManyRequests)
	if resp := post(); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("during an outage: status %d", resp.StatusCode)
	}
	b.setOutage(0)
	post()
	r := b.check.result("bulk", map[topicPart]int64{{"t", 0}: 2})
	if r.Received != 4 || r.Distinct != 2 || r.Duplicates != 2 || r.Late != 2 || b.refused != 1 || b.dupsAt[0] != 2 {
		t.Fatalf("%+v, refused %d", r, b.refused)
	}
}

func TestPlan(t *testing.T) {
	c := config{Duration: 10 * time.Minute, DropEvery: 4 * time.Minute, PGLockEvery: 6 * time.Minute, BulkEvery: 6 * time.Minute, MemberPeriod: 8 * time.Minute}
	fs := plan(c, &faultEnv{})
	var at []time.Duration
	for _, f := range fs {
		at = append(at, f.at)
	}
	// drops at 2, 6; lock at 1.5, 7.5; outage at 4.5; b joins at 2, killed at 4, leaves at 6.
	want := []time.Duration{90 * time.Second, 2 * time.Minute, 2 * time.Minute, 4 * time.Minute, 270 * time.Second, 6 * time.Minute, 6 * time.Minute, 450 * time.Second}
	if !slices.Equal(at, want) {
		t.Fatalf("plan at %v, want %v", at, want)
	}
	if fs := plan(config{Duration: time.Hour}, &faultEnv{}); len(fs) != 0 {
		t.Fatalf("periods 0 planned %d faults", len(fs))
	}
}

func TestBadFlags(t *testing.T) {
	t.Setenv("SIGNALBOX_PG_DSN", "postgres://x")
	for _, args := range [][]string{{"-duration", "0s"}, {"-rate", "0"}, {"-delay", "50ms"}, {"-pg-lock-for", "7m"}, {"-bulk-every", "-1s"}} {
		code, err := run(args, io.Discard)
		if code != 2 || err == nil {
			t.Errorf("%v: exit %d, %v", args, code, err)
		}
	}
	t.Setenv("SIGNALBOX_PG_DSN", "")
	if _, err := parseFlags(nil); err == nil || !strings.Contains(err.Error(), "SIGNALBOX_PG_DSN") {
		t.Errorf("no DSN: %v", err)
	}
}

func TestWatchdog(t *testing.T) {
	w := &watchdog{after: time.Minute, last: map[string]progress{}}
	t0 := time.Unix(1000, 0)
	at := func(d time.Duration, run int, released float64) bool {
		return w.stalled(sample{Member: "a", Run: run, Released: released}, t0.Add(d))
	}
	if at(0, 0, 10) || at(50*time.Second, 0, 10) {
		t.Fatal("stalled before a minute without progress")
	}
	if !at(61*time.Second, 0, 10) {
		t.Fatal("a minute without progress is not a stall")
	}
	if at(70*time.Second, 0, 10) {
		t.Fatal("one stall reported twice in a minute")
	}
	if at(2*time.Minute, 0, 11) || at(170*time.Second, 0, 11) {
		t.Fatal("progress did not reset the watchdog")
	}
	if at(181*time.Second, 1, 11) {
		t.Fatal("a new incarnation inherited the old one's clock")
	}
	w.after = 0
	if at(time.Hour, 1, 11) {
		t.Fatal("-stall 0 still reports stalls")
	}
}
