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

go vet ./...
unformatted=$(gofmt -l .)
if [ -n "$unformatted" ]; then
	echo "test.sh: not gofmt-clean:" >&2
	echo "$unformatted" >&2
	exit 1
fi

# -p 2: two cores; the Kafka and PostgreSQL suites each start real servers.
go test -race -count=1 -p 2 -timeout 15m ./... "$@"
# Allocation counts are meaningless under the race detector: run those
# tests once more without it.
go test -count=1 -run 'Allocs' ./timers/... "$@"
