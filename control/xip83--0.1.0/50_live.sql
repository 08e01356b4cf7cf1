-- The live feed: commit-order-safe horizons, the id defaults and triggers that
-- register every written position, live fetch, and the feed's status.
-- Needs shared_preload_libraries = 'xip83' (the functions fail with 55000
-- otherwise; writes go on unregistered).

-- Id defaults: draw from the table's own sequence, registered before any
-- reader can see the id. A sequence with a cache would hand ids out of order.
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

CREATE TRIGGER register_position BEFORE INSERT OR UPDATE OF id ON xip83.group_messages
    FOR EACH ROW EXECUTE FUNCTION xip83.register_position('group');
CREATE TRIGGER register_position BEFORE INSERT OR UPDATE OF id ON xip83.welcome_messages
    FOR EACH ROW EXECUTE FUNCTION xip83.register_position('welcome');
CREATE TRIGGER register_position
    BEFORE INSERT OR UPDATE OF originator_node_id, originator_sequence_id ON xip83.envelopes
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

-- Horizons: every row at or below is committed or will never exist. Read the
-- horizon in one statement and the rows in a later one (live fetch does both
-- in the right order).
CREATE FUNCTION xip83.group_horizon() RETURNS bigint
AS 'MODULE_PATHNAME', 'group_horizon' LANGUAGE C VOLATILE PARALLEL RESTRICTED;
CREATE FUNCTION xip83.welcome_horizon() RETURNS bigint
AS 'MODULE_PATHNAME', 'welcome_horizon' LANGUAGE C VOLATILE PARALLEL RESTRICTED;
CREATE FUNCTION xip83.envelope_horizons()
RETURNS TABLE (originator_node_id int, horizon bigint)
AS 'MODULE_PATHNAME', 'envelope_horizons' LANGUAGE C VOLATILE PARALLEL RESTRICTED;

-- Live fetch: primary-key range scans up to the horizon, columns as the wave scans.
CREATE FUNCTION xip83.live_group_messages(after_id bigint, row_limit int)
RETURNS TABLE (id bigint, created_at timestamp, group_id bytea, data bytea,
               is_commit boolean, sender_hmac bytea, should_push boolean)
AS 'MODULE_PATHNAME', 'live_group_messages' LANGUAGE C VOLATILE PARALLEL RESTRICTED
ROWS 100;
CREATE FUNCTION xip83.live_welcome_messages(after_id bigint, row_limit int)
RETURNS TABLE (id bigint, created_at timestamp, installation_key bytea, data bytea,
               hpke_public_key bytea, wrapper_algorithm smallint, welcome_metadata bytea,
               message_type smallint)
AS 'MODULE_PATHNAME', 'live_welcome_messages' LANGUAGE C VOLATILE PARALLEL RESTRICTED
ROWS 100;
CREATE FUNCTION xip83.live_envelopes(node_ids int[], after_sequence_ids bigint[], row_limit int)
RETURNS TABLE (originator_node_id int, originator_sequence_id bigint, gateway_time timestamp,
               topic bytea, originator_envelope bytea)
AS 'MODULE_PATHNAME', 'live_envelopes' LANGUAGE C VOLATILE PARALLEL RESTRICTED
ROWS 100;

-- The feed at a glance: horizons, the notifier, its last notice, the NOTIFY queue.
CREATE FUNCTION xip83.feed_status(
    OUT group_horizon bigint, OUT welcome_horizon bigint,
    OUT originator_node_ids int[], OUT originator_horizons bigint[],
    OUT notifier_pid int, OUT epoch bigint, OUT state text, OUT ticks bigint,
    OUT last_notice_at timestamptz, OUT last_group_horizon bigint,
    OUT last_welcome_horizon bigint, OUT notifier_starting boolean)
RETURNS record
AS 'MODULE_PATHNAME', 'feed_status' LANGUAGE C VOLATILE;

CREATE VIEW xip83.feed_status AS
    SELECT s.*, pg_catalog.pg_notification_queue_usage() AS notification_queue_usage
      FROM xip83.feed_status() s;
