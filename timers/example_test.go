package timers_test

import (
	"fmt"

	"github.com/signalbox/signalbox/timers"
)

// Records are parked under their event time and leave, in the total order
// (event time, key, input, partition, offset), once the watermark passes
// them. Re-parking the same position (a re-read after a restart) releases
// one copy, the later one; until then both are counted.
func ExampleQueue() {
	q := timers.NewQueue[string]()
	q.Push(timers.Pos{EventTime: 2000, Key: "apple", Input: "sales", Offset: 7}, "sold apple", 10)
	q.Push(timers.Pos{EventTime: 1000, Key: "apple", Input: "stock", Offset: 3}, "apple in stock", 14)
	q.Push(timers.Pos{EventTime: 2000, Key: "apple", Input: "returns", Offset: 1}, "returned apple", 14)
	q.Push(timers.Pos{EventTime: 3000, Key: "pear", Input: "stock", Offset: 4}, "pear in stock", 13)
	q.Push(timers.Pos{EventTime: 1000, Key: "apple", Input: "stock", Offset: 3}, "apple in stock (re-read)", 24)
	fmt.Println("parked:", q.Len(), "records,", q.Bytes(), "bytes")

	for _, s := range q.PopUntil(2000, 0, nil) {
		fmt.Println(s)
	}
	next, _ := q.Min()
	fmt.Println("still parked:", q.Len(), "- next at", next.EventTime)
	// Output:
	// parked: 5 records, 75 bytes
	// apple in stock (re-read)
	// returned apple
	// sold apple
	// still parked: 1 - next at 3000
}
