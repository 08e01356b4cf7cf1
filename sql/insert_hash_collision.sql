-- The stored hash is sha256(topic || data), as the v3 node computes it, so
-- (topic 0a0b, data 0102) and (topic 0a0b01, data 02) share one. The second
-- is a different message: refused with 23505 naming both, never reported as a
-- repeat of the first and silently dropped.
-- The error as SQLSTATE, message and detail, with the stored id masked (ids
-- depend on what ran before).
-- Starts from empty tables and fresh ids, whatever ran before in this database.
TRUNCATE xip83.group_messages, xip83.welcome_messages, xip83.envelopes RESTART IDENTITY;
CREATE FUNCTION pg_temp.refusal(sql text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    state text; msg text; detail text;
BEGIN
    EXECUTE sql;
    RETURN 'accepted';
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE, msg = MESSAGE_TEXT, detail = PG_EXCEPTION_DETAIL;
    RETURN state || E'\n' || msg || E'\n' || regexp_replace(detail, 'message \d+', 'message N');
END $$;
SELECT sha256('\x0a0b'::bytea || '\x0102'::bytea) = sha256('\x0a0b01'::bytea || '\x02'::bytea) AS same_hash;
SELECT id AS first_id, inserted
  FROM xip83.insert_group_messages(ARRAY['\x0a0b']::bytea[], ARRAY['\x0102']::bytea[]) \gset
SELECT :'inserted' AS inserted;
SELECT pg_temp.refusal($$SELECT xip83.insert_group_messages(ARRAY['\x0a0b01']::bytea[],
                                                             ARRAY['\x02']::bytea[])$$);
-- within one batch too: nothing of the batch is written
SELECT pg_temp.refusal($$SELECT xip83.insert_group_messages(ARRAY['\x0c0d', '\x0c']::bytea[],
                                                             ARRAY['\x01', '\x0d01']::bytea[])$$);
SELECT group_id, data FROM xip83.group_messages ORDER BY id;
-- a true repeat is still a repeat
SELECT id = :first_id AS same_row, inserted
  FROM xip83.insert_group_messages(ARRAY['\x0a0b']::bytea[], ARRAY['\x0102']::bytea[]);

-- Welcomes share the hash rule.
SELECT inserted FROM xip83.insert_welcome_messages(ARRAY['\x0a0b']::bytea[], ARRAY['\x0102']::bytea[]);
SELECT pg_temp.refusal($$SELECT xip83.insert_welcome_messages(ARRAY['\x0a0b01']::bytea[],
                                                               ARRAY['\x02']::bytea[])$$);
SELECT installation_key, data FROM xip83.welcome_messages ORDER BY id;

TRUNCATE xip83.group_messages, xip83.welcome_messages, xip83.envelopes;
