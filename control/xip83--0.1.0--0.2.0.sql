-- xip83 0.1.0 -> 0.2.0: ALTER EXTENSION xip83 UPDATE TO '0.2.0'.
-- What a fresh 0.2.0 installs (control/install/*.sql) and what this script
-- leaves behind are compared object by object by the upgrade test.
\echo Use "ALTER EXTENSION xip83 UPDATE TO '0.2.0'" to load this file. \quit

-- ==================================================================== schemas
-- Node-exact tables (control/install/00_schema.sql, 10_insert.sql,
-- 40_wave_d14n.sql): the tables take every row the nodes' own tables take, the
-- batch inserts check only what the nodes check, and a listed originator
-- without rows has ceiling -1, since sequence 0 is a real one.

ALTER TABLE xip83.group_messages
    DROP CONSTRAINT group_messages_group_id_check,
    ALTER COLUMN is_commit DROP NOT NULL,
    ALTER COLUMN is_commit DROP DEFAULT;
ALTER TABLE xip83.welcome_messages
    DROP CONSTRAINT welcome_messages_installation_key_check,
    DROP CONSTRAINT welcome_messages_wrapper_algorithm_check,
    DROP CONSTRAINT welcome_messages_message_type_check;

-- expiry becomes NOT NULL as in the d14n node. 0.1.0 let writers leave it
-- out: those rows get 0, the value a row without one gets from now on.
-- Updating expiry alone fires no registry trigger (they watch the key columns).
-- A WARNING, since an extension script hides NOTICEs.
DO $$
DECLARE
    n bigint;
BEGIN
    UPDATE xip83.envelopes SET expiry = 0 WHERE expiry IS NULL;
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n > 0 THEN
        RAISE WARNING 'xip83.envelopes: % rows without an expiry now have expiry 0', n;
    END IF;
END $$;
ALTER TABLE xip83.envelopes
    DROP CONSTRAINT envelopes_topic_check,
    DROP CONSTRAINT envelopes_originator_sequence_id_check,
    ADD CONSTRAINT envelopes_originator_sequence_id_check CHECK (originator_sequence_id >= 0),
    ALTER COLUMN expiry SET DEFAULT 0,
    ALTER COLUMN expiry SET NOT NULL;

-- The batch inserts and their array check: same signatures, so OR REPLACE
-- keeps their grants.
CREATE OR REPLACE FUNCTION xip83.check_batch_array(arr anyarray, arg_name text, expected int,
                                        nulls_allowed boolean, optional boolean DEFAULT false)
RETURNS void LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF arr IS NULL AND optional THEN
        RETURN;
    END IF;
    IF arr IS NULL THEN
        RAISE EXCEPTION 'argument "%" must not be null', arg_name
            USING ERRCODE = 'null_value_not_allowed',
                  HINT = pg_catalog.format('Give "%s" a value: NULL does not stand for a default here.', arg_name);
    END IF;
    IF pg_catalog.array_ndims(arr) > 1 THEN
        RAISE EXCEPTION 'argument "%" must be a one-dimensional array', arg_name
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF pg_catalog.cardinality(arr) <> expected THEN
        RAISE EXCEPTION 'array arguments have unequal lengths'
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = pg_catalog.format('Argument "%s" has length %s where %s was expected.',
                                             arg_name, pg_catalog.cardinality(arr), expected),
                  HINT = 'Give every array of a batch one element per row.';
    END IF;
    IF NOT nulls_allowed AND pg_catalog.array_position(arr, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'argument "%" must not contain null elements', arg_name
            USING ERRCODE = 'null_value_not_allowed',
                  DETAIL = pg_catalog.format('Element %s is null.',
                                             pg_catalog.array_position(arr, NULL)
                                             - pg_catalog.array_lower(arr, 1) + 1),
                  HINT = pg_catalog.format('Every element of "%s" needs a value.', arg_name);
    END IF;
END $$;

CREATE OR REPLACE FUNCTION xip83.insert_group_messages(
    group_ids     bytea[],
    datas         bytea[],
    is_commits    boolean[] DEFAULT NULL,
    sender_hmacs  bytea[]   DEFAULT NULL,
    should_pushes boolean[] DEFAULT NULL)
RETURNS TABLE (id bigint, created_at timestamp, group_id bytea, data bytea,
               group_id_data_hash bytea, is_commit boolean, sender_hmac bytea,
               should_push boolean, inserted boolean)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
    n int := pg_catalog.cardinality(group_ids);
    hashes bytea[];
    fresh bigint[];
BEGIN
    PERFORM xip83.check_batch_array(group_ids, 'group_ids', n, false);
    PERFORM xip83.check_batch_array(datas, 'datas', n, false);
    PERFORM xip83.check_batch_array(is_commits, 'is_commits', n, true, optional => true);
    PERFORM xip83.check_batch_array(sender_hmacs, 'sender_hmacs', n, true, optional => true);
    PERFORM xip83.check_batch_array(should_pushes, 'should_pushes', n, true, optional => true);

    hashes := xip83.batch_hashes(group_ids, datas);
    -- Insert the first occurrence of every new hash, ids in input order.
    WITH ins AS (
        INSERT INTO xip83.group_messages AS m
               (group_id, data, group_id_data_hash, is_commit, sender_hmac, should_push)
        SELECT b.g, b.d, f.key, b.c, b.s, b.p
          FROM ROWS FROM (pg_catalog.unnest(group_ids), pg_catalog.unnest(datas),
                          pg_catalog.unnest(is_commits), pg_catalog.unnest(sender_hmacs),
                          pg_catalog.unnest(should_pushes))
               WITH ORDINALITY AS b(g, d, c, s, p, ord)
          JOIN xip83.batch_first_occurrences(hashes) f ON f.ord = b.ord AND f.first
         ORDER BY b.ord
        ON CONFLICT (group_id_data_hash) DO NOTHING
        RETURNING m.id
    )
    SELECT pg_catalog.array_agg(ins.id) INTO fresh FROM ins;

    -- A new statement takes a new snapshot: a duplicate a concurrent writer
    -- committed while we waited on its hash is visible here. A stored message
    -- with an element's hash but not its topic and data is a collision.
    RETURN QUERY
    SELECT m.id, m.created_at, m.group_id, m.data, m.group_id_data_hash, m.is_commit,
           m.sender_hmac, m.should_push, (fr.id IS NOT NULL AND f.first)
      FROM xip83.batch_first_occurrences(hashes) f
      JOIN ROWS FROM (pg_catalog.unnest(group_ids), pg_catalog.unnest(datas))
           WITH ORDINALITY AS b(g, d, ord) ON b.ord = f.ord
      JOIN xip83.group_messages m ON m.group_id_data_hash = f.key
      LEFT JOIN pg_catalog.unnest(fresh) AS fr(id) ON fr.id = m.id
     WHERE CASE WHEN m.group_id = b.g AND m.data = b.d THEN true
                ELSE xip83.batch_hash_collision('group_ids', b.ord, b.g, b.d,
                                                m.id, m.group_id, m.data) END
     ORDER BY f.ord;
END $$;

CREATE OR REPLACE FUNCTION xip83.insert_welcome_messages(
    installation_keys  bytea[],
    datas              bytea[],
    hpke_public_keys   bytea[]   DEFAULT NULL,
    wrapper_algorithms smallint[] DEFAULT NULL,
    welcome_metadatas  bytea[]   DEFAULT NULL,
    message_types      smallint[] DEFAULT NULL)
RETURNS TABLE (id bigint, created_at timestamp, installation_key bytea, data bytea,
               hpke_public_key bytea, installation_key_data_hash bytea,
               wrapper_algorithm smallint, welcome_metadata bytea, message_type smallint,
               inserted boolean)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
    n int := pg_catalog.cardinality(installation_keys);
    hashes bytea[];
    fresh bigint[];
BEGIN
    PERFORM xip83.check_batch_array(installation_keys, 'installation_keys', n, false);
    PERFORM xip83.check_batch_array(datas, 'datas', n, false);
    PERFORM xip83.check_batch_array(hpke_public_keys, 'hpke_public_keys', n, true, optional => true);
    PERFORM xip83.check_batch_array(wrapper_algorithms, 'wrapper_algorithms', n, false, optional => true);
    PERFORM xip83.check_batch_array(welcome_metadatas, 'welcome_metadatas', n, true, optional => true);
    PERFORM xip83.check_batch_array(message_types, 'message_types', n, false, optional => true);

    hashes := xip83.batch_hashes(installation_keys, datas);
    WITH ins AS (
        INSERT INTO xip83.welcome_messages AS m
               (installation_key, data, hpke_public_key, installation_key_data_hash,
                wrapper_algorithm, welcome_metadata, message_type)
        SELECT b.k, b.d, b.h, f.key, coalesce(b.w, 0), b.md, coalesce(b.t, 0)
          FROM ROWS FROM (pg_catalog.unnest(installation_keys), pg_catalog.unnest(datas),
                          pg_catalog.unnest(hpke_public_keys),
                          pg_catalog.unnest(wrapper_algorithms),
                          pg_catalog.unnest(welcome_metadatas),
                          pg_catalog.unnest(message_types))
               WITH ORDINALITY AS b(k, d, h, w, md, t, ord)
          JOIN xip83.batch_first_occurrences(hashes) f ON f.ord = b.ord AND f.first
         ORDER BY b.ord
        ON CONFLICT (installation_key_data_hash) DO NOTHING
        RETURNING m.id
    )
    SELECT pg_catalog.array_agg(ins.id) INTO fresh FROM ins;

    RETURN QUERY
    SELECT m.id, m.created_at, m.installation_key, m.data, m.hpke_public_key,
           m.installation_key_data_hash, m.wrapper_algorithm, m.welcome_metadata,
           m.message_type, (fr.id IS NOT NULL AND f.first)
      FROM xip83.batch_first_occurrences(hashes) f
      JOIN ROWS FROM (pg_catalog.unnest(installation_keys), pg_catalog.unnest(datas))
           WITH ORDINALITY AS b(k, d, ord) ON b.ord = f.ord
      JOIN xip83.welcome_messages m ON m.installation_key_data_hash = f.key
      LEFT JOIN pg_catalog.unnest(fresh) AS fr(id) ON fr.id = m.id
     WHERE CASE WHEN m.installation_key = b.k AND m.data = b.d THEN true
                ELSE xip83.batch_hash_collision('installation_keys', b.ord, b.k, b.d,
                                                m.id, m.installation_key, m.data) END
     ORDER BY f.ord;
END $$;

CREATE OR REPLACE FUNCTION xip83.insert_envelopes(
    originator_node_ids     int[],
    originator_sequence_ids bigint[],
    topics                  bytea[],
    originator_envelopes    bytea[],
    expiries                bigint[] DEFAULT NULL,
    payer_ids               int[]    DEFAULT NULL)
RETURNS TABLE (originator_node_id int, originator_sequence_id bigint, topic bytea,
               gateway_time timestamp, expiry bigint, payer_id int,
               originator_envelope bytea, inserted boolean)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
    n int := pg_catalog.cardinality(originator_node_ids);
    keys bytea[];
    bad record;
    fresh bytea[];
BEGIN
    PERFORM xip83.check_batch_array(originator_node_ids, 'originator_node_ids', n, false);
    PERFORM xip83.check_batch_array(originator_sequence_ids, 'originator_sequence_ids', n, false);
    PERFORM xip83.check_batch_array(topics, 'topics', n, false);
    PERFORM xip83.check_batch_array(originator_envelopes, 'originator_envelopes', n, false);
    PERFORM xip83.check_batch_array(expiries, 'expiries', n, false, optional => true);
    PERFORM xip83.check_batch_array(payer_ids, 'payer_ids', n, true, optional => true);
    -- Refused here, as the registering trigger would refuse it, so that the
    -- error's context is this line and not the insert statement below.
    SELECT u.ord, u.o, u.s INTO bad
      FROM ROWS FROM (pg_catalog.unnest(originator_node_ids),
                      pg_catalog.unnest(originator_sequence_ids))
           WITH ORDINALITY AS u(o, s, ord)
     WHERE u.s < 0 ORDER BY u.ord LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'originator sequence ids must not be negative'
            USING ERRCODE = 'numeric_value_out_of_range',
                  DETAIL = pg_catalog.format('Originator %s, sequence id %s (element %s).',
                                             bad.o, bad.s, bad.ord);
    END IF;

    -- (originator, sequence) as one comparable key
    keys := ARRAY(SELECT pg_catalog.int4send(u.o) || pg_catalog.int8send(u.s)
                    FROM ROWS FROM (pg_catalog.unnest(originator_node_ids),
                                    pg_catalog.unnest(originator_sequence_ids))
                         WITH ORDINALITY AS u(o, s, ord)
                   ORDER BY u.ord);
    WITH ins AS (
        INSERT INTO xip83.envelopes AS e
               (originator_node_id, originator_sequence_id, topic, expiry, payer_id,
                originator_envelope)
        SELECT b.o, b.s, b.t, coalesce(b.x, 0), b.p, b.env
          FROM ROWS FROM (pg_catalog.unnest(originator_node_ids),
                          pg_catalog.unnest(originator_sequence_ids),
                          pg_catalog.unnest(topics), pg_catalog.unnest(expiries),
                          pg_catalog.unnest(payer_ids),
                          pg_catalog.unnest(originator_envelopes))
               WITH ORDINALITY AS b(o, s, t, x, p, env, ord)
          JOIN xip83.batch_first_occurrences(keys) f ON f.ord = b.ord AND f.first
         ORDER BY b.ord
        ON CONFLICT (originator_node_id, originator_sequence_id) DO NOTHING
        RETURNING pg_catalog.int4send(e.originator_node_id)
                  || pg_catalog.int8send(e.originator_sequence_id) AS key
    )
    SELECT pg_catalog.array_agg(ins.key) INTO fresh FROM ins;

    RETURN QUERY
    SELECT e.originator_node_id, e.originator_sequence_id, e.topic, e.gateway_time,
           e.expiry, e.payer_id, e.originator_envelope, (fr.key IS NOT NULL AND f.first)
      FROM xip83.batch_first_occurrences(keys) f
      JOIN ROWS FROM (pg_catalog.unnest(originator_node_ids),
                      pg_catalog.unnest(originator_sequence_ids))
           WITH ORDINALITY AS u(o, s, ord) ON u.ord = f.ord
      JOIN xip83.envelopes e ON e.originator_node_id = u.o AND e.originator_sequence_id = u.s
      LEFT JOIN pg_catalog.unnest(fresh) AS fr(key) ON fr.key = f.key
     ORDER BY f.ord;
END $$;

DROP FUNCTION xip83.check_batch_topics(bytea[], text);

COMMENT ON FUNCTION xip83.insert_envelopes(int[], bigint[], bytea[], bytea[], bigint[], int[]) IS
'Batch insert of d14n envelopes, all or nothing. One row per element in input order: the stored envelope of its (originator, sequence) and whether this call inserted it; a repeat returns the stored envelope unchanged, for the caller to compare. Raises 22004/22023 on bad arrays; a negative sequence id is refused (22003). Snapshot as for insert_group_messages. Runs as the caller: needs INSERT and SELECT on xip83.envelopes and EXECUTE on the batch helpers.';
-- originator_ceilings' new comment comes with control/install/40_wave_d14n.sql
-- (the SQL surface, at the end).
-- ================================================================ end schemas

-- ===================================================================== import
-- xip83.import: new in 0.2.0.
-- include: control/install/80_import.sql
-- ================================================================= end import

-- ---------------------------------------------------------------- tracking
-- Horizons, late cursors and live fetch take the table they follow; the
-- trigger functions keep EXECUTE for PUBLIC (partitions of tracked tables
-- clone them); xip83.track / untrack / next_id, the tracked tables' table
-- and the tracked view (control/install/50_live.sql, 70_track.sql).
DROP FUNCTION xip83.group_horizon();
DROP FUNCTION xip83.welcome_horizon();
DROP FUNCTION xip83.envelope_horizons();
DROP FUNCTION xip83.late_cursor();
DROP FUNCTION xip83.live_group_messages(bigint, int, bigint);
DROP FUNCTION xip83.live_welcome_messages(bigint, int, bigint);
DROP FUNCTION xip83.live_envelopes(int[], bigint[], int, bigint);
CREATE FUNCTION xip83.group_horizon(source regclass DEFAULT 'xip83.group_messages')
RETURNS bigint
AS 'MODULE_PATHNAME', 'group_horizon' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION xip83.welcome_horizon(source regclass DEFAULT 'xip83.welcome_messages')
RETURNS bigint
AS 'MODULE_PATHNAME', 'welcome_horizon' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION xip83.envelope_horizons(source regclass DEFAULT 'xip83.envelopes')
RETURNS TABLE (originator_node_id int, horizon bigint)
AS 'MODULE_PATHNAME', 'envelope_horizons' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION xip83.late_cursor(source regclass DEFAULT NULL) RETURNS bigint
AS 'MODULE_PATHNAME', 'late_cursor' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION xip83.group_horizon(regclass) IS
  'Highest group message id H of source (xip83.group_messages or a table xip83.track follows as group) such that every id <= H is committed, will never exist, or is announced as a late write. Never decreases, across restarts. Read it before taking the snapshot the rows are read with. Needs USAGE on the source''s schema and SELECT on it; primary only; PARALLEL UNSAFE.';
COMMENT ON FUNCTION xip83.welcome_horizon(regclass) IS
  'The horizon of welcome ids of source (see group_horizon).';
COMMENT ON FUNCTION xip83.envelope_horizons(regclass) IS
  'Per originator of source (xip83.envelopes or a table xip83.track follows as envelope), the highest sequence id such that every one at or below is committed, will never exist, or is announced as a late write. Needs SELECT on source.';
COMMENT ON FUNCTION xip83.late_cursor(regclass) IS
  'Sequence number of the newest late write a feed remembers (source NULL: xip83''s own tables; else a tracked table): the late cursor a consumer following "from now" passes to its first live fetch (read it before the horizons). Returns once every late write up to it has ended, waiting for those still running.';
GRANT EXECUTE ON FUNCTION xip83.register_position() TO PUBLIC;
GRANT EXECUTE ON FUNCTION xip83.reset_positions() TO PUBLIC;
COMMENT ON FUNCTION xip83.register_position() IS
  'BEFORE INSERT OR UPDATE row trigger of the xip83 tables: notes each row''s topic and position for reconnect waves and registers each written position; positions at or below the published horizon are stored and announced in the late ring. Also the trigger xip83.track adds to a node''s table. Refuses the write on any other table.';
COMMENT ON FUNCTION xip83.reset_positions() IS
  'AFTER TRUNCATE trigger of the xip83 tables and tracked tables: the table''s position lines start over at 0 when the TRUNCATE commits. Refuses any other table.';

-- include: control/install/70_track.sql

-- ---------------------------------------------------------------- read replicas
-- Live fetch takes the table it follows (tracking) and, for hot standbys, the
-- horizon and fence it reads up to; xip83.horizon_fence; LiveNotice's fence:
-- live_notice_encode takes it, live_notice_decode reads it. Both install parts
-- are made again whole (control/install/20_live_notice.sql, 55_live_fetch.sql).
DROP FUNCTION xip83.live_notice_encode(bigint, text, bigint, bigint, bigint, int[], bigint[]);
DROP FUNCTION xip83.live_notice_decode(text);
-- include: control/install/20_live_notice.sql
-- include: control/install/55_live_fetch.sql
COMMENT ON FUNCTION xip83.group_horizon(regclass) IS
  'Highest group message id H of source (xip83.group_messages or a table xip83.track follows as group) such that every id <= H is committed, will never exist, or is announced as a late write. Never decreases, across restarts. Read it before taking the snapshot the rows are read with. Needs USAGE on the source''s schema and SELECT on it; PARALLEL UNSAFE. On a standby: the horizons replayed from the primary (55000 until the first full record after a checkpoint).';

-- ---------------------------------------------------------------- who holds a horizon
-- feed_status shows, per horizon, the oldest position in flight and the pid of
-- the backend holding it: the function and its view are made again; the id
-- defaults check the writer's rights before they register an id.
DROP VIEW xip83.feed_status;
DROP FUNCTION xip83.feed_status();
-- include: control/install/52_feed_status.sql
COMMENT ON FUNCTION xip83.next_group_id(regclass) IS
  'Id default of xip83.group_messages: draws from xip83.group_messages_id_seq only, registering the id before any reader can see it. EXECUTE for every writer; needs INSERT or UPDATE on the table and USAGE or UPDATE on the sequence, checked before the id is registered.';
COMMENT ON FUNCTION xip83.next_welcome_id(regclass) IS
  'Id default of xip83.welcome_messages: draws from xip83.welcome_messages_id_seq only, registering the id before any reader can see it. EXECUTE for every writer; needs INSERT or UPDATE on the table and USAGE or UPDATE on the sequence, checked before the id is registered.';

-- ---------------------------------------------------------------- SQL surface
-- 0.2.0 has fewer names (docs/design.md, "The SQL surface"): the row and
-- frame forms of a wave, its handle and the live frames became arguments and
-- overloads of the wave functions, wave_open, live_frames, control_frame and
-- decode_frame. The replaced functions go; the three parts then run whole:
-- what 0.1.0 already had there they write with CREATE OR REPLACE (same
-- signature: grants kept), the rest is new.
DROP FUNCTION xip83.group_wave_rows(bytea[], bigint[], bigint, bigint, regclass);
DROP FUNCTION xip83.welcome_wave_rows(bytea[], bigint[], bigint, bigint, regclass);
DROP FUNCTION xip83.envelope_wave_rows(bytea[], int[], bigint[], int[], bigint[], int, bigint,
                                       regclass, regclass);
DROP FUNCTION xip83.group_wave_frames(bytea[], bigint[], bigint, bigint, int, bigint, int, regclass);
DROP FUNCTION xip83.welcome_wave_frames(bytea[], bigint[], bigint, bigint, int, bigint, int, regclass);
DROP FUNCTION xip83.envelope_wave_frames(bytea[], int[], bigint[], int[], bigint[], int, bigint, int,
                                         bigint, int, regclass, regclass);
DROP FUNCTION xip83.group_wave_frames_rows(bytea[], bigint[], bigint, bigint, bigint, int, regclass);
DROP FUNCTION xip83.welcome_wave_frames_rows(bytea[], bigint[], bigint, bigint, bigint, int, regclass);
DROP FUNCTION xip83.envelope_wave_frames_rows(bytea[], int[], bigint[], int[], bigint[], int, bigint,
                                              bigint, int, regclass, regclass);
DROP FUNCTION xip83.group_wave_frames_stream(bytea[], bigint[], bigint, bigint, bigint, int, regclass);
DROP FUNCTION xip83.welcome_wave_frames_stream(bytea[], bigint[], bigint, bigint, bigint, int, regclass);
DROP FUNCTION xip83.envelope_wave_frames_stream(bytea[], int[], bigint[], int[], bigint[], int, bigint,
                                                bigint, int, regclass, regclass);
DROP FUNCTION xip83.group_wave_open(bytea[], bigint[], bigint, bigint, regclass);
DROP FUNCTION xip83.welcome_wave_open(bytea[], bigint[], bigint, bigint, regclass);
DROP FUNCTION xip83.envelope_wave_open(bytea[], int[], bigint[], int[], bigint[], int, bigint,
                                       regclass, regclass);
DROP FUNCTION xip83.group_wave_fetch(int, int);
DROP FUNCTION xip83.welcome_wave_fetch(int, int);
DROP FUNCTION xip83.envelope_wave_fetch(int, int);
DROP FUNCTION xip83.group_wave_frames_fetch(int, int, bigint, int);
DROP FUNCTION xip83.welcome_wave_frames_fetch(int, int, bigint, int);
DROP FUNCTION xip83.envelope_wave_frames_fetch(int, int, bigint, int);
DROP FUNCTION xip83.live_group_frames(bigint, int, bigint, int);
DROP FUNCTION xip83.live_welcome_frames(bigint, int, bigint, int);
DROP FUNCTION xip83.live_envelope_frames(int[], bigint[], int, bigint, int);
DROP FUNCTION xip83.frame_started(int, text);
DROP FUNCTION xip83.frame_topics_live(bytea[], text);
DROP FUNCTION xip83.frame_catchup_complete(bigint, text);
DROP FUNCTION xip83.frame_ping(bigint, text);
DROP FUNCTION xip83.frame_pong(bigint, text);
DROP FUNCTION xip83.decode_subscribe_request(bytea, text);
DROP FUNCTION xip83.decode_subscribe_response(bytea, text);
-- include: control/install/30_wave_v3.sql
-- include: control/install/40_wave_d14n.sql
-- include: control/install/60_frames.sql

-- 0.1.0's names, now wrappers of their replacements for one release
-- include: control/install/90_deprecated.sql
