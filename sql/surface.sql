-- The SQL surface (docs/design.md, "The SQL surface"): few names, the forms
-- of one thing as arguments and overloads of its name, and no overload that
-- could make a call with untyped parameters ambiguous.
-- Starts from empty tables and fresh ids, whatever ran before in this database.
TRUNCATE xip83.group_messages, xip83.welcome_messages, xip83.envelopes RESTART IDENTITY;
-- 0.1.0's names stay for one release as deprecated wrappers (docs/upgrading.md),
-- outside the count.
SELECT count(DISTINCT proname) <= 45 AS at_most_45_names
  FROM pg_proc WHERE pronamespace = 'xip83'::regnamespace
   AND coalesce(obj_description(oid, 'pg_proc'), '') NOT LIKE 'Deprecated:%';
SELECT count(*) AS deprecated_wrappers,
       bool_and(prolang = (SELECT oid FROM pg_language WHERE lanname = 'plpgsql')
                AND proconfig = '{"search_path=pg_catalog, pg_temp"}' AND NOT prosecdef
                AND proacl IS NULL) AS plpgsql_pinned_invoker_public
  FROM pg_proc WHERE pronamespace = 'xip83'::regnamespace
   AND obj_description(oid, 'pg_proc') LIKE 'Deprecated:%';

-- Overloads of a name take disjoint numbers of arguments (defaults counted),
-- so a prepared call with unknown parameter types picks one by its count.
SELECT a.oid::regprocedure AS one, b.oid::regprocedure AS other
  FROM pg_proc a JOIN pg_proc b ON b.proname = a.proname AND b.oid > a.oid
 WHERE a.pronamespace = 'xip83'::regnamespace AND b.pronamespace = a.pronamespace
   AND int4range(a.pronargs - a.pronargdefaults, a.pronargs, '[]')
       && int4range(b.pronargs - b.pronargdefaults, b.pronargs, '[]');

-- The node's calls, prepared with untyped parameters, still resolve to the
-- row forms.
PREPARE g(unknown, unknown, unknown, unknown, unknown, unknown) AS
  SELECT * FROM xip83.group_wave_scan($1, $2, $3, $4, $5, $6);
PREPARE e(unknown, unknown, unknown, unknown, unknown, unknown, unknown, unknown, unknown, unknown) AS
  SELECT * FROM xip83.envelope_wave_scan($1, $2, $3, $4, $5, $6, $7, $8, $9, $10);
EXECUTE g('{}', '{}', 0, 0, 10, 'xip83.group_messages');
EXECUTE e('{}', '{}', '{}', '{}', '{}', 0, 0, 10, 'xip83.envelopes', NULL);
DEALLOCATE ALL;

-- One wave, every form: a page, the whole wave (page_limit NULL), the stream,
-- a handle; rows and frames.
SELECT min(id) - 1 AS base FROM xip83.insert_group_messages(
    ARRAY(SELECT '\x5355'::bytea || int4send(i % 3) FROM generate_series(1, 12) i),
    ARRAY(SELECT int4send(i) FROM generate_series(1, 12) i)) \gset
SELECT xip83.group_ceiling() AS ceiling \gset
\set topics 'ARRAY[''\\x535500000000''::bytea, ''\\x535500000001'']'
SELECT string_agg((id - :base)::text, ',') AS page
  FROM xip83.group_wave_scan(:topics, '{0,0}', 0, :ceiling, 5);
SELECT string_agg((id - :base)::text, ',') AS whole
  FROM xip83.group_wave_scan(:topics, '{0,0}', 0, :ceiling, NULL);
SELECT string_agg((id - :base)::text, ',') AS stream
  FROM xip83.group_wave_stream(:topics, '{0,0}', 0, :ceiling);
SELECT messages, last_id - :base AS last
  FROM xip83.group_wave_scan(:topics, '{0,0}', 0, :ceiling, 5, 7, 2097152);
SELECT messages, last_id - :base AS last
  FROM xip83.group_wave_stream(:topics, '{0,0}', 0, :ceiling, 7, 2097152);
BEGIN;
SELECT xip83.wave_open('group', :topics, '{0,0}', 0, :ceiling) AS h \gset
SELECT string_agg((id - :base)::text, ',') AS handle_rows FROM xip83.group_wave_scan(:h, 3);
SELECT messages, last_id - :base AS last FROM xip83.group_wave_scan(:h, 100, 7, 2097152);
SELECT xip83.wave_close(:h);
-- a v3 wave without a source reads its kind's own table
SELECT xip83.wave_open('welcome', :topics, '{0,0}', 0, :ceiling) AS h \gset
SELECT count(*) FROM xip83.welcome_wave_scan(:h, 10);
COMMIT;

-- The kind, the control frame kind and the decoded message are checked.
\set VERBOSITY sqlstate
SELECT xip83.wave_open('envelope', ARRAY[int4send(0)], '{0}', 0, 1000);
SELECT xip83.wave_open('group', ARRAY['\x00aa'::bytea], '{7}', '{0}', '{7}', '{10}', 0, 0);
SELECT xip83.wave_open(NULL, ARRAY[int4send(0)], '{0}', 0, 1000);
SELECT * FROM xip83.live_frames('messages', 0, 10, 0, 4096);
SELECT * FROM xip83.live_frames('group', '{1}', '{0}', 10, 0, 4096);
SELECT xip83.control_frame('hello', 1);
SELECT xip83.control_frame('ping');
SELECT xip83.control_frame('topics_live', 1, topics => ARRAY['\x00'::bytea]);
SELECT xip83.control_frame('pong', 1, topics => ARRAY['\x00'::bytea]);
SELECT xip83.control_frame('started', 4294967296);
SELECT xip83.decode_frame(xip83.control_frame('ping', 1), 'v3', 'reply');
SELECT xip83.decode_frame(xip83.control_frame('ping', 1), 'v3', NULL);
\set VERBOSITY default
SELECT xip83.decode_frame(xip83.control_frame('started', 1000, 'd14n'), 'd14n') AS response,
       xip83.decode_frame('\x0a0412020805', 'd14n', 'request') AS request;
TRUNCATE xip83.group_messages, xip83.welcome_messages, xip83.envelopes;
