package timers_test

import (
	"fmt"

	"github.com/signalbox/signalbox/timers"
)

// Records are parked under their event time and leave, in the total order
// (event time, key, input, partition, offset), once the watermark passes
// them. Re-parking the same position (a re-read after a restart) keeps one
// copy.
func ExampleQueue() {
	q := timers.NewQueue[string]()
	q.Push(timers.Pos{EventTime: 2000, Key: "apple", Input: "sales", Offset: 7}, "sold apple", 10)
	q.Push(timers.Pos{EventTime: 1000, Key: "apple", Input: "stock", Offset: 3}, "apple in stock", 14)
	q.Push(timers.Pos{EventTime: 2000, Key: "apple", Input: "returns", Offset: 1}, "returned apple", 14)
	q.Push(timers.Pos{EventTime: 3000, Key: "pear", Input: "stock", Offset: 4}, "pear in stock", 13)
	fresh := q.Push(timers.Pos{EventTime: 1000, Key: "apple", Input: "stock", Offset: 3}, "apple in stock", 14)
	fmt.Println("re-parked as new:", fresh, "- parked:", q.Len(), "records,", q.Bytes(), "bytes")

	for _, s := range q.PopUntil(2000, 0, nil) {
		fmt.Println(s)
	}
	next, _ := q.Min()
	fmt.Println("still parked:", q.Len(), "- next at", next.EventTime)
	// Output:
	// re-parked as new: false - parked: 4 records, 51 bytes
	// apple in stock
	// returned apple
	// sold apple
	// still parked: 1 - next at 3000
}
