package main

import (
	"context"
	"strings"
	"testing"

	"github.com/signalbox/signalbox/record"
)

// TestTableIdle checks that an idle row (-idle) shows no held-back figures
// and states its peak parked set as the multiple of the budget, while a
// held row keeps the parked set behind the held input.
func TestTableIdle(t *testing.T) {
	held := result{Store: "durable", Budget: 16 << 20, HeldParkedB: 160 << 20, HeldParked: 10, PeakParkedB: 170 << 20, Complete: true, InOrder: true}
	idle := result{Store: "durable", Idle: true, Budget: 16 << 20, HeldParkedB: 0, PeakParkedB: 4 << 20, Complete: true, InOrder: true}
	rows := strings.Split(strings.TrimSpace(table([]result{held, idle})), "\n")
	if len(rows) != 4 {
		t.Fatalf("table has %d lines, want 4:\n%s", len(rows), strings.Join(rows, "\n"))
	}
	head := len(strings.Split(rows[0], "|"))
	for _, r := range rows[2:] {
		if n := len(strings.Split(r, "|")); n != head {
			t.Errorf("row has %d cells, header %d: %s", n, head, r)
		}
	}
	if !strings.HasPrefix(rows[2], "| durable | 16.0 MiB | 160.0 MiB (10 records) | 10.0× |") {
		t.Errorf("held row: %s", rows[2])
	}
	if !strings.HasPrefix(rows[3], "| durable, idle | 16.0 MiB | – | 0.25× (peak) | – | – |") {
		t.Errorf("idle row: %s", rows[3])
	}
}

// TestCheckerTimeless: with -timeless the checker accepts records in arrival
// order across partitions but flags a partition whose offsets do not rise,
// and counts every record either way.
func TestCheckerTimeless(t *testing.T) {
	rec := func(p int32, off int64) record.Record {
		return record.Record{Topic: "t", Partition: p, Offset: off, Timeless: true}
	}
	c := &checker{timeless: true}
	_ = c.Write(context.Background(), []record.Record{rec(1, 5), rec(0, 9), rec(1, 6), rec(0, 10)})
	if c.disorder || c.out != 4 {
		t.Fatalf("interleaved partitions: disorder %v, %d counted", c.disorder, c.out)
	}
	_ = c.Write(context.Background(), []record.Record{rec(0, 10)}) // a duplicate
	if !c.disorder || c.out != 5 {
		t.Fatalf("a repeated offset: disorder %v, %d counted", c.disorder, c.out)
	}
}
