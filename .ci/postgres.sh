#!/usr/bin/env bash
# .ci/postgres.sh — install, start and prepare a local PostgreSQL server for
# the sinks/postgres tests. Idempotent; run as root. The last line of stdout
# is an export line for SIGNALBOX_PG_DSN:
#
#   eval "$(.ci/postgres.sh | tail -n 1)"
#
# Everything else goes to stderr.
set -euo pipefail

PGUSER_NAME=${SIGNALBOX_PG_USER:-signalbox}
PGPASS=${SIGNALBOX_PG_PASSWORD:-signalbox}
PGDB=${SIGNALBOX_PG_DB:-signalbox}
PGPORT=${SIGNALBOX_PG_PORT:-5432}

log() { echo "postgres.sh: $*" >&2; }

if ! ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1; then
	log "installing postgresql"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update >&2
	apt-get install -y postgresql >&2
fi

ver=$(ls /usr/lib/postgresql | sort -V | tail -n 1)
if ! pg_lsclusters -h 2>/dev/null | awk '{print $1" "$2}' | grep -qx "$ver main"; then
	log "creating cluster $ver/main"
	pg_createcluster "$ver" main --port "$PGPORT" >&2
fi

if ! pg_lsclusters -h | awk -v v="$ver" '$1==v && $2=="main" {print $4}' | grep -q online; then
	log "starting cluster $ver/main"
	pg_ctlcluster "$ver" main start >&2
fi

# Wait until it accepts connections (no fixed sleep: poll).
for _ in $(seq 1 100); do
	if su postgres -c "psql -p $PGPORT -qtAc 'select 1'" >/dev/null 2>&1; then break; fi
	sleep 0.2
done

psqlc() { su postgres -c "psql -p $PGPORT -v ON_ERROR_STOP=1 -qtAc \"$1\""; }

if [ "$(psqlc "select 1 from pg_roles where rolname='$PGUSER_NAME'")" != "1" ]; then
	log "creating role $PGUSER_NAME"
	psqlc "create role $PGUSER_NAME login password '$PGPASS'" >&2
fi
if [ "$(psqlc "select 1 from pg_database where datname='$PGDB'")" != "1" ]; then
	log "creating database $PGDB"
	psqlc "create database $PGDB owner $PGUSER_NAME" >&2
fi

echo "export SIGNALBOX_PG_DSN='postgres://$PGUSER_NAME:$PGPASS@127.0.0.1:$PGPORT/$PGDB?sslmode=disable'"
