#!/usr/bin/env bash
# scripts/test.sh — the project's one test command (README, .ci/run).
#
# Installs what the tests need and is missing (Debian's kcat, prometheus,
# systemd-analyze and PostgreSQL), starts PostgreSQL, then runs every Go test under the race
# detector.
# Idempotent; needs root (or sudo) only when something must be installed.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

if ! command -v kcat >/dev/null 2>&1; then
	echo "test.sh: installing kcat" >&2
	$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update >&2
	$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y kcat >&2
fi

# Debian's prometheus: promtool checks the rules and /metrics, and the
# admin server test scrapes a job with a real Prometheus server.
if ! command -v promtool >/dev/null 2>&1 || ! command -v prometheus >/dev/null 2>&1; then
	echo "test.sh: installing prometheus" >&2
	$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update >&2
	$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends prometheus >&2
fi

# systemd-analyze verifies the systemd unit in deploy/systemd.
if ! command -v systemd-analyze >/dev/null 2>&1; then
	echo "test.sh: installing systemd (for systemd-analyze)" >&2
	$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update >&2
	$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends systemd >&2
fi

# PostgreSQL: installed and started by .ci/postgres.sh, whose last line
# exports SIGNALBOX_PG_DSN.
eval "$($SUDO bash .ci/postgres.sh | tail -n 1)"
export SIGNALBOX_PG_DSN

unformatted=$(gofmt -l .)
if [ -n "$unformatted" ]; then
	echo "test.sh: not gofmt-clean:" >&2
	echo "$unformatted" >&2
	exit 1
fi

# go vet runs beside the tests, niced: much of the tests' time is spent
# waiting (timeouts, brokers, child processes), and vet's half minute of
# CPU fits in it. Its verdict is reported, and fails the script, once the
# tests end.
vet_out=$(mktemp)
nice -n 10 go vet ./... >"$vet_out" 2>&1 &
vet_pid=$!
trap 'kill "$vet_pid" 2>/dev/null || true; rm -f "$vet_out"' EXIT

# The race detector sleeps 1 s as each race-built process exits
# (atexit_sleep_ms, 1000 by default), to catch the races of goroutines
# still running then: about 75 test binaries, and the race-built children
# some tests run, add over half a minute of sleep. 100 ms still gives such
# goroutines a moment. A GORACE given from outside is kept as it is.
export GORACE="${GORACE:-atexit_sleep_ms=100}"

# -p 2: two cores; the Kafka and PostgreSQL suites each start real servers.
test_status=0
go test -race -count=1 -p 2 -timeout 15m ./... "$@" || test_status=$?
vet_status=0
wait "$vet_pid" || vet_status=$?
cat "$vet_out" >&2
if [ "$vet_status" != 0 ]; then
	echo "test.sh: go vet failed" >&2
	exit 1
fi
if [ "$test_status" != 0 ]; then
	exit "$test_status"
fi
# Allocation counts are meaningless under the race detector: run those
# tests once more without it.
go test -count=1 -run 'Allocs' ./timers/... "$@"
