// Package prefetch asks the CPU to load memory a loop is about to read,
// where the loop reaches it by pointer and the hardware cannot guess the
// address: parked records at release, and records' bytes at encoding.
//
// Invariants:
//  1. Hints only: nothing is read, written or kept; any pointer (nil,
//     freed, unmapped) is safe to pass.
//  2. On amd64 a call is a few PREFETCHT0 instructions; elsewhere it does
//     nothing.
package prefetch
