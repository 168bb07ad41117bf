package progress

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/signalbox/signalbox"
)

// The refresh periods: a terminal redraws often, log lines are sparse.
var (
	RedrawEvery = 250 * time.Millisecond
	LogEvery    = 10 * time.Second
)

// Run shows the replay progress of every input until the replay is done or
// ctx ends. With tty it redraws one bar per input on w every RedrawEvery;
// otherwise it logs a line per input on log every LogEvery. Snapshots taken
// before any partition is assigned are not shown. When ctx ends it takes one
// last snapshot and shows it if the replay is done (a job stopping at its
// end offsets ends ctx before a tick would show that) or, on a terminal, if
// anything was to show, so the last frame is the job's last state. stats is
// called from Run's goroutine only.
func Run(ctx context.Context, stats func() signalbox.Stats, w io.Writer, tty bool, log *zap.Logger) {
	every := LogEvery
	show := func(s signalbox.Stats) { logFrame(log, s) }
	if tty {
		every = 0
		d := &display{w: w}
		show = d.draw
	}
	t := time.NewTicker(RedrawEvery)
	defer t.Stop()
	var last time.Time
	for {
		stopping := ctx.Err() != nil // this snapshot is the last
		s := stats()
		if started := len(s.Partitions) > 0 || s.ReplayDone; started && (s.ReplayDone || stopping && tty || time.Since(last) >= every) {
			show(s)
			last = time.Now()
		}
		if s.ReplayDone || stopping {
			return
		}
		select {
		case <-ctx.Done():
		case <-t.C:
		}
	}
}

// display redraws its lines in place.
type display struct {
	w     io.Writer
	lines int // lines drawn by the last frame
}

const barWidth = 30

func (d *display) draw(s signalbox.Stats) {
	var b strings.Builder
	if d.lines > 0 {
		fmt.Fprintf(&b, "\x1b[%dA", d.lines) // back to the first line of the frame
	}
	width := 0
	for _, p := range s.Progress {
		width = max(width, len(p.Input))
	}
	for _, p := range s.Progress {
		fill := int(p.Fraction * barWidth)
		fill = min(max(fill, 0), barWidth)
		fmt.Fprintf(&b, "\r\x1b[K%-*s [%s%s] %5.1f%%  %d/%d partitions  %s  ETA %s\n", width, p.Input,
			strings.Repeat("=", fill), strings.Repeat(" ", barWidth-fill), 100*p.Fraction,
			p.CaughtUp, p.Partitions, rate(p.Rate), eta(p.ETA))
	}
	fmt.Fprintf(&b, "\r\x1b[Kwatermark %s  in %d  out %d  parked %d\n", FormatTime(s.Watermark), s.In, s.Out, s.Parked)
	d.lines = len(s.Progress) + 1
	io.WriteString(d.w, b.String())
}

func logFrame(log *zap.Logger, s signalbox.Stats) {
	for _, p := range s.Progress {
		log.Info("replay progress", zap.String("input", p.Input), zap.Float64("percent", 100*p.Fraction),
			zap.Int("caught_up", p.CaughtUp), zap.Int("partitions", p.Partitions),
			zap.Int64("remaining", p.Remaining), zap.Float64("rate", p.Rate), zap.String("eta", eta(p.ETA)))
	}
	msg := "replaying"
	if s.ReplayDone {
		msg = "replay done"
	}
	fields := []zap.Field{zap.String("watermark", FormatTime(s.Watermark)), zap.Int64("in", s.In), zap.Int64("out", s.Out),
		zap.Int("parked", s.Parked), zap.Int("paused", len(s.Paused)), zap.Duration("replay_time", s.ReplayTime)}
	if len(s.Holders) > 0 {
		// Who everyone waits for: the partition holding the watermark
		// lowest, and why (the paused ones wait for it).
		h := s.Holders[0]
		fields = append(fields, zap.String("held_by", fmt.Sprintf("%s/%d", h.ID.Input, h.ID.Partition)), zap.String("held_because", h.State))
	}
	log.Info(msg, fields...)
}

func rate(r float64) string {
	switch {
	case r >= 1e6:
		return fmt.Sprintf("%.1fM/s", r/1e6)
	case r >= 1e3:
		return fmt.Sprintf("%.1fk/s", r/1e3)
	}
	return fmt.Sprintf("%.0f/s", r)
}

func eta(d time.Duration) string {
	if d < 0 {
		return "?"
	}
	if d < 10*time.Second {
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}
