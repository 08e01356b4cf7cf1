-- Frames: golden bytes, arms and mappings, size boundaries, empty pages,
-- control frames, decoders, wave handles, streaming, and every error.
SET client_min_messages = warning;

-- A node-layout group table: nullable is_commit, sender_hmac, should_push.
CREATE TABLE frames_gm (
    id bigint PRIMARY KEY, created_at timestamp NOT NULL, group_id bytea NOT NULL,
    data bytea NOT NULL, is_commit boolean, sender_hmac bytea, should_push boolean);
CREATE INDEX ON frames_gm (group_id, id);
INSERT INTO frames_gm VALUES
    (1, '1970-01-01 00:00:01', '\x0a', '\x01', NULL, NULL, NULL),
    (2, '2024-05-06 07:08:09.123456', '\x0b', '\x0202', true, '\xaa', false),
    (3, '2024-05-06 07:08:10', '\x0a', '\x030303', false, '\x', true),
    (4, '2024-05-06 07:08:11', '\x0c', '\x04', NULL, NULL, NULL);

-- One frame of three messages: the exact bytes, and what they decode to.
SELECT frame, messages, last_id
  FROM xip83.group_wave_scan(ARRAY['\x0a'::bytea, '\x0b'], '{0,0}', 0, 10, 10, 7, 2097152,
                               source => 'frames_gm');
SELECT jsonb_pretty(xip83.decode_frame(frame, 'v3'))
  FROM xip83.group_wave_scan(ARRAY['\x0a'::bytea, '\x0b'], '{0,0}', 0, 10, 10, 7, 2097152,
                               source => 'frames_gm');

-- Frame size boundaries: exactly at the limit fits, one byte less splits.
SELECT octet_length(frame) AS two FROM xip83.group_wave_scan(
    ARRAY['\x0a'::bytea, '\x0b'], '{0,0}', 0, 10, 2, 7, 2097152, source => 'frames_gm') \gset
SELECT messages, last_id, octet_length(frame) = :two AS at_limit FROM xip83.group_wave_scan(
    ARRAY['\x0a'::bytea, '\x0b'], '{0,0}', 0, 10, 2, 7, :two, 'frames_gm');
SELECT messages, last_id, octet_length(frame) < :two AS under FROM xip83.group_wave_scan(
    ARRAY['\x0a'::bytea, '\x0b'], '{0,0}', 0, 10, 2, 7, :two - 1, 'frames_gm');
-- a message larger than the limit: a frame of its own, and a WARNING
SELECT messages, last_id, octet_length(frame) AS bytes FROM xip83.group_wave_scan(
    ARRAY['\x0a'::bytea, '\x0b'], '{0,0}', 0, 10, 10, 7, 20, 'frames_gm');
-- empty pages produce no frame: caught up, unknown topic, ceiling below the floors
SELECT count(*) FROM xip83.group_wave_scan(ARRAY['\x0a'::bytea], '{3}', 0, 10, 10, 7, 2097152,
                                             source => 'frames_gm');
SELECT count(*) FROM xip83.group_wave_scan(ARRAY['\xff'::bytea], '{0}', 0, 10, 10, 7, 2097152,
                                             source => 'frames_gm');
SELECT count(*) FROM xip83.group_wave_scan(ARRAY['\x0a'::bytea], '{0}', 0, 0, 10, 7, 2097152,
                                             source => 'frames_gm');
-- paging by last_id covers the wave once
SELECT messages, last_id FROM xip83.group_wave_scan(ARRAY['\x0a'::bytea, '\x0b', '\x0c'],
    '{0,0,0}', 2, 10, 10, 7, 2097152, source => 'frames_gm');

-- Welcomes: V1 arm, pointer arm (no metadata), wrapper_algorithm wire = db + 1.
CREATE TABLE frames_wm (
    id bigint PRIMARY KEY, created_at timestamp NOT NULL, installation_key bytea NOT NULL,
    data bytea NOT NULL, hpke_public_key bytea, wrapper_algorithm smallint,
    welcome_metadata bytea, message_type smallint);
CREATE INDEX ON frames_wm (installation_key, id);
INSERT INTO frames_wm VALUES
    (1, '2024-01-01', '\x01aa', '\xd1', '\x0e', 0, '\x3e', 0),
    (2, '2024-01-01', '\x01aa', '\xd2', NULL, 1, NULL, 0),
    (3, '2024-01-01', '\x01aa', '\xd3', '\x0f', 2, '\x3f', 1),
    (4, '2024-01-01', '\x01aa', '\xd4', NULL, NULL, NULL, 1);
SELECT jsonb_pretty(xip83.decode_frame(frame, 'v3')), messages, last_id
  FROM xip83.welcome_wave_scan(ARRAY['\x01aa'::bytea], '{0}', 0, 10, 10, 3, 2097152,
                                 source => 'frames_wm');
INSERT INTO frames_wm VALUES (5, '2024-01-01', '\x01aa', '\xd5', NULL, 0, NULL, 2);
SELECT * FROM xip83.welcome_wave_scan(ARRAY['\x01aa'::bytea], '{0}', 0, 10, 10, 3, 2097152,
                                        source => 'frames_wm');

-- d14n: envelopes built here, byte by byte, down to the target topic.
CREATE FUNCTION pg_temp.ld(tag int, b bytea) RETURNS bytea LANGUAGE sql IMMUTABLE AS
$$ SELECT decode(lpad(to_hex(tag * 8 + 2), 2, '0') || lpad(to_hex(octet_length(b)), 2, '0'), 'hex') || b $$;
CREATE FUNCTION pg_temp.envelope(node int, seq int, topic bytea) RETURNS bytea LANGUAGE sql AS
$$ SELECT pg_temp.ld(1,
        decode('08' || lpad(to_hex(node), 2, '0') || '10' || lpad(to_hex(seq), 2, '0'), 'hex')
        || pg_temp.ld(4, pg_temp.ld(1, pg_temp.ld(1, pg_temp.ld(2, topic)))))
      || pg_temp.ld(3, pg_temp.ld(1, '\xbeef')) $$;
SELECT xip83.envelope_target_topic(pg_temp.envelope(7, 1, '\x00c0ffee'));
CREATE TABLE frames_meta (
    originator_node_id int, originator_sequence_id bigint, topic bytea,
    gateway_time timestamp, PRIMARY KEY (originator_node_id, originator_sequence_id));
CREATE INDEX ON frames_meta (topic, originator_node_id, originator_sequence_id);
CREATE TABLE frames_blob (
    originator_node_id int, originator_sequence_id bigint, originator_envelope bytea,
    PRIMARY KEY (originator_node_id, originator_sequence_id));
INSERT INTO frames_meta VALUES (7, 1, '\x00aa', '2024-01-01'), (7, 2, '\x00aa', '2024-01-01'),
    (7, 3, '\x00aa', '2024-01-01'), (9, 1, '\x00aa', '2024-01-01');
-- (7, 2) has no blob row: a join leaves it out, so do the frames
INSERT INTO frames_blob VALUES (7, 1, pg_temp.envelope(7, 1, '\x00aa')),
    (7, 3, pg_temp.envelope(7, 3, '\x00aa')), (9, 1, pg_temp.envelope(9, 1, '\x00aa'));
SELECT messages, last_node_id, last_sequence_id,
       jsonb_pretty(xip83.decode_frame(frame, 'd14n'))
  FROM xip83.envelope_wave_scan(ARRAY['\x00aa'::bytea, '\x00aa'], '{7,9}', '{0,0}',
                                  '{7,9}', '{10,10}', 0, 0, 10, 11, 2097152,
                                  source => 'frames_meta', blob_source => 'frames_blob');
-- the envelope bytes in the frame are the stored ones
SELECT position(b.originator_envelope IN f.frame) > 0 AS embedded
  FROM frames_blob b,
       xip83.envelope_wave_scan(ARRAY['\x00aa'::bytea, '\x00aa'], '{7,9}', '{0,0}',
                                  '{7,9}', '{10,10}', 0, 0, 10, 11, 2097152,
                                  source => 'frames_meta', blob_source => 'frames_blob') f
 ORDER BY b.originator_node_id, b.originator_sequence_id;

-- Control frames: the bytes, the same for both bindings, and decoded.
SELECT xip83.control_frame('started', 30000), xip83.control_frame('started', 30000, 'd14n') = xip83.control_frame('started', 30000);
SELECT xip83.control_frame('topics_live', topics => ARRAY['\x00aa'::bytea, '\x01bb']);
SELECT xip83.control_frame('catchup_complete', 9), xip83.control_frame('catchup_complete', 0);
SELECT xip83.control_frame('ping', 300), xip83.control_frame('pong', -1);
SELECT xip83.decode_frame(xip83.control_frame('started', 30000, 'd14n'), 'd14n');
SELECT xip83.decode_frame(xip83.control_frame('topics_live', topics => ARRAY['\x00aa'::bytea, '\x01bb']), 'v3');
SELECT xip83.decode_frame(xip83.control_frame('catchup_complete', 9), 'd14n');
SELECT xip83.decode_frame(xip83.control_frame('pong', -1), 'v3');

-- Requests: a v3 Mutate and a d14n Mutate with a vector cursor.
-- (bytes made with protoc --encode from the text form in the comment)
-- v1 { mutate { adds { topic: "\000\n" id_cursor: 128 } adds { topic: "\000\273" }
--               removes: "\001\001" history_only: true mutate_id: 1002 } }
SELECT xip83.decode_frame(
    '\x0a1a0a180a070a02000a1080010a040a0200bb12020101180120ea07'::bytea, 'v3', 'request');
-- v1 { mutate { adds { topic: "\000\n" last_seen { node_id_to_sequence_id { key: 7 value: 128 }
--               node_id_to_sequence_id { key: 9 value: 1 } } } mutate_id: 3 } }
SELECT xip83.decode_frame(
    '\x0a190a170a130a02000a120d0a0508071080010a04080910012003'::bytea, 'd14n', 'request');
SELECT xip83.decode_frame('\x0a0412020805'::bytea, 'd14n', 'request');

-- Malformed bytes say what is wrong and where.
SELECT xip83.decode_frame('\x0a05120308b0', 'v3');
SELECT xip83.decode_frame('\x0a0412020805', 'd14n');  -- well formed: a Started
SELECT xip83.decode_frame('\x0a03120100', 'd14n', 'request');
SELECT xip83.decode_frame('\x0000', 'v3', 'request');
SELECT xip83.envelope_target_topic('\x0a020a00');

-- Errors: every one with its SQLSTATE.
\set VERBOSITY sqlstate
SELECT xip83.decode_frame('\x0aff', 'v3');
SELECT xip83.decode_frame('\x0a0212', 'v3');
SELECT xip83.decode_frame('\x0f', 'd14n', 'request');
SELECT xip83.decode_frame(NULL, 'v3');
SELECT xip83.decode_frame('\x', 'v4');
SELECT xip83.envelope_target_topic('\x0a03');
SELECT xip83.envelope_target_topic('\x0a00');
SELECT xip83.envelope_target_topic(NULL);
SELECT xip83.control_frame('started', -1);
SELECT xip83.control_frame('started', NULL);
SELECT xip83.control_frame('catchup_complete', -1);
SELECT xip83.control_frame('topics_live', topics => ARRAY['\x00'::bytea, NULL]);
SELECT xip83.control_frame('ping', 1, NULL);
SELECT * FROM xip83.group_wave_scan(ARRAY['\x0a'::bytea], '{0}', 0, 10, 10, 0, 2097152, source => 'frames_gm');
SELECT * FROM xip83.group_wave_scan(ARRAY['\x0a'::bytea], '{0}', 0, 10, 10, NULL, 2097152, source => 'frames_gm');
SELECT * FROM xip83.group_wave_scan(ARRAY['\x0a'::bytea], '{0}', 0, 10, 10, 7, 0, 'frames_gm');
SELECT * FROM xip83.group_wave_scan(ARRAY['\x0a'::bytea], '{0}', 0, 10, 0, 7, 2097152, source => 'frames_gm');
SELECT * FROM xip83.group_wave_scan(ARRAY['\x0a'::bytea], '{0,1}', 0, 10, 10, 7, 2097152, source => 'frames_gm');
INSERT INTO frames_gm VALUES (5, '1969-12-31 23:59:59', '\x0d', '\x05'),
                             (6, 'infinity', '\x0e', '\x06'), (-7, '2024-01-01', '\x0f', '\x07');
SELECT * FROM xip83.group_wave_scan(ARRAY['\x0d'::bytea], '{0}', 0, 10, 10, 7, 2097152, source => 'frames_gm');
SELECT * FROM xip83.group_wave_scan(ARRAY['\x0e'::bytea], '{0}', 0, 10, 10, 7, 2097152, source => 'frames_gm');
SELECT * FROM xip83.group_wave_scan(ARRAY['\x0f'::bytea], '{-10}', -10, 10, 10, 7, 2097152, source => 'frames_gm');
\set VERBOSITY default
-- a control frame without the value its kind needs says which value
SELECT xip83.control_frame('ping');

-- Wave handles: rows, then frames, from one snapshot; closed at will or at commit.
BEGIN;
SELECT xip83.wave_open('group', ARRAY['\x0a'::bytea, '\x0b', '\x0c'], '{0,0,0}', 0, 10, 'frames_gm') AS h \gset
SELECT id, group_id FROM xip83.group_wave_scan(:h, 2);
SELECT messages, last_id FROM xip83.group_wave_scan(:h, 10, 7, 2097152);
SELECT count(*) FROM xip83.group_wave_scan(:h, 10);
\set VERBOSITY sqlstate
SAVEPOINT e;
SELECT * FROM xip83.welcome_wave_scan(:h, 1);
ROLLBACK TO e;
SELECT * FROM xip83.group_wave_scan(:h, 0);
ROLLBACK TO e;
SELECT * FROM xip83.group_wave_scan(NULL, 1);
ROLLBACK TO e;
SELECT * FROM xip83.group_wave_scan(:h, 10, 0, 2097152);
ROLLBACK TO e;
SELECT xip83.wave_close(:h);
SELECT xip83.wave_close(:h);
ROLLBACK TO e;
SELECT * FROM xip83.group_wave_scan(:h + 1, 1);
ROLLBACK TO e;
\set VERBOSITY default
COMMIT;
-- a handle left open is closed at commit, quietly, and gone after
BEGIN;
SELECT xip83.wave_open('envelope', ARRAY['\x00aa'::bytea], '{7}', '{0}', '{7}', '{10}', 0, 0,
                                'frames_meta', 'frames_blob') AS h \gset
SELECT originator_sequence_id FROM xip83.envelope_wave_scan(:h, 1);
COMMIT;
\set VERBOSITY sqlstate
SELECT * FROM xip83.envelope_wave_scan(:h, 1);
\set VERBOSITY default
-- an error in a fetch, caught by a savepoint, leaves the handle unusable
BEGIN;
SELECT xip83.wave_open('group', ARRAY['\x0d'::bytea, '\x0a'], '{0,0}', 0, 10, 'frames_gm') AS h \gset
SAVEPOINT s;
\set VERBOSITY sqlstate
SELECT * FROM xip83.group_wave_scan(:h, 10, 7, 2097152);
ROLLBACK TO s;
SELECT * FROM xip83.group_wave_scan(:h, 1);
\set VERBOSITY default
ROLLBACK TO s;
SELECT xip83.wave_close(:h);
COMMIT;

-- Streaming. A wave of 20,000 rows over 100 topics whose last row cannot be
-- encoded (created_at before 1970): a first read that returns without that
-- error, and after few index reads, did not read the wave.
CREATE TABLE frames_big (
    id bigint PRIMARY KEY, created_at timestamp NOT NULL, group_id bytea NOT NULL,
    data bytea NOT NULL, is_commit boolean, sender_hmac bytea, should_push boolean);
CREATE INDEX frames_big_topic ON frames_big (group_id, id);
INSERT INTO frames_big SELECT g, '2024-01-01', int4send(g % 100), '\x01'
  FROM generate_series(1, 19999) g;
INSERT INTO frames_big VALUES (20000, '1960-01-01', int4send(0), '\x01');
CREATE FUNCTION pg_temp.index_reads() RETURNS bigint LANGUAGE sql AS $$
    SELECT pg_catalog.pg_stat_get_xact_tuples_returned('frames_big_topic'::regclass)
         + pg_catalog.pg_stat_get_xact_tuples_returned('frames_big_pkey'::regclass) $$;
-- A handle streams whatever its arguments: a sub-select and a volatile ceiling.
BEGIN;
SELECT pg_temp.index_reads() AS r0 \gset
SELECT xip83.wave_open('group', ARRAY(SELECT int4send(k) FROM generate_series(0, 99) k),
                             array_fill(0::bigint, ARRAY[100]), 0,
                             xip83.group_ceiling('frames_big'), 'frames_big') AS h \gset
SELECT messages, last_id FROM xip83.group_wave_scan(:h, 500, 7, 2097152);
SELECT pg_temp.index_reads() - :r0 < 10000 AS first_page_read_little;
SELECT count(*) FROM xip83.group_wave_scan(:h, 500);
SELECT pg_temp.index_reads() - :r0 < 10000 AS second_page_read_little;
COMMIT;
SET xip83.wave_strategy = heap;
BEGIN;
SELECT pg_temp.index_reads() AS r0 \gset
SELECT xip83.wave_open('group', ARRAY(SELECT int4send(k) FROM generate_series(0, 99) k),
                             array_fill(0::bigint, ARRAY[100]), 0,
                             xip83.group_ceiling('frames_big'), 'frames_big') AS h \gset
SELECT count(*) FROM xip83.group_wave_scan(:h, 10);
SELECT pg_temp.index_reads() - :r0 < 10000 AS heap_first_page_read_little;
COMMIT;
RESET xip83.wave_strategy;
-- The frame stream through a cursor, plain arguments: inlined, streams
-- (frames of at most 1000 bytes, about 40 messages each).
BEGIN;
SELECT array_agg(int4send(k)) AS topics FROM generate_series(0, 99) k \gset
SELECT pg_temp.index_reads() AS r0 \gset
DECLARE w CURSOR FOR SELECT messages, last_id, octet_length(frame) <= 1000 AS fits
  FROM xip83.group_wave_stream(:'topics'::bytea[], array_fill(0::bigint, ARRAY[100]),
                                      0, 20000, 7, 1000, 'frames_big');
FETCH 1 FROM w;
FETCH 1 FROM w;
SELECT pg_temp.index_reads() - :r0 < 10000 AS stream_first_fetches_read_little;
\set VERBOSITY sqlstate
FETCH ALL FROM w;
\set VERBOSITY default
ROLLBACK;
-- The pitfall handles avoid: a volatile argument stops the inlining, and the
-- cursor's first FETCH reads the whole wave (and here meets its last row).
BEGIN;
\set VERBOSITY sqlstate
DECLARE w CURSOR FOR SELECT messages, last_id
  FROM xip83.group_wave_stream(:'topics'::bytea[], array_fill(0::bigint, ARRAY[100]),
                                      0, xip83.group_ceiling('frames_big'), 7, 1000, 'frames_big');
FETCH 1 FROM w;
\set VERBOSITY default
ROLLBACK;

-- The live lane (frames tagged 0 from the live fetch) is checked in
-- tests/libpq/t_frames.c: it writes to xip83's own tables, which the other
-- regression tests count on.
SELECT count(*) FROM xip83.live_frames('envelope', '{}', '{}', 10, 0, 2097152);
