// Package waitpar runs a test binary whose parallel tests mostly wait (on a
// timeout, a broker's rebalance, a child process) with more of them at
// once than go test's default.
//
// go test runs at most -parallel tests that call t.Parallel at a time, and
// -parallel defaults to GOMAXPROCS: 2 on the CI machine, so tests that
// spend seconds asleep still queue two by two. A package whose t.Parallel
// tests are of that kind calls Main from its TestMain; tests that burn CPU
// stay sequential there (they gain nothing from sharing two cores).
//
// Invariants:
//
//  1. Main changes -parallel only when the command line did not set it: an
//     explicit -parallel (for instance -parallel 1 to debug) wins.
//  2. Main never lowers the parallelism below the default.
//  3. Main runs the tests exactly once and returns their exit code.
package waitpar
