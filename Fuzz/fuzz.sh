#!/usr/bin/env bash
# Builds pinproxy's libFuzzer targets (Fuzz/Package.swift) with AddressSanitizer
# and runs each in turn for FUZZ_SECONDS seconds (default 30), one process at a
# time, then prints executions per second and coverage per target.
#
#   Fuzz/fuzz.sh                  every target
#   Fuzz/fuzz.sh rules hostname   only these
#   FUZZ_SECONDS=180 Fuzz/fuzz.sh http1-request
#
# Seeds come from Fuzz/corpus/<target>/ (committed, read only); what the
# fuzzer finds goes to $FUZZ_SCRATCH/corpus/<target>/ and crashes to
# $FUZZ_SCRATCH/artifacts/<target>/ (default .build-fuzz, never committed).
# A crash input, once fixed, belongs in Fuzz/regressions/<target>/, which
# `make test` replays. See docs/fuzzing.md.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${FUZZ_SECONDS:-30}
scratch=${FUZZ_SCRATCH:-.build-fuzz}
if [ $# -gt 0 ]; then targets=("$@"); else
    targets=(http1-request http1-response hostname clienthello policy-json policy-xml policy-plist certificates rules http2-frames http2-responses)
fi

# SwiftPM keeps the main package's source list in this scratch path's build
# plan: a file added to pinproxy since the last fuzz build is left out ("cannot
# find ... in scope") until the plan is made again, which costs seconds.
rm -f "$scratch/release.yaml" "$scratch/build.db"

# --sanitize fuzzer tells SwiftPM to leave `main` to libFuzzer; the Swift
# flag names both sanitizers at once, since of two -sanitize flags the
# compiler keeps only the last. Assertions stay on in this optimised build.
swift build --package-path Fuzz --scratch-path "$scratch" -c release \
    --sanitize fuzzer -Xswiftc -sanitize=fuzzer,address -Xswiftc -assert-config -Xswiftc Debug \
    -Xcc -fsanitize=address

# Private keys and a CA with its key, for the certificate loaders: made
# here, never committed.
python3 Fuzz/make-seeds.py --keys "$scratch/keys"

mkdir -p "$scratch/logs"
summary="$scratch/summary.txt"
printf '%-15s %8s %10s %9s %7s %7s %6s  %s\n' target seconds runs exec/s cov ft corpus result > "$summary"
failed=0
for target in "${targets[@]}"; do
    binary="$scratch/release/fuzz-$target"
    [ -x "$binary" ] || { echo "no fuzz target '$target' (see Fuzz/Package.swift)" >&2; exit 2; }
    mkdir -p "$scratch/corpus/$target" "$scratch/artifacts/$target"
    seeds=("Fuzz/corpus/$target")
    # Inputs that once failed are seeds too; those holding a private key are made into $scratch/keys.
    [ -d "Fuzz/regressions/$target" ] && seeds+=("Fuzz/regressions/$target")
    [ "$target" = certificates ] && seeds+=("$scratch/keys")
    log="$scratch/logs/$target.log"
    echo "== $target: ${seconds}s"
    status=0
    # The Swift runtime's backtracer would symbolicate every crash for
    # minutes; libFuzzer prints its own stack through ASan.
    SWIFT_BACKTRACE=enable=no ASAN_OPTIONS=detect_leaks=0 \
        "$binary" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2048 -max_len=8192 \
        -print_final_stats=1 -artifact_prefix="$scratch/artifacts/$target/" \
        "$scratch/corpus/$target" "${seeds[@]}" < /dev/null 2> "$log" || status=$?
    last=$(grep -E '^#[0-9]+' "$log" | tail -n 1 || true)
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
    cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<< "$last")
    ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<< "$last")
    corpus=$(sed -n 's/.* corp: \([0-9]*\).*/\1/p' <<< "$last")
    result=ok
    if [ "$status" -ne 0 ]; then
        result="FAILED (exit $status): $(ls -t "$scratch/artifacts/$target" | head -n 1)"
        failed=1
        grep -E 'Fatal error|ERROR: (AddressSanitizer|libFuzzer)|SUMMARY' "$log" | head -n 5 >&2 || true
    fi
    printf '%-15s %8s %10s %9s %7s %7s %6s  %s\n' "$target" "$seconds" "${runs:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" "${corpus:-?}" "$result" | tee -a "$summary"
done
echo
cat "$summary"
if [ "$failed" -ne 0 ]; then
    echo "a target failed: its input is in $scratch/artifacts/<target>/, its log in $scratch/logs/" >&2
    exit 1
fi
