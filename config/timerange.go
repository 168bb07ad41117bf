package config

import (
	"time"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/sources/kafka"
)

// validateTimeRange refuses an until event time at or before a start time:
// such a range is empty. Each field's own form is checked by its library
// (kafka.ParseStart, signalbox.Until.Validate). A start relative to now is
// resolved against the wall clock, as run resolves it at start-up.
func (j *Job) validateTimeRange(v *validator) {
	stop, ok := signalbox.Until(j.Until).Time()
	if !ok {
		return
	}
	start, timed, err := kafka.ParseStart(j.Start, time.Now())
	if err != nil || !timed || stop.After(start) {
		return
	}
	v.bad("until", "%s is not after start (%s): the range is empty", stop.Format(time.RFC3339Nano), start.Format(time.RFC3339Nano))
}
