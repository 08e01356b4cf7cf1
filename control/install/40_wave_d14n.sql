-- d14n waves: one page of a wave over envelopes, in (originator, sequence)
-- order, and the per-originator ceilings a wave pins when it starts. Both read
-- the btree indexes directly; `source` (and `blob_source`) may be a node's own
-- tables of the same layout, plain or partitioned, and the caller needs SELECT
-- on them. CREATE OR REPLACE: 0.1.0 had them all, and the update from it runs
-- this part as it is. The frame and wave-handle forms are in 60_frames.sql.

-- One page; with row_limit NULL the whole wave one row per call, which
-- streams only in a target list (envelope_wave_stream below puts it there).
CREATE OR REPLACE FUNCTION xip83.envelope_wave_scan(
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

CREATE OR REPLACE FUNCTION xip83.originator_ceilings(
    node_ids int[]   DEFAULT NULL,
    source   regclass DEFAULT 'xip83.envelopes')
RETURNS TABLE (originator_node_id int, max_sequence_id bigint)
AS 'MODULE_PATHNAME', 'originator_ceilings' LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 8;

-- A whole wave as a stream for a cursor:
--   DECLARE w CURSOR FOR SELECT * FROM xip83.envelope_wave_stream(...);
--   FETCH 500 FROM w;  -- until it returns fewer than 500 rows
-- As group_wave_stream (30_wave_v3.sql): inlined, it puts the scan with
-- row_limit NULL in a target list, one row per call; STABLE, not STRICT, no
-- SET clause, every name qualified, or the inlining stops.
CREATE OR REPLACE FUNCTION xip83.envelope_wave_stream(
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
    SELECT (w.r).* FROM (SELECT xip83.envelope_wave_scan(
        cursor_topics, cursor_node_ids, cursor_sequence_ids, ceiling_node_ids,
        ceiling_sequence_ids, scan_node_id, scan_sequence_id, NULL::int, source,
        blob_source) AS r) AS w
$$;

COMMENT ON FUNCTION xip83.envelope_wave_scan(bytea[], int[], bigint[], int[], bigint[], int, bigint, int, regclass, regclass) IS
'One page of a d14n wave in (originator, sequence) order: envelopes of the cursor topics past their per-originator floors, up to the pinned ceilings, past the scan position, at most row_limit rows; row_limit NULL: the whole wave, one row per call (streams in a target list, as envelope_wave_stream puts it). Snapshot: the statement''s, or one taken right after the horizon this session last read under it. Executable by PUBLIC; the caller needs USAGE on the schemas of source and blob_source and SELECT on them (42501), and row-level security is refused.';
COMMENT ON FUNCTION xip83.envelope_wave_stream(bytea[], int[], bigint[], int[], bigint[], int, bigint, regclass, regclass) IS
'A whole d14n wave for a cursor: each FETCH reads only what it returns. Inlined SQL (no SET clause, every name qualified) over envelope_wave_scan with row_limit NULL: one snapshot for the whole wave, privileges of envelope_wave_scan. Arguments holding a volatile function or a sub-select stop the inlining: use xip83.wave_open for those.';
COMMENT ON FUNCTION xip83.originator_ceilings(int[], regclass) IS
'Per originator (the listed ones, -1 for those without rows, or every one present when node_ids is NULL): the ceiling a d14n wave pins. Over xip83.envelopes the originators'' horizons; else the highest non-NULL sequence id visible to the statement''s snapshot. Executable by PUBLIC; needs USAGE on the source''s schema and SELECT on it.';
