package timers

// The total release order.

// Pos is a record's place in the release order.
type Pos struct {
	EventTime int64  // milliseconds since the Unix epoch
	Key       string // ordering key
	Input     string // input (topic) name
	Partition int32
	Offset    int64
}

// Less reports whether a is released before b. It is a total order over
// distinct records (invariant 1).
func Less(a, b Pos) bool {
	if a.EventTime != b.EventTime {
		return a.EventTime < b.EventTime
	}
	return lessTie(&a, &b)
}

// lessTie is Less for two positions at the same event time.
func lessTie(a, b *Pos) bool {
	return cmpTie(a, b) < 0
}

// cmpTie compares two positions at the same event time.
func cmpTie(a, b *Pos) int {
	switch {
	case a.Key != b.Key:
		return cmpString(a.Key, b.Key)
	case a.Input != b.Input:
		return cmpString(a.Input, b.Input)
	case a.Partition != b.Partition:
		if a.Partition < b.Partition {
			return -1
		}
		return 1
	case a.Offset != b.Offset:
		if a.Offset < b.Offset {
			return -1
		}
		return 1
	}
	return 0
}

// cmpString compares two strings known to differ.
func cmpString(a, b string) int {
	if a < b {
		return -1
	}
	return 1
}
