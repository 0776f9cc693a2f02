#!/usr/bin/env bash
# Runs the whole test suite N times while a CPU hog keeps every core busy, and reports every
# failure with its test name. A suite that only passes on a quiet machine fails on CI's loaded
# one sooner or later: this makes "later" happen now.
#
#   Scripts/stress-tests.sh N            # N runs with the hog (the last with doubled workers)
#   Scripts/stress-tests.sh N --no-hog   # N runs on the machine as it is
#
# The suite is built once (`swift build --build-tests`); each run is `swift test --skip-build`,
# the last one with `--parallel --num-workers 2×cores`. Logs go to $STRESS_LOGS (default
# .build/stress-logs). The last line is "N runs, K failures"; the exit status is 0 only for K = 0.
set -uo pipefail
cd "$(dirname "$0")/.."

runs=${1:?usage: Scripts/stress-tests.sh N [--no-hog]}
[[ $runs =~ ^[1-9][0-9]*$ ]] || { echo "N must be a whole number ≥ 1, not '$runs'" >&2; exit 2; }
hog=1
[[ ${2:-} == --no-hog ]] && hog=0
logs=${STRESS_LOGS:-.build/stress-logs}
mkdir -p "$logs"
cores=$(nproc)

swift build --build-tests >"$logs/build.log" 2>&1 || { tail -20 "$logs/build.log"; echo "the build failed" >&2; exit 2; }

hogs=()
stop_hogs() { ((${#hogs[@]})) && kill "${hogs[@]}" 2>/dev/null; wait 2>/dev/null; }
trap stop_hogs EXIT
if ((hog)); then
    # One busy loop per core, at the tests' own priority: the scheduler shares every core.
    for ((i = 0; i < cores; i++)); do
        (while :; do :; done) &
        hogs+=($!)
    done
    echo "hog: $cores busy loops (pids ${hogs[*]})"
fi

failures=0
started=$SECONDS
for ((run = 1; run <= runs; run++)); do
    log="$logs/run-$run.log"
    extra=()
    ((run == runs && runs > 1)) && extra=(--parallel --num-workers $((2 * cores)))
    t0=$SECONDS
    swift test --skip-build "${extra[@]}" >"$log" 2>&1
    status=$?
    # Swift Testing marks a failed test "✘ Test NAME failed" and each issue "recorded an issue";
    # XCTest prints "error: … : NAME : failed".
    failed=$(grep -E '^✘ Test .* (failed|recorded an issue)|: error: .*XCTAssert|error: .* failed \(' "$log" | sort -u)
    count=$(grep -E '^✘ Test .* failed after' "$log" | grep -cv '^✘ Test run with')
    if ((status != 0 && count == 0)); then
        # A crash or a hang ends the run with no per-test verdict: count the run itself.
        count=1
        failed="the run exited with status $status and named no failed test (crash?); see $log"$'\n'"$(tail -5 "$log")"
    fi
    failures=$((failures + count))
    summary=$(grep -E '^(✔|✘) Test run with' "$log" | tail -1)
    echo "run $run/$runs${extra:+ (${extra[*]})}: $((SECONDS - t0)) s, status $status, $count failed — ${summary:-no summary}"
    [[ -n $failed ]] && sed 's/^/    /' <<<"$failed"
done
echo "wall time: $((SECONDS - started)) s; logs in $logs"
echo "$runs runs, $failures failures"
((failures == 0))
