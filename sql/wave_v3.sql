-- v3 wave scans: pages, streams and ceilings on a small fixed data set,
-- every argument error with its SQLSTATE, and source relations of other layouts.
SET client_min_messages = warning;
-- Starts from empty tables and fresh ids, whatever ran before in this database.
TRUNCATE xip83.group_messages, xip83.welcome_messages, xip83.envelopes RESTART IDENTITY;

-- ids 1..30 over three groups: g1 every id, g2 every even id, g3 ids 1..3
SELECT count(*) FROM xip83.insert_group_messages(
    ARRAY(SELECT CASE WHEN i <= 3 THEN '\x03'::bytea WHEN i % 2 = 0 THEN '\x02' ELSE '\x01' END
            FROM generate_series(1, 30) i),
    ARRAY(SELECT int4send(i) FROM generate_series(1, 30) i));
SELECT xip83.group_ceiling(), xip83.welcome_ceiling();

-- one page; a topic listed twice counts once with its lowest floor
SELECT id, group_id FROM xip83.group_wave_scan(
    '{"\\x01","\\x02","\\x01"}', '{20,10,5}', 0, 30, 10);
-- the next page from the last id; the ceiling stops the wave
SELECT id, group_id FROM xip83.group_wave_scan(
    '{"\\x01","\\x02","\\x01"}', '{20,10,5}', 14, 18, 10);
-- floors above the ceiling, a ceiling below every floor, unknown and no topics
SELECT count(*) FROM xip83.group_wave_scan('{"\\x01","\\x03"}', '{30,40}', 0, 30, 10);
SELECT count(*) FROM xip83.group_wave_scan('{"\\x01"}', '{5}', 0, 4, 10);
SELECT count(*) FROM xip83.group_wave_scan('{"\\x09"}', '{0}', 0, 30, 10);
SELECT count(*) FROM xip83.group_wave_scan('{}', '{}', 0, 30, 10);
-- both ways of reading give the same rows
SET xip83.wave_strategy = heap;
SELECT string_agg(id::text, ',') FROM xip83.group_wave_scan('{"\\x02","\\x03"}', '{0,0}', 0, 30, 100);
SET xip83.wave_strategy = walk;
SELECT string_agg(id::text, ',') FROM xip83.group_wave_scan('{"\\x02","\\x03"}', '{0,0}', 0, 30, 100);
RESET xip83.wave_strategy;

-- a caught-up reconnect reads no index at all (counters of this transaction)
BEGIN;
SELECT sum(pg_stat_get_xact_numscans(indexrelid)) AS before
  FROM pg_index WHERE indrelid = 'xip83.group_messages'::regclass \gset
SELECT count(*) FROM xip83.group_wave_scan('{"\\x01","\\x02","\\x03"}', '{30,30,30}', 0, 30, 500);
SELECT sum(pg_stat_get_xact_numscans(indexrelid)) - :before AS index_scans
  FROM pg_index WHERE indrelid = 'xip83.group_messages'::regclass;
SELECT count(*) FROM xip83.group_wave_scan('{"\\x01","\\x02","\\x03"}', '{27,30,30}', 0, 30, 500);
SELECT sum(pg_stat_get_xact_numscans(indexrelid)) - :before AS index_scans
  FROM pg_index WHERE indrelid = 'xip83.group_messages'::regclass;
COMMIT;

-- the stream: a cursor reads it page by page; the planner inlines the
-- wrapper so the C function runs one row per call, never materialized
EXPLAIN (COSTS OFF) SELECT * FROM xip83.group_wave_stream('{"\\x01"}', '{0}', 0, 30);
BEGIN;
DECLARE w CURSOR FOR SELECT id, group_id FROM xip83.group_wave_stream('{"\\x01","\\x03"}', '{20,0}', 2, 30);
FETCH 4 FROM w;
FETCH 4 FROM w;
FETCH 4 FROM w;
CLOSE w;
COMMIT;
-- a stream left unread is released with its query
SELECT id FROM xip83.group_wave_stream('{"\\x02"}', '{0}', 0, 30) LIMIT 2;

-- welcomes
SELECT count(*) FROM xip83.insert_welcome_messages(
    ARRAY(SELECT CASE WHEN i % 3 = 0 THEN '\xaa'::bytea ELSE '\xbb' END FROM generate_series(1, 9) i),
    ARRAY(SELECT int4send(i) FROM generate_series(1, 9) i));
SELECT xip83.welcome_ceiling();
SELECT id, installation_key, wrapper_algorithm, message_type
  FROM xip83.welcome_wave_scan('{"\\xaa","\\xbb"}', '{0,5}', 1, 9, 5);
SELECT string_agg(id::text, ',') FROM xip83.welcome_wave_stream('{"\\xaa"}', '{0}', 0, 9);

-- bad arguments
\set VERBOSITY default
SELECT * FROM xip83.group_wave_scan(NULL, '{0}', 0, 30, 10);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM xip83.group_wave_scan('{"\\x01"}', NULL, 0, 30, 10);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM xip83.group_wave_scan('{"\\x01"}', '{0}', NULL, 30, 10);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM xip83.group_wave_scan('{"\\x01"}', '{0}', 0, NULL, 10);
\echo :LAST_ERROR_SQLSTATE
-- (page_limit NULL is no limit: the whole wave, one row per call)
SELECT count(*), min(id), max(id) FROM xip83.group_wave_scan('{"\\x01"}', '{0}', 0, 30, NULL);
SELECT * FROM xip83.group_wave_scan('{"\\x01"}', '{0}', 0, 30, 10, NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM xip83.group_wave_scan('{"\\x01","\\x02"}', '{0}', 0, 30, 10);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM xip83.group_wave_scan('{"\\x01",NULL}', '{0,0}', 0, 30, 10);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM xip83.group_wave_scan('{"\\x01"}', '{NULL}', 0, 30, 10);
\echo :LAST_ERROR_SQLSTATE
-- refused as well when every floor is at the ceiling and no topic is read
SELECT * FROM xip83.group_wave_scan('{"\\x01",NULL}', '{30,30}', 0, 30, 10);
\echo :LAST_ERROR_SQLSTATE
-- slices of arrays with NULLs (a null bitmap, no NULL left) read like any array
SELECT string_agg(id::text, ',') FROM xip83.group_wave_scan(
    ('{NULL,"\\x02","\\x03"}'::bytea[])[2:3], ('{NULL,20,0}'::bigint[])[2:3], 0, 30, 100);
-- topics of mixed sizes, read in place
SELECT string_agg(id::text, ',') FROM xip83.group_wave_scan(
    '{"\\x02","\\x0303","\\x03","","\\x01","\\x0102030405"}', '{25,0,0,0,28,0}', 0, 30, 100);
-- an empty topic is a topic like any other (the nodes store such rows)
SELECT count(*) FROM xip83.group_wave_scan('{"\\x01",""}', '{0,0}', 0, 30, 10);
SELECT * FROM xip83.group_wave_scan('{{"\\x01"}}', '{{0}}', 0, 30, 10);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM xip83.group_wave_scan('{"\\x01"}', '{0}', 0, 30, 0);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM xip83.group_wave_scan('{"\\x01"}', '{0}', 0, 30, 10001);
\echo :LAST_ERROR_SQLSTATE
SET xip83.max_page_limit = 20000;
SELECT count(*) FROM xip83.group_wave_scan('{"\\x01"}', '{0}', 0, 30, 10001);
RESET xip83.max_page_limit;
SELECT * FROM xip83.welcome_wave_scan('{"\\xaa"}', '{0}', 0, 9, -1);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM xip83.group_wave_stream('{"\\x01"}', '{0,1}', 0, 30);
\echo :LAST_ERROR_SQLSTATE
SELECT xip83.group_ceiling(NULL);
\echo :LAST_ERROR_SQLSTATE

-- a node's own table as source: other column order, extra columns
CREATE TABLE public.group_messages (
    extra text DEFAULT 'x',
    group_id bytea NOT NULL, id bigint PRIMARY KEY, data bytea NOT NULL,
    created_at timestamp NOT NULL DEFAULT now(), group_id_data_hash bytea,
    is_commit boolean DEFAULT NULL, sender_hmac bytea, should_push boolean);
INSERT INTO public.group_messages (group_id, id, data, created_at, is_commit)
SELECT group_id, id, data, created_at, is_commit FROM xip83.group_messages;
SELECT * FROM xip83.group_wave_scan('{"\\x01"}', '{0}', 0, 30, 10, 'public.group_messages');
\echo :LAST_ERROR_SQLSTATE
CREATE INDEX ON public.group_messages (group_id, id);
SELECT string_agg(id::text, ',') FROM xip83.group_wave_scan(
    '{"\\x01","\\x03"}', '{20,0}', 0, 30, 100, 'public.group_messages');
SELECT xip83.group_ceiling('public.group_messages');
-- an index that does not lead with (group_id, id) does not count
CREATE TABLE public.wrong_index (LIKE public.group_messages);
CREATE INDEX ON public.wrong_index (id, group_id);
CREATE INDEX ON public.wrong_index (group_id DESC, id);
SELECT * FROM xip83.group_wave_scan('{"\\x01"}', '{0}', 0, 30, 10, 'public.wrong_index');
\echo :LAST_ERROR_SQLSTATE
-- layouts that cannot be scanned
CREATE TABLE public.no_data (id bigint, created_at timestamp, group_id bytea);
SELECT * FROM xip83.group_wave_scan('{"\\x01"}', '{0}', 0, 30, 10, 'public.no_data');
\echo :LAST_ERROR_SQLSTATE
CREATE TABLE public.int_ids (id int, created_at timestamp, group_id bytea, data bytea,
    is_commit boolean, sender_hmac bytea, should_push boolean);
SELECT * FROM xip83.group_wave_scan('{"\\x01"}', '{0}', 0, 30, 10, 'public.int_ids');
\echo :LAST_ERROR_SQLSTATE
CREATE VIEW public.messages_view AS SELECT * FROM xip83.group_messages;
SELECT * FROM xip83.group_wave_scan('{"\\x01"}', '{0}', 0, 30, 10, 'public.messages_view');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM xip83.welcome_wave_scan('{"\\x01"}', '{0}', 0, 30, 10, 'xip83.group_messages');
\echo :LAST_ERROR_SQLSTATE
-- ceilings need a unique index on id
CREATE TABLE public.no_pk (LIKE public.group_messages);
CREATE INDEX ON public.no_pk (group_id, id);
SELECT count(*) FROM xip83.group_wave_scan('{"\\x01"}', '{0}', 0, 30, 10, 'public.no_pk');
SELECT xip83.group_ceiling('public.no_pk');
\echo :LAST_ERROR_SQLSTATE

-- privileges: SELECT is needed, row-level security is refused unless bypassed
CREATE ROLE regress_wave_reader;
GRANT USAGE ON SCHEMA xip83 TO regress_wave_reader;
SET ROLE regress_wave_reader;
SELECT * FROM xip83.group_wave_scan('{"\\x01"}', '{0}', 0, 30, 10);
\echo :LAST_ERROR_SQLSTATE
SELECT xip83.group_ceiling();
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
GRANT SELECT ON xip83.group_messages TO regress_wave_reader;
SET ROLE regress_wave_reader;
SELECT count(*) FROM xip83.group_wave_scan('{"\\x01"}', '{0}', 0, 30, 10);
RESET ROLE;
ALTER TABLE public.group_messages ENABLE ROW LEVEL SECURITY;
GRANT SELECT ON public.group_messages TO regress_wave_reader;
SET ROLE regress_wave_reader;
SELECT * FROM xip83.group_wave_scan('{"\\x01"}', '{0}', 0, 30, 10, 'public.group_messages');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
-- the owner bypasses its own table's policies
SELECT count(*) FROM xip83.group_wave_scan('{"\\x01"}', '{0}', 0, 30, 10, 'public.group_messages');
RESET ROLE;
DROP TABLE public.group_messages, public.wrong_index, public.no_data, public.int_ids,
    public.no_pk CASCADE;
REVOKE ALL ON xip83.group_messages FROM regress_wave_reader;
REVOKE ALL ON SCHEMA xip83 FROM regress_wave_reader;
DROP ROLE regress_wave_reader;
