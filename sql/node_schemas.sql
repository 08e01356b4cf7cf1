-- The nodes' own schemas (tests/nodes/): rows written through the nodes' insert
-- functions, read back by xip83's wave scans, streams and ceilings with
-- source (and blob_source) naming the node's tables.
\set ECHO none
\getenv abs_srcdir PG_ABS_SRCDIR
\set v3_node :abs_srcdir '/tests/nodes/v3_node.sql'
\set d14n_node :abs_srcdir '/tests/nodes/d14n_node.sql'
\i :v3_node
\i :d14n_node
\set ECHO all

-- v3: every insert function version; a repeat returns the stored row.
SELECT id FROM public.insert_group_message('\x0a01', 'one', sha256('\x0a01' || 'one'::bytea));
SELECT id FROM public.insert_group_message('\x0a01', 'one', sha256('\x0a01' || 'one'::bytea));
SELECT id FROM public.insert_group_message_v2('\x0b02', 'two', sha256('\x0b02' || 'two'::bytea),
                                              '\xaa', true);
SELECT id FROM public.insert_group_message_v3('\x0a01', 'three', sha256('\x0a01' || 'three'::bytea),
                                              NULL, NULL, true);
SELECT id FROM public.insert_group_message_v3('\x0b02', 'three', sha256('\x0b02' || 'three'::bytea),
                                              NULL, NULL, true);
-- a gap, as a failed insert or setval leaves
SELECT setval('public.group_messages_id_seq', 100);
SELECT id FROM public.insert_group_message_v2('\x0a01', 'four', sha256('\x0a01' || 'four'::bytea),
                                              NULL, false);
SELECT id, is_commit FROM public.group_messages WHERE is_commit IS NULL ORDER BY id;

SELECT xip83.group_ceiling('public.group_messages') AS ceiling \gset
SELECT :ceiling;
SELECT id, group_id, convert_from(data, 'UTF8') AS data, is_commit, sender_hmac, should_push
  FROM xip83.group_wave_scan(ARRAY['\x0a01', '\x0b02']::bytea[], '{0,0}', 0, :ceiling, 2,
                             source => 'public.group_messages');
SELECT id, group_id, convert_from(data, 'UTF8') AS data
  FROM xip83.group_wave_scan(ARRAY['\x0a01', '\x0b02']::bytea[], '{0,0}', 3, :ceiling, 2,
                             source => 'public.group_messages');
SELECT id FROM xip83.group_wave_stream(ARRAY['\x0a01']::bytea[], '{1}', 0, :ceiling,
                                       'public.group_messages');

-- welcomes: any wrapper algorithm and message type, over a table with a dropped column
SELECT id FROM public.insert_welcome_message('\x0c03', 'w1', sha256('\x0c03' || 'w1'::bytea), NULL);
SELECT id FROM public.insert_welcome_message_v2('\x0c03', 'w2', sha256('\x0c03' || 'w2'::bytea),
                                                '\x99', 7::smallint, '\x10', 2::smallint);
SELECT id FROM public.insert_welcome_message_v2('\x0c03', 'w2', sha256('\x0c03' || 'w2'::bytea),
                                                '\x99', 7::smallint, '\x10', 2::smallint);
SELECT count(*) AS dropped_columns FROM pg_attribute
 WHERE attrelid = 'public.welcome_messages'::regclass AND attisdropped;
SELECT id, installation_key, convert_from(data, 'UTF8') AS data, hpke_public_key,
       wrapper_algorithm, welcome_metadata, message_type
  FROM xip83.welcome_wave_scan(ARRAY['\x0c03']::bytea[], '{0}', 0,
                               xip83.welcome_ceiling('public.welcome_messages'), 10,
                               source => 'public.welcome_messages');

-- d14n: partitions appear on demand, sequence 0 is stored, a retried batch adds nothing
SELECT public.insert_gateway_envelope(7, 0, '\x00aa', NULL, NULL, 100, '\xe0');
SELECT public.insert_gateway_envelopes('{7,7,7,9}', '{1,2,2000001,5}',
                                       '{"\\x00aa","\\x00bb","\\x00aa","\\x00bb"}',
                                       '{NULL,NULL,NULL,NULL}', '{NULL,NULL,NULL,NULL}',
                                       '{1,2,3,4}', '{"\\xe1","\\xe2","\\xe3","\\xe4"}');
SELECT public.insert_gateway_envelopes('{7,7,7,9}', '{1,2,2000001,5}',
                                       '{"\\x00aa","\\x00bb","\\x00aa","\\x00bb"}',
                                       '{NULL,NULL,NULL,NULL}', '{NULL,NULL,NULL,NULL}',
                                       '{1,2,3,4}', '{"\\xe1","\\xe2","\\xe3","\\xe4"}');
INSERT INTO public.payers (address) VALUES ('payer-1');
SELECT public.insert_gateway_envelope(9, 6, '\x00aa', 1, NULL, 5, '\xe5');
SELECT tableoid::regclass AS partition, originator_node_id, originator_sequence_id, topic, payer_id
  FROM public.gateway_envelopes_meta ORDER BY 2, 3;
SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) AS bound
  FROM pg_class c JOIN pg_inherits i ON i.inhrelid = c.oid
 WHERE i.inhparent IN (SELECT inhrelid FROM pg_inherits
                        WHERE inhparent = 'public.gateway_envelopes_blob'::regclass)
 ORDER BY 1;
-- a meta row without its blob is not served
INSERT INTO public.gateway_envelopes_meta (originator_node_id, originator_sequence_id, topic, expiry)
VALUES (9, 7, '\x00aa', 1);

SELECT * FROM xip83.originator_ceilings(NULL, 'public.gateway_envelopes_meta');
SELECT originator_node_id, originator_sequence_id, topic, originator_envelope
  FROM xip83.envelope_wave_scan(ARRAY['\x00aa', '\x00aa', '\x00bb', '\x00bb']::bytea[],
                                '{7,9,7,9}', '{0,0,0,0}', '{7,9}', '{3000000,10}', 0, 0, 10,
                                source => 'public.gateway_envelopes_meta',
                                blob_source => 'public.gateway_envelopes_blob');
-- the second page from the scan position (7, 2)
SELECT originator_node_id, originator_sequence_id, topic
  FROM xip83.envelope_wave_scan(ARRAY['\x00aa', '\x00aa', '\x00bb', '\x00bb']::bytea[],
                                '{7,9,7,9}', '{0,0,0,0}', '{7,9}', '{3000000,10}', 7, 2, 10,
                                source => 'public.gateway_envelopes_meta',
                                blob_source => 'public.gateway_envelopes_blob');
SELECT originator_node_id, originator_sequence_id
  FROM xip83.envelope_wave_stream(ARRAY['\x00aa']::bytea[], '{7}', '{1}', '{7}', '{3000000}', 0, 0,
                                  'public.gateway_envelopes_meta', 'public.gateway_envelopes_blob');

DROP FUNCTION public.insert_gateway_envelope, public.insert_gateway_envelopes,
              public.ensure_gateway_envelope_partitions;
DROP TABLE public.gateway_envelopes_meta, public.gateway_envelopes_blob, public.payers;
DROP FUNCTION public.insert_group_message, public.insert_group_message_v2,
              public.insert_group_message_v3, public.insert_welcome_message,
              public.insert_welcome_message_v2;
DROP TABLE public.group_messages, public.welcome_messages;
