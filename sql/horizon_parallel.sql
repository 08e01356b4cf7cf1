-- Horizons and ceilings are PARALLEL RESTRICTED: they may run in the leader
-- of a parallel query, which may not take new snapshots. Reading a horizon
-- there must still work.
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
CREATE TABLE parallel_probe AS SELECT g FROM generate_series(1, 100000) g;
ANALYZE parallel_probe;
EXPLAIN (COSTS OFF) SELECT xip83.group_ceiling(), count(*) FROM parallel_probe;
SELECT xip83.group_ceiling() >= 0 AS ceiling_read, count(*) FROM parallel_probe;
SELECT xip83.group_horizon() >= 0 AS horizon_read, count(*) FROM parallel_probe;
SELECT count(*) AS originators_read FROM xip83.originator_ceilings(), parallel_probe WHERE g = 1;
DROP TABLE parallel_probe;
