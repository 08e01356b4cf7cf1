#!/usr/bin/env bash
# docs/performance.md and the figures block of README.md are written by
# tests/bench/report.py: fails, printing the diff, when either is not exactly
# what the renderer makes of the committed docs/perf/results.tsv, so that no
# figure is copied by hand and each changes only with the figures measured.
# Run by tests/libpq/run.sh.
set -uo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
exec /usr/bin/python3 "$top/tests/bench/report.py" check
