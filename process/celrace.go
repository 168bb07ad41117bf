package process

// cel-go's shared errors, labeled before any evaluation.

import (
	"math"

	"cel.dev/cel-go/common/types"
)

// cel-go (v0.33.3) returns two package-level error values, "no such
// overload" and "timestamp overflow", and labels an error with the node
// that returned it the first time it passes one (interpreter's
// labelErrNode: a write to the shared value). Two goroutines evaluating
// expressions at once, such as a window's fork beside the run's goroutine
// (docs/design.md K10), would write it concurrently: a data race, though
// a harmless one, since no message reads the label. Labeling both here,
// before any evaluation, leaves cel-go only reading them, which is what
// makes an Expr safe for concurrent use. TestConcurrentErrors fails
// without it under -race.
func init() {
	types.LabelErrNode(-1, types.NoSuchOverloadErr())
	types.LabelErrNode(-1, types.Int(math.MaxInt64).ConvertToType(types.TimestampType))
}
