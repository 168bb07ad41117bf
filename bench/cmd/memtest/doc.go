// Command memtest measures signalbox's memory while one input is held back:
// everything the other inputs deliver parks behind it, so the
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
// With -idle the parent holds no topic back and the child leaves event-time
// alignment on (the engine's default window, or -align): the same job, with
// the same history, store options, fetch caps, memory limit and garbage
// collector percentage, parking only what flow control lets through. Its
// peak RSS is the whole job's idle footprint, which a held run may use on
// top of twice the budget; the row reports the most it ever parked, which is not
// zero (see docs/bench.md). The sink checks the output as in a held run.
//
// memtest prints a Markdown table of the results, for docs/bench.md.
//
// With -store-only idle|held|delay it runs no broker and no engine: it drives
// a durable.Store directly in its own process, parking records until the
// parked set is -factor × -budget (accounted size), either held back and
// released at the end or trailing a steady watermark, and prints one table
// row: peak RSS, Go heap, pebble's memory, the in-memory part and disk
// bytes. idle opens the store and parks nothing (the footprint the targets
// add to the budget). See storeonly.go and docs/bench.md.
package main
