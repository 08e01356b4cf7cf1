-- The topic summary (src/core/summary.c) lets a wave skip a topic whose
-- floor is at or above every position written to it, for every topic of a
-- feed. Here its pass reads rows stored before the feed was loaded (rows of
-- node tables written before xip83.track, plain and partitioned),
-- and waves must still equal the plain SQL definition after rows arrive by
-- ATTACH PARTITION, by an UPDATE of their topic, deleted and inserted again,
-- and by xip83.import. t_recent_waves covers restarts, crashes in the pass,
-- a summary far smaller than the topics, and none.
SET client_min_messages = warning;
SET xip83.max_page_limit = 1000000;
TRUNCATE xip83.group_messages, xip83.welcome_messages, xip83.envelopes RESTART IDENTITY;
CREATE SCHEMA sm;

-- The state of a feed's summary once its pass is done (a wave asks for the
-- pass), or what it still is after 30 s.
CREATE FUNCTION sm.ready(source regclass, kind text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE st text;
BEGIN
  FOR i IN 1..600 LOOP
    IF kind = 'envelope' THEN
      PERFORM count(*) FROM xip83.envelope_wave_scan('{x}', '{1}', '{0}', '{1}', '{1}', 0, 0, 1, source);
    ELSE
      PERFORM count(*) FROM xip83.group_wave_scan('{x}', '{0}', 0, 1, 1, source);
    END IF;
    IF source = 'xip83.group_messages'::regclass THEN
      SELECT summary_states[1] INTO st FROM xip83.feed_status;
    ELSE
      SELECT t.summary_state INTO st FROM xip83.tracked t WHERE t.source = ready.source;
    END IF;
    EXIT WHEN st = 'ready';
    PERFORM pg_sleep(0.05);
  END LOOP;
  RETURN st;
END $$;

-- A group wave from the floors of sm.seen (each topic's last id when it was
-- taken, minus lag), against its definition.
CREATE TABLE sm.seen (topic bytea PRIMARY KEY, last bigint);
CREATE FUNCTION sm.take_seen(source regclass) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  TRUNCATE sm.seen;
  EXECUTE format('INSERT INTO sm.seen SELECT group_id, max(id) FROM %s GROUP BY 1', source);
END $$;
CREATE FUNCTION sm.diff_group(source regclass, lag bigint) RETURNS text LANGUAGE plpgsql AS $$
DECLARE topics bytea[]; floors bigint[]; ceil bigint := xip83.group_ceiling(source);
  got bigint[]; want bigint[];
BEGIN
  SELECT array_agg(topic ORDER BY topic), array_agg(last - lag ORDER BY topic)
    INTO topics, floors FROM sm.seen;
  SELECT array_agg(id ORDER BY id) INTO got
    FROM xip83.group_wave_scan(topics, floors, 0, ceil, 100000, source);
  EXECUTE format('SELECT array_agg(id ORDER BY id) FROM %s m WHERE id <= $3 AND EXISTS'
                 ' (SELECT 1 FROM unnest($1, $2) f(t, fl) WHERE f.t = m.group_id AND m.id > f.fl)', source)
    INTO want USING topics, floors, ceil;
  RETURN format('%s rows, %s', coalesce(cardinality(want), 0),
                CASE WHEN got IS NOT DISTINCT FROM want THEN 'same' ELSE 'DIFFERENT' END);
END $$;

-- a node's table filled before it is tracked: only the summary's pass can
-- know these rows
CREATE TABLE sm.g (
    id bigserial PRIMARY KEY, created_at timestamp NOT NULL DEFAULT now(),
    group_id bytea NOT NULL, data bytea NOT NULL, group_id_data_hash bytea NOT NULL,
    is_commit boolean, sender_hmac bytea, should_push boolean);
CREATE INDEX ON sm.g (group_id, id);
INSERT INTO sm.g (group_id, data, group_id_data_hash)
    SELECT ('a' || i % 300)::bytea, int8send(i), int8send(i) FROM generate_series(1, 4000) i;
SELECT xip83.track('sm.g', 'group');
SELECT sm.ready('sm.g', 'group');
SELECT summary_rows FROM xip83.tracked WHERE source = 'sm.g'::regclass;
SELECT sm.take_seen('sm.g');
-- caught up, and lagging by 1 and 5 ids
SELECT sm.diff_group('sm.g', 0), sm.diff_group('sm.g', 1), sm.diff_group('sm.g', 5);
-- new rows for some topics
INSERT INTO sm.g (group_id, data, group_id_data_hash)
    SELECT ('a' || i % 7)::bytea, int8send(-i), int8send(-i) FROM generate_series(1, 20) i;
SELECT sm.diff_group('sm.g', 0), sm.diff_group('sm.g', 2);
-- a row moved to a quiet topic, one deleted and inserted again
SELECT sm.take_seen('sm.g');
UPDATE sm.g SET group_id = 'a250' WHERE id = 3999;
WITH d AS (DELETE FROM sm.g WHERE id = 3995 RETURNING *) INSERT INTO sm.g SELECT * FROM d;
SELECT sm.diff_group('sm.g', 0), sm.diff_group('sm.g', 1);
SELECT summary_state FROM xip83.tracked WHERE source = 'sm.g'::regclass;

-- 1,000 topics written before tracking, so that only the summary knows
-- them: a caught-up wave over all of them opens no scan at all. Each topic
-- has a slot of its own in the default summary's 2,048 blocks, so the
-- answer is exact; two buckets per key shared with its block's other keys
-- said "may" for about one topic in a hundred, and each of those descended
-- its index.
CREATE TABLE sm.x (
    id bigserial PRIMARY KEY, created_at timestamp NOT NULL DEFAULT now(),
    group_id bytea NOT NULL, data bytea NOT NULL, group_id_data_hash bytea NOT NULL,
    is_commit boolean, sender_hmac bytea, should_push boolean);
CREATE INDEX ON sm.x (group_id, id);
INSERT INTO sm.x (group_id, data, group_id_data_hash)
    SELECT ('x' || i % 1000)::bytea, int8send(i), int8send(i) FROM generate_series(1, 2000) i;
SELECT xip83.track('sm.x', 'group');
SELECT sm.ready('sm.x', 'group');
SELECT sm.take_seen('sm.x');
-- scans counted since the stats were last sent: a difference in one transaction
CREATE FUNCTION sm.scans_x() RETURNS bigint LANGUAGE sql AS $$
  SELECT sum(pg_stat_get_xact_numscans(c.oid)) FROM pg_class c WHERE c.oid = 'sm.x'::regclass
      OR c.oid IN (SELECT indexrelid FROM pg_index WHERE indrelid = 'sm.x'::regclass) $$;
SELECT xip83.group_ceiling('sm.x') AS ceil \gset
BEGIN;
SELECT sm.scans_x() AS before \gset
SELECT count(*) FROM xip83.group_wave_scan((SELECT array_agg(topic) FROM sm.seen),
    (SELECT array_agg(last) FROM sm.seen), 0, :ceil, 100000, 'sm.x');
SELECT sm.scans_x() - :before AS scans;
COMMIT;
SELECT sm.diff_group('sm.x', 0), sm.diff_group('sm.x', 1);

-- envelopes in a node table partitioned by sequence band, with a gap,
-- written before tracking; waves per (topic, originator)
CREATE TABLE sm.e (
    originator_node_id int NOT NULL, originator_sequence_id bigint NOT NULL,
    topic bytea NOT NULL, gateway_time timestamp NOT NULL DEFAULT now(),
    expiry bigint NOT NULL DEFAULT 0, payer_id int, originator_envelope bytea NOT NULL,
    PRIMARY KEY (originator_node_id, originator_sequence_id)) PARTITION BY RANGE (originator_sequence_id);
CREATE INDEX ON sm.e (topic, originator_node_id, originator_sequence_id);
CREATE TABLE sm.e_p0 PARTITION OF sm.e FOR VALUES FROM (0) TO (500);
CREATE TABLE sm.e_p2 PARTITION OF sm.e FOR VALUES FROM (600) TO (100000);
INSERT INTO sm.e (originator_node_id, originator_sequence_id, topic, originator_envelope)
    SELECT n, i, ('t' || (i * n) % 97)::bytea, '\x01'
      FROM generate_series(1, 1000) i, unnest('{100,200,300}'::int[]) n WHERE i < 500 OR i >= 600;
SELECT xip83.track('sm.e', 'envelope');
SELECT sm.ready('sm.e', 'envelope');
CREATE TABLE sm.seen_e (topic bytea, node int, last bigint, PRIMARY KEY (topic, node));
CREATE FUNCTION sm.diff_env(lag bigint) RETURNS text LANGUAGE plpgsql AS $$
DECLARE topics bytea[]; nodes int[]; floors bigint[]; cn int[]; cs bigint[]; got text[]; want text[];
BEGIN
  SELECT array_agg(topic ORDER BY topic, node), array_agg(node ORDER BY topic, node),
         array_agg(last - lag ORDER BY topic, node) INTO topics, nodes, floors FROM sm.seen_e;
  SELECT array_agg(originator_node_id), array_agg(max_sequence_id) INTO cn, cs
    FROM xip83.originator_ceilings(NULL, 'sm.e');
  SELECT array_agg(originator_node_id || ':' || originator_sequence_id
                   ORDER BY originator_node_id, originator_sequence_id) INTO got
    FROM xip83.envelope_wave_scan(topics, nodes, floors, cn, cs, 0, 0, 100000, 'sm.e');
  SELECT array_agg(m.originator_node_id || ':' || m.originator_sequence_id
                   ORDER BY m.originator_node_id, m.originator_sequence_id) INTO want
    FROM sm.e m JOIN unnest(cn, cs) c(node, ceil) ON c.node = m.originator_node_id
   WHERE m.originator_sequence_id <= c.ceil AND EXISTS (SELECT 1 FROM unnest(topics, nodes, floors) f(t, n, fl)
           WHERE f.t = m.topic AND f.n = m.originator_node_id AND m.originator_sequence_id > f.fl);
  RETURN format('%s rows, %s', coalesce(cardinality(want), 0),
                CASE WHEN got IS NOT DISTINCT FROM want THEN 'same' ELSE 'DIFFERENT' END);
END $$;
INSERT INTO sm.seen_e SELECT topic, originator_node_id, max(originator_sequence_id) FROM sm.e GROUP BY 1, 2;
SELECT sm.diff_env(0), sm.diff_env(1), sm.diff_env(4);
-- new envelopes of one originator, a topic moved, a row deleted and written again
INSERT INTO sm.e (originator_node_id, originator_sequence_id, topic, originator_envelope)
    SELECT 200, 1000 + i, ('t' || i)::bytea, '\x02' FROM generate_series(1, 10) i;
UPDATE sm.e SET topic = 't50' WHERE originator_node_id = 300 AND originator_sequence_id = 999;
WITH d AS (DELETE FROM sm.e WHERE originator_node_id = 100 AND originator_sequence_id = 998 RETURNING *)
    INSERT INTO sm.e SELECT * FROM d;
SELECT sm.diff_env(0), sm.diff_env(1);
-- a band filled beside the table and attached into the gap, below the
-- horizons, for topics whose floors are below it
TRUNCATE sm.seen_e;
INSERT INTO sm.seen_e SELECT topic, originator_node_id, 0 FROM sm.e GROUP BY 1, 2;
UPDATE sm.seen_e s SET last = m.last FROM (SELECT topic, originator_node_id n, max(originator_sequence_id) last
    FROM sm.e WHERE originator_sequence_id < 500 GROUP BY 1, 2) m WHERE m.topic = s.topic AND m.n = s.node;
CREATE TABLE sm.e_p1 (LIKE sm.e INCLUDING DEFAULTS INCLUDING CONSTRAINTS);
INSERT INTO sm.e_p1 (originator_node_id, originator_sequence_id, topic, originator_envelope)
    SELECT n, i, ('t' || (i * n) % 97)::bytea, '\x03' FROM generate_series(500, 599) i, unnest('{100,300}'::int[]) n;
SELECT sm.diff_env(0);
ALTER TABLE sm.e ATTACH PARTITION sm.e_p1 FOR VALUES FROM (500) TO (600);
SELECT sm.diff_env(0);
SELECT summary_state FROM xip83.tracked WHERE source = 'sm.e'::regclass;

-- xip83's own table filled by xip83.import from a node's table
CREATE TABLE sm.ng (
    id bigserial PRIMARY KEY, created_at timestamp NOT NULL DEFAULT now(),
    group_id bytea NOT NULL, data bytea NOT NULL, group_id_data_hash bytea NOT NULL UNIQUE,
    is_commit boolean, sender_hmac bytea, should_push boolean);
CREATE INDEX ON sm.ng (group_id, id);
INSERT INTO sm.ng (id, group_id, data, group_id_data_hash)
    SELECT i, ('n' || i % 50)::bytea, int8send(i), sha256(('n' || i % 50)::bytea || int8send(i))
      FROM generate_series(101, 700) i;
SELECT count(*) FROM xip83.insert_group_messages(
    ARRAY(SELECT ('n' || i % 60)::bytea FROM generate_series(1, 100) i),
    ARRAY(SELECT int8send(-i) FROM generate_series(1, 100) i));
SELECT sm.ready('xip83.group_messages', 'group');
SELECT sm.take_seen('xip83.group_messages');
CALL xip83.import('sm.ng', 'xip83.group_messages', 250);
SELECT sm.diff_group('xip83.group_messages', 0), sm.diff_group('xip83.group_messages', 2);
SELECT sm.take_seen('xip83.group_messages');
SELECT sm.diff_group('xip83.group_messages', 0), sm.diff_group('xip83.group_messages', 7);

-- Tracked and written in one transaction: the write loads the feed and asks
-- for a pass while the track is not committed. The pass must not take the
-- table as read (it cannot see it tracked, so it read nothing of the rows
-- stored before): the summary stays unready until the commit, then the
-- pass reads them.
CREATE TABLE sm.t (
    id bigserial PRIMARY KEY, created_at timestamp NOT NULL DEFAULT now(),
    group_id bytea NOT NULL, data bytea NOT NULL, group_id_data_hash bytea NOT NULL,
    is_commit boolean, sender_hmac bytea, should_push boolean);
CREATE INDEX ON sm.t (group_id, id);
INSERT INTO sm.t (id, group_id, data, group_id_data_hash)
    SELECT i, 'old', int8send(i), int8send(i) FROM generate_series(1, 100) i;
SELECT setval('sm.t_id_seq', 1000);
BEGIN;
SELECT xip83.track('sm.t', 'group');
INSERT INTO sm.t (group_id, data, group_id_data_hash) VALUES ('new', 'x', 'x');
-- the worker's tries while this transaction is open (a wave asks for it)
DO $$
BEGIN
  FOR i IN 1..30 LOOP
    PERFORM count(*) FROM xip83.group_wave_scan('{x}', '{0}', 0, 1, 1, 'sm.t');
    PERFORM pg_sleep(0.1);
  END LOOP;
END $$;
SELECT summary_state <> 'ready' AS unready_before_commit FROM xip83.tracked WHERE source = 'sm.t'::regclass;
COMMIT;
SELECT sm.ready('sm.t', 'group');
SELECT count(*) AS old_rows_above_50 FROM xip83.group_wave_scan('{old}', '{50}', 0,
    xip83.group_ceiling('sm.t'), 1000, 'sm.t');

SELECT xip83.untrack('sm.g'), xip83.untrack('sm.x'), xip83.untrack('sm.e'), xip83.untrack('sm.t');
DROP SCHEMA sm CASCADE;
TRUNCATE xip83.group_messages, xip83.welcome_messages, xip83.envelopes RESTART IDENTITY;
