-- A sample a node might hold: 3,000 group messages over 100 groups, 300
-- welcomes over 30 installations, and 1,500 envelopes from 3 originators,
-- written through the batch functions a node would call.
\set ON_ERROR_STOP on
SELECT count(*) FILTER (WHERE inserted) AS group_messages_inserted
  FROM xip83.insert_group_messages(
         ARRAY(SELECT sha256(int4send(i % 100))::bytea FROM generate_series(1, 3000) i ORDER BY i),
         ARRAY(SELECT convert_to('message ' || i, 'UTF8') FROM generate_series(1, 3000) i ORDER BY i),
         ARRAY(SELECT i % 50 = 0 FROM generate_series(1, 3000) i ORDER BY i));

SELECT count(*) FILTER (WHERE inserted) AS welcome_messages_inserted
  FROM xip83.insert_welcome_messages(
         ARRAY(SELECT sha256(int4send(1000 + i % 30))::bytea FROM generate_series(1, 300) i ORDER BY i),
         ARRAY(SELECT convert_to('welcome ' || i, 'UTF8') FROM generate_series(1, 300) i ORDER BY i));

-- d14n topics are kind-prefixed: 0x00 group messages, 0x01 welcomes.
SELECT count(*) FILTER (WHERE inserted) AS envelopes_inserted
  FROM xip83.insert_envelopes(
         ARRAY(SELECT (ARRAY[100, 200, 300])[1 + i % 3] FROM generate_series(0, 1499) i ORDER BY i),
         ARRAY(SELECT (i / 3 + 1)::bigint FROM generate_series(0, 1499) i ORDER BY i),
         ARRAY(SELECT '\x00'::bytea || sha256(int4send(i % 100)) FROM generate_series(0, 1499) i ORDER BY i),
         ARRAY(SELECT convert_to('envelope ' || i, 'UTF8') FROM generate_series(0, 1499) i ORDER BY i));
