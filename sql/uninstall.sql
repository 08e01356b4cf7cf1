-- Uninstalling cannot break a node: DROP EXTENSION, with or without CASCADE,
-- and every other way of dropping it, is refused while a table is tracked,
-- since it would take away the id default of the node's table; after
-- untrack the table has its own default back and the drop goes through.
-- In a database of its own, so that nothing other tests left depends on the
-- extension and the extension really goes.
\set home :DBNAME
SET client_min_messages = warning;
DROP DATABASE IF EXISTS regress_uninstall;
RESET client_min_messages;
CREATE DATABASE regress_uninstall;
\c regress_uninstall
CREATE EXTENSION xip83;
CREATE SCHEMA node;
CREATE TABLE node.group_messages (
    id bigserial PRIMARY KEY, created_at timestamp NOT NULL DEFAULT now(),
    group_id bytea NOT NULL, data bytea NOT NULL,
    group_id_data_hash bytea NOT NULL UNIQUE,
    is_commit boolean DEFAULT NULL, sender_hmac bytea, should_push boolean);
CREATE INDEX ON node.group_messages (group_id, id);
SELECT xip83.track('node.group_messages', 'group');

-- refused, whichever way the extension would go
DROP EXTENSION xip83;
DROP EXTENSION xip83 CASCADE;
DROP EXTENSION IF EXISTS xip83 CASCADE;
DROP SCHEMA xip83 CASCADE;
-- the table, its default and the extension are intact; the node writes on
SELECT pg_get_expr(adbin, adrelid) FROM pg_attrdef
 WHERE adrelid = 'node.group_messages'::regclass ORDER BY adnum;
INSERT INTO node.group_messages (group_id, data, group_id_data_hash)
VALUES ('\x01', '\x02', '\x0102');
SELECT count(*) FROM node.group_messages WHERE id IS NOT NULL;
SELECT extname FROM pg_extension WHERE extname = 'xip83';

-- untrack every table, as the hint says: the table has its own default back,
-- and the drop goes through
SELECT xip83.untrack(source) FROM xip83.tracked_sources;
DROP EXTENSION xip83;
SELECT pg_get_expr(adbin, adrelid) FROM pg_attrdef
 WHERE adrelid = 'node.group_messages'::regclass ORDER BY adnum;
INSERT INTO node.group_messages (group_id, data, group_id_data_hash)
VALUES ('\x01', '\x03', '\x0103');
SELECT id, data FROM node.group_messages ORDER BY id;
SELECT count(*) FROM pg_namespace WHERE nspname = 'xip83';

\c :home
DROP DATABASE regress_uninstall;
