-- Tracking a node's own tables: xip83.track makes every write to a node's
-- table register its position as writes to xip83's tables do, so horizons,
-- ceilings, live fetch and the notifier cover it (docs/adopting.md). What
-- track changes on a table: a v3 table's id default becomes xip83.next_id('<table>') (same sequence); an index <table>_xip83_track
-- of the access method below (inserts) and the triggers xip83_register_position
-- (BEFORE UPDATE) go on the table and on the blob table, xip83_reset_positions
-- (AFTER TRUNCATE) on the table; untrack restores the default and drops them.

-- The tracking index (src/feed/track_am.c): stores nothing, is never scanned; its
-- insert callback registers each new row of a tracked table. Its operator
-- classes have no operators, so no query can use it. The handler is internal.
CREATE FUNCTION xip83.track_am_handler(internal) RETURNS index_am_handler
AS 'MODULE_PATHNAME', 'track_am_handler' LANGUAGE C;
REVOKE EXECUTE ON FUNCTION xip83.track_am_handler(internal) FROM PUBLIC;
CREATE ACCESS METHOD xip83_track TYPE INDEX HANDLER xip83.track_am_handler;
COMMENT ON FUNCTION xip83.track_am_handler(internal) IS
  'Handler of the access method xip83_track (internal; not executable by PUBLIC).';
CREATE OPERATOR CLASS xip83.track_int4_ops DEFAULT FOR TYPE int4 USING xip83_track AS STORAGE int4;
CREATE OPERATOR CLASS xip83.track_int8_ops DEFAULT FOR TYPE int8 USING xip83_track AS STORAGE int8;
CREATE OPERATOR CLASS xip83.track_bytea_ops DEFAULT FOR TYPE bytea USING xip83_track AS STORAGE bytea;
COMMENT ON ACCESS METHOD xip83_track IS
  'The index xip83.track gives a tracked table: registers every inserted row''s position before it can be seen; stores nothing, never scanned.';

-- Written only by track/untrack (as C, after checking the caller owns the
-- tables) and by a drop of a tracked table: nobody has INSERT on it.
CREATE TABLE xip83.tracked_sources (
    source       regclass    NOT NULL,
    kind         text        NOT NULL,
    blob_source  regclass,
    id_sequence  regclass,
    tracked_at   timestamptz NOT NULL
);
SELECT pg_catalog.pg_extension_config_dump('xip83.tracked_sources', '');
GRANT SELECT ON xip83.tracked_sources TO PUBLIC;

CREATE FUNCTION xip83.track(source regclass, kind text, blob_source regclass DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'xip83_track' LANGUAGE C VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;
-- Every tracked table in use holds one of xip83.max_tracked_tables registry
-- entries shared by the whole server: tracking is granted by an administrator
-- (GRANT EXECUTE ON FUNCTION xip83.track(regclass, text, regclass) TO a node's
-- role), not open to every table owner. untrack only gives an entry back.
REVOKE EXECUTE ON FUNCTION xip83.track(regclass, text, regclass) FROM PUBLIC;
CREATE FUNCTION xip83.untrack(source regclass) RETURNS void
AS 'MODULE_PATHNAME', 'xip83_untrack' LANGUAGE C VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;

-- The id default track installs; refuses any table that is not a tracked v3
-- table. Every writer runs it, so it keeps EXECUTE for PUBLIC.
CREATE FUNCTION xip83.next_id(source regclass) RETURNS bigint
AS 'MODULE_PATHNAME', 'next_id' LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION xip83.tracked_status(source regclass,
    OUT horizon bigint, OUT originator_node_ids int[], OUT originator_horizons bigint[],
    OUT registered bigint, OUT late_writes bigint, OUT late_cursor bigint,
    OUT low_water bigint, OUT recent bigint,
    OUT in_flight bigint, OUT in_flight_pid int,
    OUT originator_in_flight bigint[], OUT originator_in_flight_pids int[],
    OUT summary_state text, OUT summary_rows bigint, OUT summary_pass_ms bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'tracked_status' LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE VIEW xip83.tracked AS
    SELECT t.source, t.kind, t.blob_source, t.tracked_at, s.*
      FROM xip83.tracked_sources t, LATERAL xip83.tracked_status(t.source) s;
GRANT SELECT ON xip83.tracked TO PUBLIC;

COMMENT ON TABLE xip83.tracked_sources IS
  'Node tables xip83.track follows: written by track/untrack and by dropping a tracked table only.';
COMMENT ON FUNCTION xip83.track(regclass, text, regclass) IS
  'Makes a node''s table (kind group, welcome or envelope; envelopes may name their blob table) a feed of its own: replaces a v3 table''s nextval id default with xip83.next_id, adds an xip83_track index (inserts) and the triggers xip83_register_position (updates) and xip83_reset_positions. No rewrite; takes each table''s lock for a moment. Needs EXECUTE, which an administrator grants (not PUBLIC): tracked tables share the server''s xip83.max_tracked_tables entries. The caller must own the tables, which must not be temporary; layout checks as the wave scans.';
COMMENT ON FUNCTION xip83.untrack(regclass) IS
  'Restores what xip83.track changed: the nextval id default, no xip83_track index, no xip83 triggers; the table''s registry entry is free once this commits. The caller must own the tables.';
COMMENT ON FUNCTION xip83.next_id(regclass) IS
  'The id default xip83.track gives a tracked v3 table: registers the id, then draws it from the table''s own sequence. Needs INSERT or UPDATE on the table and USAGE or UPDATE on the sequence, checked before the id is registered.';
COMMENT ON FUNCTION xip83.tracked_status(regclass) IS
  'One row about a tracked table''s feed (NULL unless the caller may SELECT it): horizon or originator horizons, positions registered and late writes since it was loaded, late cursor, recent-writes low-water position and entries; who holds the horizon (per line the lowest position an open transaction may still write and its backend''s pid, NULL when none); the topic summary''s state (waiting, building, ready, off), rows its pass read and how long the last pass took in ms.';
COMMENT ON VIEW xip83.tracked IS
  'Every tracked table with xip83.tracked_status.';
