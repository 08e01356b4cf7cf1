-- What a role with nothing but USAGE on schema xip83 may execute. The batch
-- helpers, the index access method handler and import_step are internal (no
-- EXECUTE for PUBLIC); the *_wave_scan functions stay executable, and the
-- inlined *_wave_stream wrappers run them as the caller.
-- Starts from empty tables and fresh ids, whatever ran before in this database.
TRUNCATE xip83.group_messages, xip83.welcome_messages, xip83.envelopes RESTART IDENTITY;
-- one group message of topic 01 for the streams below to read
SELECT count(*) FROM xip83.insert_group_messages(ARRAY['\x01']::bytea[], ARRAY['\xaa']::bytea[]);
CREATE ROLE regress_usage_only;
GRANT USAGE ON SCHEMA xip83 TO regress_usage_only;
SELECT p.oid::regprocedure AS function,
       has_function_privilege('regress_usage_only', p.oid, 'EXECUTE') AS executable,
       obj_description(p.oid, 'pg_proc') IS NOT NULL AS commented
  FROM pg_proc p
 WHERE p.pronamespace = 'xip83'::regnamespace
 ORDER BY p.oid::regprocedure::text;

-- The helpers refuse the role; the streams work once it may read the table.
SET ROLE regress_usage_only;
\set VERBOSITY sqlstate
SELECT xip83.batch_hashes(ARRAY['\x01']::bytea[], ARRAY['\x02']::bytea[]);
SELECT * FROM xip83.batch_first_occurrences(ARRAY['\x01']::bytea[]);
SELECT count(*) FROM xip83.group_wave_stream(ARRAY['\x01']::bytea[], '{0}', 0, 10);
\set VERBOSITY default
RESET ROLE;
GRANT SELECT ON xip83.group_messages, xip83.envelopes TO regress_usage_only;
SET ROLE regress_usage_only;
SELECT count(*) FROM xip83.group_wave_stream(ARRAY['\x01']::bytea[], '{0}', 0, 10);
SELECT count(*) FROM xip83.envelope_wave_stream(ARRAY['\x01']::bytea[], '{1}', '{0}', '{1}', '{10}', 0, 0);
RESET ROLE;

-- A writer needs INSERT and SELECT on the table and EXECUTE on the helpers
-- (the batch functions run as their caller).
GRANT INSERT ON xip83.envelopes TO regress_usage_only;
SET ROLE regress_usage_only;
\set VERBOSITY sqlstate
SELECT inserted FROM xip83.insert_envelopes(ARRAY[9], ARRAY[1]::bigint[], ARRAY['\x09']::bytea[], ARRAY['\xe9']::bytea[]);
\set VERBOSITY default
RESET ROLE;
GRANT EXECUTE ON FUNCTION xip83.check_batch_array(anyarray, text, int, boolean, boolean),
                          xip83.batch_first_occurrences(bytea[])
   TO regress_usage_only;
SET ROLE regress_usage_only;
SELECT inserted FROM xip83.insert_envelopes(ARRAY[9], ARRAY[1]::bigint[], ARRAY['\x09']::bytea[], ARRAY['\xe9']::bytea[]);
RESET ROLE;

REVOKE ALL ON FUNCTION xip83.check_batch_array(anyarray, text, int, boolean, boolean),
                       xip83.batch_first_occurrences(bytea[])
  FROM regress_usage_only;
REVOKE ALL ON xip83.group_messages, xip83.envelopes FROM regress_usage_only;
REVOKE ALL ON SCHEMA xip83 FROM regress_usage_only;
DROP ROLE regress_usage_only;
TRUNCATE xip83.group_messages, xip83.welcome_messages, xip83.envelopes;
