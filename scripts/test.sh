#!/usr/bin/env bash
# Runs every test suite: Swift (swift test), C (programs built against
# include/amber.h and linked to the shared library), the check that the
# release library exports exactly the functions the header declares, and
# Python (pytest) once bindings/python has tests. Installs what it needs.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

step "System packages"
bash scripts/install-deps.sh

step "Swift build and tests"
swift build
swift test 2>&1 | tee .build/swift-test.log
swift_passed=$(sed -nE 's/.*Test run with ([0-9]+) tests? in .* passed.*/\1/p' .build/swift-test.log | tail -1)
[ -n "$swift_passed" ] || { echo "swift test did not report a passing run"; exit 1; }

step "C API tests"
bin=$(swift build --show-bin-path)
lib=AmberC
c_passed=0
for test in Tests/CAPITests/*.c; do
    name=$(basename "$test" .c)
    cc -std=c11 -Wall -Wextra -Werror -pedantic -Iinclude "$test" -o "$bin/$name" \
        -L"$bin" -l"$lib" -Wl,-rpath,"$bin"
    echo "-- $name"
    "$bin/$name" | tee "$bin/$name.log"
    c_passed=$((c_passed + $(sed -nE 's/^([0-9]+) passed, 0 failed$/\1/p' "$bin/$name.log")))
done

step "Exported symbols match include/amber.h"
bash scripts/check-exports.sh

if [ -d bindings/python/tests ]; then
    step "Python tests"
    python3 -m pip install --quiet cffi pytest
    AMBER_LIBRARY="$bin/lib$lib.so" python3 -m pytest -q bindings/python/tests
fi

step "All test suites passed"
echo "Swift: $swift_passed tests; C: $c_passed checks"
echo "$((swift_passed + c_passed)) passed, 0 failed"
