#!/usr/bin/env bash
# fuzz_replay.sh NAME: replays the committed seeds tests/fuzz/corpus/NAME
# through the libFuzzer harness build/fuzz/NAME (AddressSanitizer +
# LeakSanitizer + UndefinedBehaviorSanitizer), then fuzzes from a copy of them
# for a bounded time (XIP83_FUZZ_SECONDS, default 20). Fails when the harness
# is missing, stops on an input, or ran too few inputs. No database is used.
set -uo pipefail
name=$1
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
harness=build/fuzz/$name
[ -x "$harness" ] || harness=$top/build/fuzz/$name
corpus=$top/tests/fuzz/corpus/$name
[ -x "$harness" ] || { echo "$name: $harness is missing: build it with clang (make fuzzers)"; exit 1; }
seeds=("$corpus"/*)
[ "${#seeds[@]}" -ge 20 ] || { echo "$name: only ${#seeds[@]} seeds in $corpus"; exit 1; }
work=$(mktemp -d "/tmp/xip83_${name}XXXXXX")
# each seed once, as it is
if ! "$harness" -artifact_prefix="$work/" "${seeds[@]}" >"$work/replay.log" 2>&1; then
	grep -E "ERROR|runtime error|SUMMARY|Running:" "$work/replay.log" | tail -5
	echo "$name: a seed stops the harness; log in $work"
	exit 1
fi
# then new inputs from them (written to a copy, never to the checkout)
mkdir "$work/corpus" && cp "${seeds[@]}" "$work/corpus/"
"$harness" -max_total_time="${XIP83_FUZZ_SECONDS:-20}" -rss_limit_mb=2048 -artifact_prefix="$work/" \
	-print_final_stats=1 "$work/corpus" >"$work/fuzz.log" 2>&1
rc=$?
runs=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$work/fuzz.log")
if [ "$rc" != 0 ] || [ -z "$runs" ] || [ "$runs" -le 10000 ]; then
	grep -E "ERROR|runtime error|SUMMARY" "$work/fuzz.log" | tail -5
	echo "$name: the harness found a crash, leak or undefined behaviour, or ran ${runs:-no} inputs (exit $rc); inputs in $work"
	exit 1
fi
echo "$name: ${#seeds[@]} seeds replayed, then $runs runs"
rm -rf "$work"
