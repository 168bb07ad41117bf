// Package version says which build of signalbox is running: its version,
// commit and Go version, for `signalbox version`, the admin server's
// /status and the signalbox_build_info metric.
//
// Invariants:
//
//  1. Values set at link time (-ldflags "-X <this package>.version=…
//     -X <this package>.commit=…", as .goreleaser.yaml and the Dockerfile
//     do) win over what runtime/debug.ReadBuildInfo reports; ReadBuildInfo
//     fills in what the linker left empty.
//  2. No field is ever empty: an unknown version is "devel", an unknown
//     commit "unknown", so a dashboard or a bug report always has a value.
package version
