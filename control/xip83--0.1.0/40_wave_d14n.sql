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
-- either change would stop the inlining.
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
