package timers_test

import (
	"fmt"

	"github.com/signalbox/signalbox/timers"
)

// event is what this example parks; the queue reads its position through
// the function given to NewQueue.
type event struct {
	pos  timers.Pos
	text string
}

// Records are parked under their event time and leave, in the total order
// (event time, key, input, partition, offset), once the watermark passes
// them. Re-parking the same position (a re-read after a restart) releases
// one copy, the later one; until then both are counted.
func ExampleQueue() {
	q := timers.NewQueue(func(e event) timers.Pos { return e.pos })
	q.Push(event{timers.Pos{EventTime: 2000, Key: "apple", Input: "sales", Offset: 7}, "sold apple"}, 10)
	q.Push(event{timers.Pos{EventTime: 1000, Key: "apple", Input: "stock", Offset: 3}, "apple in stock"}, 14)
	q.Push(event{timers.Pos{EventTime: 2000, Key: "apple", Input: "returns", Offset: 1}, "returned apple"}, 14)
	q.Push(event{timers.Pos{EventTime: 3000, Key: "pear", Input: "stock", Offset: 4}, "pear in stock"}, 13)
	q.Push(event{timers.Pos{EventTime: 1000, Key: "apple", Input: "stock", Offset: 3}, "apple in stock (re-read)"}, 24)
	fmt.Println("parked:", q.Len(), "records,", q.Bytes(), "bytes")

	for _, e := range q.PopUntil(2000, 0, nil) {
		fmt.Println(e.text)
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
