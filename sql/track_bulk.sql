-- Rows that reach a tracked table without an INSERT: an attached partition's
-- rows are registered as inserts of the ATTACH (waves see them, live
-- consumers past them get them as late rows); DDL that would rewrite tracked
-- columns or stop registering inserts is refused.
-- Starts from empty tables and fresh ids, whatever ran before in this database.
TRUNCATE xip83.group_messages, xip83.welcome_messages, xip83.envelopes RESTART IDENTITY;
SET client_min_messages = warning;
\set ECHO none
\getenv abs_srcdir PG_ABS_SRCDIR
\set reference_sql :abs_srcdir '/tests/wave_d14n_reference.sql'
\i :reference_sql
\set ECHO all
CREATE SCHEMA bulk;
-- the d14n node's meta and blob tables, by sequence band
CREATE TABLE bulk.em (
    gateway_time timestamp NOT NULL DEFAULT now(), originator_node_id int NOT NULL,
    originator_sequence_id bigint NOT NULL, topic bytea NOT NULL, payer_id int,
    expiry bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (originator_node_id, originator_sequence_id)) PARTITION BY RANGE (originator_sequence_id);
CREATE INDEX ON bulk.em (topic, originator_node_id, originator_sequence_id) INCLUDE (gateway_time);
CREATE TABLE bulk.eb (
    originator_node_id int NOT NULL, originator_sequence_id bigint NOT NULL,
    originator_envelope bytea NOT NULL,
    PRIMARY KEY (originator_node_id, originator_sequence_id)) PARTITION BY RANGE (originator_sequence_id);
CREATE TABLE bulk.em_p0 PARTITION OF bulk.em FOR VALUES FROM (0) TO (1000);
CREATE TABLE bulk.em_p3 PARTITION OF bulk.em FOR VALUES FROM (3000) TO (4000);
CREATE TABLE bulk.eb_p0 PARTITION OF bulk.eb FOR VALUES FROM (0) TO (1000);
CREATE TABLE bulk.eb_p3 PARTITION OF bulk.eb FOR VALUES FROM (3000) TO (4000);
SELECT xip83.track('bulk.em', 'envelope', 'bulk.eb');
-- one write, then a consumer reads up to its horizon
BEGIN;
INSERT INTO bulk.em (originator_node_id, originator_sequence_id, topic) VALUES (100, 3500, '\x0001');
INSERT INTO bulk.eb VALUES (100, 3500, 'e3500');
COMMIT;
SELECT * FROM xip83.envelope_horizons('bulk.em');
SELECT xip83.late_cursor('bulk.em') AS lc \gset
SELECT originator_sequence_id FROM xip83.live_envelopes('{100}', '{0}', 10, :lc, 'bulk.em', 'bulk.eb');
-- a band filled beside the table and attached, below the horizon: meta and
-- blob rows, the blob's with a copy of the tracking index
CREATE TABLE bulk.em_p2 (LIKE bulk.em INCLUDING DEFAULTS INCLUDING CONSTRAINTS);
INSERT INTO bulk.em_p2 (originator_node_id, originator_sequence_id, topic)
    SELECT 100, i, '\x0003' FROM generate_series(2000, 2004) i;
CREATE TABLE bulk.eb_p2 (LIKE bulk.eb INCLUDING ALL);
INSERT INTO bulk.eb_p2 SELECT 100, i, ('e' || i)::bytea FROM generate_series(2000, 2004) i;
BEGIN;
ALTER TABLE bulk.em ATTACH PARTITION bulk.em_p2 FOR VALUES FROM (2000) TO (3000);
ALTER TABLE bulk.eb ATTACH PARTITION bulk.eb_p2 FOR VALUES FROM (2000) TO (3000);
COMMIT;
-- a caught-up wave reads them, as the plain SQL definition does
CREATE FUNCTION bulk.wave_matches(topics bytea[], floors bigint[], ceiling bigint) RETURNS text
LANGUAGE sql AS $$
    WITH w AS (SELECT originator_sequence_id, originator_envelope
                 FROM xip83.envelope_wave_scan(topics, array_fill(100, ARRAY[cardinality(topics)]),
                                               floors, '{100}', ARRAY[ceiling], 0, -1, 100,
                                               'bulk.em', 'bulk.eb')),
         r AS (SELECT originator_sequence_id, originator_envelope
                 FROM wave_d14n_reference_page(topics, array_fill(100, ARRAY[cardinality(topics)]),
                                               floors, '{100}', ARRAY[ceiling], 0, -1, 100,
                                               'bulk.em', 'bulk.eb'))
    SELECT format('%s rows, %s differ', (SELECT count(*) FROM w),
                  (SELECT count(*) FROM ((TABLE w EXCEPT TABLE r) UNION ALL (TABLE r EXCEPT TABLE w)) d))
$$;
SELECT bulk.wave_matches('{"\\x0003"}', '{1500}', 3500);
-- a live consumer already past them gets them in the late lane
SELECT originator_sequence_id, originator_envelope
  FROM xip83.live_envelopes('{100}', '{3500}', 10, :lc, 'bulk.em', 'bulk.eb');
SELECT xip83.late_cursor('bulk.em') AS lc \gset
-- late rows that a trigger of the partition keeps from being rewritten: refused
CREATE TABLE bulk.em_p1 (LIKE bulk.em INCLUDING DEFAULTS);
INSERT INTO bulk.em_p1 (originator_node_id, originator_sequence_id, topic) VALUES (100, 1000, '\x0002');
CREATE FUNCTION bulk.keep() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RETURN NULL; END$$;
CREATE TRIGGER keep BEFORE UPDATE ON bulk.em_p1 FOR EACH ROW EXECUTE FUNCTION bulk.keep();
ALTER TABLE bulk.em ATTACH PARTITION bulk.em_p1 FOR VALUES FROM (1000) TO (2000);
SELECT count(*) FROM pg_inherits WHERE inhrelid = 'bulk.em_p1'::regclass;
-- above the horizon, attached with a matching tracking index of its own
-- (LIKE ... INCLUDING ALL copies it), as a band of sub-partitions, and as the
-- default partition: live consumers read them in order, waves see them
CREATE TABLE bulk.em_p5 (LIKE bulk.em INCLUDING ALL) PARTITION BY LIST (originator_node_id);
CREATE TABLE bulk.em_p5_100 PARTITION OF bulk.em_p5 FOR VALUES IN (100);
INSERT INTO bulk.em_p5 (originator_node_id, originator_sequence_id, topic)
    SELECT 100, i, '\x0005' FROM generate_series(5000, 5002) i;
CREATE TABLE bulk.eb_p5 (LIKE bulk.eb INCLUDING ALL);
INSERT INTO bulk.eb_p5 SELECT 100, i, ('e' || i)::bytea FROM generate_series(5000, 5002) i;
CREATE TABLE bulk.em_def (LIKE bulk.em INCLUDING ALL);
INSERT INTO bulk.em_def (originator_node_id, originator_sequence_id, topic) VALUES (100, 7000, '\x0007');
CREATE TABLE bulk.eb_def (LIKE bulk.eb INCLUDING ALL);
INSERT INTO bulk.eb_def VALUES (100, 7000, 'e7000');
SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam
 WHERE a.amname = 'xip83_track' AND i.indrelid = 'bulk.em_p5_100'::regclass;
ALTER TABLE bulk.em ATTACH PARTITION bulk.em_p5 FOR VALUES FROM (5000) TO (6000);
ALTER TABLE bulk.eb ATTACH PARTITION bulk.eb_p5 FOR VALUES FROM (5000) TO (6000);
ALTER TABLE bulk.em ATTACH PARTITION bulk.em_def DEFAULT;
ALTER TABLE bulk.eb ATTACH PARTITION bulk.eb_def DEFAULT;
SELECT * FROM xip83.envelope_horizons('bulk.em');
SELECT originator_sequence_id, originator_envelope
  FROM xip83.live_envelopes('{100}', '{3500}', 10, :lc, 'bulk.em', 'bulk.eb');
SELECT bulk.wave_matches('{"\\x0005","\\x0007"}', '{4000,4000}', 7000);
SELECT bulk.wave_matches('{"\\x0001","\\x0003","\\x0005","\\x0007"}', '{-1,-1,-1,-1}', 7000);
-- a rolled-back attach registers nothing that commits
CREATE TABLE bulk.em_p8 (LIKE bulk.em INCLUDING DEFAULTS);
INSERT INTO bulk.em_p8 (originator_node_id, originator_sequence_id, topic) VALUES (100, 8000, '\x0008');
ALTER TABLE bulk.em DETACH PARTITION bulk.em_def;
BEGIN;
ALTER TABLE bulk.em ATTACH PARTITION bulk.em_p8 FOR VALUES FROM (8000) TO (9000);
ROLLBACK;
SELECT * FROM xip83.envelope_horizons('bulk.em');
-- rewriting a tracked column, or dropping what registers writes, is refused
ALTER TABLE bulk.em ALTER COLUMN originator_sequence_id TYPE bigint USING originator_sequence_id + 10;
ALTER TABLE bulk.em ALTER COLUMN topic TYPE bytea USING topic || '\x00';
ALTER TABLE bulk.eb ALTER COLUMN originator_node_id TYPE int USING originator_node_id + 1;
DROP INDEX bulk.em_xip83_track;
DROP INDEX bulk.eb_xip83_track;
DROP TRIGGER xip83_register_position ON bulk.em;
DROP TRIGGER xip83_reset_positions ON bulk.em;
-- other columns may change; untrack drops the index, and tracking again works
ALTER TABLE bulk.em ALTER COLUMN payer_id TYPE bigint;
SELECT xip83.untrack('bulk.em');
SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam
 WHERE a.amname = 'xip83_track' AND i.indrelid IN (SELECT relid FROM pg_partition_tree('bulk.em')
                                                   UNION ALL SELECT relid FROM pg_partition_tree('bulk.eb'));
ALTER TABLE bulk.em ALTER COLUMN payer_id TYPE int;
SELECT xip83.track('bulk.em', 'envelope', 'bulk.eb');
SELECT bulk.wave_matches('{"\\x0001","\\x0003","\\x0005"}', '{3500,3500,3500}', 5002);
DROP SCHEMA bulk CASCADE;
DROP FUNCTION wave_d14n_reference_page, wave_d14n_reference_ceilings, wave_d14n_production_layout,
              wave_d14n_add_band, wave_d14n_load_split, wave_d14n_generate;
