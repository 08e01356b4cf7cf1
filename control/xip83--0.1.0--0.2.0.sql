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

-- include: control/install/70_track.sql

-- ---------------------------------------------------------------- read replicas
-- Live fetch on a standby: the live functions take up_to / fence (trailing,
-- defaulted); xip83.horizon_fence; LiveNotice's fence: live_notice_encode
-- takes it, live_notice_fence reads it (control/install/20_live_notice.sql,
-- made again whole, and 50_live.sql). Replaces the live functions the
-- tracking section created.
DROP FUNCTION xip83.live_group_messages(bigint, int, bigint, regclass);
DROP FUNCTION xip83.live_welcome_messages(bigint, int, bigint, regclass);
DROP FUNCTION xip83.live_envelopes(int[], bigint[], int, bigint, regclass, regclass);
DROP FUNCTION xip83.live_notice_encode(bigint, text, bigint, bigint, bigint, int[], bigint[]);
DROP FUNCTION xip83.live_notice_decode(text);
-- include: control/install/20_live_notice.sql
CREATE FUNCTION xip83.live_group_messages(after_id bigint, row_limit int, late_after bigint,
                                          source regclass DEFAULT 'xip83.group_messages',
                                          up_to bigint DEFAULT NULL, fence pg_lsn DEFAULT NULL)
RETURNS TABLE (id bigint, created_at timestamp, group_id bytea, data bytea,
               is_commit boolean, sender_hmac bytea, should_push boolean,
               late_cursor bigint)
AS 'MODULE_PATHNAME', 'live_group_messages' LANGUAGE C VOLATILE PARALLEL UNSAFE
ROWS 100;
CREATE FUNCTION xip83.live_welcome_messages(after_id bigint, row_limit int, late_after bigint,
                                            source regclass DEFAULT 'xip83.welcome_messages',
                                            up_to bigint DEFAULT NULL, fence pg_lsn DEFAULT NULL)
RETURNS TABLE (id bigint, created_at timestamp, installation_key bytea, data bytea,
               hpke_public_key bytea, wrapper_algorithm smallint, welcome_metadata bytea,
               message_type smallint, late_cursor bigint)
AS 'MODULE_PATHNAME', 'live_welcome_messages' LANGUAGE C VOLATILE PARALLEL UNSAFE
ROWS 100;
CREATE FUNCTION xip83.live_envelopes(node_ids int[], after_sequence_ids bigint[], row_limit int,
                                     late_after bigint,
                                     source regclass DEFAULT 'xip83.envelopes',
                                     blob_source regclass DEFAULT NULL,
                                     up_to_sequence_ids bigint[] DEFAULT NULL,
                                     fence pg_lsn DEFAULT NULL)
RETURNS TABLE (originator_node_id int, originator_sequence_id bigint, gateway_time timestamp,
               topic bytea, originator_envelope bytea, late_cursor bigint)
AS 'MODULE_PATHNAME', 'live_envelopes' LANGUAGE C VOLATILE PARALLEL UNSAFE
ROWS 100;

-- Read replicas: a feed's horizons with the fence a standby must replay to
-- see every row at or below them (src/standby.c).
CREATE FUNCTION xip83.horizon_fence(source regclass DEFAULT 'xip83.group_messages',
    OUT horizon bigint, OUT originator_node_ids int[], OUT originator_horizons bigint[],
    OUT fence pg_lsn, OUT timeline_id int, OUT system_identifier bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'horizon_fence' LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION xip83.group_horizon(regclass) IS
  'Highest group message id H of source (xip83.group_messages or a table xip83.track follows as group) such that every id <= H is committed, will never exist, or is announced as a late write. Never decreases, across restarts. Read it before taking the snapshot the rows are read with. Needs USAGE on the source''s schema and SELECT on it; PARALLEL UNSAFE. On a standby: the horizons replayed from the primary (55000 until the first full record after a checkpoint).';
COMMENT ON FUNCTION xip83.live_group_messages(bigint, int, bigint, regclass, bigint, pg_lsn) IS
  'Rows a live consumer has not seen: late group messages at or below after_id written since late cursor late_after, then ids in (after_id, group_horizon()], at most row_limit rows. Reads the horizon first, then with a new snapshot, whatever the isolation level (refused under SERIALIZABLE). Each row carries the late cursor to pass next; the consumer''s cursor becomes the highest id it received. source: xip83.group_messages or a table xip83.track follows as group. Needs USAGE on its schema and SELECT on it. up_to and fence (from xip83.horizon_fence on the primary): on a standby, waits up to xip83.standby_wait_ms for replay to pass fence (X83F0 past it, X83F1 if promoted short of it), then reads up to up_to; without them a standby reads up to its replayed horizon; up_to without fence is refused there (22023). On the primary up_to only lowers the horizon.';
COMMENT ON FUNCTION xip83.live_welcome_messages(bigint, int, bigint, regclass, bigint, pg_lsn) IS
  'The live fetch of welcomes (see live_group_messages). source, up_to and fence as for live_group_messages.';
COMMENT ON FUNCTION xip83.live_envelopes(int[], bigint[], int, bigint, regclass, regclass, bigint[], pg_lsn) IS
  'The live fetch of envelopes: late envelopes of the listed originators, then per listed originator sequence ids in (after, horizon], ordered (originator, sequence); an originator listed twice counts once, with its lowest cursor. source: xip83.envelopes or a table xip83.track follows as envelope, with blob_source the blob table it was tracked with (else NULL). Needs SELECT on both. up_to_sequence_ids (paired with node_ids) and fence: as up_to and fence of live_group_messages.';
COMMENT ON FUNCTION xip83.horizon_fence(regclass) IS
  'The horizons of source (horizon for a group or welcome table, originator arrays for an envelope table) and, read right after them, the fence: the primary''s WAL position before which every commit at or below them lies, with its timeline and system identifier. Pass horizon and fence to a live fetch on a standby. On a standby: its replayed horizons and replay position. Needs SELECT on source.';
