// Command memtest measures signalbox's memory while one input is held back
// (issue 5): everything the other inputs deliver parks behind it, so the
// parked set grows far beyond the memory budget of a durable.Store.
//
//	go run ./bench/cmd/memtest -budget 16MiB
//
// The parent process starts an embedded broker, produces history into
// -topics topics of -partitions partitions each, and holds the first topic
// back (embedded.Cluster.DelayFetches: its fetches are answered without it,
// so its partitions deliver nothing and hold the watermark at −∞). It then
// re-executes itself with -child, once per store (durable, then memory), so
// that each run's peak RSS (VmHWM) is its own and not the broker's.
//
// The child runs signalbox in bounded mode with the Kafka source and the
// store under test, wrapped in a meter that adds up record.Record.Size of
// every parked record (the parked set's accounted size, whatever the store
// keeps in memory). It reports its progress on stdout; once it has ingested
// every record of the other topics, the parent waits a moment and releases
// the held topic. The child's sink checks that the output is complete
// (every record once) and in the total release order, then the child prints
// its result as JSON.
//
// memtest prints a Markdown table of the results, for docs/bench.md.
package main
