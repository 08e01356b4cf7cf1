-- The live feed: commit-order-safe horizons, the id defaults and triggers that
-- register every written position and live fetch (the feed's status: 52_feed_status.sql).
-- Needs shared_preload_libraries = 'xip83' (the functions fail with 55000
-- otherwise; writes go on unregistered).

-- Id defaults: draw from the table's own sequence, registered before any
-- reader can see the id. A sequence with a cache would hand ids out of order.
-- Writers run them as the default of the id column, so they keep EXECUTE for
-- everyone; each refuses any sequence but its table's own.
-- Each checks the writer's rights on the table and the sequence before it
-- registers anything, so a call that fails cannot hold the horizon.
CREATE FUNCTION xip83.next_group_id(seq regclass) RETURNS bigint
AS 'MODULE_PATHNAME', 'next_group_id' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION xip83.next_welcome_id(seq regclass) RETURNS bigint
AS 'MODULE_PATHNAME', 'next_welcome_id' LANGUAGE C VOLATILE PARALLEL UNSAFE;

ALTER TABLE xip83.group_messages
    ALTER COLUMN id SET DEFAULT xip83.next_group_id('xip83.group_messages_id_seq');
ALTER TABLE xip83.welcome_messages
    ALTER COLUMN id SET DEFAULT xip83.next_welcome_id('xip83.welcome_messages_id_seq');
ALTER SEQUENCE xip83.group_messages_id_seq CACHE 1 NO CYCLE;
ALTER SEQUENCE xip83.welcome_messages_id_seq CACHE 1 NO CYCLE;

-- Every row's position is registered, explicit ones included: plain INSERT,
-- COPY and the batch functions alike. ALWAYS: logical replication applies too.
CREATE FUNCTION xip83.register_position() RETURNS trigger
AS 'MODULE_PATHNAME', 'register_position' LANGUAGE C;
CREATE FUNCTION xip83.reset_positions() RETURNS trigger
AS 'MODULE_PATHNAME', 'reset_positions' LANGUAGE C;

-- Trigger functions fire whatever the writer's grants. They keep EXECUTE for
-- PUBLIC because whoever creates a partition of a tracked table clones them
-- (70_track.sql); they act only on xip83's own tables and on tracked tables,
-- and refuse the write on any other table they are attached to. (Revoked,
-- then granted: 0.1.0 revoked it and its update grants it, and a fresh
-- install ends with the very same ACL.)
REVOKE EXECUTE ON FUNCTION xip83.register_position() FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION xip83.reset_positions() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION xip83.register_position() TO PUBLIC;
GRANT EXECUTE ON FUNCTION xip83.reset_positions() TO PUBLIC;

CREATE TRIGGER register_position BEFORE INSERT OR UPDATE OF id, group_id ON xip83.group_messages
    FOR EACH ROW EXECUTE FUNCTION xip83.register_position('group');
CREATE TRIGGER register_position BEFORE INSERT OR UPDATE OF id, installation_key
    ON xip83.welcome_messages
    FOR EACH ROW EXECUTE FUNCTION xip83.register_position('welcome');
CREATE TRIGGER register_position
    BEFORE INSERT OR UPDATE OF originator_node_id, originator_sequence_id, topic ON xip83.envelopes
    FOR EACH ROW EXECUTE FUNCTION xip83.register_position('envelope');
CREATE TRIGGER reset_positions AFTER TRUNCATE ON xip83.group_messages
    FOR EACH STATEMENT EXECUTE FUNCTION xip83.reset_positions('group');
CREATE TRIGGER reset_positions AFTER TRUNCATE ON xip83.welcome_messages
    FOR EACH STATEMENT EXECUTE FUNCTION xip83.reset_positions('welcome');
CREATE TRIGGER reset_positions AFTER TRUNCATE ON xip83.envelopes
    FOR EACH STATEMENT EXECUTE FUNCTION xip83.reset_positions('envelope');
ALTER TABLE xip83.group_messages ENABLE ALWAYS TRIGGER register_position;
ALTER TABLE xip83.welcome_messages ENABLE ALWAYS TRIGGER register_position;
ALTER TABLE xip83.envelopes ENABLE ALWAYS TRIGGER register_position;
ALTER TABLE xip83.group_messages ENABLE ALWAYS TRIGGER reset_positions;
ALTER TABLE xip83.welcome_messages ENABLE ALWAYS TRIGGER reset_positions;
ALTER TABLE xip83.envelopes ENABLE ALWAYS TRIGGER reset_positions;

-- Horizons: every row at or below is committed, will never exist, or is a
-- late write announced in the late ring. Read the horizon in one statement
-- and the rows in a later one (live fetch does both in the right order).
-- PARALLEL UNSAFE: a horizon must be read before a new snapshot is taken,
-- which no parallel query may do.
-- `source`: xip83's own table of the kind, or a table xip83.track follows.
CREATE FUNCTION xip83.group_horizon(source regclass DEFAULT 'xip83.group_messages')
RETURNS bigint
AS 'MODULE_PATHNAME', 'group_horizon' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION xip83.welcome_horizon(source regclass DEFAULT 'xip83.welcome_messages')
RETURNS bigint
AS 'MODULE_PATHNAME', 'welcome_horizon' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION xip83.envelope_horizons(source regclass DEFAULT 'xip83.envelopes')
RETURNS TABLE (originator_node_id int, horizon bigint)
AS 'MODULE_PATHNAME', 'envelope_horizons' LANGUAGE C VOLATILE PARALLEL UNSAFE;

-- source NULL: xip83's own tables (one late ring for the three of them).
CREATE FUNCTION xip83.late_cursor(source regclass DEFAULT NULL) RETURNS bigint
AS 'MODULE_PATHNAME', 'late_cursor' LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION xip83.next_group_id(regclass) IS
  'Id default of xip83.group_messages: draws from xip83.group_messages_id_seq only, registering the id before any reader can see it. EXECUTE for every writer; needs INSERT or UPDATE on the table and USAGE or UPDATE on the sequence, checked before the id is registered.';
COMMENT ON FUNCTION xip83.next_welcome_id(regclass) IS
  'Id default of xip83.welcome_messages: draws from xip83.welcome_messages_id_seq only, registering the id before any reader can see it. EXECUTE for every writer; needs INSERT or UPDATE on the table and USAGE or UPDATE on the sequence, checked before the id is registered.';
COMMENT ON FUNCTION xip83.register_position() IS
  'BEFORE INSERT OR UPDATE row trigger of the xip83 tables: notes each row''s topic and position for reconnect waves and registers each written position; positions at or below the published horizon are stored and announced in the late ring. Also the trigger xip83.track adds to a node''s table. Refuses the write on any other table.';
COMMENT ON FUNCTION xip83.reset_positions() IS
  'AFTER TRUNCATE trigger of the xip83 tables and tracked tables: the table''s position lines start over at 0 when the TRUNCATE commits. Refuses any other table.';
COMMENT ON FUNCTION xip83.group_horizon(regclass) IS
  'Highest group message id H of source (xip83.group_messages or a table xip83.track follows as group) such that every id <= H is committed, will never exist, or is announced as a late write. Never decreases, across restarts. Read it before taking the snapshot the rows are read with. Needs USAGE on the source''s schema and SELECT on it; PARALLEL UNSAFE. On a standby: the horizons replayed from the primary (55000 until the first full record after a checkpoint).';
COMMENT ON FUNCTION xip83.welcome_horizon(regclass) IS
  'The horizon of welcome ids of source (see group_horizon).';
COMMENT ON FUNCTION xip83.envelope_horizons(regclass) IS
  'Per originator of source (xip83.envelopes or a table xip83.track follows as envelope), the highest sequence id such that every one at or below is committed, will never exist, or is announced as a late write. Needs SELECT on source.';
COMMENT ON FUNCTION xip83.late_cursor(regclass) IS
  'Sequence number of the newest late write a feed remembers (source NULL: xip83''s own tables; else a tracked table): the late cursor a consumer following "from now" passes to its first live fetch (read it before the horizons). Returns once every late write up to it has ended, waiting for those still running.';
