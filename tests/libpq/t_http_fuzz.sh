#!/usr/bin/env bash
# Replays the committed seeds of the gateway's HTTP/1.1 and WebSocket glue
# (tests/fuzz/corpus/fuzz_http: requests, gRPC-Web bodies, Upgrades followed
# by WebSocket frames, base64 and CORS lists) through the libFuzzer harness build/fuzz/fuzz_http
# (tests/fuzz/fuzz_http.c, AddressSanitizer + LeakSanitizer +
# UndefinedBehaviorSanitizer), then fuzzes from them for a bounded time
# (XIP83_FUZZ_SECONDS, default 20). Fails when the harness is missing, stops
# on an input, or did not run. Run by tests/libpq/run.sh (no database used).
set -uo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
harness=build/fuzz/fuzz_http
[ -x "$harness" ] || harness=$top/build/fuzz/fuzz_http
corpus=$top/tests/fuzz/corpus/fuzz_http
[ -x "$harness" ] || { echo "t_http_fuzz: $harness is missing: build it with clang (make fuzzers)"; exit 1; }
seeds=("$corpus"/*)
[ "${#seeds[@]}" -ge 20 ] || { echo "t_http_fuzz: only ${#seeds[@]} seeds in $corpus"; exit 1; }
work=$(mktemp -d /tmp/xip83_httpfuzzXXXXXX)
# each seed once, as it is
if ! "$harness" -artifact_prefix="$work/" "${seeds[@]}" >"$work/replay.log" 2>&1; then
	grep -E "ERROR|runtime error|SUMMARY|Running:" "$work/replay.log" | tail -5
	echo "t_http_fuzz: a seed stops the harness; log in $work"
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
	echo "t_http_fuzz: the harness found a crash, leak or undefined behaviour, or ran ${runs:-no} inputs (exit $rc); inputs in $work"
	exit 1
fi
echo "fuzz_http: ${#seeds[@]} seeds replayed, then $runs runs"
rm -rf "$work"
