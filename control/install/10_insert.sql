-- Batch inserts. Each takes one array per column, checks every array before
-- writing anything, assigns ids in input order, and is idempotent: an element
-- whose message is already stored (same topic and data, or same originator and
-- sequence for envelopes) returns the stored row with inserted = false instead
-- of failing; a different message with a stored message's hash is refused
-- (see batch_hash_collision). One output row per input element, in input order.
-- They check what the nodes' own inserts check and no more: array shapes and
-- NULLs in NOT NULL columns. Empty topics, sequence id 0 and any
-- wrapper_algorithm or message_type are stored; a negative sequence id is
-- refused (22003) by the registering trigger, before the table's CHECK.
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

-- The helpers are internal: only the batch functions call them. Those run as
-- their caller, so a role that writes through them needs EXECUTE on these too
-- (docs/operations.md, "Privileges"); PUBLIC has none.
REVOKE EXECUTE ON FUNCTION
    xip83.check_batch_array(anyarray, text, int, boolean, boolean),
    xip83.batch_first_occurrences(bytea[]),
    xip83.batch_hashes(bytea[], bytea[]),
    xip83.batch_hash_collision(text, bigint, bytea, bytea, bigint, bytea, bytea)
FROM PUBLIC;

COMMENT ON FUNCTION xip83.check_batch_array(anyarray, text, int, boolean, boolean) IS
'Internal to the batch inserts. Returns nothing; raises 22004 (NULL argument or element) or 22023 (not one-dimensional, wrong length). Reads no table. Not executable by PUBLIC.';
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
'Batch insert of d14n envelopes, all or nothing. One row per element in input order: the stored envelope of its (originator, sequence) and whether this call inserted it; a repeat returns the stored envelope unchanged, for the caller to compare. Raises 22004/22023 on bad arrays; a negative sequence id is refused (22003). Snapshot as for insert_group_messages. Runs as the caller: needs INSERT and SELECT on xip83.envelopes and EXECUTE on the batch helpers.';
