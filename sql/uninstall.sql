-- Uninstalling cannot break a node: DROP EXTENSION, with or without CASCADE,
-- and every other way of dropping it, is refused while a table is tracked,
-- since it would take away the id default of the node's table; after
-- untrack the table has its own default back and the drop goes through.
-- only this test's table is tracked, whatever ran before in this database
SELECT count(*) >= 0 AS untracked FROM (SELECT xip83.untrack(source) FROM xip83.tracked_sources) u;
CREATE SCHEMA uninstall_node;
CREATE TABLE uninstall_node.group_messages (
    id bigserial PRIMARY KEY, created_at timestamp NOT NULL DEFAULT now(),
    group_id bytea NOT NULL, data bytea NOT NULL,
    group_id_data_hash bytea NOT NULL UNIQUE,
    is_commit boolean DEFAULT NULL, sender_hmac bytea, should_push boolean);
CREATE INDEX ON uninstall_node.group_messages (group_id, id);
SELECT xip83.track('uninstall_node.group_messages', 'group');

-- refused, whichever way the extension would go
\set VERBOSITY default
DROP EXTENSION xip83;
DROP EXTENSION xip83 CASCADE;
DROP EXTENSION IF EXISTS xip83 CASCADE;
DROP SCHEMA xip83 CASCADE;
\set VERBOSITY terse
-- the table, its default and the extension are intact; the node writes on
SELECT pg_get_expr(adbin, adrelid) FROM pg_attrdef
 WHERE adrelid = 'uninstall_node.group_messages'::regclass;
INSERT INTO uninstall_node.group_messages (group_id, data, group_id_data_hash)
VALUES ('\x01', '\x02', '\x0102');
SELECT count(*) FROM uninstall_node.group_messages WHERE id IS NOT NULL;
SELECT extname FROM pg_extension WHERE extname = 'xip83';

-- untrack every table (as the hint says), then the drop goes through: shown
-- in a transaction rolled back, so that later tests keep the extension
BEGIN;
SELECT count(*) > 0 AS untracked
  FROM (SELECT xip83.untrack(source) FROM xip83.tracked_sources) u;
DROP EXTENSION xip83;
SELECT pg_get_expr(adbin, adrelid) FROM pg_attrdef
 WHERE adrelid = 'uninstall_node.group_messages'::regclass;
INSERT INTO uninstall_node.group_messages (group_id, data, group_id_data_hash)
VALUES ('\x01', '\x03', '\x0103');
SELECT count(*) FROM uninstall_node.group_messages;
ROLLBACK;

SELECT xip83.untrack('uninstall_node.group_messages');
DROP SCHEMA uninstall_node CASCADE;
