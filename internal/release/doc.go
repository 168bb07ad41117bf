// Package release checks what a release of signalbox ships: the licences
// of the modules linked into the binary (against LICENSE's Apache-2.0 and
// docs/licenses.md), the release configuration (.goreleaser.yaml, built
// for the host's target and one other it lists) and the container image (the Dockerfile's
// entrypoint, user and labels, put into an OCI image and run).
//
// Invariants:
//
//  1. Classify recognises a licence by phrases of its own wording,
//     normalised (case, punctuation and line breaks ignored); a text it
//     does not recognise yields nothing, and an unrecognised licence fails
//     the check rather than passing it.
//  2. The build graph is `go list -deps ./cmd/signalbox` for every target
//     of .goreleaser.yaml: only linked modules count, not test-only ones.
//  3. Every target of .goreleaser.yaml is a pair of `go tool dist list`.
//     The tests build the release binary, with its env, flags and
//     ldflags and never with -race (dropped from GOFLAGS), for the host's
//     target and one cross-compiled target; SIGNALBOX_RELEASE_ALL_TARGETS=1
//     builds every target.
package release
