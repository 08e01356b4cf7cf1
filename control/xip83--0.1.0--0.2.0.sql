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
COMMENT ON FUNCTION xip83.group_horizon(regclass) IS
  'Highest group message id H of source (xip83.group_messages or a table xip83.track follows as group) such that every id <= H is committed, will never exist, or is announced as a late write. Never decreases, across restarts. Read it before taking the snapshot the rows are read with. Needs USAGE on the source''s schema and SELECT on it; primary only; PARALLEL UNSAFE.';
COMMENT ON FUNCTION xip83.welcome_horizon(regclass) IS
  'The horizon of welcome ids of source (see group_horizon).';
COMMENT ON FUNCTION xip83.envelope_horizons(regclass) IS
  'Per originator of source (xip83.envelopes or a table xip83.track follows as envelope), the highest sequence id such that every one at or below is committed, will never exist, or is announced as a late write. Needs SELECT on source.';
COMMENT ON FUNCTION xip83.late_cursor(regclass) IS
  'Sequence number of the newest late write a feed remembers (source NULL: xip83''s own tables; else a tracked table): the late cursor a consumer following "from now" passes to its first live fetch (read it before the horizons).';
GRANT EXECUTE ON FUNCTION xip83.register_position() TO PUBLIC;
GRANT EXECUTE ON FUNCTION xip83.reset_positions() TO PUBLIC;
COMMENT ON FUNCTION xip83.register_position() IS
  'BEFORE INSERT OR UPDATE row trigger of the xip83 tables: notes each row''s topic and position for reconnect waves and registers each written position; positions at or below the published horizon are stored and announced in the late ring. Also the trigger xip83.track adds to a node''s table. Refuses the write on any other table.';
COMMENT ON FUNCTION xip83.reset_positions() IS
  'AFTER TRUNCATE trigger of the xip83 tables and tracked tables: the table''s position lines start over at 0 when the TRUNCATE commits. Refuses any other table.';

-- include: control/install/70_track.sql

-- ---------------------------------------------------------------- read replicas
-- Live fetch takes the table it follows (tracking) and, for hot standbys, the
-- horizon and fence it reads up to; xip83.horizon_fence; LiveNotice's fence:
-- live_notice_encode takes it, live_notice_fence reads it. Both install parts
-- are made again whole (control/install/20_live_notice.sql, 55_live_fetch.sql).
DROP FUNCTION xip83.live_notice_encode(bigint, text, bigint, bigint, bigint, int[], bigint[]);
DROP FUNCTION xip83.live_notice_decode(text);
-- include: control/install/20_live_notice.sql
-- include: control/install/55_live_fetch.sql
COMMENT ON FUNCTION xip83.group_horizon(regclass) IS
  'Highest group message id H of source (xip83.group_messages or a table xip83.track follows as group) such that every id <= H is committed, will never exist, or is announced as a late write. Never decreases, across restarts. Read it before taking the snapshot the rows are read with. Needs USAGE on the source''s schema and SELECT on it; PARALLEL UNSAFE. On a standby: the horizons replayed from the primary (55000 until the first full record after a checkpoint).';
