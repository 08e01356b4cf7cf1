-- xip83 0.1.0 as released: kept so that ALTER EXTENSION xip83 UPDATE can start from it. Never edit.
\echo Use "CREATE EXTENSION xip83" to load this file. \quit

-- part: 00_schema.sql
-- Storage: the v3 and d14n tables, column for column as node servers know them
-- (README.md, Storage), so a node can map rows unchanged and keep inserting with
-- plain INSERT.

CREATE TABLE xip83.group_messages (
    id                  bigserial PRIMARY KEY,
    created_at          timestamp NOT NULL DEFAULT now(),
    group_id            bytea     NOT NULL CHECK (octet_length(group_id) > 0),
    data                bytea     NOT NULL,
    group_id_data_hash  bytea     NOT NULL UNIQUE,
    is_commit           boolean   NOT NULL DEFAULT false,
    sender_hmac         bytea,
    should_push         boolean
);
-- The wave scans descend this index once per topic.
CREATE INDEX group_messages_group_id_id_idx ON xip83.group_messages (group_id, id);

CREATE TABLE xip83.welcome_messages (
    id                          bigserial PRIMARY KEY,
    created_at                  timestamp NOT NULL DEFAULT now(),
    installation_key            bytea     NOT NULL CHECK (octet_length(installation_key) > 0),
    data                        bytea     NOT NULL,
    hpke_public_key             bytea,
    installation_key_data_hash  bytea     NOT NULL UNIQUE,
    wrapper_algorithm           smallint  NOT NULL DEFAULT 0 CHECK (wrapper_algorithm >= 0),
    welcome_metadata            bytea,
    -- 0 = welcome, 1 = welcome pointer (data holds the pointer)
    message_type                smallint  NOT NULL DEFAULT 0 CHECK (message_type IN (0, 1))
);
CREATE INDEX welcome_messages_installation_key_id_idx
    ON xip83.welcome_messages (installation_key, id);

CREATE TABLE xip83.envelopes (
    originator_node_id      int       NOT NULL,
    -- sequence ids start at 1: a cursor of 0 means "nothing seen"
    originator_sequence_id  bigint    NOT NULL CHECK (originator_sequence_id > 0),
    topic                   bytea     NOT NULL CHECK (octet_length(topic) > 0),
    gateway_time            timestamp NOT NULL DEFAULT now(),
    expiry                  bigint,
    payer_id                int,
    originator_envelope     bytea     NOT NULL,
    PRIMARY KEY (originator_node_id, originator_sequence_id)
);
CREATE INDEX envelopes_topic_originator_idx
    ON xip83.envelopes (topic, originator_node_id, originator_sequence_id);

-- Messages are user data, not extension scaffolding: pg_dump must keep them.
SELECT pg_catalog.pg_extension_config_dump('xip83.group_messages', '');
SELECT pg_catalog.pg_extension_config_dump('xip83.group_messages_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('xip83.welcome_messages', '');
SELECT pg_catalog.pg_extension_config_dump('xip83.welcome_messages_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('xip83.envelopes', '');

COMMENT ON SCHEMA xip83 IS
  'xip83: XIP-83 wave scans, commit-order-safe horizons, the live feed and ready-to-send frames.';
COMMENT ON TABLE xip83.group_messages IS
  'v3 group messages, one id sequence for all groups (the v3 node''s group_messages layout). Writes register their ids with the live feed.';
COMMENT ON TABLE xip83.welcome_messages IS
  'v3 welcome messages, one id sequence for all installations (the v3 node''s welcome_messages layout). Writes register their ids with the live feed.';
COMMENT ON TABLE xip83.envelopes IS
  'd14n envelopes keyed by (originator_node_id, originator_sequence_id). Writes register their positions with the live feed.';
COMMENT ON SEQUENCE xip83.group_messages_id_seq IS
  'Ids of xip83.group_messages, drawn through xip83.next_group_id; no cache, so ids are handed out in order.';
COMMENT ON SEQUENCE xip83.welcome_messages_id_seq IS
  'Ids of xip83.welcome_messages, drawn through xip83.next_welcome_id; no cache, so ids are handed out in order.';

-- part: 10_insert.sql
-- Batch inserts. Each takes one array per column, checks every array before
-- writing anything, assigns ids in input order, and is idempotent: an element
-- whose message is already stored (same topic and data, or same originator and
-- sequence for envelopes) returns the stored row with inserted = false instead
-- of failing; a different message with a stored message's hash is refused
-- (see batch_hash_collision). One output row per input element, in input order.
--
-- Every function here pins search_path to pg_catalog, pg_temp and names what it
-- calls by schema: a function or operator another role created in a schema on
-- the caller's search_path never runs in its place. They run as the caller
-- (nothing is SECURITY DEFINER): writing needs INSERT and SELECT on the table.
-- The helpers are internal: not executable by PUBLIC (see the REVOKEs below).

-- Checks one column array of a batch: present (an optional one may be NULL,
-- meaning every element takes the column default), one-dimensional,
-- `expected` elements long, and NULL-free unless the column is nullable.
CREATE FUNCTION xip83.check_batch_array(arr anyarray, arg_name text, expected int,
                                        nulls_allowed boolean, optional boolean DEFAULT false)
RETURNS void LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF arr IS NULL AND optional THEN
        RETURN;
    END IF;
    IF arr IS NULL THEN
        RAISE EXCEPTION 'argument "%" must not be null', arg_name
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF pg_catalog.array_ndims(arr) > 1 THEN
        RAISE EXCEPTION 'argument "%" must be a one-dimensional array', arg_name
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF pg_catalog.cardinality(arr) <> expected THEN
        RAISE EXCEPTION 'batch arrays have unequal lengths'
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = pg_catalog.format('Argument "%s" has length %s where %s was expected.',
                                             arg_name, pg_catalog.cardinality(arr), expected);
    END IF;
    IF NOT nulls_allowed AND pg_catalog.array_position(arr, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'argument "%" must not contain null elements', arg_name
            USING ERRCODE = 'null_value_not_allowed',
                  DETAIL = pg_catalog.format('Element %s is null.',
                                             pg_catalog.array_position(arr, NULL)
                                             - pg_catalog.array_lower(arr, 1) + 1);
    END IF;
END $$;

-- Topics are identifiers: an empty one would match nothing a client can name.
CREATE FUNCTION xip83.check_batch_topics(topics bytea[], arg_name text)
RETURNS void LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    bad bigint;
BEGIN
    SELECT t.ord INTO bad FROM pg_catalog.unnest(topics) WITH ORDINALITY AS t(topic, ord)
     WHERE pg_catalog.octet_length(t.topic) = 0 LIMIT 1;
    IF bad IS NOT NULL THEN
        RAISE EXCEPTION 'argument "%" must not contain empty topics', arg_name
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = pg_catalog.format('Element %s is empty.', bad);
    END IF;
END $$;

-- Positions of the first occurrence of each key in a batch: later repeats of the
-- same message are reported, never inserted twice.
CREATE FUNCTION xip83.batch_first_occurrences(keys bytea[])
RETURNS TABLE (ord bigint, key bytea, first boolean)
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp AS $$
    SELECT k.ord, k.key, pg_catalog.row_number() OVER (PARTITION BY k.key ORDER BY k.ord) = 1
      FROM pg_catalog.unnest(keys) WITH ORDINALITY AS k(key, ord)
$$;

-- The stored hash of each message of a batch, in input order: sha256 of
-- topic || data, as the node servers compute it.
CREATE FUNCTION xip83.batch_hashes(topics bytea[], datas bytea[])
RETURNS bytea[] LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp AS $$
    SELECT ARRAY(SELECT pg_catalog.sha256(u.t || u.d)
                   FROM ROWS FROM (pg_catalog.unnest(topics), pg_catalog.unnest(datas))
                            WITH ORDINALITY AS u(t, d, ord)
                  ORDER BY u.ord)
$$;

-- The stored hash is sha256(topic || data), as the v3 node computes it, so two
-- different messages can share it: (topic 0a0b, data 0102) and (topic 0a0b01,
-- data 02). Node compatibility keeps the hash; instead a batch element whose
-- hash matches a stored message with another topic or data is refused here
-- (23505), never returned as if it were a repeat. The batch functions call it
-- only for such an element; it never returns (boolean, to sit in a WHERE).
CREATE FUNCTION xip83.batch_hash_collision(arg_name text, ord bigint, topic bytea, data bytea,
                                           stored_id bigint, stored_topic bytea,
                                           stored_data bytea)
RETURNS boolean LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RAISE EXCEPTION 'message hash collision: element % of "%" differs from the stored message with its hash',
                    ord, arg_name
        USING ERRCODE = 'unique_violation',
              DETAIL = pg_catalog.format(
                  'Element %s (topic %s, %s data bytes) and stored message %s (topic %s, %s data bytes) have the same sha256(topic || data).',
                  ord, pg_catalog.encode(topic, 'hex'), pg_catalog.octet_length(data),
                  stored_id, pg_catalog.encode(stored_topic, 'hex'),
                  pg_catalog.octet_length(stored_data)),
              HINT = 'The hash of the concatenation cannot tell where the topic ends; store one of them with another data.';
END $$;

CREATE FUNCTION xip83.insert_group_messages(
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
    PERFORM xip83.check_batch_array(is_commits, 'is_commits', n, false, optional => true);
    PERFORM xip83.check_batch_array(sender_hmacs, 'sender_hmacs', n, true, optional => true);
    PERFORM xip83.check_batch_array(should_pushes, 'should_pushes', n, true, optional => true);
    PERFORM xip83.check_batch_topics(group_ids, 'group_ids');

    hashes := xip83.batch_hashes(group_ids, datas);
    -- Insert the first occurrence of every new hash, ids in input order.
    WITH ins AS (
        INSERT INTO xip83.group_messages AS m
               (group_id, data, group_id_data_hash, is_commit, sender_hmac, should_push)
        SELECT b.g, b.d, f.key, coalesce(b.c, false), b.s, b.p
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

CREATE FUNCTION xip83.insert_welcome_messages(
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
    PERFORM xip83.check_batch_topics(installation_keys, 'installation_keys');

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

-- Envelopes are keyed by (originator, sequence): a repeat of a stored key
-- returns the stored envelope, so a caller can compare it with what it sent.
CREATE FUNCTION xip83.insert_envelopes(
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
    fresh bytea[];
BEGIN
    PERFORM xip83.check_batch_array(originator_node_ids, 'originator_node_ids', n, false);
    PERFORM xip83.check_batch_array(originator_sequence_ids, 'originator_sequence_ids', n, false);
    PERFORM xip83.check_batch_array(topics, 'topics', n, false);
    PERFORM xip83.check_batch_array(originator_envelopes, 'originator_envelopes', n, false);
    PERFORM xip83.check_batch_array(expiries, 'expiries', n, true, optional => true);
    PERFORM xip83.check_batch_array(payer_ids, 'payer_ids', n, true, optional => true);
    PERFORM xip83.check_batch_topics(topics, 'topics');
    IF EXISTS (SELECT FROM pg_catalog.unnest(originator_sequence_ids) s WHERE s <= 0) THEN
        RAISE EXCEPTION 'originator sequence ids must be positive'
            USING ERRCODE = 'invalid_parameter_value';
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
        SELECT b.o, b.s, b.t, b.x, b.p, b.env
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

-- The helpers are internal: only the batch functions call them. Those run as
-- their caller, so a role that writes through them needs EXECUTE on these too
-- (README, "Privileges"); PUBLIC has none.
REVOKE EXECUTE ON FUNCTION
    xip83.check_batch_array(anyarray, text, int, boolean, boolean),
    xip83.check_batch_topics(bytea[], text),
    xip83.batch_first_occurrences(bytea[]),
    xip83.batch_hashes(bytea[], bytea[]),
    xip83.batch_hash_collision(text, bigint, bytea, bytea, bigint, bytea, bytea)
FROM PUBLIC;

COMMENT ON FUNCTION xip83.check_batch_array(anyarray, text, int, boolean, boolean) IS
'Internal to the batch inserts. Returns nothing; raises 22004 (NULL argument or element) or 22023 (not one-dimensional, wrong length). Reads no table. Not executable by PUBLIC.';
COMMENT ON FUNCTION xip83.check_batch_topics(bytea[], text) IS
'Internal to the batch inserts. Returns nothing; raises 22023 on an empty topic. Reads no table. Not executable by PUBLIC.';
COMMENT ON FUNCTION xip83.batch_first_occurrences(bytea[]) IS
'Internal to the batch inserts. One row per key in input order: its ordinal, the key, and whether it is the first occurrence of that key. Reads no table. Not executable by PUBLIC.';
COMMENT ON FUNCTION xip83.batch_hashes(bytea[], bytea[]) IS
'Internal to the batch inserts. sha256(topic || data) of each element in input order, the stored message hash as node servers compute it. Reads no table. Not executable by PUBLIC.';
COMMENT ON FUNCTION xip83.batch_hash_collision(text, bigint, bytea, bytea, bigint, bytea, bytea) IS
'Internal to the batch inserts. Never returns: raises 23505, a batch element has the hash of a stored message with another topic or data. Not executable by PUBLIC.';
COMMENT ON FUNCTION xip83.insert_group_messages(bytea[], bytea[], boolean[], bytea[], boolean[]) IS
'Batch insert of group messages, all or nothing. One row per element in input order: the stored row and whether this call inserted it (a repeat of a stored message returns it with inserted = false). Raises 22004/22023 on bad arrays, 23505 when an element''s hash matches a different stored message. Snapshot: the returned rows and the collision check are read by a statement after the insert, so under READ COMMITTED they see what a concurrent writer committed meanwhile; under REPEATABLE READ and SERIALIZABLE they read the transaction snapshot. Runs as the caller: needs INSERT and SELECT on xip83.group_messages and EXECUTE on the batch helpers.';
COMMENT ON FUNCTION xip83.insert_welcome_messages(bytea[], bytea[], bytea[], smallint[], bytea[], smallint[]) IS
'Batch insert of welcome messages, all or nothing. One row per element in input order: the stored row and whether this call inserted it. Raises 22004/22023 on bad arrays, 23505 when an element''s hash matches a different stored message. Snapshot as for insert_group_messages. Runs as the caller: needs INSERT and SELECT on xip83.welcome_messages and EXECUTE on the batch helpers.';
COMMENT ON FUNCTION xip83.insert_envelopes(int[], bigint[], bytea[], bytea[], bigint[], int[]) IS
'Batch insert of d14n envelopes, all or nothing. One row per element in input order: the stored envelope of its (originator, sequence) and whether this call inserted it; a repeat returns the stored envelope unchanged, for the caller to compare. Raises 22004/22023 on bad arrays or a sequence id below 1. Snapshot as for insert_group_messages. Runs as the caller: needs INSERT and SELECT on xip83.envelopes and EXECUTE on the batch helpers.';

-- part: 20_live_notice.sql
-- LiveNotice, the payload of NOTIFY xip83_live, as SQL: a consumer in any
-- language can decode a notice with one query.

CREATE FUNCTION xip83.live_notice_encode(
    epoch bigint, state text, tick bigint, group_horizon bigint, welcome_horizon bigint,
    originator_node_ids int[], originator_horizons bigint[])
RETURNS text
AS 'MODULE_PATHNAME', 'live_notice_encode' LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION xip83.live_notice_decode(
    payload text,
    OUT epoch bigint, OUT state text, OUT tick bigint, OUT group_horizon bigint,
    OUT welcome_horizon bigint, OUT originator_node_ids int[], OUT originator_horizons bigint[])
RETURNS record
AS 'MODULE_PATHNAME', 'live_notice_decode' LANGUAGE C IMMUTABLE PARALLEL SAFE;

COMMENT ON FUNCTION xip83.live_notice_encode(bigint, text, bigint, bigint, bigint, int[], bigint[]) IS
'A LiveNotice as the base64 text NOTIFY xip83_live carries. epoch must be at least 1 and state "live" or "stopping", as the notifier sends them (22023 otherwise); reads no table or snapshot. Executable by PUBLIC.';
COMMENT ON FUNCTION xip83.live_notice_decode(text) IS
'The fields of a NOTIFY xip83_live payload. Raises 22P02 on anything the notifier could not have sent (not base64, not a LiveNotice, no epoch, no live/stopping state, an empty payload) and 22003 on out-of-range numbers; reads no table or snapshot. A notice is only a wake-up: read rows through the live fetch functions. Executable by PUBLIC.';

-- part: 30_wave_v3.sql
-- v3 wave scans: the rows of a wave (topics from their floors up to a pinned
-- ceiling) in ascending id order, read by a k-way merge over the per-topic
-- (topic, id) index or a filtered walk of the id index, whichever is cheaper.
-- `source` may name a node's own table of the same layout.

-- One stateless page: rows m with m.group_id = topics[i] and m.id > floors[i]
-- for some i, m.id > scan_cursor, m.id <= ceiling; ascending id; at most
-- page_limit rows. The next page passes the last id as scan_cursor.
CREATE FUNCTION xip83.group_wave_scan(
    topics bytea[], floors bigint[], scan_cursor bigint, ceiling bigint, page_limit int,
    source regclass DEFAULT 'xip83.group_messages')
RETURNS TABLE (id bigint, created_at timestamp, group_id bytea, data bytea,
               is_commit boolean, sender_hmac bytea, should_push boolean)
AS 'MODULE_PATHNAME', 'group_wave_scan' LANGUAGE C STABLE ROWS 500;

CREATE FUNCTION xip83.welcome_wave_scan(
    topics bytea[], floors bigint[], scan_cursor bigint, ceiling bigint, page_limit int,
    source regclass DEFAULT 'xip83.welcome_messages')
RETURNS TABLE (id bigint, created_at timestamp, installation_key bytea, data bytea,
               hpke_public_key bytea, wrapper_algorithm smallint, welcome_metadata bytea,
               message_type smallint)
AS 'MODULE_PATHNAME', 'welcome_wave_scan' LANGUAGE C STABLE ROWS 500;

-- The whole wave from scan_cursor, one row per call: the same rows as the
-- pages concatenated. Called in a target list it yields rows on demand.
CREATE FUNCTION xip83.group_wave_rows(
    topics bytea[], floors bigint[], scan_cursor bigint, ceiling bigint, source regclass,
    OUT id bigint, OUT created_at timestamp, OUT group_id bytea, OUT data bytea,
    OUT is_commit boolean, OUT sender_hmac bytea, OUT should_push boolean)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'group_wave_rows' LANGUAGE C STABLE ROWS 100000;

CREATE FUNCTION xip83.welcome_wave_rows(
    topics bytea[], floors bigint[], scan_cursor bigint, ceiling bigint, source regclass,
    OUT id bigint, OUT created_at timestamp, OUT installation_key bytea, OUT data bytea,
    OUT hpke_public_key bytea, OUT wrapper_algorithm smallint, OUT welcome_metadata bytea,
    OUT message_type smallint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'welcome_wave_rows' LANGUAGE C STABLE ROWS 100000;

-- A whole wave as a stream for a cursor:
--   DECLARE w CURSOR FOR SELECT * FROM xip83.group_wave_stream(...);
--   FETCH 500 FROM w;  -- until it returns fewer than 500 rows
-- A set-returning function in FROM is materialized whole before its first
-- row; this SQL function is inlined by the planner, which puts the C function
-- in a target list where it runs one row per call, so memory stays bounded
-- and each FETCH costs only the rows it returns. Keep it STABLE and not
-- STRICT: either would stop the inlining. So would a SET clause: the body is
-- parsed under the caller's search_path, so it names every function by schema
-- and uses no operator. Inlined, it runs the C function as the caller, which
-- is why *_wave_rows stay executable by PUBLIC (they check what the scans do).
CREATE FUNCTION xip83.group_wave_stream(
    topics bytea[], floors bigint[], scan_cursor bigint, ceiling bigint,
    source regclass DEFAULT 'xip83.group_messages')
RETURNS TABLE (id bigint, created_at timestamp, group_id bytea, data bytea,
               is_commit boolean, sender_hmac bytea, should_push boolean)
LANGUAGE sql STABLE ROWS 100000 AS $$
    SELECT (w.r).* FROM (SELECT xip83.group_wave_rows(topics, floors, scan_cursor, ceiling,
                                                      source) AS r) AS w
$$;

CREATE FUNCTION xip83.welcome_wave_stream(
    topics bytea[], floors bigint[], scan_cursor bigint, ceiling bigint,
    source regclass DEFAULT 'xip83.welcome_messages')
RETURNS TABLE (id bigint, created_at timestamp, installation_key bytea, data bytea,
               hpke_public_key bytea, wrapper_algorithm smallint, welcome_metadata bytea,
               message_type smallint)
LANGUAGE sql STABLE ROWS 100000 AS $$
    SELECT (w.r).* FROM (SELECT xip83.welcome_wave_rows(topics, floors, scan_cursor, ceiling,
                                                        source) AS r) AS w
$$;

-- The highest id a wave may pin as its ceiling: over xip83's own tables the
-- kind's horizon (commit-order safe, needs the library preloaded), over a
-- node's own table its highest visible id. Volatile: the horizon moves.
CREATE FUNCTION xip83.group_ceiling(source regclass DEFAULT 'xip83.group_messages')
RETURNS bigint AS 'MODULE_PATHNAME', 'group_ceiling' LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION xip83.welcome_ceiling(source regclass DEFAULT 'xip83.welcome_messages')
RETURNS bigint AS 'MODULE_PATHNAME', 'welcome_ceiling' LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION xip83.group_wave_scan(bytea[], bigint[], bigint, bigint, int, regclass) IS
'One page of a group-message wave: rows of source with group_id = topics[i] and id > floors[i] for some i, id > scan_cursor, id <= ceiling, ascending id, at most page_limit rows. Snapshot: the statement''s, or one taken right after the horizon this session last read under it (README, "What every scan and fetch checks"). Executable by PUBLIC; the caller needs USAGE on the source''s schema and SELECT on it (42501), and row-level security is refused.';
COMMENT ON FUNCTION xip83.welcome_wave_scan(bytea[], bigint[], bigint, bigint, int, regclass) IS
'One page of a welcome wave, as group_wave_scan with installation_key for group_id. Same snapshot contract and privileges.';
COMMENT ON FUNCTION xip83.group_wave_rows(bytea[], bigint[], bigint, bigint, regclass) IS
'The whole group wave past scan_cursor, one row per call (value-per-call); the C function behind group_wave_stream. Reads every row under the snapshot of its first call. Executable by PUBLIC because the inlined stream runs it as the caller; same checks as group_wave_scan.';
COMMENT ON FUNCTION xip83.welcome_wave_rows(bytea[], bigint[], bigint, bigint, regclass) IS
'The whole welcome wave past scan_cursor, one row per call; the C function behind welcome_wave_stream. Same snapshot contract and privileges as group_wave_rows.';
COMMENT ON FUNCTION xip83.group_wave_stream(bytea[], bigint[], bigint, bigint, regclass) IS
'A whole group wave for a cursor: the rows of every page concatenated, each FETCH reading only what it returns. Inlined SQL (no SET clause, every name qualified); snapshot and privileges of group_wave_rows.';
COMMENT ON FUNCTION xip83.welcome_wave_stream(bytea[], bigint[], bigint, bigint, regclass) IS
'A whole welcome wave for a cursor; as group_wave_stream.';
COMMENT ON FUNCTION xip83.group_ceiling(regclass) IS
'The highest id a group wave may pin: group_horizon() over xip83.group_messages, else the highest non-NULL id visible to the statement''s snapshot (needs a unique index on (id)). Executable by PUBLIC; needs USAGE on the source''s schema and SELECT on it.';
COMMENT ON FUNCTION xip83.welcome_ceiling(regclass) IS
'The highest id a welcome wave may pin; as group_ceiling over xip83.welcome_messages.';

-- part: 40_wave_d14n.sql
-- d14n waves: one page of a wave over envelopes, in (originator, sequence)
-- order, and the per-originator ceilings a wave pins when it starts. Both read
-- the btree indexes directly; `source` (and `blob_source`) may be a node's own
-- tables of the same layout, plain or partitioned, and the caller needs SELECT
-- on them.

CREATE FUNCTION xip83.envelope_wave_scan(
    cursor_topics        bytea[],
    cursor_node_ids      int[],
    cursor_sequence_ids  bigint[],
    ceiling_node_ids     int[],
    ceiling_sequence_ids bigint[],
    scan_node_id         int,
    scan_sequence_id     bigint,
    row_limit            int,
    source               regclass DEFAULT 'xip83.envelopes',
    blob_source          regclass DEFAULT NULL)
RETURNS TABLE (originator_node_id int, originator_sequence_id bigint,
               gateway_time timestamp, topic bytea, originator_envelope bytea)
AS 'MODULE_PATHNAME', 'envelope_wave_scan' LANGUAGE C STABLE ROWS 500;

CREATE FUNCTION xip83.originator_ceilings(
    node_ids int[]   DEFAULT NULL,
    source   regclass DEFAULT 'xip83.envelopes')
RETURNS TABLE (originator_node_id int, max_sequence_id bigint)
AS 'MODULE_PATHNAME', 'originator_ceilings' LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 8;

-- The whole wave past the scan cursor, one row per call: the same rows as the
-- pages concatenated. Called in a target list it yields rows on demand.
CREATE FUNCTION xip83.envelope_wave_rows(
    cursor_topics        bytea[],
    cursor_node_ids      int[],
    cursor_sequence_ids  bigint[],
    ceiling_node_ids     int[],
    ceiling_sequence_ids bigint[],
    scan_node_id         int,
    scan_sequence_id     bigint,
    source               regclass,
    blob_source          regclass,
    OUT originator_node_id int, OUT originator_sequence_id bigint,
    OUT gateway_time timestamp, OUT topic bytea, OUT originator_envelope bytea)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'envelope_wave_rows' LANGUAGE C STABLE ROWS 100000;

-- A whole wave as a stream for a cursor:
--   DECLARE w CURSOR FOR SELECT * FROM xip83.envelope_wave_stream(...);
--   FETCH 500 FROM w;  -- until it returns fewer than 500 rows
-- A set-returning function in FROM is materialized whole before its first
-- row; this SQL function is inlined by the planner, which puts the C function
-- in a target list where it runs one row per call, so memory stays bounded and
-- each FETCH costs only the rows it returns. Keep it STABLE and not STRICT:
-- either change would stop the inlining, and so would a SET clause: the body
-- names every function by schema and uses no operator, since it is parsed
-- under the caller's search_path. envelope_wave_rows stays executable by
-- PUBLIC because the inlined stream runs it as the caller.
CREATE FUNCTION xip83.envelope_wave_stream(
    cursor_topics        bytea[],
    cursor_node_ids      int[],
    cursor_sequence_ids  bigint[],
    ceiling_node_ids     int[],
    ceiling_sequence_ids bigint[],
    scan_node_id         int,
    scan_sequence_id     bigint,
    source               regclass DEFAULT 'xip83.envelopes',
    blob_source          regclass DEFAULT NULL)
RETURNS TABLE (originator_node_id int, originator_sequence_id bigint,
               gateway_time timestamp, topic bytea, originator_envelope bytea)
LANGUAGE sql STABLE ROWS 100000 AS $$
    SELECT (w.r).* FROM (SELECT xip83.envelope_wave_rows(
        cursor_topics, cursor_node_ids, cursor_sequence_ids, ceiling_node_ids,
        ceiling_sequence_ids, scan_node_id, scan_sequence_id, source, blob_source) AS r) AS w
$$;

COMMENT ON FUNCTION xip83.envelope_wave_scan(bytea[], int[], bigint[], int[], bigint[], int, bigint, int, regclass, regclass) IS
'One page of a d14n wave in (originator, sequence) order: envelopes of the cursor topics past their per-originator floors, up to the pinned ceilings, past the scan position, at most row_limit rows. Snapshot: the statement''s, or one taken right after the horizon this session last read under it. Executable by PUBLIC; the caller needs USAGE on the schemas of source and blob_source and SELECT on them (42501), and row-level security is refused.';
COMMENT ON FUNCTION xip83.envelope_wave_rows(bytea[], int[], bigint[], int[], bigint[], int, bigint, regclass, regclass) IS
'The whole d14n wave past the scan position, one row per call; the C function behind envelope_wave_stream. Reads every row under the snapshot of its first call. Executable by PUBLIC because the inlined stream runs it as the caller; same checks as envelope_wave_scan.';
COMMENT ON FUNCTION xip83.envelope_wave_stream(bytea[], int[], bigint[], int[], bigint[], int, bigint, regclass, regclass) IS
'A whole d14n wave for a cursor: each FETCH reads only what it returns. Inlined SQL (no SET clause, every name qualified); snapshot and privileges of envelope_wave_rows.';
COMMENT ON FUNCTION xip83.originator_ceilings(int[], regclass) IS
'Per originator (the listed ones, 0 for those without rows, or every one present when node_ids is NULL): the ceiling a d14n wave pins. Over xip83.envelopes the originators'' horizons; else the highest non-NULL sequence id visible to the statement''s snapshot. Executable by PUBLIC; needs USAGE on the source''s schema and SELECT on it.';

-- part: 50_live.sql
-- The live feed: commit-order-safe horizons, the id defaults and triggers that
-- register every written position, live fetch, and the feed's status.
-- Needs shared_preload_libraries = 'xip83' (the functions fail with 55000
-- otherwise; writes go on unregistered).

-- Id defaults: draw from the table's own sequence, registered before any
-- reader can see the id. A sequence with a cache would hand ids out of order.
-- Writers run them as the default of the id column, so they keep EXECUTE for
-- everyone; each refuses any sequence but its table's own.
CREATE FUNCTION xip83.next_group_id(seq regclass) RETURNS bigint
AS 'MODULE_PATHNAME', 'next_group_id' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION xip83.next_welcome_id(seq regclass) RETURNS bigint
AS 'MODULE_PATHNAME', 'next_welcome_id' LANGUAGE C VOLATILE PARALLEL UNSAFE;

ALTER TABLE xip83.group_messages
    ALTER COLUMN id SET DEFAULT xip83.next_group_id('xip83.group_messages_id_seq');
ALTER TABLE xip83.welcome_messages
    ALTER COLUMN id SET DEFAULT xip83.next_welcome_id('xip83.welcome_messages_id_seq');
ALTER SEQUENCE xip83.group_messages_id_seq CACHE 1 NO CYCLE;
ALTER SEQUENCE xip83.welcome_messages_id_seq CACHE 1 NO CYCLE;

-- Every row's position is registered, explicit ones included: plain INSERT,
-- COPY and the batch functions alike. ALWAYS: logical replication applies too.
CREATE FUNCTION xip83.register_position() RETURNS trigger
AS 'MODULE_PATHNAME', 'register_position' LANGUAGE C;
CREATE FUNCTION xip83.reset_positions() RETURNS trigger
AS 'MODULE_PATHNAME', 'reset_positions' LANGUAGE C;

-- Trigger functions fire whatever the writer's grants; nobody needs to call
-- them or attach them elsewhere (they refuse any other table anyway).
REVOKE EXECUTE ON FUNCTION xip83.register_position() FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION xip83.reset_positions() FROM PUBLIC;

CREATE TRIGGER register_position BEFORE INSERT OR UPDATE OF id, group_id ON xip83.group_messages
    FOR EACH ROW EXECUTE FUNCTION xip83.register_position('group');
CREATE TRIGGER register_position BEFORE INSERT OR UPDATE OF id, installation_key
    ON xip83.welcome_messages
    FOR EACH ROW EXECUTE FUNCTION xip83.register_position('welcome');
CREATE TRIGGER register_position
    BEFORE INSERT OR UPDATE OF originator_node_id, originator_sequence_id, topic ON xip83.envelopes
    FOR EACH ROW EXECUTE FUNCTION xip83.register_position('envelope');
CREATE TRIGGER reset_positions AFTER TRUNCATE ON xip83.group_messages
    FOR EACH STATEMENT EXECUTE FUNCTION xip83.reset_positions('group');
CREATE TRIGGER reset_positions AFTER TRUNCATE ON xip83.welcome_messages
    FOR EACH STATEMENT EXECUTE FUNCTION xip83.reset_positions('welcome');
CREATE TRIGGER reset_positions AFTER TRUNCATE ON xip83.envelopes
    FOR EACH STATEMENT EXECUTE FUNCTION xip83.reset_positions('envelope');
ALTER TABLE xip83.group_messages ENABLE ALWAYS TRIGGER register_position;
ALTER TABLE xip83.welcome_messages ENABLE ALWAYS TRIGGER register_position;
ALTER TABLE xip83.envelopes ENABLE ALWAYS TRIGGER register_position;
ALTER TABLE xip83.group_messages ENABLE ALWAYS TRIGGER reset_positions;
ALTER TABLE xip83.welcome_messages ENABLE ALWAYS TRIGGER reset_positions;
ALTER TABLE xip83.envelopes ENABLE ALWAYS TRIGGER reset_positions;

-- Horizons: every row at or below is committed, will never exist, or is a
-- late write announced in the late ring. Read the horizon in one statement
-- and the rows in a later one (live fetch does both in the right order).
-- PARALLEL UNSAFE: a horizon must be read before a new snapshot is taken,
-- which no parallel query may do.
CREATE FUNCTION xip83.group_horizon() RETURNS bigint
AS 'MODULE_PATHNAME', 'group_horizon' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION xip83.welcome_horizon() RETURNS bigint
AS 'MODULE_PATHNAME', 'welcome_horizon' LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION xip83.envelope_horizons()
RETURNS TABLE (originator_node_id int, horizon bigint)
AS 'MODULE_PATHNAME', 'envelope_horizons' LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION xip83.late_cursor() RETURNS bigint
AS 'MODULE_PATHNAME', 'late_cursor' LANGUAGE C VOLATILE PARALLEL UNSAFE;

-- Live fetch: late rows the consumer has passed, then primary-key range scans
-- up to the horizon; every row carries the late cursor to pass next time.
CREATE FUNCTION xip83.live_group_messages(after_id bigint, row_limit int, late_after bigint)
RETURNS TABLE (id bigint, created_at timestamp, group_id bytea, data bytea,
               is_commit boolean, sender_hmac bytea, should_push boolean,
               late_cursor bigint)
AS 'MODULE_PATHNAME', 'live_group_messages' LANGUAGE C VOLATILE PARALLEL UNSAFE
ROWS 100;
CREATE FUNCTION xip83.live_welcome_messages(after_id bigint, row_limit int, late_after bigint)
RETURNS TABLE (id bigint, created_at timestamp, installation_key bytea, data bytea,
               hpke_public_key bytea, wrapper_algorithm smallint, welcome_metadata bytea,
               message_type smallint, late_cursor bigint)
AS 'MODULE_PATHNAME', 'live_welcome_messages' LANGUAGE C VOLATILE PARALLEL UNSAFE
ROWS 100;
CREATE FUNCTION xip83.live_envelopes(node_ids int[], after_sequence_ids bigint[], row_limit int,
                                     late_after bigint)
RETURNS TABLE (originator_node_id int, originator_sequence_id bigint, gateway_time timestamp,
               topic bytea, originator_envelope bytea, late_cursor bigint)
AS 'MODULE_PATHNAME', 'live_envelopes' LANGUAGE C VOLATILE PARALLEL UNSAFE
ROWS 100;

-- The feed at a glance: horizons (NULL where the caller may not read the
-- table), the notifier, its last notice, late writes, the NOTIFY queue.
CREATE FUNCTION xip83.feed_status(
    OUT group_horizon bigint, OUT welcome_horizon bigint,
    OUT originator_node_ids int[], OUT originator_horizons bigint[],
    OUT notifier_pid int, OUT epoch bigint, OUT state text, OUT ticks bigint,
    OUT last_notice_at timestamptz, OUT notifier_starting boolean,
    OUT late_writes bigint, OUT late_cursor bigint, OUT late_ring_size int,
    OUT group_low_water bigint, OUT group_recent bigint,
    OUT welcome_low_water bigint, OUT welcome_recent bigint,
    OUT envelope_low_water bigint, OUT envelope_recent bigint,
    OUT recent_entries int)
RETURNS record
AS 'MODULE_PATHNAME', 'feed_status' LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE VIEW xip83.feed_status AS
    SELECT s.*, pg_catalog.pg_notification_queue_usage() AS notification_queue_usage
      FROM xip83.feed_status() s;

COMMENT ON FUNCTION xip83.next_group_id(regclass) IS
  'Id default of xip83.group_messages: draws from xip83.group_messages_id_seq only, registering the id before any reader can see it. EXECUTE for every writer; needs USAGE on the sequence.';
COMMENT ON FUNCTION xip83.next_welcome_id(regclass) IS
  'Id default of xip83.welcome_messages: draws from xip83.welcome_messages_id_seq only, registering the id before any reader can see it. EXECUTE for every writer; needs USAGE on the sequence.';
COMMENT ON FUNCTION xip83.register_position() IS
  'BEFORE INSERT OR UPDATE row trigger of the xip83 tables: notes each row''s topic and position for reconnect waves and registers each written position; positions at or below the published horizon are stored and announced in the late ring. Refuses any other table. No EXECUTE for PUBLIC.';
COMMENT ON FUNCTION xip83.reset_positions() IS
  'AFTER TRUNCATE trigger of the xip83 tables: the table''s position lines start over at 0 when the TRUNCATE commits. Refuses any other table. No EXECUTE for PUBLIC.';
COMMENT ON FUNCTION xip83.group_horizon() IS
  'Highest group message id H such that every id <= H is committed, will never exist, or is announced as a late write. Never decreases, across restarts. Read it before taking the snapshot the rows are read with. Needs SELECT on xip83.group_messages; primary only; PARALLEL UNSAFE.';
COMMENT ON FUNCTION xip83.welcome_horizon() IS
  'The horizon of welcome ids (see group_horizon). Needs SELECT on xip83.welcome_messages.';
COMMENT ON FUNCTION xip83.envelope_horizons() IS
  'Per originator, the highest sequence id such that every one at or below is committed, will never exist, or is announced as a late write. Needs SELECT on xip83.envelopes.';
COMMENT ON FUNCTION xip83.late_cursor() IS
  'Sequence number of the newest late write the database remembers: the late cursor a consumer following "from now" passes to its first live fetch (read it before the horizons).';
COMMENT ON FUNCTION xip83.live_group_messages(bigint, int, bigint) IS
  'Rows a live consumer has not seen: late group messages at or below after_id written since late cursor late_after, then ids in (after_id, group_horizon()], at most row_limit rows. Reads the horizon first, then with a new snapshot, whatever the isolation level (refused under SERIALIZABLE). Each row carries the late cursor to pass next; the consumer''s cursor becomes the highest id it received. Needs SELECT on xip83.group_messages.';
COMMENT ON FUNCTION xip83.live_welcome_messages(bigint, int, bigint) IS
  'The live fetch of welcomes (see live_group_messages). Needs SELECT on xip83.welcome_messages.';
COMMENT ON FUNCTION xip83.live_envelopes(int[], bigint[], int, bigint) IS
  'The live fetch of envelopes: late envelopes of the listed originators, then per listed originator sequence ids in (after, horizon], ordered (originator, sequence); an originator listed twice counts once, with its lowest cursor. Needs SELECT on xip83.envelopes.';
COMMENT ON FUNCTION xip83.feed_status() IS
  'One row: horizons (NULL unless the caller may SELECT the table), the notifier (pid, epoch, state, ticks, last notice), late writes committed, the late cursor and the late ring''s size; per kind the recent-writes table''s low-water position (a wave skips a topic whose floor is at or above it and that has no recent write above its floor) and entries in use (NULL like the horizons), and its capacity per kind (xip83.recent_entries).';
GRANT SELECT ON xip83.feed_status TO PUBLIC;
COMMENT ON VIEW xip83.feed_status IS
  'xip83.feed_status() with the NOTIFY queue usage.';

-- part: 60_frames.sql
-- Ready-to-send XIP-83 frames: wave pages, whole waves, wave handles, the
-- live lane and the control messages as serialized SubscribeResponse bytes a
-- node forwards without decoding; decoders to read them back in SQL.
-- A frame is at most max_frame_bytes and never splits a message (a larger
-- message gets a frame of its own and a WARNING); messages is how many it
-- carries, last_id (d14n: last_node_id, last_sequence_id) the position of its
-- last one: the cursor of the next page.

-- One page of a wave as frames: the rows the *_wave_scan page returns.
CREATE FUNCTION xip83.group_wave_frames(
    topics bytea[], floors bigint[], scan_cursor bigint, ceiling bigint, page_limit int,
    mutate_id bigint, max_frame_bytes int DEFAULT 2097152,
    source regclass DEFAULT 'xip83.group_messages')
RETURNS TABLE (frame bytea, messages int, last_id bigint)
AS 'MODULE_PATHNAME', 'group_wave_frames' LANGUAGE C STABLE ROWS 1;
COMMENT ON FUNCTION xip83.group_wave_frames(bytea[], bigint[], bigint, bigint, int, bigint, int, regclass) IS
'One page of a group-message wave (the rows of group_wave_scan) as SubscribeResponse frames tagged with mutate_id. Needs SELECT on source. Reads with the statement''s snapshot (or the one after a horizon read in it).';

CREATE FUNCTION xip83.welcome_wave_frames(
    topics bytea[], floors bigint[], scan_cursor bigint, ceiling bigint, page_limit int,
    mutate_id bigint, max_frame_bytes int DEFAULT 2097152,
    source regclass DEFAULT 'xip83.welcome_messages')
RETURNS TABLE (frame bytea, messages int, last_id bigint)
AS 'MODULE_PATHNAME', 'welcome_wave_frames' LANGUAGE C STABLE ROWS 1;
COMMENT ON FUNCTION xip83.welcome_wave_frames(bytea[], bigint[], bigint, bigint, int, bigint, int, regclass) IS
'One page of a welcome wave (the rows of welcome_wave_scan) as SubscribeResponse frames tagged with mutate_id; V1 or WelcomePointer arm by message_type, wrapper_algorithm as wire = db + 1. Needs SELECT on source. Snapshot as group_wave_frames.';

CREATE FUNCTION xip83.envelope_wave_frames(
    cursor_topics bytea[], cursor_node_ids int[], cursor_sequence_ids bigint[],
    ceiling_node_ids int[], ceiling_sequence_ids bigint[], scan_node_id int,
    scan_sequence_id bigint, row_limit int, mutate_id bigint,
    max_frame_bytes int DEFAULT 2097152, source regclass DEFAULT 'xip83.envelopes',
    blob_source regclass DEFAULT NULL)
RETURNS TABLE (frame bytea, messages int, last_node_id int, last_sequence_id bigint)
AS 'MODULE_PATHNAME', 'envelope_wave_frames' LANGUAGE C STABLE ROWS 1;
COMMENT ON FUNCTION xip83.envelope_wave_frames(bytea[], int[], bigint[], int[], bigint[], int, bigint, int, bigint, int, regclass, regclass) IS
'One page of a d14n wave (the rows of envelope_wave_scan) as SubscribeResponse Envelopes frames tagged with mutate_id, each envelope embedded as stored. Needs SELECT on source and blob_source. Snapshot as envelope_wave_scan.';

-- A whole wave as frames, one frame per call, for the stream wrappers below.
CREATE FUNCTION xip83.group_wave_frames_rows(
    topics bytea[], floors bigint[], scan_cursor bigint, ceiling bigint, mutate_id bigint,
    max_frame_bytes int, source regclass,
    OUT frame bytea, OUT messages int, OUT last_id bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'group_wave_frames_rows' LANGUAGE C STABLE ROWS 1000;
COMMENT ON FUNCTION xip83.group_wave_frames_rows(bytea[], bigint[], bigint, bigint, bigint, int, regclass) IS
'The whole group wave past scan_cursor as frames, one per call (value per call); behind group_wave_frames_stream. Needs SELECT on source. One snapshot taken at the first call.';

CREATE FUNCTION xip83.welcome_wave_frames_rows(
    topics bytea[], floors bigint[], scan_cursor bigint, ceiling bigint, mutate_id bigint,
    max_frame_bytes int, source regclass,
    OUT frame bytea, OUT messages int, OUT last_id bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'welcome_wave_frames_rows' LANGUAGE C STABLE ROWS 1000;
COMMENT ON FUNCTION xip83.welcome_wave_frames_rows(bytea[], bigint[], bigint, bigint, bigint, int, regclass) IS
'The whole welcome wave past scan_cursor as frames, one per call; behind welcome_wave_frames_stream. Needs SELECT on source. One snapshot taken at the first call.';

CREATE FUNCTION xip83.envelope_wave_frames_rows(
    cursor_topics bytea[], cursor_node_ids int[], cursor_sequence_ids bigint[],
    ceiling_node_ids int[], ceiling_sequence_ids bigint[], scan_node_id int,
    scan_sequence_id bigint, mutate_id bigint, max_frame_bytes int, source regclass,
    blob_source regclass,
    OUT frame bytea, OUT messages int, OUT last_node_id int, OUT last_sequence_id bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'envelope_wave_frames_rows' LANGUAGE C STABLE ROWS 1000;
COMMENT ON FUNCTION xip83.envelope_wave_frames_rows(bytea[], int[], bigint[], int[], bigint[], int, bigint, bigint, int, regclass, regclass) IS
'The whole d14n wave past the scan position as frames, one per call; behind envelope_wave_frames_stream. Needs SELECT on source and blob_source. One snapshot taken at the first call.';

-- A whole wave as frames for a cursor:
--   DECLARE w CURSOR FOR SELECT * FROM xip83.group_wave_frames_stream(...);
--   FETCH 10 FROM w;  -- ten frames, read as they are fetched
-- Like the row streams, these SQL wrappers are inlined by the planner, which
-- puts the C function in a target list where it runs one frame per FETCHed
-- row. They carry no SET clause and are STABLE, not STRICT: any of those
-- would stop the inlining (every reference in them is schema-qualified). An
-- argument holding a volatile function or a sub-select stops it too; for such
-- arguments use a wave handle (xip83.*_wave_open), which streams whatever the
-- arguments.
CREATE FUNCTION xip83.group_wave_frames_stream(
    topics bytea[], floors bigint[], scan_cursor bigint, ceiling bigint, mutate_id bigint,
    max_frame_bytes int DEFAULT 2097152, source regclass DEFAULT 'xip83.group_messages')
RETURNS TABLE (frame bytea, messages int, last_id bigint)
LANGUAGE sql STABLE ROWS 1000 AS $$
    SELECT (w.r).* FROM (SELECT xip83.group_wave_frames_rows(topics, floors, scan_cursor,
                                ceiling, mutate_id, max_frame_bytes, source) AS r) AS w
$$;
COMMENT ON FUNCTION xip83.group_wave_frames_stream(bytea[], bigint[], bigint, bigint, bigint, int, regclass) IS
'The whole group wave as frames for a cursor: each FETCH reads only the frames it returns (when inlined: plain arguments; otherwise use group_wave_open). Needs SELECT on source. One snapshot for the whole wave.';

CREATE FUNCTION xip83.welcome_wave_frames_stream(
    topics bytea[], floors bigint[], scan_cursor bigint, ceiling bigint, mutate_id bigint,
    max_frame_bytes int DEFAULT 2097152, source regclass DEFAULT 'xip83.welcome_messages')
RETURNS TABLE (frame bytea, messages int, last_id bigint)
LANGUAGE sql STABLE ROWS 1000 AS $$
    SELECT (w.r).* FROM (SELECT xip83.welcome_wave_frames_rows(topics, floors, scan_cursor,
                                ceiling, mutate_id, max_frame_bytes, source) AS r) AS w
$$;
COMMENT ON FUNCTION xip83.welcome_wave_frames_stream(bytea[], bigint[], bigint, bigint, bigint, int, regclass) IS
'The whole welcome wave as frames for a cursor: each FETCH reads only the frames it returns (when inlined: plain arguments; otherwise use welcome_wave_open). Needs SELECT on source. One snapshot for the whole wave.';

CREATE FUNCTION xip83.envelope_wave_frames_stream(
    cursor_topics bytea[], cursor_node_ids int[], cursor_sequence_ids bigint[],
    ceiling_node_ids int[], ceiling_sequence_ids bigint[], scan_node_id int,
    scan_sequence_id bigint, mutate_id bigint, max_frame_bytes int DEFAULT 2097152,
    source regclass DEFAULT 'xip83.envelopes', blob_source regclass DEFAULT NULL)
RETURNS TABLE (frame bytea, messages int, last_node_id int, last_sequence_id bigint)
LANGUAGE sql STABLE ROWS 1000 AS $$
    SELECT (w.r).* FROM (SELECT xip83.envelope_wave_frames_rows(
        cursor_topics, cursor_node_ids, cursor_sequence_ids, ceiling_node_ids,
        ceiling_sequence_ids, scan_node_id, scan_sequence_id, mutate_id, max_frame_bytes,
        source, blob_source) AS r) AS w
$$;
COMMENT ON FUNCTION xip83.envelope_wave_frames_stream(bytea[], int[], bigint[], int[], bigint[], int, bigint, bigint, int, regclass, regclass) IS
'The whole d14n wave as frames for a cursor: each FETCH reads only the frames it returns (when inlined: plain arguments; otherwise use envelope_wave_open). Needs SELECT on source and blob_source. One snapshot for the whole wave.';

-- Wave handles: open a wave once (any argument expressions), fetch its rows
-- or frames in later statements, close it; it ends with the transaction.
CREATE FUNCTION xip83.group_wave_open(
    topics bytea[], floors bigint[], scan_cursor bigint, ceiling bigint,
    source regclass DEFAULT 'xip83.group_messages')
RETURNS int AS 'MODULE_PATHNAME', 'group_wave_open' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION xip83.group_wave_open(bytea[], bigint[], bigint, bigint, regclass) IS
'Opens a group wave and returns its handle for group_wave_fetch / group_wave_frames_fetch, until wave_close or transaction end. Needs SELECT on source. Every fetch reads with the snapshot taken here.';

CREATE FUNCTION xip83.welcome_wave_open(
    topics bytea[], floors bigint[], scan_cursor bigint, ceiling bigint,
    source regclass DEFAULT 'xip83.welcome_messages')
RETURNS int AS 'MODULE_PATHNAME', 'welcome_wave_open' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION xip83.welcome_wave_open(bytea[], bigint[], bigint, bigint, regclass) IS
'Opens a welcome wave and returns its handle for welcome_wave_fetch / welcome_wave_frames_fetch, until wave_close or transaction end. Needs SELECT on source. Every fetch reads with the snapshot taken here.';

CREATE FUNCTION xip83.envelope_wave_open(
    cursor_topics bytea[], cursor_node_ids int[], cursor_sequence_ids bigint[],
    ceiling_node_ids int[], ceiling_sequence_ids bigint[], scan_node_id int,
    scan_sequence_id bigint, source regclass DEFAULT 'xip83.envelopes',
    blob_source regclass DEFAULT NULL)
RETURNS int AS 'MODULE_PATHNAME', 'envelope_wave_open' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION xip83.envelope_wave_open(bytea[], int[], bigint[], int[], bigint[], int, bigint, regclass, regclass) IS
'Opens a d14n wave and returns its handle for envelope_wave_fetch / envelope_wave_frames_fetch, until wave_close or transaction end. Needs SELECT on source and blob_source. Every fetch reads with the snapshot taken here.';

CREATE FUNCTION xip83.group_wave_fetch(handle int, row_limit int)
RETURNS TABLE (id bigint, created_at timestamp, group_id bytea, data bytea,
               is_commit boolean, sender_hmac bytea, should_push boolean)
AS 'MODULE_PATHNAME', 'group_wave_fetch' LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 500;
COMMENT ON FUNCTION xip83.group_wave_fetch(int, int) IS
'The next row_limit rows of an open group wave, in id order; fewer at its end. Privileges were checked at open; reads with the snapshot taken at open.';

CREATE FUNCTION xip83.welcome_wave_fetch(handle int, row_limit int)
RETURNS TABLE (id bigint, created_at timestamp, installation_key bytea, data bytea,
               hpke_public_key bytea, wrapper_algorithm smallint, welcome_metadata bytea,
               message_type smallint)
AS 'MODULE_PATHNAME', 'welcome_wave_fetch' LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 500;
COMMENT ON FUNCTION xip83.welcome_wave_fetch(int, int) IS
'The next row_limit rows of an open welcome wave, in id order; fewer at its end. Privileges were checked at open; reads with the snapshot taken at open.';

CREATE FUNCTION xip83.envelope_wave_fetch(handle int, row_limit int)
RETURNS TABLE (originator_node_id int, originator_sequence_id bigint,
               gateway_time timestamp, topic bytea, originator_envelope bytea)
AS 'MODULE_PATHNAME', 'envelope_wave_fetch' LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 500;
COMMENT ON FUNCTION xip83.envelope_wave_fetch(int, int) IS
'The next row_limit rows of an open d14n wave in (originator, sequence) order; fewer at its end. Privileges were checked at open; reads with the snapshot taken at open.';

CREATE FUNCTION xip83.group_wave_frames_fetch(handle int, page_limit int, mutate_id bigint,
                                              max_frame_bytes int DEFAULT 2097152)
RETURNS TABLE (frame bytea, messages int, last_id bigint)
AS 'MODULE_PATHNAME', 'group_wave_frames_fetch' LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 1;
COMMENT ON FUNCTION xip83.group_wave_frames_fetch(int, int, bigint, int) IS
'The next page_limit rows of an open group wave as frames tagged with mutate_id. Privileges were checked at open; reads with the snapshot taken at open.';

CREATE FUNCTION xip83.welcome_wave_frames_fetch(handle int, page_limit int, mutate_id bigint,
                                                max_frame_bytes int DEFAULT 2097152)
RETURNS TABLE (frame bytea, messages int, last_id bigint)
AS 'MODULE_PATHNAME', 'welcome_wave_frames_fetch' LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 1;
COMMENT ON FUNCTION xip83.welcome_wave_frames_fetch(int, int, bigint, int) IS
'The next page_limit rows of an open welcome wave as frames tagged with mutate_id. Privileges were checked at open; reads with the snapshot taken at open.';

CREATE FUNCTION xip83.envelope_wave_frames_fetch(handle int, row_limit int, mutate_id bigint,
                                                 max_frame_bytes int DEFAULT 2097152)
RETURNS TABLE (frame bytea, messages int, last_node_id int, last_sequence_id bigint)
AS 'MODULE_PATHNAME', 'envelope_wave_frames_fetch' LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 1;
COMMENT ON FUNCTION xip83.envelope_wave_frames_fetch(int, int, bigint, int) IS
'The next row_limit rows of an open d14n wave as Envelopes frames tagged with mutate_id. Privileges were checked at open; reads with the snapshot taken at open.';

CREATE FUNCTION xip83.wave_close(handle int)
RETURNS void AS 'MODULE_PATHNAME', 'wave_close' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION xip83.wave_close(int) IS
'Closes an open wave handle and releases its scans, locks and snapshot (the end of the transaction does it too). No privileges beyond having opened it in this transaction.';

-- The live lane as frames (mutate_id 0): the rows of the live fetch
-- functions, in their order (late rows first). With each frame, what the
-- consumer advances by: last_id, the highest id in the frame (d14n: per
-- originator in the frame, the highest sequence id), and the late cursor to
-- pass next.
CREATE FUNCTION xip83.live_group_frames(after_id bigint, row_limit int, late_after bigint,
                                        max_frame_bytes int DEFAULT 2097152)
RETURNS TABLE (frame bytea, messages int, last_id bigint, late_cursor bigint)
AS 'MODULE_PATHNAME', 'live_group_frames' LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 1;
COMMENT ON FUNCTION xip83.live_group_frames(bigint, int, bigint, int) IS
'The rows of live_group_messages(after_id, row_limit, late_after) as frames tagged mutate_id 0, with the highest id and the late cursor of each. Privileges and snapshot as live_group_messages (horizon first, then a new snapshot).';

CREATE FUNCTION xip83.live_welcome_frames(after_id bigint, row_limit int, late_after bigint,
                                          max_frame_bytes int DEFAULT 2097152)
RETURNS TABLE (frame bytea, messages int, last_id bigint, late_cursor bigint)
AS 'MODULE_PATHNAME', 'live_welcome_frames' LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 1;
COMMENT ON FUNCTION xip83.live_welcome_frames(bigint, int, bigint, int) IS
'The rows of live_welcome_messages(after_id, row_limit, late_after) as frames tagged mutate_id 0, with the highest id and the late cursor of each. Privileges and snapshot as live_welcome_messages.';

CREATE FUNCTION xip83.live_envelope_frames(node_ids int[], after_sequence_ids bigint[],
                                           row_limit int, late_after bigint,
                                           max_frame_bytes int DEFAULT 2097152)
RETURNS TABLE (frame bytea, messages int, originator_node_ids int[], sequence_ids bigint[],
               late_cursor bigint)
AS 'MODULE_PATHNAME', 'live_envelope_frames' LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 1;
COMMENT ON FUNCTION xip83.live_envelope_frames(int[], bigint[], int, bigint, int) IS
'The rows of live_envelopes(node_ids, after_sequence_ids, row_limit, late_after) as Envelopes frames tagged mutate_id 0, with each frame''s originators, their highest sequence ids in it, and the late cursor. Privileges and snapshot as live_envelopes.';

-- Control frames. v3 and d14n define these messages with the same numbers
-- and types, so both bindings get the same bytes.
CREATE FUNCTION xip83.frame_started(keepalive_interval_ms int, binding text DEFAULT 'v3')
RETURNS bytea AS 'MODULE_PATHNAME', 'frame_started' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION xip83.frame_started(int, text) IS
'A SubscribeResponse Started frame advertising keepalive_interval_ms. Pure: reads no table, needs no privilege.';

CREATE FUNCTION xip83.frame_topics_live(topics bytea[], binding text DEFAULT 'v3')
RETURNS bytea AS 'MODULE_PATHNAME', 'frame_topics_live' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION xip83.frame_topics_live(bytea[], text) IS
'A SubscribeResponse TopicsLive frame listing topics in order. Pure: reads no table, needs no privilege.';

CREATE FUNCTION xip83.frame_catchup_complete(mutate_id bigint, binding text DEFAULT 'v3')
RETURNS bytea AS 'MODULE_PATHNAME', 'frame_catchup_complete' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION xip83.frame_catchup_complete(bigint, text) IS
'A SubscribeResponse CatchupComplete frame acking the Mutate mutate_id (>= 0). Pure: reads no table, needs no privilege.';

CREATE FUNCTION xip83.frame_ping(nonce bigint, binding text DEFAULT 'v3')
RETURNS bytea AS 'MODULE_PATHNAME', 'frame_ping' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION xip83.frame_ping(bigint, text) IS
'A SubscribeResponse Ping frame; the nonce''s 64 bits are the wire''s uint64. Pure: reads no table, needs no privilege.';

CREATE FUNCTION xip83.frame_pong(nonce bigint, binding text DEFAULT 'v3')
RETURNS bytea AS 'MODULE_PATHNAME', 'frame_pong' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION xip83.frame_pong(bigint, text) IS
'A SubscribeResponse Pong frame answering a client Ping with its nonce. Pure: reads no table, needs no privilege.';

-- Inspection.
CREATE FUNCTION xip83.decode_subscribe_request(frame bytea, binding text)
RETURNS jsonb AS 'MODULE_PATHNAME', 'decode_subscribe_request' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION xip83.decode_subscribe_request(bytea, text) IS
'A client SubscribeRequest (binding v3 or d14n) as jsonb: .proto field names, fields present on the wire, bytes as hex. Malformed bytes: 22P03. Pure: reads no table.';

CREATE FUNCTION xip83.decode_subscribe_response(frame bytea, binding text)
RETURNS jsonb AS 'MODULE_PATHNAME', 'decode_subscribe_response' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION xip83.decode_subscribe_response(bytea, text) IS
'A node SubscribeResponse frame (binding v3 or d14n) as jsonb: .proto field names, fields present on the wire, bytes as hex. Malformed bytes: 22P03. Pure: reads no table.';

CREATE FUNCTION xip83.envelope_target_topic(originator_envelope bytea)
RETURNS bytea AS 'MODULE_PATHNAME', 'envelope_target_topic' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION xip83.envelope_target_topic(bytea) IS
'The target topic of a serialized OriginatorEnvelope, through its nested UnsignedOriginatorEnvelope, PayerEnvelope, ClientEnvelope and AuthenticatedData. Malformed bytes: 22P03. Pure: reads no table.';
