#!/usr/bin/env bash
# The functions include/amber.h declares must be exactly the amber_ functions
# a release libAmberC.so exports: none missing (declared, never implemented)
# and none extra (exported by accident). The compiler cannot see the first
# kind; a release build hides a non-public @c function, so check release.
set -euo pipefail
cd "$(dirname "$0")/.."
# The installed library (SONAME build, shared with scripts/install.sh) is the one checked.
export AMBER_SONAME=1
swift build -c release --product AmberC --scratch-path .build-install >/dev/null
lib="$(swift build -c release --scratch-path .build-install --show-bin-path)/libAmberC.so"
declared=$(grep -oE '\bamber_[a-z0-9_]+[[:space:]]*\(' include/amber.h | tr -d '( \t' | sort -u)
exported=$(nm -D --defined-only "$lib" | awk '$2 == "T" && $3 ~ /^amber_/ { print $3 }' | sort -u)
if [ "$declared" != "$exported" ]; then
    echo "declared in include/amber.h but not exported:"; comm -23 <(echo "$declared") <(echo "$exported") | sed 's/^/  /'
    echo "exported but not declared:"; comm -13 <(echo "$declared") <(echo "$exported") | sed 's/^/  /'
    exit 1
fi
# Nothing else of C linkage may leak out (Swift symbols start with $s).
others=$(nm -D --defined-only "$lib" | awk '{ print $3 }' | grep -vE '^(\$s|amber_|__bss_start$|_edata$|_end$|_init$|_fini$)' || true)
if [ -n "$others" ]; then
    echo "exported symbols that are neither amber_ functions nor Swift API:"; echo "$others" | sed 's/^/  /'
    exit 1
fi
echo "$(echo "$declared" | wc -l) functions declared and exported, nothing else of C linkage"
