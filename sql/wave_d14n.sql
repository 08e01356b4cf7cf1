-- d14n waves: envelope_wave_scan pages and originator_ceilings, on the plain
-- table and on production's partitioned meta/blob layout; bad input, layout
-- errors, privileges and row-level security.
-- Starts from empty tables and fresh ids, whatever ran before in this database.
TRUNCATE xip83.group_messages, xip83.welcome_messages, xip83.envelopes RESTART IDENTITY;
\set ECHO none
\getenv abs_srcdir PG_ABS_SRCDIR
\set reference_sql :abs_srcdir '/tests/wave_d14n_reference.sql'
\i :reference_sql
\set ECHO all

-- Three originators; topics '\x00' || int4; originator 30 has its sequences
-- spread over three bands of 1,000,000.
INSERT INTO xip83.envelopes (originator_node_id, originator_sequence_id, topic, gateway_time,
                             originator_envelope)
SELECT o, s, '\x00'::bytea || int4send(s::int % 3), timestamp '2026-02-01' + s * interval '1 s',
       int4send(o) || int8send(s)
  FROM (VALUES (10), (20), (30)) AS v(o),
       LATERAL generate_series(1, 6) AS g(i),
       LATERAL (SELECT CASE WHEN o = 30 THEN i * 450000 ELSE i END AS s) AS q;

CREATE SCHEMA prod;
SELECT wave_d14n_production_layout('prod.meta', 'prod.blob');
SELECT wave_d14n_load_split('xip83.envelopes', 'prod.meta', 'prod.blob');
SELECT count(*) AS leaves FROM pg_partition_tree('prod.meta') WHERE isleaf;

-- The ceilings: every originator present (a loose index scan), or a list.
SELECT * FROM xip83.originator_ceilings();
SELECT * FROM xip83.originator_ceilings(NULL, 'prod.meta');
SELECT * FROM xip83.originator_ceilings('{30,99,10,10}', 'prod.blob');
SELECT * FROM xip83.originator_ceilings('{}');

-- A wave of topics 0 and 1 from every originator, with pinned ceilings; a
-- repeated entry counts once with its lowest floor.
CREATE TABLE wave AS
SELECT ARRAY['\x0000000000', '\x0000000001', '\x0000000000', '\x0000000001',
             '\x0000000000', '\x0000000001', '\x0000000000']::bytea[] AS topics,
       '{10,10,20,20,30,30,10}'::int[] AS nodes,
       '{0,0,2,0,0,0,3}'::bigint[] AS floors,
       ARRAY(SELECT originator_node_id FROM xip83.originator_ceilings()) AS ceiling_nodes,
       ARRAY(SELECT max_sequence_id FROM xip83.originator_ceilings()) AS ceilings;

-- Paged the way a node pages it: each page starts after the last row of the previous one.
SELECT originator_node_id, originator_sequence_id, topic, originator_envelope
  FROM wave, xip83.envelope_wave_scan(topics, nodes, floors, ceiling_nodes, ceilings, 0, 0, 4);
SELECT originator_node_id, originator_sequence_id, topic
  FROM wave, xip83.envelope_wave_scan(topics, nodes, floors, ceiling_nodes, ceilings, 20, 2, 4);
SELECT originator_node_id, originator_sequence_id, topic
  FROM wave, xip83.envelope_wave_scan(topics, nodes, floors, ceiling_nodes, ceilings, 30, 900000, 4);

-- The whole wave as a stream read through a cursor: the same rows, one FETCH at a time.
BEGIN;
DECLARE w CURSOR FOR
SELECT s.originator_node_id, s.originator_sequence_id, s.topic
  FROM wave, xip83.envelope_wave_stream(topics, nodes, floors, ceiling_nodes, ceilings, 0, 0) s;
FETCH 5 FROM w;
FETCH 5 FROM w;
CLOSE w;
COMMIT;

-- The same wave on the partitioned meta/blob tables, and the definition.
SELECT originator_node_id, originator_sequence_id, topic, originator_envelope
  FROM wave, xip83.envelope_wave_scan(topics, nodes, floors, ceiling_nodes, ceilings, 0, 0,
                                      100, 'prod.meta', 'prod.blob');
SELECT count(*) AS differences FROM (
    (SELECT * FROM wave, xip83.envelope_wave_scan(topics, nodes, floors, ceiling_nodes, ceilings,
                                                  0, 0, 100, 'prod.meta', 'prod.blob')
     EXCEPT ALL
     SELECT * FROM wave, wave_d14n_reference_page(topics, nodes, floors, ceiling_nodes, ceilings,
                                                  0, 0, 100))
    UNION ALL
    (SELECT * FROM wave, wave_d14n_reference_page(topics, nodes, floors, ceiling_nodes, ceilings,
                                                  0, 0, 100)
     EXCEPT ALL
     SELECT * FROM wave, xip83.envelope_wave_scan(topics, nodes, floors, ceiling_nodes, ceilings,
                                                  0, 0, 100, 'prod.meta', 'prod.blob'))) d;

-- Ceilings below floors, an originator without a ceiling, one without rows.
SELECT originator_node_id, originator_sequence_id
  FROM xip83.envelope_wave_scan('{"\\x0000000000","\\x0000000000","\\x0000000000"}',
                                '{10,20,77}', '{5,0,0}', '{10,10,77}', '{4,6,9}', 0, 0, 10);
-- A meta row whose blob row is missing is left out, as the join leaves it out.
DELETE FROM prod.blob WHERE originator_node_id = 10 AND originator_sequence_id = 3;
SELECT originator_node_id, originator_sequence_id
  FROM xip83.envelope_wave_scan('{"\\x0000000000"}', '{10}', '{0}', '{10}', '{6}', 0, 0, 2,
                                'prod.meta', 'prod.blob');
-- A partition added while a wave is paged is read by the next page.
SELECT wave_d14n_add_band('prod.meta', 30, 9), wave_d14n_add_band('prod.blob', 30, 9);
INSERT INTO prod.meta (originator_node_id, originator_sequence_id, topic)
VALUES (30, 9000001, '\x0000000000');
INSERT INTO prod.blob VALUES (30, 9000001, '\xaa');
SELECT originator_node_id, originator_sequence_id, originator_envelope
  FROM xip83.envelope_wave_scan('{"\\x0000000000"}', '{30}', '{0}', '{30}', '{9000001}',
                                30, 1350000, 10, 'prod.meta', 'prod.blob');
SELECT * FROM xip83.originator_ceilings('{30}', 'prod.meta');

-- Bad input.
\set VERBOSITY terse
SELECT * FROM xip83.envelope_wave_scan(NULL, '{}', '{}', '{}', '{}', 0, 0, 10);
SELECT * FROM xip83.envelope_wave_scan('{}', '{}', '{}', '{}', '{}', NULL, 0, 10);
SELECT * FROM xip83.envelope_wave_scan('{}', '{}', '{}', '{}', '{}', 0, 0, 10, NULL);
SELECT * FROM xip83.envelope_wave_scan('{"\\x00"}', '{1,2}', '{0}', '{}', '{}', 0, 0, 10);
SELECT * FROM xip83.envelope_wave_scan('{}', '{}', '{}', '{1}', '{}', 0, 0, 10);
SELECT * FROM xip83.envelope_wave_scan('{"\\x00",NULL}', '{1,2}', '{0,0}', '{}', '{}', 0, 0, 10);
SELECT * FROM xip83.envelope_wave_scan('{""}', '{1}', '{0}', '{}', '{}', 0, 0, 10);
SELECT * FROM xip83.envelope_wave_scan('{}', '{}', '{}', '{}', '{}', 0, 0, 0);
SELECT * FROM xip83.envelope_wave_scan('{}', '{}', '{}', '{}', '{}', 0, 0, 10001);
SELECT * FROM xip83.originator_ceilings('{1,NULL}');
SELECT * FROM xip83.originator_ceilings(NULL, NULL);

-- Sources of the wrong layout: the meta table has no payload of its own, a
-- table without the topic index, a view.
SELECT * FROM xip83.envelope_wave_scan('{}', '{}', '{}', '{}', '{}', 0, 0, 10, 'prod.meta');
CREATE TABLE bare (originator_node_id int, originator_sequence_id bigint, topic bytea,
                   gateway_time timestamp, originator_envelope bytea);
\set VERBOSITY default
SELECT * FROM xip83.envelope_wave_scan('{}', '{}', '{}', '{}', '{}', 0, 0, 10, 'bare');
SELECT * FROM xip83.originator_ceilings(NULL, 'bare');
\set VERBOSITY terse
CREATE VIEW envelopes_view AS SELECT * FROM xip83.envelopes;
SELECT * FROM xip83.originator_ceilings(NULL, 'envelopes_view');
CREATE TABLE wrong_type (originator_node_id bigint, originator_sequence_id bigint);
SELECT * FROM xip83.originator_ceilings(NULL, 'wrong_type');

-- Privileges: reading the indexes needs SELECT, as SQL would; row-level
-- security is refused rather than bypassed.
CREATE ROLE wave_d14n_reader;
GRANT USAGE ON SCHEMA xip83, prod TO wave_d14n_reader;
GRANT SELECT ON prod.meta TO wave_d14n_reader;
SET ROLE wave_d14n_reader;
SELECT * FROM xip83.originator_ceilings();
SELECT count(*) FROM xip83.envelope_wave_scan('{"\\x0000000000"}', '{10}', '{0}', '{10}', '{6}',
                                              0, 0, 10, 'prod.meta', 'prod.blob');
SELECT * FROM xip83.originator_ceilings(NULL, 'prod.meta');
RESET ROLE;
GRANT SELECT ON prod.blob TO wave_d14n_reader;
ALTER TABLE prod.meta ENABLE ROW LEVEL SECURITY;
CREATE POLICY only_10 ON prod.meta USING (originator_node_id = 10);
SET ROLE wave_d14n_reader;
SELECT count(*) FROM prod.meta;
SELECT * FROM xip83.originator_ceilings(NULL, 'prod.meta');
RESET ROLE;
-- the owner bypasses its own table's policies, so its scans read every row
SELECT * FROM xip83.originator_ceilings(NULL, 'prod.meta');
ALTER TABLE prod.meta DISABLE ROW LEVEL SECURITY;
SET ROLE wave_d14n_reader;
SELECT count(*) FROM xip83.envelope_wave_scan('{"\\x0000000000"}', '{10}', '{0}', '{10}', '{6}',
                                              0, 0, 10, 'prod.meta', 'prod.blob');
RESET ROLE;
\set VERBOSITY default

DROP POLICY only_10 ON prod.meta;
REVOKE ALL ON prod.meta, prod.blob FROM wave_d14n_reader;
REVOKE ALL ON SCHEMA xip83, prod FROM wave_d14n_reader;
DROP ROLE wave_d14n_reader;
DROP SCHEMA prod CASCADE;
DROP TABLE wave, bare, wrong_type;
DROP VIEW envelopes_view;
TRUNCATE xip83.envelopes;
DROP FUNCTION wave_d14n_reference_page, wave_d14n_reference_ceilings, wave_d14n_production_layout,
              wave_d14n_add_band, wave_d14n_load_split, wave_d14n_generate;
