-- Batch inserts: ids in input order, idempotent on the message hash, and
-- nothing written when any argument is wrong.
-- Starts from empty tables and fresh ids, whatever ran before in this database.
TRUNCATE xip83.group_messages, xip83.welcome_messages, xip83.envelopes RESTART IDENTITY;
SELECT id, group_id, data, group_id_data_hash = sha256(group_id || data) AS hash_ok,
       is_commit, sender_hmac, should_push, inserted
  FROM xip83.insert_group_messages(ARRAY['\x01', '\x02', '\x01']::bytea[],
                                   ARRAY['\xaa', '\xbb', '\xcc']::bytea[],
                                   ARRAY[true, false, false],
                                   ARRAY['\x99', NULL, NULL]::bytea[],
                                   ARRAY[true, NULL, false]);

-- A repeat within a batch and across batches returns the stored row.
SELECT id, group_id, data, is_commit, inserted
  FROM xip83.insert_group_messages(ARRAY['\x03', '\x01', '\x03']::bytea[],
                                   ARRAY['\xdd', '\xaa', '\xdd']::bytea[]);
SELECT count(*) FROM xip83.group_messages;

-- Empty batches are fine.
SELECT count(*) FROM xip83.insert_group_messages('{}', '{}');

-- Bad batches: each a clear error, and nothing half-written.
\set VERBOSITY sqlstate
SELECT * FROM xip83.insert_group_messages(ARRAY['\x04', '\x05']::bytea[], ARRAY['\x01']::bytea[]);
SELECT * FROM xip83.insert_group_messages(ARRAY['\x04', NULL]::bytea[], ARRAY['\x01', '\x02']::bytea[]);
SELECT * FROM xip83.insert_group_messages(NULL, ARRAY['\x01']::bytea[]);
SELECT * FROM xip83.insert_group_messages(ARRAY[['\x04'], ['\x05']]::bytea[], ARRAY['\x01', '\x02']::bytea[]);
\set VERBOSITY default
SELECT * FROM xip83.insert_group_messages(ARRAY['\x04', '\x05']::bytea[], ARRAY['\x01']::bytea[]);
SELECT * FROM xip83.insert_group_messages(ARRAY['\x04', NULL]::bytea[], ARRAY['\x01', '\x02']::bytea[]);
SELECT count(*) FROM xip83.group_messages;

-- Welcomes.
SELECT id, installation_key, data, installation_key_data_hash = sha256(installation_key || data) AS hash_ok,
       hpke_public_key, wrapper_algorithm, welcome_metadata, message_type, inserted
  FROM xip83.insert_welcome_messages(ARRAY['\x10', '\x11', '\x10']::bytea[],
                                     ARRAY['\x01', '\x02', '\x01']::bytea[],
                                     ARRAY['\x0f', NULL, '\x0f']::bytea[],
                                     ARRAY[1, 2, 1]::smallint[],
                                     ARRAY[NULL, '\x77', NULL]::bytea[],
                                     ARRAY[0, 1, 0]::smallint[]);
\set VERBOSITY sqlstate
SELECT * FROM xip83.insert_welcome_messages(ARRAY['\x12']::bytea[], ARRAY['\x01']::bytea[],
                                            message_types => ARRAY[NULL::smallint]);
SELECT * FROM xip83.insert_welcome_messages(ARRAY['\x12', '\x13']::bytea[], ARRAY['\x01', '\x02']::bytea[],
                                            ARRAY['\x01']::bytea[]);
\set VERBOSITY default
SELECT count(*) FROM xip83.welcome_messages;

-- Envelopes are keyed by (originator, sequence).
SELECT originator_node_id, originator_sequence_id, topic, expiry, payer_id, originator_envelope, inserted
  FROM xip83.insert_envelopes(ARRAY[100, 100, 200, 100], ARRAY[1, 2, 1, 1]::bigint[],
                              ARRAY['\x0001', '\x0002', '\x0001', '\x0001']::bytea[],
                              ARRAY['\xe1', '\xe2', '\xe3', '\xe1']::bytea[],
                              ARRAY[10, 20, 30, 10]::bigint[],
                              ARRAY[7, 7, NULL, 7]);
SELECT originator_node_id, originator_sequence_id, originator_envelope, inserted
  FROM xip83.insert_envelopes(ARRAY[100], ARRAY[2]::bigint[], ARRAY['\x0002']::bytea[],
                              ARRAY['\xe9']::bytea[]);
\set VERBOSITY sqlstate
SELECT * FROM xip83.insert_envelopes(ARRAY[100], ARRAY[-1]::bigint[], ARRAY['\x0002']::bytea[], ARRAY['\xe9']::bytea[]);
SELECT * FROM xip83.insert_envelopes(ARRAY[100], ARRAY[3]::bigint[], ARRAY['\x01']::bytea[], ARRAY['\xe9']::bytea[],
                                     ARRAY[NULL]::bigint[]);
SELECT * FROM xip83.insert_envelopes(ARRAY[100, 100], ARRAY[3, 4]::bigint[], ARRAY['\x01', '\x02']::bytea[], ARRAY['\xe9']::bytea[]);
SELECT * FROM xip83.insert_envelopes(ARRAY[100], ARRAY[3]::bigint[], ARRAY['\x01']::bytea[], NULL);
\set VERBOSITY default
-- a negative sequence id as a node sees it: the element, and as context the
-- batch function's line, not its internal statement
SELECT * FROM xip83.insert_envelopes(ARRAY[100, 100], ARRAY[5, -1]::bigint[],
                                     ARRAY['\x01', '\x02']::bytea[], ARRAY['\xe9', '\xea']::bytea[]);
SELECT count(*) FROM xip83.envelopes;

-- Rows the nodes store go in as they are: empty topics, NULL is_commit (the
-- default when is_commits is left out), any wrapper_algorithm and
-- message_type, sequence id 0 (chain originators), expiry 0 when left out.
SELECT group_id, data, is_commit, inserted
  FROM xip83.insert_group_messages(ARRAY['', '\x04', '\x05']::bytea[], ARRAY['\x01', '\x02', '\x03']::bytea[],
                                   ARRAY[NULL, NULL, true]);
SELECT group_id, data, is_commit, inserted
  FROM xip83.insert_group_messages(ARRAY['\x06']::bytea[], ARRAY['\x01']::bytea[]);
SELECT installation_key, data, wrapper_algorithm, message_type, inserted
  FROM xip83.insert_welcome_messages(ARRAY['', '\x12']::bytea[], ARRAY['\x01', '\x02']::bytea[],
                                     wrapper_algorithms => ARRAY[-3, 300]::smallint[],
                                     message_types => ARRAY[5, -1]::smallint[]);
SELECT originator_node_id, originator_sequence_id, topic, expiry, inserted
  FROM xip83.insert_envelopes(ARRAY[0, 0, 100], ARRAY[0, 1, 0]::bigint[],
                              ARRAY['', '\x0001', '']::bytea[], ARRAY['\xe0', '\xe1', '\xe2']::bytea[]);
SELECT originator_node_id, originator_sequence_id, topic, inserted
  FROM xip83.insert_envelopes(ARRAY[0], ARRAY[0]::bigint[], ARRAY['']::bytea[], ARRAY['\xe0']::bytea[]);

TRUNCATE xip83.group_messages, xip83.welcome_messages, xip83.envelopes;
