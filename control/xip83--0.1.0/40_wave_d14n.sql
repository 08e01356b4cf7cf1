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
AS 'MODULE_PATHNAME', 'originator_ceilings' LANGUAGE C STABLE ROWS 8;
