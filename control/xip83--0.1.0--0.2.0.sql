-- xip83 0.1.0 -> 0.2.0: ALTER EXTENSION xip83 UPDATE TO '0.2.0'.
-- What a fresh 0.2.0 installs (control/install/*.sql) and what this script
-- leaves behind are compared object by object by the upgrade test.
\echo Use "ALTER EXTENSION xip83 UPDATE TO '0.2.0'" to load this file. \quit

-- ---------------------------------------------------------------- tracking
-- Horizons, late cursors and live fetch take the table they follow; the
-- trigger functions keep EXECUTE for PUBLIC (partitions of tracked tables
-- clone them); xip83.track / untrack / next_id, the tracked tables' table
-- and the tracked view (control/install/50_live.sql, 70_track.sql).
DROP FUNCTION xip83.group_horizon();
DROP FUNCTION xip83.welcome_horizon();
DROP FUNCTION xip83.envelope_horizons();
DROP FUNCTION xip83.late_cursor();
DROP FUNCTION xip83.live_group_messages(bigint, int, bigint);
DROP FUNCTION xip83.live_welcome_messages(bigint, int, bigint);
DROP FUNCTION xip83.live_envelopes(int[], bigint[], int, bigint);
CREATE FUNCTION xip83.group_horizon(source regclass DEFAULT 'xip83.group_messages')
RETURNS bigint
AS 'MODULE_PATHNAME', 'group_horizon' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION xip83.welcome_horizon(source regclass DEFAULT 'xip83.welcome_messages')
RETURNS bigint
AS 'MODULE_PATHNAME', 'welcome_horizon' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION xip83.envelope_horizons(source regclass DEFAULT 'xip83.envelopes')
RETURNS TABLE (originator_node_id int, horizon bigint)
AS 'MODULE_PATHNAME', 'envelope_horizons' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION xip83.late_cursor(source regclass DEFAULT NULL) RETURNS bigint
AS 'MODULE_PATHNAME', 'late_cursor' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION xip83.live_group_messages(after_id bigint, row_limit int, late_after bigint,
                                          source regclass DEFAULT 'xip83.group_messages')
RETURNS TABLE (id bigint, created_at timestamp, group_id bytea, data bytea,
               is_commit boolean, sender_hmac bytea, should_push boolean,
               late_cursor bigint)
AS 'MODULE_PATHNAME', 'live_group_messages' LANGUAGE C VOLATILE PARALLEL UNSAFE
ROWS 100;
CREATE FUNCTION xip83.live_welcome_messages(after_id bigint, row_limit int, late_after bigint,
                                            source regclass DEFAULT 'xip83.welcome_messages')
RETURNS TABLE (id bigint, created_at timestamp, installation_key bytea, data bytea,
               hpke_public_key bytea, wrapper_algorithm smallint, welcome_metadata bytea,
               message_type smallint, late_cursor bigint)
AS 'MODULE_PATHNAME', 'live_welcome_messages' LANGUAGE C VOLATILE PARALLEL UNSAFE
ROWS 100;
CREATE FUNCTION xip83.live_envelopes(node_ids int[], after_sequence_ids bigint[], row_limit int,
                                     late_after bigint,
                                     source regclass DEFAULT 'xip83.envelopes',
                                     blob_source regclass DEFAULT NULL)
RETURNS TABLE (originator_node_id int, originator_sequence_id bigint, gateway_time timestamp,
               topic bytea, originator_envelope bytea, late_cursor bigint)
AS 'MODULE_PATHNAME', 'live_envelopes' LANGUAGE C VOLATILE PARALLEL UNSAFE
ROWS 100;
COMMENT ON FUNCTION xip83.group_horizon(regclass) IS
  'Highest group message id H of source (xip83.group_messages or a table xip83.track follows as group) such that every id <= H is committed, will never exist, or is announced as a late write. Never decreases, across restarts. Read it before taking the snapshot the rows are read with. Needs USAGE on the source''s schema and SELECT on it; primary only; PARALLEL UNSAFE.';
COMMENT ON FUNCTION xip83.welcome_horizon(regclass) IS
  'The horizon of welcome ids of source (see group_horizon).';
COMMENT ON FUNCTION xip83.envelope_horizons(regclass) IS
  'Per originator of source (xip83.envelopes or a table xip83.track follows as envelope), the highest sequence id such that every one at or below is committed, will never exist, or is announced as a late write. Needs SELECT on source.';
COMMENT ON FUNCTION xip83.late_cursor(regclass) IS
  'Sequence number of the newest late write a feed remembers (source NULL: xip83''s own tables; else a tracked table): the late cursor a consumer following "from now" passes to its first live fetch (read it before the horizons).';
COMMENT ON FUNCTION xip83.live_group_messages(bigint, int, bigint, regclass) IS
  'Rows a live consumer has not seen: late group messages at or below after_id written since late cursor late_after, then ids in (after_id, group_horizon()], at most row_limit rows. Reads the horizon first, then with a new snapshot, whatever the isolation level (refused under SERIALIZABLE). Each row carries the late cursor to pass next; the consumer''s cursor becomes the highest id it received. source: xip83.group_messages or a table xip83.track follows as group. Needs USAGE on its schema and SELECT on it.';
COMMENT ON FUNCTION xip83.live_welcome_messages(bigint, int, bigint, regclass) IS
  'The live fetch of welcomes (see live_group_messages). source as for live_group_messages.';
COMMENT ON FUNCTION xip83.live_envelopes(int[], bigint[], int, bigint, regclass, regclass) IS
  'The live fetch of envelopes: late envelopes of the listed originators, then per listed originator sequence ids in (after, horizon], ordered (originator, sequence); an originator listed twice counts once, with its lowest cursor. source: xip83.envelopes or a table xip83.track follows as envelope, with blob_source the blob table it was tracked with (else NULL). Needs SELECT on both.';
GRANT EXECUTE ON FUNCTION xip83.register_position() TO PUBLIC;
GRANT EXECUTE ON FUNCTION xip83.reset_positions() TO PUBLIC;
COMMENT ON FUNCTION xip83.register_position() IS
  'BEFORE INSERT OR UPDATE row trigger of the xip83 tables: notes each row''s topic and position for reconnect waves and registers each written position; positions at or below the published horizon are stored and announced in the late ring. Also the trigger xip83.track adds to a node''s table. Refuses the write on any other table.';
COMMENT ON FUNCTION xip83.reset_positions() IS
  'AFTER TRUNCATE trigger of the xip83 tables and tracked tables: the table''s position lines start over at 0 when the TRUNCATE commits. Refuses any other table.';

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
    OUT low_water bigint, OUT recent bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'tracked_status' LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE VIEW xip83.tracked AS
    SELECT t.source, t.kind, t.blob_source, t.tracked_at, s.*
      FROM xip83.tracked_sources t, LATERAL xip83.tracked_status(t.source) s;
GRANT SELECT ON xip83.tracked TO PUBLIC;

COMMENT ON TABLE xip83.tracked_sources IS
  'Node tables xip83.track follows: written by track/untrack and by dropping a tracked table only.';
COMMENT ON FUNCTION xip83.track(regclass, text, regclass) IS
  'Makes a node''s table (kind group, welcome or envelope; envelopes may name their blob table) a feed of its own: replaces a v3 table''s nextval id default with xip83.next_id, adds the triggers xip83_register_position and xip83_reset_positions. No rewrite; takes each table''s lock for a moment. The caller must own the tables; layout checks as the wave scans.';
COMMENT ON FUNCTION xip83.untrack(regclass) IS
  'Restores what xip83.track changed: the nextval id default, no xip83 triggers. The caller must own the tables.';
COMMENT ON FUNCTION xip83.next_id(regclass) IS
  'The id default xip83.track gives a tracked v3 table: registers the id, then draws it from the table''s own sequence (needs USAGE on it, as nextval).';
COMMENT ON FUNCTION xip83.tracked_status(regclass) IS
  'One row about a tracked table''s feed (NULL unless the caller may SELECT it): horizon or originator horizons, positions registered and late writes since it was loaded, late cursor, recent-writes low-water position and entries.';
COMMENT ON VIEW xip83.tracked IS
  'Every tracked table with xip83.tracked_status.';
