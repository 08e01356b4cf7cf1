-- The library must be preloaded (shared_preload_libraries): refused here, not
-- at the first call that needs shared memory. The check leaves nothing behind.
CREATE FUNCTION xip83.require_preload() RETURNS void
AS 'MODULE_PATHNAME', 'require_preload' LANGUAGE C;
SELECT xip83.require_preload();
DROP FUNCTION xip83.require_preload();

-- Storage: the v3 and d14n tables, column for column as node servers know them
-- (docs/concepts.md, "Storage"), so a node can map rows unchanged and keep inserting with
-- plain INSERT. Nullability and constraints are the nodes' own: every row a
-- node's table accepts, these accept (empty topics included).

CREATE TABLE xip83.group_messages (
    id                  bigserial PRIMARY KEY,
    created_at          timestamp NOT NULL DEFAULT now(),
    group_id            bytea     NOT NULL,
    data                bytea     NOT NULL,
    group_id_data_hash  bytea     NOT NULL UNIQUE,
    -- NULL until the node's backfill sets it, as in the v3 node
    is_commit           boolean   DEFAULT NULL,
    sender_hmac         bytea,
    should_push         boolean
);
-- The wave scans descend this index once per topic.
CREATE INDEX group_messages_group_id_id_idx ON xip83.group_messages (group_id, id);

CREATE TABLE xip83.welcome_messages (
    id                          bigserial PRIMARY KEY,
    created_at                  timestamp NOT NULL DEFAULT now(),
    installation_key            bytea     NOT NULL,
    data                        bytea     NOT NULL,
    hpke_public_key             bytea,
    installation_key_data_hash  bytea     NOT NULL UNIQUE,
    wrapper_algorithm           smallint  NOT NULL DEFAULT 0,
    welcome_metadata            bytea,
    -- 0 = welcome, 1 = welcome pointer (data holds the pointer); other values
    -- are stored as the node stores them
    message_type                smallint  NOT NULL DEFAULT 0
);
CREATE INDEX welcome_messages_installation_key_id_idx
    ON xip83.welcome_messages (installation_key, id);

CREATE TABLE xip83.envelopes (
    originator_node_id      int       NOT NULL,
    -- chain originators start at 0, so a cursor of -1 means "nothing seen";
    -- no originator assigns negative ids
    originator_sequence_id  bigint    NOT NULL CHECK (originator_sequence_id >= 0),
    topic                   bytea     NOT NULL,
    gateway_time            timestamp NOT NULL DEFAULT now(),
    -- NOT NULL as in the d14n node; 0 stands for "none given", so writers of
    -- 0.1.0, which could leave it out, keep working
    expiry                  bigint    NOT NULL DEFAULT 0,
    payer_id                int,
    originator_envelope     bytea     NOT NULL,
    PRIMARY KEY (originator_node_id, originator_sequence_id)
);
CREATE INDEX envelopes_topic_originator_idx
    ON xip83.envelopes (topic, originator_node_id, originator_sequence_id);

-- Messages are user data, not extension scaffolding: pg_dump must keep them.
SELECT pg_catalog.pg_extension_config_dump('xip83.group_messages', '');
SELECT pg_catalog.pg_extension_config_dump('xip83.group_messages_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('xip83.welcome_messages', '');
SELECT pg_catalog.pg_extension_config_dump('xip83.welcome_messages_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('xip83.envelopes', '');

COMMENT ON SCHEMA xip83 IS
  'xip83: XIP-83 wave scans, commit-order-safe horizons, the live feed and ready-to-send frames.';
COMMENT ON TABLE xip83.group_messages IS
  'v3 group messages, one id sequence for all groups (the v3 node''s group_messages layout). Writes register their ids with the live feed.';
COMMENT ON TABLE xip83.welcome_messages IS
  'v3 welcome messages, one id sequence for all installations (the v3 node''s welcome_messages layout). Writes register their ids with the live feed.';
COMMENT ON TABLE xip83.envelopes IS
  'd14n envelopes keyed by (originator_node_id, originator_sequence_id). Writes register their positions with the live feed.';
COMMENT ON SEQUENCE xip83.group_messages_id_seq IS
  'Ids of xip83.group_messages, drawn through xip83.next_group_id; no cache, so ids are handed out in order.';
COMMENT ON SEQUENCE xip83.welcome_messages_id_seq IS
  'Ids of xip83.welcome_messages, drawn through xip83.next_welcome_id; no cache, so ids are handed out in order.';
