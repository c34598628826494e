#!/usr/bin/env bash
# Runs .ci/run (and so `make test`) N times in a row, each time on a fresh clone of this
# repository's HEAD, as CI would; with --load it also keeps one core busy with a CPU hog of
# its own (a shell busy loop pinned to the last core) for the whole run. Stops at the first
# failure and prints where each run's log is.
#
#   hack/test-repeat.sh 5            # five runs in a row
#   hack/test-repeat.sh --load 1     # one run with one core taken by the hog
set -euo pipefail
load=false
if [ "${1:-}" = "--load" ]; then
	load=true
	shift
fi
runs=${1:-5}
repo=$(cd "$(dirname "$0")/.." && pwd)
shared=$(cd "$repo/../shared" 2>/dev/null && pwd || true)
work=$(mktemp -d /tmp/lookout-repeat-XXXXXX)
hog=
cleanup() {
	if [ -n "$hog" ]; then kill "$hog" 2>/dev/null || true; wait "$hog" 2>/dev/null || true; fi
}
trap cleanup EXIT
if $load; then
	last=$(( $(nproc) - 1 ))
	taskset -c "$last" bash -c 'while :; do :; done' &
	hog=$!
	echo "CPU hog $hog busy on core $last"
fi
for i in $(seq 1 "$runs"); do
	dir="$work/run-$i"
	mkdir -p "$dir"
	git clone -q "$repo" "$dir/main"
	[ -n "$shared" ] && ln -s "$shared" "$dir/shared"
	log="$dir/ci.log"
	start=$(date +%s)
	if (cd "$dir/main" && .ci/run) >"$log" 2>&1; then
		echo "run $i/$runs: passed in $(( $(date +%s) - start ))s: $(grep -E '^[0-9,]+ passed' "$log" | tail -1) (log $log)"
		rm -rf "$dir/main/_output"
	else
		echo "run $i/$runs: FAILED after $(( $(date +%s) - start ))s (log $log)"
		grep -E '^(FAIL|--- FAIL|    FAIL)' "$log" | head -20 || true
		exit 1
	fi
done
echo "$runs of $runs runs passed"
