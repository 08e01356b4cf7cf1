-- The storage layout node servers map unchanged (docs/concepts.md, "Storage").
-- Starts from empty tables and fresh ids, whatever ran before in this database.
TRUNCATE xip83.group_messages, xip83.welcome_messages, xip83.envelopes RESTART IDENTITY;
SELECT table_name, column_name, data_type, is_nullable, column_default IS NOT NULL AS has_default
  FROM information_schema.columns
 WHERE table_schema = 'xip83'
 ORDER BY table_name, ordinal_position;

SELECT indexrelid::regclass AS index, pg_get_indexdef(indexrelid) AS definition
  FROM pg_index
 WHERE indrelid IN ('xip83.group_messages'::regclass, 'xip83.welcome_messages'::regclass,
                    'xip83.envelopes'::regclass)
 ORDER BY indexrelid::regclass::text;

-- Plain INSERT keeps working, as node servers insert today.
INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash, is_commit)
VALUES ('\x0a0b', '\x01', sha256('\x0a0b01'::bytea), true)
RETURNING group_id, data, is_commit, sender_hmac, should_push;
INSERT INTO xip83.welcome_messages (installation_key, data, installation_key_data_hash)
VALUES ('\x0c', '\x02', sha256('\x0c02'::bytea))
RETURNING installation_key, data, hpke_public_key, wrapper_algorithm, message_type;
INSERT INTO xip83.envelopes (originator_node_id, originator_sequence_id, topic, originator_envelope)
VALUES (100, 1, '\x000a0b', '\xff')
RETURNING originator_node_id, originator_sequence_id, topic, expiry, payer_id, originator_envelope;

-- Constraints a stored message must meet: the nodes' own, no more.
\set VERBOSITY terse
INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash)
VALUES ('\x0a0b', '\x01', sha256('\x0a0b01'::bytea));
INSERT INTO xip83.envelopes (originator_node_id, originator_sequence_id, topic, originator_envelope)
VALUES (100, 1, '\x00', '\xff');
INSERT INTO xip83.envelopes (originator_node_id, originator_sequence_id, topic, originator_envelope)
VALUES (100, -1, '\x00', '\xff');
INSERT INTO xip83.envelopes (originator_node_id, originator_sequence_id, topic, originator_envelope, expiry)
VALUES (100, 2, '\x00', '\xff', NULL);
-- What the nodes store, these tables store: empty topics, a NULL is_commit,
-- any wrapper_algorithm and message_type, sequence id 0.
INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash) VALUES ('', '\x01', sha256('\x01'::bytea))
RETURNING group_id, data, is_commit;
INSERT INTO xip83.welcome_messages (installation_key, data, installation_key_data_hash,
                                    wrapper_algorithm, message_type)
VALUES ('', '\x03', sha256('\x03'::bytea), -1, 2)
RETURNING installation_key, data, wrapper_algorithm, message_type;
INSERT INTO xip83.envelopes (originator_node_id, originator_sequence_id, topic, originator_envelope, expiry)
VALUES (0, 0, '', '\xff', 1767225600)
RETURNING originator_node_id, originator_sequence_id, topic, expiry;
SELECT conrelid::regclass AS "table", conname, pg_get_constraintdef(oid) AS definition
  FROM pg_constraint
 WHERE connamespace = 'xip83'::regnamespace AND contype = 'c'
 ORDER BY 1, 2;

\set VERBOSITY default
-- pg_dump keeps the messages: the tables are registered as configuration.
SELECT unnest(extconfig)::regclass AS dumped FROM pg_extension WHERE extname = 'xip83' ORDER BY 1;

TRUNCATE xip83.group_messages, xip83.welcome_messages, xip83.envelopes;
