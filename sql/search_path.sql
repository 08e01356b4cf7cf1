-- search_path capture: functions and operators a hostile role puts in a schema
-- on the caller's search_path never run inside the batch functions or the
-- wave streams, even when the caller (here a superuser) puts that schema
-- before pg_catalog. Each hostile object records that it ran, then does the
-- real work so the capture would go unnoticed.
-- Starts from empty tables and fresh ids, whatever ran before in this database.
TRUNCATE xip83.group_messages, xip83.welcome_messages, xip83.envelopes RESTART IDENTITY;

-- Every SQL and PL/pgSQL function pins its search_path, except the streams:
-- the planner inlines them only without a SET clause, so their bodies name
-- every object by schema instead.
SELECT p.oid::regprocedure AS function, l.lanname AS language, p.proconfig AS settings
  FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
 WHERE p.pronamespace = 'xip83'::regnamespace AND l.lanname IN ('sql', 'plpgsql')
 ORDER BY p.oid::regprocedure::text;

CREATE ROLE regress_hostile;
-- PostgreSQL 15 no longer lets every role create in public; many databases
-- upgraded from older releases still do.
GRANT CREATE ON SCHEMA public TO regress_hostile;
SET ROLE regress_hostile;
CREATE TABLE public.hostile_calls (fn text);
GRANT INSERT ON public.hostile_calls TO PUBLIC;
CREATE FUNCTION public.cardinality(bytea[]) RETURNS int LANGUAGE plpgsql AS $$
BEGIN INSERT INTO public.hostile_calls VALUES ('cardinality');
      RETURN pg_catalog.cardinality($1); END $$;
CREATE FUNCTION public.array_ndims(bytea[]) RETURNS int LANGUAGE plpgsql AS $$
BEGIN INSERT INTO public.hostile_calls VALUES ('array_ndims');
      RETURN pg_catalog.array_ndims($1); END $$;
CREATE FUNCTION public.array_position(bytea[], bytea) RETURNS int LANGUAGE plpgsql AS $$
BEGIN INSERT INTO public.hostile_calls VALUES ('array_position');
      RETURN pg_catalog.array_position($1, $2); END $$;
CREATE FUNCTION public.unnest(bytea[]) RETURNS SETOF bytea LANGUAGE plpgsql AS $$
BEGIN INSERT INTO public.hostile_calls VALUES ('unnest');
      RETURN QUERY SELECT pg_catalog.unnest($1); END $$;
CREATE FUNCTION public.sha256(bytea) RETURNS bytea LANGUAGE plpgsql AS $$
BEGIN INSERT INTO public.hostile_calls VALUES ('sha256');
      RETURN pg_catalog.sha256($1); END $$;
CREATE FUNCTION public.octet_length(bytea) RETURNS int LANGUAGE plpgsql AS $$
BEGIN INSERT INTO public.hostile_calls VALUES ('octet_length');
      RETURN pg_catalog.octet_length($1); END $$;
CREATE FUNCTION public.hostile_byteacat(bytea, bytea) RETURNS bytea LANGUAGE plpgsql AS $$
BEGIN INSERT INTO public.hostile_calls VALUES ('operator ||');
      RETURN pg_catalog.byteacat($1, $2); END $$;
CREATE OPERATOR public.|| (LEFTARG = bytea, RIGHTARG = bytea, FUNCTION = public.hostile_byteacat);
CREATE FUNCTION public.hostile_int8eq(bigint, bigint) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN INSERT INTO public.hostile_calls VALUES ('operator =');
      RETURN pg_catalog.int8eq($1, $2); END $$;
CREATE OPERATOR public.= (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = public.hostile_int8eq);
RESET ROLE;

-- The superuser works with the hostile schema first on its path.
SET search_path = public, pg_catalog;
SELECT id > 0 AS stored, inserted
  FROM xip83.insert_group_messages(ARRAY['\x5a01', '\x5a02']::bytea[], ARRAY['\x01', '\x02']::bytea[]);
SELECT inserted
  FROM xip83.insert_welcome_messages(ARRAY['\x5b01']::bytea[], ARRAY['\x01']::bytea[]);
SELECT inserted
  FROM xip83.insert_envelopes(ARRAY[5], ARRAY[1]::bigint[], ARRAY['\x5c01']::bytea[],
                              ARRAY['\xe1']::bytea[]);
-- errors raised from inside the helpers go through the same pinned path
\set VERBOSITY sqlstate
SELECT * FROM xip83.insert_group_messages(ARRAY['\x5a03', '\x5a04']::bytea[], ARRAY['\x01']::bytea[]);
SELECT * FROM xip83.insert_group_messages(ARRAY['\x5a03', NULL]::bytea[], ARRAY['\x01', '\x02']::bytea[]);
\set VERBOSITY default
SELECT count(*) FROM xip83.group_wave_stream(ARRAY['\x5a01', '\x5a02']::bytea[], '{0,0}', 0, 1000000);
SELECT count(*) FROM xip83.envelope_wave_stream(ARRAY['\x5c01']::bytea[], '{5}', '{0}', '{5}', '{10}', 0, 0);
-- the import procedure cannot pin its path (it commits): it calls only
-- qualified functions, and the batch function it calls pins its own
CREATE TABLE public.node_groups (LIKE xip83.group_messages);
INSERT INTO public.node_groups (id, created_at, group_id, data, group_id_data_hash)
VALUES (1000001, '2026-01-01', '\x5d01', '\x01', pg_catalog.sha256('\x5d0101')),
       (1000002, '2026-01-01', '\x5d02', '\x02', pg_catalog.sha256('\x5d0202'));
CALL xip83.import('public.node_groups', 'xip83.group_messages');
CALL xip83.import('public.node_groups', 'xip83.group_messages', resume => false);
DROP TABLE public.node_groups;
RESET search_path;

-- Nothing hostile ran.
SELECT fn, count(*) FROM public.hostile_calls GROUP BY fn ORDER BY fn;

DROP OPERATOR public.= (bigint, bigint);
DROP OPERATOR public.|| (bytea, bytea);
DROP FUNCTION public.cardinality(bytea[]), public.array_ndims(bytea[]),
              public.array_position(bytea[], bytea), public.unnest(bytea[]),
              public.sha256(bytea), public.octet_length(bytea),
              public.hostile_byteacat(bytea, bytea), public.hostile_int8eq(bigint, bigint);
DROP TABLE public.hostile_calls;
REVOKE CREATE ON SCHEMA public FROM regress_hostile;
DROP ROLE regress_hostile;
TRUNCATE xip83.group_messages, xip83.welcome_messages, xip83.envelopes;
