#!/usr/bin/env bash
# Installs the system packages Amber builds against, if they are missing:
# SQLite (the store), libpq (the PostgreSQL store), libffi (struct layouts),
# zlib and OpenSSL (the deflate and aesgcm sample plugins), headers and
# libraries; pkg-config and valgrind for the C API tests; the PostgreSQL
# server the tests start a throwaway cluster of (scripts/postgres.sh).
# Uses sudo when not root.
set -euo pipefail
missing=()
[ -f /usr/include/sqlite3.h ] || missing+=(libsqlite3-dev)
{ [ -f /usr/include/ffi.h ] || compgen -G "/usr/include/*/ffi.h" >/dev/null; } || missing+=(libffi-dev)
[ -f /usr/include/zlib.h ] || missing+=(zlib1g-dev)
[ -f /usr/include/openssl/evp.h ] || missing+=(libssl-dev)
command -v cc >/dev/null || missing+=(gcc)
command -v nm >/dev/null || missing+=(binutils)
command -v pkg-config >/dev/null || missing+=(pkg-config)
command -v valgrind >/dev/null || missing+=(valgrind)
[ -f /usr/include/postgresql/libpq-fe.h ] || missing+=(libpq-dev)
compgen -G "/usr/lib/postgresql/*/bin/pg_ctl" >/dev/null || missing+=(postgresql)
if [ ${#missing[@]} -gt 0 ]; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo=sudo
    echo "installing: ${missing[*]}"
    $sudo apt-get update -q
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q "${missing[@]}"
else
    echo "all present"
fi
