-- xip83.track on a node's own tables: what it changes, horizons and live
-- fetch over them, late writes, untrack, and what a hostile role can't do.
-- Starts from empty tables and fresh ids, whatever ran before in this database.
TRUNCATE xip83.group_messages, xip83.welcome_messages, xip83.envelopes RESTART IDENTITY;
SET client_min_messages = warning;
CREATE ROLE xip83_node_owner;
CREATE ROLE xip83_stranger;
CREATE SCHEMA node AUTHORIZATION xip83_node_owner;
GRANT USAGE ON SCHEMA node TO xip83_stranger;
GRANT USAGE ON SCHEMA xip83 TO xip83_node_owner, xip83_stranger;
-- tracking is granted by an administrator (track_slots shows why)
GRANT EXECUTE ON FUNCTION xip83.track(regclass, text, regclass) TO xip83_node_owner;
SET ROLE xip83_node_owner;
CREATE TABLE node.group_messages (
    id bigserial PRIMARY KEY, created_at timestamp NOT NULL DEFAULT now(),
    group_id bytea NOT NULL, data bytea NOT NULL,
    group_id_data_hash bytea NOT NULL UNIQUE,
    is_commit boolean DEFAULT NULL, sender_hmac bytea, should_push boolean);
CREATE INDEX ON node.group_messages (group_id, id);
INSERT INTO node.group_messages (group_id, data, group_id_data_hash)
    SELECT 'g', ('old' || i)::bytea, ('old' || i)::bytea FROM generate_series(1, 3) i;
-- not tracked yet: no horizon, the ceiling is the highest visible id
SELECT xip83.group_horizon('node.group_messages');
SELECT xip83.group_ceiling('node.group_messages');
SELECT xip83.track('node.group_messages', 'group');
SELECT pg_get_expr(adbin, adrelid) FROM pg_attrdef WHERE adrelid = 'node.group_messages'::regclass;
SELECT tgname, tgenabled, tgtype FROM pg_trigger WHERE tgrelid = 'node.group_messages'::regclass ORDER BY 1;
-- inserts are registered by an index that stores nothing and serves no query
SELECT c.relname, pg_get_indexdef(c.oid), pg_relation_size(c.oid)
  FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam
 WHERE i.indrelid = 'node.group_messages'::regclass AND a.amname = 'xip83_track';
SELECT source, kind, blob_source, horizon, registered, late_writes FROM xip83.tracked;
SELECT xip83.track('node.group_messages', 'group');
INSERT INTO node.group_messages (group_id, data, group_id_data_hash)
    SELECT 'g', ('new' || i)::bytea, ('new' || i)::bytea FROM generate_series(1, 3) i;
SELECT xip83.group_horizon('node.group_messages');
SELECT xip83.group_ceiling('node.group_messages');
SELECT id, data, late_cursor > 0 AS has_late_cursor
  FROM xip83.live_group_messages(2, 10, 0, 'node.group_messages');
-- a late write: an explicit id below the horizon comes through the late lane
SELECT xip83.late_cursor('node.group_messages') AS lc \gset
DELETE FROM node.group_messages WHERE id = 2;
INSERT INTO node.group_messages (id, group_id, data, group_id_data_hash)
    VALUES (2, 'g', 'again', 'again');
SELECT id, data FROM xip83.live_group_messages(6, 10, :lc, 'node.group_messages');
SELECT horizon, late_writes FROM xip83.tracked;
-- an UPDATE to another topic is only noted; one that sets the id is a write
SELECT registered AS reg FROM xip83.tracked \gset
UPDATE node.group_messages SET group_id = 'h' WHERE id = 5;
SELECT registered - :reg AS registered, late_writes FROM xip83.tracked;
UPDATE node.group_messages SET id = 7 WHERE id = 6;
SELECT registered - :reg AS registered, late_writes FROM xip83.tracked;
SELECT id, group_id, data FROM xip83.live_group_messages(6, 10, :lc, 'node.group_messages');
UPDATE node.group_messages SET id = 6 WHERE id = 7;
-- COPY goes through the index as INSERT does
COPY node.group_messages (group_id, data, group_id_data_hash) FROM stdin;
g	copied	copied
\.
SELECT xip83.group_horizon('node.group_messages');
-- inserts before and after an UPDATE in one transaction are registered once
-- each and the UPDATE is not: the index tells them apart
SELECT registered AS reg, late_writes AS late FROM xip83.tracked \gset
BEGIN;
INSERT INTO node.group_messages (group_id, data, group_id_data_hash) VALUES ('g', 'mix1', 'mix1');
UPDATE node.group_messages SET group_id = 'g' WHERE id = 5;
INSERT INTO node.group_messages (group_id, data, group_id_data_hash) VALUES ('g', 'mix2', 'mix2');
COMMIT;
SELECT registered - :reg AS registered, late_writes - :late AS late FROM xip83.tracked;
-- with its trigger disabled an UPDATE still registers nothing
ALTER TABLE node.group_messages DISABLE TRIGGER xip83_register_position;
UPDATE node.group_messages SET group_id = 'h' WHERE id = 5;
ALTER TABLE node.group_messages ENABLE ALWAYS TRIGGER xip83_register_position;
SELECT registered - :reg AS registered, late_writes - :late AS late FROM xip83.tracked;
SELECT xip83.group_horizon('node.group_messages');
SELECT id, group_id, data FROM xip83.live_group_messages(8, 20, :lc, 'node.group_messages');
-- the tracked table's index must be on (id, group_id) alone
CREATE INDEX ON node.group_messages USING xip83_track (group_id, id);
CREATE INDEX ON node.group_messages USING xip83_track (id, group_id) WHERE id > 0;
RESET ROLE;
-- xip83's own tables are a feed of their own
SELECT xip83.group_horizon('xip83.group_messages') = xip83.group_horizon();
-- a stranger may not track, untrack or read the table's horizon
SET ROLE xip83_stranger;
SELECT xip83.track('node.group_messages', 'welcome');
SELECT xip83.untrack('node.group_messages');
SELECT xip83.group_horizon('node.group_messages');
SELECT horizon, registered FROM xip83.tracked;
-- the trigger on a table of its own does nothing; next_id refuses it
CREATE TEMP TABLE mine (id bigint, group_id bytea);
CREATE TRIGGER t BEFORE INSERT ON mine FOR EACH ROW EXECUTE FUNCTION xip83.register_position('group');
INSERT INTO mine VALUES (1000000, 'x');
SELECT xip83.next_id('mine');
-- an xip83_track index on an untracked table is inert
DROP TRIGGER t ON mine;
CREATE INDEX ON mine USING xip83_track (id, group_id);
INSERT INTO mine VALUES (2000000, 'x');
DROP TABLE mine;
RESET ROLE;
SELECT horizon FROM xip83.tracked;
-- bad arguments
SELECT xip83.track('node.group_messages', 'nonsense');
SELECT xip83.track('xip83.group_messages', 'group');
SELECT xip83.track(NULL, 'group');
-- envelopes in a plain table with their payload
SET ROLE xip83_node_owner;
CREATE TABLE node.envelopes (
    originator_node_id int NOT NULL, originator_sequence_id bigint NOT NULL,
    topic bytea NOT NULL, gateway_time timestamp NOT NULL DEFAULT now(),
    expiry bigint NOT NULL DEFAULT 0, payer_id int, originator_envelope bytea NOT NULL,
    PRIMARY KEY (originator_node_id, originator_sequence_id));
CREATE INDEX ON node.envelopes (topic, originator_node_id, originator_sequence_id);
SELECT xip83.track('node.envelopes', 'envelope');
INSERT INTO node.envelopes (originator_node_id, originator_sequence_id, topic, originator_envelope)
    VALUES (100, 1, 't', 'e1'), (100, 2, 't', 'e2'), (200, 5, 'u', 'e5');
SELECT * FROM xip83.envelope_horizons('node.envelopes');
SELECT originator_node_id, originator_sequence_id, originator_envelope
  FROM xip83.live_envelopes('{100,200}', '{0,0}', 10, 0, 'node.envelopes');
SELECT * FROM xip83.originator_ceilings(NULL, 'node.envelopes');
-- sequence 0 (chain originators) is stored and delivered as a late write
SELECT xip83.late_cursor('node.envelopes') AS elc \gset
INSERT INTO node.envelopes (originator_node_id, originator_sequence_id, topic, originator_envelope)
    VALUES (300, 0, 't', 'e0');
SELECT originator_node_id, originator_sequence_id, originator_envelope
  FROM xip83.live_envelopes('{300}', '{-1}', 10, :elc, 'node.envelopes');
INSERT INTO node.envelopes (originator_node_id, originator_sequence_id, topic, originator_envelope)
    VALUES (300, -1, 't', 'neg');
-- a partitioned table: partitions created or attached later are followed, a
-- detached one keeps an inert copy of the index
CREATE TABLE node.parted (
    originator_node_id int NOT NULL, originator_sequence_id bigint NOT NULL,
    topic bytea NOT NULL, gateway_time timestamp NOT NULL DEFAULT now(),
    expiry bigint NOT NULL DEFAULT 0, payer_id int, originator_envelope bytea NOT NULL,
    PRIMARY KEY (originator_node_id, originator_sequence_id)) PARTITION BY LIST (originator_node_id);
CREATE INDEX ON node.parted (topic, originator_node_id, originator_sequence_id);
CREATE TABLE node.parted_1 PARTITION OF node.parted FOR VALUES IN (1);
SELECT xip83.track('node.parted', 'envelope');
CREATE TABLE node.parted_2 PARTITION OF node.parted FOR VALUES IN (2);
CREATE TABLE node.parted_3 (LIKE node.parted INCLUDING DEFAULTS INCLUDING INDEXES);
INSERT INTO node.parted_3 (originator_node_id, originator_sequence_id, topic, originator_envelope)
    VALUES (3, 1, 't', 'before attach');
ALTER TABLE node.parted ATTACH PARTITION node.parted_3 FOR VALUES IN (3);
INSERT INTO node.parted (originator_node_id, originator_sequence_id, topic, originator_envelope)
    VALUES (1, 1, 't', 'a'), (2, 1, 't', 'b'), (3, 2, 't', 'c');
SELECT * FROM xip83.envelope_horizons('node.parted');
SELECT c.relname, count(*)
  FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid JOIN pg_class ic ON ic.oid = i.indexrelid
  JOIN pg_am a ON a.oid = ic.relam
 WHERE a.amname = 'xip83_track' AND c.relname LIKE 'parted%' GROUP BY 1 ORDER BY 1;
SELECT registered AS reg FROM xip83.tracked WHERE source = 'node.parted'::regclass \gset
ALTER TABLE node.parted DETACH PARTITION node.parted_2;
INSERT INTO node.parted_2 (originator_node_id, originator_sequence_id, topic, originator_envelope)
    VALUES (2, 2, 't', 'detached');
SELECT registered - :reg AS registered FROM xip83.tracked WHERE source = 'node.parted'::regclass;
-- a wrong-column xip83_track index made before attaching stays inert beside
-- the matching one PostgreSQL adds: a row registers once
CREATE TABLE node.parted_4 (LIKE node.parted INCLUDING DEFAULTS);
CREATE INDEX parted_4_wrong ON node.parted_4
    USING xip83_track (originator_sequence_id, originator_node_id, topic);
ALTER TABLE node.parted ATTACH PARTITION node.parted_4 FOR VALUES IN (4);
SELECT count(*) FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid
  JOIN pg_am a ON a.oid = ic.relam
 WHERE i.indrelid = 'node.parted_4'::regclass AND a.amname = 'xip83_track';
SELECT registered AS reg FROM xip83.tracked WHERE source = 'node.parted'::regclass \gset
INSERT INTO node.parted (originator_node_id, originator_sequence_id, topic, originator_envelope)
    VALUES (4, 7, 't', 'd');
SELECT registered - :reg AS registered FROM xip83.tracked WHERE source = 'node.parted'::regclass;
SELECT * FROM xip83.envelope_horizons('node.parted') WHERE originator_node_id = 4;
-- untrack drops the index track made and its copies on attached partitions;
-- parted_4_wrong (made by hand) and the detached partition's copy stay
SELECT xip83.untrack('node.parted');
SELECT count(*) FROM pg_class c JOIN pg_am a ON a.oid = c.relam
 WHERE a.amname = 'xip83_track' AND c.relname LIKE 'parted%';
DROP TABLE node.parted, node.parted_2;
-- untrack restores the default and drops the triggers and the index
SELECT xip83.untrack('node.group_messages');
SELECT pg_get_expr(adbin, adrelid) FROM pg_attrdef WHERE adrelid = 'node.group_messages'::regclass;
SELECT count(*) FROM pg_trigger WHERE tgrelid = 'node.group_messages'::regclass;
SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam
 WHERE i.indrelid = 'node.group_messages'::regclass AND a.amname = 'xip83_track';
SELECT xip83.untrack('node.group_messages');
-- dropping a tracked table untracks it
DROP TABLE node.envelopes;
SELECT count(*) FROM xip83.tracked;
RESET ROLE;
DROP SCHEMA node CASCADE;
REVOKE USAGE ON SCHEMA xip83 FROM xip83_node_owner, xip83_stranger;
REVOKE EXECUTE ON FUNCTION xip83.track(regclass, text, regclass) FROM xip83_node_owner;
DROP ROLE xip83_node_owner;
DROP ROLE xip83_stranger;
