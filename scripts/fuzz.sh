#!/usr/bin/env bash
# Fuzzes one harness (or all) with libFuzzer: scripts/fuzz.sh TARGET [SECONDS]
# TARGET: predicate, model-json, archive, keyed-archive, plugin-descriptor, xcode, or all
# (each for SECONDS, default 20). Amber's Swift targets are built with
# -sanitize=fuzzer,address into .build-fuzz, so the fuzzer is guided by
# Amber's own branches and memory errors stop it. Inputs start from the
# checked-in corpus Tests/FuzzCorpus/TARGET (read only; new inputs go to a
# scratch folder, kept with AMBER_FUZZ_KEEP=DIR); the xcode harness also
# reads ../shared/models when it exists. A crash, a memory error or leak, a
# broken property or a timeout leaves the input in .build-fuzz/findings/ and
# fails the script.
set -euo pipefail
cd "$(dirname "$0")/.."
target=${1:?usage: scripts/fuzz.sh TARGET [SECONDS]}
seconds=${2:-20}
targets=(predicate model-json archive keyed-archive plugin-descriptor xcode)
if [ "$target" = all ]; then
    for each in "${targets[@]}"; do bash "$0" "$each" "$seconds"; done
    exit 0
fi
[[ " ${targets[*]} " == *" $target "* ]] || { echo "unknown target $target; one of: ${targets[*]} all"; exit 2; }

flags=(--scratch-path .build-fuzz -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library -Xswiftc -DAMBER_FUZZING -Xcc -DAMBER_FUZZING)
mkdir -p .build-fuzz
swift build --product amber-fuzz "${flags[@]}" > .build-fuzz/build.log 2>&1 || {
    grep -Ev 'Cannot export local symbol' .build-fuzz/build.log | tail -40; echo "the fuzzing build failed"; exit 1; }
bin=$(swift build "${flags[@]}" --show-bin-path)

scratch=${AMBER_FUZZ_KEEP:-$(mktemp -d)}
mkdir -p "$scratch" .build-fuzz/findings
corpora=("$scratch" "Tests/FuzzCorpus/$target")
if [ "$target" = xcode ] && [ -d ../shared/models ]; then corpora+=(../shared/models); fi
echo "==> fuzzing $target for $seconds s"
# Swift's backtracer is off: ASan reports a crash itself, and the backtracer can outlive the fuzzer.
# Leaks are findings, except for xcode: Foundation's XML parser keeps memory per input
# (the text of each parse error), so checking for leaks there (after each input, and
# LeakSanitizer's at exit) would slow the fuzzer 20-fold and fail on Foundation's leak.
leaks=1
[ "$target" = xcode ] && leaks=0
status=0
AMBER_FUZZ_TARGET=$target SWIFT_BACKTRACE=enable=no ASAN_OPTIONS=detect_leaks=$leaks \
    "$bin/amber-fuzz" -detect_leaks=$leaks -max_total_time="$seconds" -timeout=10 \
    -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 -artifact_prefix=".build-fuzz/findings/$target-" "${corpora[@]}" \
    > ".build-fuzz/$target.log" 2>&1 || status=$?
grep -E '^(#[0-9]+[[:space:]]+(INITED|DONE)|stat::number_of_executed_units|stat::peak_rss_mb|SUMMARY)' ".build-fuzz/$target.log" || true
if [ "$status" != 0 ]; then
    echo "fuzzing $target failed (status $status): see .build-fuzz/$target.log and .build-fuzz/findings/"
    tail -40 ".build-fuzz/$target.log"
    exit 1
fi
[ -n "${AMBER_FUZZ_KEEP:-}" ] || rm -rf "$scratch"
