#!/usr/bin/env bash
# docs/performance.md is written by the bench run (tests/bench/report.py):
# fails, printing the diff, when the committed page is not exactly what the
# renderer makes of the committed docs/perf/results.tsv, so that the page can
# only change with the figures it shows. Run by tests/libpq/run.sh.
set -uo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
exec /usr/bin/python3 "$top/tests/bench/report.py" check
