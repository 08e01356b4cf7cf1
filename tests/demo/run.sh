#!/usr/bin/env bash
# The main job on the demo cluster (tests/driver.sh demo sets PG* variables):
# load a sample, then show what a node would see and send.
set -euo pipefail
bindir=$1
cd "$(dirname "$0")"
psql() { "$bindir/psql" -X -q "$@"; }

echo "== server: $(psql -At -c "SELECT version()")"
echo "== preloaded: $(psql -At -c "SHOW shared_preload_libraries")"
echo "== extension: $(psql -At -c "SELECT extname || ' ' || extversion FROM pg_extension WHERE extname = 'xip83'")"
echo "== loading the sample"
psql -f sample.sql
echo "== what is stored"
psql -f show.sql
echo "== a v3 wave: ceiling, keyset pages, a stream"
psql -f wave_v3.sql
echo "== a d14n wave: ceilings, keyset pages, a stream"
psql -f wave_d14n.sql
echo "== the live feed: xip83-tail follows inserts, a late committer included"
bash live.sh "$bindir"
