-- A source given by OID skips the name lookup that checks USAGE on its schema:
-- the scans and ceilings check it themselves (42501), on source and blob_source,
-- besides SELECT on the tables.
CREATE SCHEMA regress_hidden;
CREATE TABLE regress_hidden.gm (id bigint PRIMARY KEY, created_at timestamp NOT NULL DEFAULT now(),
                                group_id bytea NOT NULL, data bytea NOT NULL, is_commit boolean,
                                sender_hmac bytea, should_push boolean);
CREATE INDEX ON regress_hidden.gm (group_id, id);
INSERT INTO regress_hidden.gm (id, group_id, data) VALUES (1, '\x0a', 'secret');
CREATE TABLE regress_hidden.env (originator_node_id int, originator_sequence_id bigint,
                                 topic bytea, gateway_time timestamp DEFAULT now(),
                                 originator_envelope bytea,
                                 PRIMARY KEY (originator_node_id, originator_sequence_id));
CREATE INDEX ON regress_hidden.env (topic, originator_node_id, originator_sequence_id);
INSERT INTO regress_hidden.env VALUES (1, 1, '\x0a', now(), 'secret');
CREATE TABLE public.regress_meta (originator_node_id int, originator_sequence_id bigint,
                                  topic bytea, gateway_time timestamp DEFAULT now(),
                                  PRIMARY KEY (originator_node_id, originator_sequence_id));
CREATE INDEX ON public.regress_meta (topic, originator_node_id, originator_sequence_id);
INSERT INTO public.regress_meta VALUES (1, 1, '\x0a', now());

CREATE ROLE regress_outsider;
GRANT USAGE ON SCHEMA xip83 TO regress_outsider;
-- SELECT on the tables, but no USAGE on their schema
GRANT SELECT ON regress_hidden.gm, regress_hidden.env, public.regress_meta TO regress_outsider;
SELECT 'regress_hidden.gm'::regclass::oid AS gm, 'regress_hidden.env'::regclass::oid AS env \gset

SET ROLE regress_outsider;
SELECT * FROM regress_hidden.gm;
SELECT data FROM xip83.group_wave_scan(ARRAY['\x0a']::bytea[], '{0}', 0, 100, 10, :gm::regclass);
SELECT data FROM xip83.group_wave_stream(ARRAY['\x0a']::bytea[], '{0}', 0, 100, :gm::regclass);
SELECT xip83.group_ceiling(:gm::regclass);
SELECT originator_envelope FROM xip83.envelope_wave_scan(ARRAY['\x0a']::bytea[], '{1}', '{0}', '{1}', '{10}',
                                                         0, 0, 10, :env::regclass);
SELECT originator_envelope FROM xip83.envelope_wave_scan(ARRAY['\x0a']::bytea[], '{1}', '{0}', '{1}', '{10}',
                                                         0, 0, 10, 'public.regress_meta', :env::regclass);
SELECT * FROM xip83.originator_ceilings(NULL, :env::regclass);
RESET ROLE;

-- With USAGE the same calls read.
GRANT USAGE ON SCHEMA regress_hidden TO regress_outsider;
SET ROLE regress_outsider;
SELECT data FROM xip83.group_wave_scan(ARRAY['\x0a']::bytea[], '{0}', 0, 100, 10, :gm::regclass);
SELECT xip83.group_ceiling(:gm::regclass);
SELECT originator_envelope FROM xip83.envelope_wave_scan(ARRAY['\x0a']::bytea[], '{1}', '{0}', '{1}', '{10}',
                                                         0, 0, 10, 'public.regress_meta', :env::regclass);
SELECT * FROM xip83.originator_ceilings(NULL, :env::regclass);
RESET ROLE;

DROP SCHEMA regress_hidden CASCADE;
DROP TABLE public.regress_meta;
REVOKE ALL ON SCHEMA xip83 FROM regress_outsider;
DROP ROLE regress_outsider;
