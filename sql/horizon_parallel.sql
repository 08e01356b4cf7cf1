-- Horizons, ceilings and live fetch must read a horizon and then take a new
-- snapshot, which no parallel query may do: they are PARALLEL UNSAFE, so a
-- statement that calls them never runs in parallel (even when parallelism is
-- forced), and a caller that hides them in a function falsely marked
-- PARALLEL SAFE gets an error instead of a result that could miss rows.
-- Starts from empty tables and fresh ids, whatever ran before in this database.
TRUNCATE xip83.group_messages, xip83.welcome_messages, xip83.envelopes RESTART IDENTITY;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
CREATE TABLE parallel_probe AS SELECT g FROM generate_series(1, 100000) g;
ANALYZE parallel_probe;
EXPLAIN (COSTS OFF) SELECT xip83.group_ceiling(), count(*) FROM parallel_probe;
EXPLAIN (COSTS OFF) SELECT count(*) FROM parallel_probe p,
    LATERAL xip83.live_group_messages(p.g, 10, 0) l WHERE p.g < 3;
SELECT xip83.group_ceiling() >= 0 AS ceiling_read, count(*) FROM parallel_probe;
SELECT xip83.group_horizon() >= 0 AS horizon_read, count(*) FROM parallel_probe;
SELECT count(*) AS originators_read FROM xip83.originator_ceilings(), parallel_probe WHERE g = 1;
SELECT proname, proparallel FROM pg_proc
 WHERE pronamespace = 'xip83'::regnamespace
   AND proname IN ('group_ceiling', 'welcome_ceiling', 'originator_ceilings', 'group_horizon',
                   'welcome_horizon', 'envelope_horizons', 'late_cursor', 'live_group_messages',
                   'live_welcome_messages', 'live_envelopes', 'feed_status')
 ORDER BY 1;
-- A wrapper that lies about its parallel safety, run in a worker: refused.
CREATE FUNCTION lying_horizon() RETURNS bigint LANGUAGE sql PARALLEL SAFE
    AS 'SELECT xip83.group_horizon()';
-- (force_parallel_mode is called debug_parallel_query since 16)
SELECT set_config(CASE WHEN current_setting('server_version_num')::int >= 160000
                       THEN 'debug_parallel_query' ELSE 'force_parallel_mode' END, 'on', false)
       AS forced;
SELECT lying_horizon() >= 0 AS read_in_worker;
SELECT set_config(CASE WHEN current_setting('server_version_num')::int >= 160000
                       THEN 'debug_parallel_query' ELSE 'force_parallel_mode' END, 'off', false)
       AS unforced;
DROP FUNCTION lying_horizon();
DROP TABLE parallel_probe;
