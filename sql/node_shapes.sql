-- Every row shape the nodes store goes into xip83's tables (plain INSERT and
-- the batch functions) and comes out unchanged through the wave scans and the
-- live fetch: empty group ids, installation keys and topics, NULL is_commit,
-- any wrapper_algorithm and message_type, sequence id 0, expiry given or not.
-- Earlier files leave rows behind: rows are numbered from where this file starts,
-- waves start there, and the originators (0, 83) are this file's own.
-- Starts from empty tables and fresh ids, whatever ran before in this database.
TRUNCATE xip83.group_messages, xip83.welcome_messages, xip83.envelopes RESTART IDENTITY;
SET client_min_messages = warning;
\set ECHO none
\getenv abs_srcdir PG_ABS_SRCDIR
\set reference_sql :abs_srcdir '/tests/wave_d14n_reference.sql'
\i :reference_sql
\set ECHO all
SELECT xip83.late_cursor() AS lc0 \gset
SELECT xip83.group_horizon() AS g0, xip83.welcome_horizon() AS w0 \gset

-- v3: plain INSERT and the batch functions.
INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash, is_commit, sender_hmac, should_push)
VALUES ('', '\x01', sha256('\x01'), NULL, NULL, NULL),
       ('\x0a', '\x02', sha256('\x0a02'), true, '\x99', false);
SELECT row_number() OVER (ORDER BY id) AS n, group_id, is_commit, inserted
  FROM xip83.insert_group_messages(ARRAY['', '\x0a', '']::bytea[], ARRAY['\x03', '\x04', '\x05']::bytea[],
                                   ARRAY[false, NULL, NULL], NULL, ARRAY[NULL, true, NULL]);
INSERT INTO xip83.welcome_messages (installation_key, data, installation_key_data_hash,
                                    wrapper_algorithm, message_type)
VALUES ('', '\x01', sha256('\x01'), -1, 2);
SELECT row_number() OVER (ORDER BY id) AS n, installation_key, wrapper_algorithm, message_type,
       inserted
  FROM xip83.insert_welcome_messages(ARRAY['', '\x0b']::bytea[], ARRAY['\x02', '\x03']::bytea[],
                                     ARRAY[NULL, '\x0f']::bytea[], ARRAY[300, 0]::smallint[],
                                     NULL, ARRAY[-1, 7]::smallint[]);

-- d14n: sequence 0 of a chain originator (0) and of another (83), empty topics.
INSERT INTO xip83.envelopes (originator_node_id, originator_sequence_id, topic, originator_envelope, expiry)
VALUES (0, 0, '', '\xe0', 1767225600);
SELECT originator_node_id, originator_sequence_id, topic, expiry, inserted
  FROM xip83.insert_envelopes(ARRAY[0, 83, 83, 83], ARRAY[1, 0, 1, 2]::bigint[],
                              ARRAY['', '\x0a', '', '\x0a']::bytea[],
                              ARRAY['\xe1', '\xe2', '\xe3', '\xe4']::bytea[],
                              ARRAY[1767225601, 0, 5, 6]::bigint[]);

-- Group and welcome waves over the empty topic return the stored rows unchanged.
SELECT row_number() OVER (ORDER BY id) AS n, group_id, data, is_commit, sender_hmac, should_push
  FROM xip83.group_wave_scan(ARRAY['', '\x0a']::bytea[], ARRAY[:g0, :g0]::bigint[], 0,
                             xip83.group_ceiling(), 100);
SELECT count(*) AS group_rows_changed
  FROM (SELECT * FROM xip83.group_wave_scan(ARRAY['', '\x0a']::bytea[], '{0,0}', 0, :g0 + 1000, 100)
        EXCEPT
        SELECT id, created_at, group_id, data, is_commit, sender_hmac, should_push FROM xip83.group_messages) d;
SELECT count(*) AS stream_rows
  FROM xip83.group_wave_stream(ARRAY['']::bytea[], ARRAY[:g0]::bigint[], 0, :g0 + 1000);
SELECT row_number() OVER (ORDER BY id) AS n, installation_key, data, hpke_public_key,
       wrapper_algorithm, welcome_metadata, message_type
  FROM xip83.welcome_wave_scan(ARRAY['', '\x0b']::bytea[], ARRAY[:w0, :w0]::bigint[], 0,
                               xip83.welcome_ceiling(), 100);

-- A d14n wave: floor -1 reads sequence 0, floor 0 means it was seen; the
-- scan position (0, -1) is before originator 0's sequence 0.
SELECT originator_node_id, originator_sequence_id, topic, originator_envelope
  FROM xip83.envelope_wave_scan(ARRAY['', '', '\x0a']::bytea[], '{0,83,83}', '{-1,0,-1}',
                                '{0,83}', '{10,10}', 0, -1, 100);
-- (0, 0) as the scan position skips originator 0's sequence 0
SELECT originator_node_id, originator_sequence_id
  FROM xip83.envelope_wave_scan(ARRAY['']::bytea[], '{0}', '{-1}', '{0}', '{10}', 0, 0, 100);
-- the plain SQL definition agrees, for every floor from -1 to 2 and ceiling from -1 to 2
SELECT count(*) AS mismatches
  FROM generate_series(-1, 2) f, generate_series(-1, 2) c, (VALUES (''::bytea), ('\x0a')) t(topic)
 WHERE (SELECT array_agg(w) FROM xip83.envelope_wave_scan(ARRAY[t.topic, t.topic], '{0,83}',
                                                          ARRAY[f, f]::bigint[], '{0,83}',
                                                          ARRAY[c, c]::bigint[], 0, -1, 100) w)
       IS DISTINCT FROM
       (SELECT array_agg(r) FROM wave_d14n_reference_page(ARRAY[t.topic, t.topic], '{0,83}',
                                                         ARRAY[f, f]::bigint[], '{0,83}',
                                                         ARRAY[c, c]::bigint[], 0, -1, 100) r);
SELECT * FROM xip83.originator_ceilings('{0,83,84}', 'xip83.envelopes');

-- Frames carry them too: the empty topic's messages, and sequence 0 with
-- floor -1.
SELECT messages
  FROM xip83.group_wave_scan(ARRAY['']::bytea[], ARRAY[:g0]::bigint[], 0, :g0 + 1000, 100, 1, 2097152);
SELECT messages, last_node_id, last_sequence_id
  FROM xip83.envelope_wave_scan(ARRAY['', '\x0a']::bytea[], '{0,83}', '{-1,-1}', '{0,83}', '{10,10}',
                                  0, -1, 100, 1, 2097152, 'xip83.envelopes');

-- Live fetch: the same shapes come out of the live lane.
SELECT row_number() OVER (ORDER BY id) AS n, group_id, data, is_commit, sender_hmac, should_push
  FROM xip83.live_group_messages(:g0, 100, :lc0);
SELECT row_number() OVER (ORDER BY id) AS n, installation_key, wrapper_algorithm, message_type
  FROM xip83.live_welcome_messages(:w0, 100, :lc0);
-- Sequence 0 is served: from "nothing seen" (-1) it comes first (a sequence 0
-- is always a late write; a consumer that has not passed it gets it in order).
SELECT originator_node_id, originator_sequence_id, topic, originator_envelope
  FROM xip83.live_envelopes(ARRAY[0, 83], ARRAY[-1, -1]::bigint[], 100, :lc0);

DROP FUNCTION wave_d14n_reference_page, wave_d14n_reference_ceilings, wave_d14n_production_layout,
              wave_d14n_add_band, wave_d14n_load_split, wave_d14n_generate;
