#!/usr/bin/env bash
# The installed libamber.so.0 must export exactly the functions
# include/amber.h declares: none missing (declared, never implemented: the
# compiler cannot see that) and nothing else (no Swift symbol, no accidental C
# function; the install build's version script hides them). Checks the file
# scripts/install.sh installs, in a temporary prefix.
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
bash scripts/install.sh "$prefix" 2>/dev/null >/dev/null
lib="$prefix/lib/libamber.so.0"
declared=$(grep -oE '\bamber_[a-z0-9_]+[[:space:]]*\(' include/amber.h | tr -d '( \t' | sort -u)
exported=$(nm -D --defined-only --extern-only "$lib" | awk '$2 == "T" && $3 ~ /^amber_/ { print $3 }' | sort -u)
if [ "$declared" != "$exported" ]; then
    echo "declared in include/amber.h but not exported:"; comm -23 <(echo "$declared") <(echo "$exported") | sed 's/^/  /'
    echo "exported but not declared:"; comm -13 <(echo "$declared") <(echo "$exported") | sed 's/^/  /'
    exit 1
fi
others=$(nm -D --defined-only --extern-only "$lib" | awk '$3 !~ /^amber_/ { print $3 }')
if [ -n "$others" ]; then
    echo "the installed library exports $(echo "$others" | wc -l) symbols besides the amber_ functions, e.g.:"
    echo "$others" | head -10 | sed 's/^/  /'
    exit 1
fi
echo "$(echo "$declared" | wc -l) functions declared and exported by the installed libamber.so.0, nothing else"
