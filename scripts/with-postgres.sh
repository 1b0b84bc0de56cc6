#!/usr/bin/env bash
# Run one command beside a throwaway PostgreSQL server:
#
#     scripts/with-postgres.sh pytest -m postgres
#
# Starts a server on 127.0.0.1 (a free port) in a temporary data directory, exports
# BFMEM_TEST_POSTGRES_URL for the command, and stops the server and removes the directory
# when the command ends, also when it fails or is interrupted. Exits with the command's
# status. PostgreSQL is installed from Debian's packages when it is missing (root only);
# if BFMEM_TEST_POSTGRES_URL is already set, the command runs against that server instead.
set -euo pipefail

if [ "$#" -eq 0 ]; then
  echo "usage: $0 <command> [args...]   (e.g. $0 pytest -m postgres)" >&2
  exit 2
fi
if [ -n "${BFMEM_TEST_POSTGRES_URL:-}" ]; then
  exec "$@"
fi

# The newest installed server's programs (Debian keeps them off PATH).
pg_bindir() {
  local dir
  dir="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)"
  if [ -n "$dir" ] && [ -x "$dir/initdb" ]; then
    echo "$dir"
  elif command -v initdb >/dev/null 2>&1; then
    dirname "$(command -v initdb)"
  fi
}

BIN="$(pg_bindir)"
if [ -z "$BIN" ]; then
  if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "PostgreSQL is not installed: install it (e.g. 'sudo apt-get install -y postgresql')" \
      "or set BFMEM_TEST_POSTGRES_URL to a server you run." >&2
    exit 1
  fi
  echo "== installing PostgreSQL from the distribution's packages" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq postgresql >&2
  BIN="$(pg_bindir)"
  if [ -z "$BIN" ]; then
    echo "apt-get installed postgresql, but no initdb was found under /usr/lib/postgresql" >&2
    exit 1
  fi
fi

# initdb refuses to run as root: as root the server runs as the unprivileged 'postgres'
# user (created by Debian's package), otherwise as the caller.
AS=()
if [ "$(id -u)" -eq 0 ]; then
  if ! id postgres >/dev/null 2>&1; then
    useradd --system --home-dir /nonexistent --shell /usr/sbin/nologin postgres
  fi
  AS=(runuser -u postgres --)
fi

PGTMP="$(mktemp -d "${TMPDIR:-/tmp}/bfmem-pg.XXXXXX")"
chmod 755 "$PGTMP"
[ "${#AS[@]}" -gt 0 ] && chown postgres "$PGTMP"
cleanup() {
  "${AS[@]}" "$BIN/pg_ctl" -D "$PGTMP/data" -m immediate -w stop >/dev/null 2>&1 || true
  rm -rf "$PGTMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

PORT="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
"${AS[@]}" "$BIN/initdb" -D "$PGTMP/data" -U postgres -A trust -E UTF8 --locale=C --no-sync \
  >"$PGTMP/initdb.log" 2>&1 || { cat "$PGTMP/initdb.log" >&2; exit 1; }
# A test server: loopback only, its socket in the temporary directory, no fsync (the data
# is thrown away), enough connections for the concurrency tests.
OPTS="-c listen_addresses=127.0.0.1 -p $PORT -k $PGTMP -c fsync=off -c synchronous_commit=off"
OPTS="$OPTS -c full_page_writes=off -c max_connections=200"
"${AS[@]}" "$BIN/pg_ctl" -D "$PGTMP/data" -o "$OPTS" -l "$PGTMP/server.log" -w -t 60 start \
  >/dev/null || { cat "$PGTMP/server.log" >&2; exit 1; }

export BFMEM_TEST_POSTGRES_URL="postgresql://postgres@127.0.0.1:$PORT/postgres"
echo "== PostgreSQL $("$BIN/postgres" --version | awk '{print $3}') on 127.0.0.1:$PORT" >&2
set +e
"$@"
status=$?
set -e
exit "$status"
