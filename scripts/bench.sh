#!/usr/bin/env bash
# Runs Amber's benchmark: the Swift API, the C API and the Python bindings,
# each against raw SQLite (C for the first two, Python's sqlite3 for the
# last) in the same run, and GRDB's records against the same raw SQLite
# (Benchmarks/GRDB). Arguments go to amber-bench (--quick, --n, --repetitions,
# --json FILE, --postgres URL for the PostgreSQL rows against raw libpq on that
# server). Needs a release build; the Python part needs the bindings
# installed (pip install ./bindings/python), and is skipped otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
swift build -c release >&2
bin=$(swift build -c release --show-bin-path)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc -std=c11 -O2 -Iinclude -ISources/AmberBenchRaw/include Benchmarks/capi_bench.c Sources/AmberBenchRaw/raw.c \
    -o "$work/capi_bench" -L"$bin" -lAmberC -lsqlite3 -ldl -Wl,-rpath,"$bin"
python=()
if AMBER_LIBRARY="$bin/libAmberC.so" python3 -c "import amber" 2>/dev/null; then
    python=(--python Benchmarks/python_bench.py)
else
    echo "bench: the Python bindings are not installed; skipping the Python rows" >&2
fi
# GRDB's side (Benchmarks/GRDB, a package of its own so building Amber never
# builds GRDB). Skipped if it cannot be built here, except under CI or with
# AMBER_BENCH_REQUIRE_GRDB=1 (scripts/test.sh sets it).
grdb=()
if swift build -c release --package-path Benchmarks/GRDB >&2; then
    grdb=(--grdb "$(swift build -c release --package-path Benchmarks/GRDB --show-bin-path)/grdb-bench")
elif [ -n "${CI:-}" ] || [ "${AMBER_BENCH_REQUIRE_GRDB:-}" = 1 ]; then
    echo "bench: the GRDB benchmark did not build" >&2
    exit 1
else
    echo "bench: the GRDB benchmark did not build; skipping the GRDB rows" >&2
fi
AMBER_LIBRARY="$bin/libAmberC.so" "$bin/amber-bench" --plugin "$bin/libAmberColorPlugin.so" --capi "$work/capi_bench" "${python[@]}" "${grdb[@]}" "$@"
