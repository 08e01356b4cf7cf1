#!/usr/bin/env bash
# The live feed in the demo: xip83-tail follows the demo database while rows
# are inserted, one of them committing late (a lower id after a higher one),
# and prints each row once, in id order. Called by tests/demo/run.sh with the
# psql bindir as $1; PG* variables point at the demo database.
set -euo pipefail
bindir=$1
here=$(cd "$(dirname "$0")" && pwd)
psql() { "$bindir/psql" -X -q -v ON_ERROR_STOP=1 "$@"; }
tail_bin="$bindir/xip83-tail"
[ -x "$tail_bin" ] || tail_bin="$here/../../build/xip83-tail"

out=$(mktemp)
err=$(mktemp)
trap 'kill "$tail_pid" 2>/dev/null || true; rm -f "$out" "$err"' EXIT

echo "== live feed: horizons before"
psql -c "SELECT group_horizon, welcome_horizon, originator_node_ids, originator_horizons FROM xip83.feed_status"
"$tail_bin" >"$out" 2>"$err" &
tail_pid=$!
sleep 0.5

echo "== a writer takes the next group id and commits late, while three more rows commit"
psql -c "BEGIN" \
     -c "INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash)
         VALUES ('\xd0d0', '\x6c617465', sha256('\xd0d06c617465')) RETURNING id AS late_id" \
     -c "SELECT pg_sleep(1.5)" -c "COMMIT" >/dev/null &
late=$!
sleep 0.3
psql -c "SELECT id, inserted FROM xip83.insert_group_messages(
             ARRAY['\xd1d1', '\xd2d2']::bytea[], ARRAY['\x6f6e65', '\x74776f']::bytea[])"
psql -c "SELECT id, inserted FROM xip83.insert_welcome_messages(ARRAY['\xe1e1']::bytea[], ARRAY['\x7765']::bytea[])"
psql -c "INSERT INTO xip83.envelopes (originator_node_id, originator_sequence_id, topic, originator_envelope)
         SELECT 100, coalesce(max(originator_sequence_id), 0) + 1, '\x03f0f0', '\x656e76'
           FROM xip83.envelopes WHERE originator_node_id = 100"
echo "   (the feed holds the rows above the late id back until it commits)"
wait "$late"
sleep 0.5
kill "$tail_pid"
wait "$tail_pid" 2>/dev/null || true

echo "== xip83-tail printed (kind, topic, position, bytes)"
cat "$out"
echo "== xip83-tail said on stderr"
cat "$err"
echo "== feed status"
psql -c "SELECT state, ticks, group_horizon, welcome_horizon, notification_queue_usage FROM xip83.feed_status"
