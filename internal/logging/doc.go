// Package logging builds the CLI's zap logger.
//
// Invariants:
//
//  1. The format is "console" or "json". Left empty, it is console when the
//     output is a terminal and JSON otherwise, so that a log collector
//     always gets one JSON object per line.
//  2. Logs go to the writer given (the CLI passes stderr), never to stdout,
//     which belongs to the job's output and to the progress display.
//  3. An unknown format or level is an error naming the accepted values; it
//     never silently falls back.
package logging
