-- A v3 wave as a node replays it: pin the ceiling when the wave starts (the
-- commit-order-safe horizon), page ten groups in one id-ordered pass, then
-- read the same wave as a stream through a cursor.
\set ON_ERROR_STOP on
\pset footer off
SELECT xip83.group_ceiling() AS ceiling \gset
\echo ceiling pinned at :ceiling
CREATE TEMP TABLE demo_v3_wave AS
SELECT ARRAY(SELECT sha256(int4send(g))::bytea FROM generate_series(0, 9) g ORDER BY g) AS topics,
       array_fill(0::bigint, ARRAY[10]) AS floors;

\echo page 1 (5 rows)
SELECT id, left(encode(group_id, 'hex'), 12) AS group_id, convert_from(data, 'UTF8') AS data
  FROM demo_v3_wave, xip83.group_wave_scan(topics, floors, 0, :ceiling, 5);
SELECT max(id) AS scan_cursor
  FROM demo_v3_wave, xip83.group_wave_scan(topics, floors, 0, :ceiling, 5) \gset
\echo page 2, after id :scan_cursor
SELECT id, left(encode(group_id, 'hex'), 12) AS group_id, convert_from(data, 'UTF8') AS data
  FROM demo_v3_wave, xip83.group_wave_scan(topics, floors, :scan_cursor, :ceiling, 5);

\echo the whole wave as a stream: each FETCH reads only what it returns
BEGIN;
DECLARE wave CURSOR FOR
SELECT s.id, left(encode(s.group_id, 'hex'), 12) AS group_id
  FROM demo_v3_wave, xip83.group_wave_stream(topics, floors, 0, :ceiling) AS s;
FETCH 3 FROM wave;
MOVE FORWARD ALL IN wave;
COMMIT;
SELECT count(*) AS wave_rows
  FROM demo_v3_wave, xip83.group_wave_scan(topics, floors, 0, :ceiling, 10000);
\echo a caught-up reconnect: every floor at the ceiling touches no index
SELECT count(*) AS rows
  FROM demo_v3_wave, xip83.group_wave_scan(topics, array_fill(:ceiling::bigint, ARRAY[10]), 0, :ceiling, 500);
