package signalbox_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/internal/fielderr"
	"github.com/signalbox/signalbox/internal/rulecases"
	"github.com/signalbox/signalbox/internal/strategy"
	"github.com/signalbox/signalbox/sources/script"
)

// standInSink and standInCheckpointSink have the types of real sinks;
// neither New nor ValidateOptions calls a sink.
type (
	standInSink           struct{ signalbox.Sink }
	standInCheckpointSink struct{ signalbox.CheckpointSink }
)

func standIn(exactlyOnce bool) signalbox.Sink {
	if exactlyOnce {
		return standInCheckpointSink{}
	}
	return standInSink{}
}

// verdict is the field of each field error of err; an error that names no
// field fails the test.
func verdict(t *testing.T, err error) []string {
	t.Helper()
	var fields []string
	for _, fe := range fielderr.All(err) {
		fields = append(fields, fe.Field)
	}
	if err != nil && len(fields) == 0 {
		t.Fatalf("an error that names no field: %v", err)
	}
	return fields
}

// TestOptionRules: the library's verdict on every cross-check case
// (internal/rulecases, which the job file's and the CLI's tests also run)
// is the case's, from ValidateOptions and New alike.
func TestOptionRules(t *testing.T) {
	for _, c := range rulecases.Cases {
		opts := c.LibraryOptions(standIn)
		got := verdict(t, signalbox.ValidateOptions(opts...))
		_, err := signalbox.New(script.New(1, 1), opts...)
		if fromNew := verdict(t, err); !slices.Equal(got, fromNew) {
			t.Errorf("%s: ValidateOptions names %q, New %q", c.Name, got, fromNew)
		}
		switch {
		case c.Field == "" && len(got) != 0:
			t.Errorf("%s: want valid, got errors about %q", c.Name, got)
		case c.Field != "" && (len(got) != 1 || c.Field != got[0] && !strings.HasPrefix(c.Field, got[0]+".")):
			t.Errorf("%s: errors about %q, want one about %s", c.Name, got, c.Field)
		}
	}
}

// TestGivenOptionIsNeverReplaced: an option given a value it cannot take is
// refused, naming it, never replaced by its default; left out, it takes its
// default.
func TestGivenOptionIsNeverReplaced(t *testing.T) {
	sink := signalbox.WithSink(standInSink{})
	if err := signalbox.ValidateOptions(sink); err != nil {
		t.Fatalf("every option left out: %v", err)
	}
	for field, o := range map[string]signalbox.Option{
		"batch_size":           signalbox.WithBatchSize(0),
		"max_inflight_batches": signalbox.WithMaxInflightBatches(0),
		"checkpoint_interval":  signalbox.WithCheckpointInterval(0),
		"tick":                 signalbox.WithTick(0),
		"late":                 signalbox.WithLatePolicy(""),
		"until":                signalbox.WithUntil(""),
		"clock":                signalbox.WithClock(nil),
		"strategy":             strategy.Option(nil).(signalbox.Option),
		"parked_store":         signalbox.WithParkedStore(nil),
		"parked_limit":         signalbox.WithParkedLimit(-1),
		"stale_after":          signalbox.WithStaleAfter(-1),
	} {
		err := signalbox.ValidateOptions(sink, o)
		var fe *fielderr.Error
		if !errors.As(err, &fe) || fe.Field != field || len(fielderr.All(err)) != 1 {
			t.Errorf("%s: ValidateOptions = %v, want one error naming %s", field, err, field)
		}
	}
	for name, o := range map[string]signalbox.Option{
		"align":              signalbox.WithAlignment(0),
		"parked_limit":       signalbox.WithParkedLimit(0),
		"max_future":         signalbox.WithMaxFuture(0),
		"stale_after":        signalbox.WithStaleAfter(0),
		"max_inflight_bytes": signalbox.WithMaxInflightBytes(0),
		"logger":             signalbox.WithLogger(nil),
	} {
		if err := signalbox.ValidateOptions(sink, o); err != nil {
			t.Errorf("%s off (0 or nil): %v", name, err)
		}
	}
}
