-- d14n waves: one page of a wave over envelopes, in (originator, sequence)
-- order, and the per-originator ceilings a wave pins when it starts. Both read
-- the btree indexes directly; `source` (and `blob_source`) may be a node's own
-- tables of the same layout, plain or partitioned, and the caller needs SELECT
-- on them.

CREATE FUNCTION xip83.envelope_wave_scan(
    cursor_topics        bytea[],
    cursor_node_ids      int[],
    cursor_sequence_ids  bigint[],
    ceiling_node_ids     int[],
    ceiling_sequence_ids bigint[],
    scan_node_id         int,
    scan_sequence_id     bigint,
    row_limit            int,
    source               regclass DEFAULT 'xip83.envelopes',
    blob_source          regclass DEFAULT NULL)
RETURNS TABLE (originator_node_id int, originator_sequence_id bigint,
               gateway_time timestamp, topic bytea, originator_envelope bytea)
AS 'MODULE_PATHNAME', 'envelope_wave_scan' LANGUAGE C STABLE ROWS 500;

CREATE FUNCTION xip83.originator_ceilings(
    node_ids int[]   DEFAULT NULL,
    source   regclass DEFAULT 'xip83.envelopes')
RETURNS TABLE (originator_node_id int, max_sequence_id bigint)
AS 'MODULE_PATHNAME', 'originator_ceilings' LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 8;

-- The whole wave past the scan cursor, one row per call: the same rows as the
-- pages concatenated. Called in a target list it yields rows on demand.
CREATE FUNCTION xip83.envelope_wave_rows(
    cursor_topics        bytea[],
    cursor_node_ids      int[],
    cursor_sequence_ids  bigint[],
    ceiling_node_ids     int[],
    ceiling_sequence_ids bigint[],
    scan_node_id         int,
    scan_sequence_id     bigint,
    source               regclass,
    blob_source          regclass,
    OUT originator_node_id int, OUT originator_sequence_id bigint,
    OUT gateway_time timestamp, OUT topic bytea, OUT originator_envelope bytea)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'envelope_wave_rows' LANGUAGE C STABLE ROWS 100000;

-- A whole wave as a stream for a cursor:
--   DECLARE w CURSOR FOR SELECT * FROM xip83.envelope_wave_stream(...);
--   FETCH 500 FROM w;  -- until it returns fewer than 500 rows
-- A set-returning function in FROM is materialized whole before its first
-- row; this SQL function is inlined by the planner, which puts the C function
-- in a target list where it runs one row per call, so memory stays bounded and
-- each FETCH costs only the rows it returns. Keep it STABLE and not STRICT:
-- either change would stop the inlining, and so would a SET clause: the body
-- names every function by schema and uses no operator, since it is parsed
-- under the caller's search_path. envelope_wave_rows stays executable by
-- PUBLIC because the inlined stream runs it as the caller.
CREATE FUNCTION xip83.envelope_wave_stream(
    cursor_topics        bytea[],
    cursor_node_ids      int[],
    cursor_sequence_ids  bigint[],
    ceiling_node_ids     int[],
    ceiling_sequence_ids bigint[],
    scan_node_id         int,
    scan_sequence_id     bigint,
    source               regclass DEFAULT 'xip83.envelopes',
    blob_source          regclass DEFAULT NULL)
RETURNS TABLE (originator_node_id int, originator_sequence_id bigint,
               gateway_time timestamp, topic bytea, originator_envelope bytea)
LANGUAGE sql STABLE ROWS 100000 AS $$
    SELECT (w.r).* FROM (SELECT xip83.envelope_wave_rows(
        cursor_topics, cursor_node_ids, cursor_sequence_ids, ceiling_node_ids,
        ceiling_sequence_ids, scan_node_id, scan_sequence_id, source, blob_source) AS r) AS w
$$;

COMMENT ON FUNCTION xip83.envelope_wave_scan(bytea[], int[], bigint[], int[], bigint[], int, bigint, int, regclass, regclass) IS
'One page of a d14n wave in (originator, sequence) order: envelopes of the cursor topics past their per-originator floors, up to the pinned ceilings, past the scan position, at most row_limit rows. Snapshot: the statement''s, or one taken right after the horizon this session last read under it. Executable by PUBLIC; the caller needs USAGE on the schemas of source and blob_source and SELECT on them (42501), and row-level security is refused.';
COMMENT ON FUNCTION xip83.envelope_wave_rows(bytea[], int[], bigint[], int[], bigint[], int, bigint, regclass, regclass) IS
'The whole d14n wave past the scan position, one row per call; the C function behind envelope_wave_stream. Reads every row under the snapshot of its first call. Executable by PUBLIC because the inlined stream runs it as the caller; same checks as envelope_wave_scan.';
COMMENT ON FUNCTION xip83.envelope_wave_stream(bytea[], int[], bigint[], int[], bigint[], int, bigint, regclass, regclass) IS
'A whole d14n wave for a cursor: each FETCH reads only what it returns. Inlined SQL (no SET clause, every name qualified); snapshot and privileges of envelope_wave_rows.';
COMMENT ON FUNCTION xip83.originator_ceilings(int[], regclass) IS
'Per originator (the listed ones, -1 for those without rows, or every one present when node_ids is NULL): the ceiling a d14n wave pins. Over xip83.envelopes the originators'' horizons; else the highest non-NULL sequence id visible to the statement''s snapshot. Executable by PUBLIC; needs USAGE on the source''s schema and SELECT on it.';
