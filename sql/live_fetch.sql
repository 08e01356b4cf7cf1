-- Live fetch and horizons over plain INSERT, COPY and the batch functions:
-- the C functions against their SQL definition, argument errors, explicit
-- ids, privileges and TRUNCATE. Positions are shown relative to where this
-- file starts, so earlier files may leave rows behind.
SET client_min_messages = warning;
TRUNCATE xip83.group_messages, xip83.welcome_messages, xip83.envelopes RESTART IDENTITY;
SELECT xip83.late_cursor() AS lc0 \gset
SELECT xip83.group_horizon() AS g0, xip83.welcome_horizon() AS w0 \gset

-- Plain INSERT, COPY and the batch function all register their ids.
INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash)
SELECT int4send(i % 7), int4send(i), sha256(int4send(i % 7) || int4send(i))
  FROM generate_series(1, 300) i;
COPY xip83.group_messages (group_id, data, group_id_data_hash) FROM stdin;
\\x0a	\\x01	\\x01
\\x0a	\\x02	\\x02
\.
SELECT count(*) FROM xip83.insert_group_messages(ARRAY['\x0b', '\x0c']::bytea[],
                                                 ARRAY['\x0b0b', '\x0c0c']::bytea[]);
INSERT INTO xip83.welcome_messages (installation_key, data, installation_key_data_hash)
SELECT int4send(i % 5), int4send(i), sha256(int4send(i % 5) || int4send(i))
  FROM generate_series(1, 50) i;

-- Nothing is in flight: the horizons reach the highest ids.
SELECT xip83.group_horizon() - :g0 AS group_ahead,
       xip83.group_horizon() = (SELECT max(id) FROM xip83.group_messages) AS group_at_max,
       xip83.welcome_horizon() - :w0 AS welcome_ahead,
       xip83.welcome_horizon() = (SELECT max(id) FROM xip83.welcome_messages) AS welcome_at_max;

-- The definition: rows with after < id <= horizon, by id, at most row_limit
-- (no late writes since late cursor lc0). 300 random (after, limit) pairs,
-- every column compared row for row.
SELECT count(*) AS group_mismatches
  FROM (SELECT :g0 - 5 + (random() * 320)::int AS after, 1 + (random() * 40)::int AS lim
          FROM generate_series(1, 300)) p
 WHERE (SELECT array_agg(l ORDER BY l.id)
          FROM (SELECT id, created_at, group_id, data, is_commit, sender_hmac, should_push
                  FROM xip83.live_group_messages(p.after, p.lim, :lc0)) l)
       IS DISTINCT FROM
       (SELECT array_agg(m ORDER BY m.id)
          FROM (SELECT id, created_at, group_id, data, is_commit, sender_hmac, should_push
                  FROM xip83.group_messages
                 WHERE id > p.after AND id <= xip83.group_horizon()
                 ORDER BY id LIMIT p.lim) m);
SELECT count(*) AS welcome_mismatches
  FROM (SELECT :w0 - 5 + (random() * 60)::int AS after, 1 + (random() * 20)::int AS lim
          FROM generate_series(1, 200)) p
 WHERE (SELECT array_agg(l ORDER BY l.id)
          FROM (SELECT id, created_at, installation_key, data, hpke_public_key,
                       wrapper_algorithm, welcome_metadata, message_type
                  FROM xip83.live_welcome_messages(p.after, p.lim, :lc0)) l)
       IS DISTINCT FROM
       (SELECT array_agg(m ORDER BY m.id)
          FROM (SELECT id, created_at, installation_key, data, hpke_public_key,
                       wrapper_algorithm, welcome_metadata, message_type
                  FROM xip83.welcome_messages
                 WHERE id > p.after AND id <= xip83.welcome_horizon()
                 ORDER BY id LIMIT p.lim) m);

-- Envelopes of 4 originators; the fetch takes per-originator cursors.
INSERT INTO xip83.envelopes (originator_node_id, originator_sequence_id, topic, originator_envelope)
SELECT o, s, '\x03' || int4send(s % 3), int4send(o) || int8send(s)
  FROM generate_series(1, 4) o, generate_series(1, 40) s;
SELECT * FROM xip83.envelope_horizons();
SELECT count(*) AS envelope_mismatches
  FROM (SELECT ARRAY[1 + (random() * 4)::int, 1 + (random() * 4)::int, (random() * 4)::int] AS nodes,
               ARRAY[(random() * 45)::bigint, (random() * 45)::bigint, (random() * 45)::bigint] AS afters,
               1 + (random() * 60)::int AS lim
          FROM generate_series(1, 300)) p
 WHERE (SELECT array_agg(l ORDER BY l.originator_node_id, l.originator_sequence_id)
          FROM (SELECT originator_node_id, originator_sequence_id, gateway_time, topic,
                       originator_envelope
                  FROM xip83.live_envelopes(p.nodes, p.afters, p.lim, :lc0)) l)
       IS DISTINCT FROM
       (SELECT array_agg(e ORDER BY e.originator_node_id, e.originator_sequence_id)
          FROM (SELECT e.originator_node_id, e.originator_sequence_id, e.gateway_time, e.topic,
                       e.originator_envelope
                  FROM xip83.envelopes e
                  JOIN (SELECT n, min(a) AS a FROM unnest(p.nodes, p.afters) u(n, a) GROUP BY n) c
                    ON c.n = e.originator_node_id AND e.originator_sequence_id > c.a
                  JOIN xip83.envelope_horizons() h ON h.originator_node_id = e.originator_node_id
                 WHERE e.originator_sequence_id <= h.horizon
                 ORDER BY 1, 2 LIMIT p.lim) e);
SELECT originator_node_id, originator_sequence_id, late_cursor = :lc0 AS no_late
  FROM xip83.live_envelopes('{3,9,3,1}', '{38,0,36,39}', 10, :lc0);

-- Explicit positions: above everything is fine (the sequence follows); at
-- or below the horizon the row is stored and announced as a late write, and
-- a consumer past it gets it through the late lane, once.
INSERT INTO xip83.group_messages (id, group_id, data, group_id_data_hash)
VALUES (:g0 + 1000, '\x0d', '\x0d', sha256('\x0d'));
SELECT nextval('xip83.group_messages_id_seq') - :g0 AS next_after_explicit;
DELETE FROM xip83.group_messages WHERE id = :g0 + 3;
INSERT INTO xip83.group_messages (id, group_id, data, group_id_data_hash)
VALUES (:g0 + 3, '\x0e', '\x0e', sha256('\x0e'));
SELECT id - :g0 AS id, data, late_cursor > :lc0 AS late_cursor_moved
  FROM xip83.live_group_messages(:g0 + 500, 10, :lc0);
SELECT max(late_cursor) AS lc1 FROM xip83.live_group_messages(:g0 + 500, 10, :lc0) \gset
SELECT count(*) AS again FROM xip83.live_group_messages(:g0 + 2000, 10, :lc1);
-- a consumer that has not reached the late row yet gets it from the range, once
SELECT id - :g0 AS id, data FROM xip83.live_group_messages(:g0 + 2, 2, :lc0);
-- a repeat of a stored row is no late write: nothing is delivered twice
INSERT INTO xip83.group_messages (id, group_id, data, group_id_data_hash)
VALUES (:g0 + 3, '\x0e', '\x0e', sha256('\x0e')) ON CONFLICT DO NOTHING;
SELECT count(*) AS repeat_delivered FROM xip83.live_group_messages(:g0 + 2000, 10, :lc1);
SELECT late_writes >= 1 AS late_counted FROM xip83.feed_status;
-- A late row carries the late cursor up to its own entry: a client that kept
-- only the first row of a result (a dropped connection; here a LIMIT) gets
-- the other late rows by passing that row's cursor.
SELECT xip83.late_cursor() AS lc2 \gset
DELETE FROM xip83.group_messages WHERE id BETWEEN :g0 + 4 AND :g0 + 6;
INSERT INTO xip83.group_messages (id, group_id, data, group_id_data_hash)
SELECT :g0 + i, '\x0f', int4send(i), sha256('\x0f' || int4send(i)) FROM generate_series(4, 6) i;
SELECT id - :g0 AS first_id, late_cursor AS lc3
  FROM xip83.live_group_messages(:g0 + 2000, 10, :lc2) LIMIT 1 \gset
SELECT :first_id AS first_late_id, :lc3 > :lc2 AS cursor_moved;
SELECT id - :g0 AS id FROM xip83.live_group_messages(:g0 + 2000, 10, :lc3);
INSERT INTO xip83.envelopes (originator_node_id, originator_sequence_id, topic, originator_envelope)
VALUES (2, 7, '\x03aa', '\x00');
INSERT INTO xip83.envelopes (originator_node_id, originator_sequence_id, topic, originator_envelope)
VALUES (2, 7, '\x03aa', '\x00') ON CONFLICT DO NOTHING;
SELECT originator_node_id, originator_sequence_id, inserted
  FROM xip83.insert_envelopes('{2,2}', '{7,41}', '{"\\x03aa","\\x03aa"}', '{"\\x00","\\x00"}');
DELETE FROM xip83.envelopes WHERE originator_node_id = 4 AND originator_sequence_id = 20;
UPDATE xip83.envelopes SET originator_sequence_id = 20
 WHERE originator_node_id = 4 AND originator_sequence_id = 40;

-- PREPARE of a transaction that wrote messages is refused.
BEGIN;
INSERT INTO xip83.welcome_messages (installation_key, data, installation_key_data_hash)
VALUES ('\x01', '\x01', sha256('\x0101'));
PREPARE TRANSACTION 'xip83_live_fetch';
SELECT count(*) FROM pg_prepared_xacts;

-- Arguments.
SELECT * FROM xip83.live_group_messages(NULL, 10, 0);
SELECT * FROM xip83.live_group_messages(0, NULL, 0);
SELECT * FROM xip83.live_group_messages(0, 10, NULL);
SELECT * FROM xip83.live_group_messages(0, 10, -1);
SELECT * FROM xip83.live_welcome_messages(0, 0, 0);
SELECT * FROM xip83.live_group_messages(0, 10001, 0);
SELECT * FROM xip83.live_envelopes('{1,2}', '{0}', 10, 0);
SELECT * FROM xip83.live_envelopes('{1,NULL}', '{0,0}', 10, 0);
SELECT * FROM xip83.live_envelopes(NULL, '{0}', 10, 0);
SELECT count(*) FROM xip83.live_envelopes('{}', '{}', 10, 0);
-- under SERIALIZABLE a read past the transaction's snapshot is refused
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT count(*) FROM xip83.live_group_messages(0, 10, 0);
ROLLBACK;

-- Privileges: SELECT on the table is needed, row-level security is not bypassed.
CREATE ROLE xip83_live_reader;
GRANT USAGE ON SCHEMA xip83 TO xip83_live_reader;
SET ROLE xip83_live_reader;
SELECT * FROM xip83.live_group_messages(0, 10, 0);
RESET ROLE;
GRANT SELECT ON xip83.group_messages TO xip83_live_reader;
SET ROLE xip83_live_reader;
SELECT count(*) > 0 AS reads FROM xip83.live_group_messages(0, 10, 0);
SELECT xip83.welcome_horizon();  -- needs SELECT on welcome_messages
SELECT group_horizon IS NOT NULL AS g, welcome_horizon IS NULL AS w_hidden FROM xip83.feed_status;
RESET ROLE;
ALTER TABLE xip83.group_messages ENABLE ROW LEVEL SECURITY;
SET ROLE xip83_live_reader;
SELECT * FROM xip83.live_group_messages(0, 10, 0);
RESET ROLE;
ALTER TABLE xip83.group_messages DISABLE ROW LEVEL SECURITY;
REVOKE ALL ON xip83.group_messages FROM xip83_live_reader;
REVOKE ALL ON SCHEMA xip83 FROM xip83_live_reader;
DROP ROLE xip83_live_reader;

-- A committed TRUNCATE starts the lines over; a rolled-back one does not.
SELECT xip83.welcome_horizon() AS w1 \gset
BEGIN;
TRUNCATE xip83.welcome_messages;
ROLLBACK;
SELECT xip83.welcome_horizon() = :w1 AS kept;
TRUNCATE xip83.envelopes;
SELECT * FROM xip83.envelope_horizons();
-- envelopes written after a TRUNCATE in the same transaction are followed
BEGIN;
TRUNCATE xip83.envelopes;
INSERT INTO xip83.envelopes (originator_node_id, originator_sequence_id, topic, originator_envelope)
VALUES (7, 1, '\x03aa', '\x00'), (7, 2, '\x03aa', '\x00');
COMMIT;
SELECT * FROM xip83.envelope_horizons() WHERE horizon > 0;
TRUNCATE xip83.group_messages RESTART IDENTITY;
INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash)
VALUES ('\x01', '\x01', sha256('\x0101'));
SELECT xip83.group_horizon();

-- The notifier of this database runs and has spoken (it starts on first use).
DO $$
BEGIN
    FOR i IN 1 .. 1000 LOOP
        EXIT WHEN (SELECT state = 'live' AND ticks > 0 FROM xip83.feed_status);
        PERFORM pg_sleep(0.01);
    END LOOP;
END $$;
SELECT state, ticks > 0 AS spoke, epoch > 0 AS has_epoch, notifier_pid IS NOT NULL AS running,
       notification_queue_usage >= 0 AS queue_shown
  FROM xip83.feed_status;
