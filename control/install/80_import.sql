-- Moving a node's rows into xip83's tables: xip83.import copies a source table
-- (a v3 node's group_messages or welcome_messages, a d14n node's envelope
-- table or its meta + blob pair) into the xip83 table of the same kind, in
-- batches in key order, one transaction per batch.
--
-- Resumable and idempotent: a run starts after the highest key the target
-- already holds within the source's key range (per originator for
-- envelopes), and every batch inserts with ON CONFLICT DO NOTHING, so a run
-- killed or cancelled mid-way, or a batch rolled back, is finished by running
-- it again. A source row whose key or hash the target holds for a different
-- message is never skipped silently: the batch fails with 23505.
--
-- Ids and sequence ids keep their values. Explicit v3 ids above the id
-- sequence move it up, by the writer's own setval (positions.c); import_step
-- does it once per batch, ahead of the rows, so the caller needs USAGE (to
-- read where it is) and UPDATE on the sequence.
--
-- Everything runs as the caller (nothing is SECURITY DEFINER). import_step
-- pins search_path; the procedure cannot (a SET clause forbids COMMIT), so
-- its body calls only schema-qualified functions and uses no operator.

-- One batch: reads up to batch_rows source rows after the position
-- (originator, after_key), inserts them, checks the ones not inserted are
-- already stored as they are, and returns the next position with running
-- totals. A NULL after_key starts the run, or for envelopes the originator
-- (the first one when NULL): at the resume point, or at the beginning when
-- resume is false. done is true when the source has no rows left after the
-- position returned.
CREATE FUNCTION xip83.import_step(source regclass, target regclass, batch_rows int,
                                  blob_source regclass, resume boolean,
                                  originator int, after_key bigint,
                                  rows_read bigint, rows_inserted bigint)
RETURNS TABLE (next_originator int, next_key bigint, total_read bigint,
               total_inserted bigint, done boolean)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    kind text;
    cols text;          -- the columns copied, in the target's terms
    src_cols text;      -- the same read from the source (s: source, b: blob)
    keycols text;       -- the key, in the target's terms
    same text;          -- what must match when a key is already stored
    filter text;        -- the batch's position filter on the source
    src text;
    n_read bigint;
    n_inserted bigint;
    last_key bigint;
    bad text;
    seq regclass;
BEGIN
    IF source IS NULL OR target IS NULL OR batch_rows IS NULL OR resume IS NULL THEN
        RAISE EXCEPTION 'arguments "source", "target", "batch_rows" and "resume" must not be null'
            USING ERRCODE = 'null_value_not_allowed',
                  HINT = 'Give each of them a value: NULL does not stand for a default here.';
    END IF;
    IF batch_rows < 1 THEN
        RAISE EXCEPTION 'argument "batch_rows" must be at least 1'
            USING ERRCODE = 'invalid_parameter_value', DETAIL = pg_catalog.format('It is %s.', batch_rows);
    END IF;
    kind := CASE target WHEN 'xip83.group_messages'::regclass THEN 'group'
                        WHEN 'xip83.welcome_messages'::regclass THEN 'welcome'
                        WHEN 'xip83.envelopes'::regclass THEN 'envelope' END;
    IF kind IS NULL THEN
        RAISE EXCEPTION 'xip83.import moves rows into xip83.group_messages, xip83.welcome_messages or xip83.envelopes, not %', target
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF source = target OR blob_source = target THEN
        RAISE EXCEPTION 'source and target are the same table'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF blob_source IS NOT NULL AND kind <> 'envelope' THEN
        RAISE EXCEPTION 'blob_source is for envelopes only'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    IF kind = 'group' THEN
        cols := 'id, created_at, group_id, data, group_id_data_hash, is_commit, sender_hmac, should_push';
        src_cols := 's.id, s.created_at, s.group_id, s.data, s.group_id_data_hash, s.is_commit, s.sender_hmac, s.should_push';
        keycols := 'id';
        same := '(t.group_id, t.data, t.group_id_data_hash) IS NOT DISTINCT FROM (r.group_id, r.data, r.group_id_data_hash)';
    ELSIF kind = 'welcome' THEN
        cols := 'id, created_at, installation_key, data, hpke_public_key, installation_key_data_hash, wrapper_algorithm, welcome_metadata, message_type';
        src_cols := 's.id, s.created_at, s.installation_key, s.data, s.hpke_public_key, s.installation_key_data_hash, s.wrapper_algorithm, s.welcome_metadata, s.message_type';
        keycols := 'id';
        same := '(t.installation_key, t.data, t.installation_key_data_hash) IS NOT DISTINCT FROM (r.installation_key, r.data, r.installation_key_data_hash)';
    ELSE
        -- expiry NOT NULL: a source without one gets 0, as xip83's default
        cols := 'originator_node_id, originator_sequence_id, topic, gateway_time, expiry, payer_id, originator_envelope';
        src_cols := pg_catalog.format('s.originator_node_id, s.originator_sequence_id, s.topic, s.gateway_time, coalesce(s.expiry, 0), s.payer_id, %s.originator_envelope',
                                      CASE WHEN blob_source IS NULL THEN 's' ELSE 'b' END);
        keycols := 'originator_node_id, originator_sequence_id';
        same := '(t.topic, t.originator_envelope) IS NOT DISTINCT FROM (r.topic, r.originator_envelope)';
    END IF;

    -- Where the batch starts: after the highest key the target holds at or
    -- below the source's highest (rows of the target's own above the source's
    -- keys do not count), or at the beginning.
    IF after_key IS NULL THEN
        IF kind = 'envelope' AND originator IS NULL THEN
            EXECUTE pg_catalog.format('SELECT s.originator_node_id FROM %s s ORDER BY s.originator_node_id LIMIT 1', source)
               INTO originator;
            IF originator IS NULL THEN
                RETURN QUERY SELECT NULL::int, NULL::bigint, coalesce(rows_read, 0),
                                    coalesce(rows_inserted, 0), true;
                RETURN;
            END IF;
        END IF;
        after_key := -9223372036854775808;
        IF resume THEN
            EXECUTE pg_catalog.format(CASE kind WHEN 'envelope' THEN
                'SELECT pg_catalog.max(t.originator_sequence_id) FROM xip83.envelopes t
                  WHERE t.originator_node_id = $1 AND t.originator_sequence_id <=
                        (SELECT pg_catalog.max(s.originator_sequence_id) FROM %1$s s WHERE s.originator_node_id = $1)'
                ELSE 'SELECT pg_catalog.max(t.id) FROM %2$s t WHERE t.id <= (SELECT pg_catalog.max(s.id) FROM %1$s s)' END,
                source, target)
               INTO last_key USING originator;
            after_key := coalesce(last_key, after_key);
        END IF;
    END IF;

    -- Move the id sequence past the batch once, ahead of the rows: the row
    -- trigger then finds every id below it instead of calling setval per row.
    IF kind <> 'envelope' THEN
        seq := pg_catalog.format('xip83.%s_messages_id_seq', kind)::regclass;
        EXECUTE pg_catalog.format('SELECT pg_catalog.max(k.id) FROM (SELECT s.id FROM %s s WHERE s.id > $1
                                    ORDER BY s.id LIMIT $2) k', source)
           INTO last_key USING after_key, batch_rows;
        IF last_key > coalesce(pg_catalog.pg_sequence_last_value(seq), 0) THEN
            PERFORM pg_catalog.setval(seq, last_key);
        END IF;
    END IF;

    filter := CASE kind WHEN 'envelope'
                  THEN 's.originator_node_id = $3 AND s.originator_sequence_id > $1'
                  ELSE 's.id > $1' END;
    src := pg_catalog.format('SELECT %s FROM %s s %s WHERE %s ORDER BY %s LIMIT $2',
                             src_cols, source,
                             CASE WHEN blob_source IS NULL THEN ''
                                  ELSE pg_catalog.format('JOIN %s b ON b.originator_node_id = s.originator_node_id AND b.originator_sequence_id = s.originator_sequence_id', blob_source) END,
                             filter,
                             CASE kind WHEN 'envelope' THEN 's.originator_sequence_id' ELSE 's.id' END);
    -- One statement: the rows read, those inserted, and the first row neither
    -- inserted nor stored as it is (the target's snapshot predates the insert,
    -- so a row not inserted must be found there as it is).
    EXECUTE pg_catalog.format(
        'WITH r AS MATERIALIZED (%1$s),
              ins AS (INSERT INTO %2$s AS t (%3$s) SELECT * FROM r
                      ON CONFLICT DO NOTHING RETURNING %4$s)
         SELECT (SELECT pg_catalog.count(*) FROM r), (SELECT pg_catalog.count(*) FROM ins),
                (SELECT pg_catalog.max(r.%5$s) FROM r),
                (SELECT pg_catalog.format(%6$L, %7$s) FROM r
                   WHERE NOT EXISTS (SELECT FROM ins WHERE (%8$s) = (%9$s))
                     AND NOT EXISTS (SELECT FROM %2$s t WHERE (%10$s) = (%9$s) AND %11$s)
                  ORDER BY %12$s LIMIT 1)',
        src, target, cols,
        CASE kind WHEN 'envelope' THEN 't.originator_node_id, t.originator_sequence_id' ELSE 't.id' END,
        CASE kind WHEN 'envelope' THEN 'originator_sequence_id' ELSE 'id' END,
        CASE kind WHEN 'envelope' THEN '(%s, %s)' ELSE 'id %s' END,
        CASE kind WHEN 'envelope' THEN 'r.originator_node_id, r.originator_sequence_id' ELSE 'r.id' END,
        CASE kind WHEN 'envelope' THEN 'ins.originator_node_id, ins.originator_sequence_id' ELSE 'ins.id' END,
        CASE kind WHEN 'envelope' THEN 'r.originator_node_id, r.originator_sequence_id' ELSE 'r.id' END,
        CASE kind WHEN 'envelope' THEN 't.originator_node_id, t.originator_sequence_id' ELSE 't.id' END,
        same,
        CASE kind WHEN 'envelope' THEN 'r.originator_sequence_id' ELSE 'r.id' END)
       INTO n_read, n_inserted, last_key, bad
       USING after_key, batch_rows, originator;
    IF bad IS NOT NULL THEN
        RAISE EXCEPTION 'xip83.import: source row % of % conflicts with another row of %', bad, source, target
            USING ERRCODE = 'unique_violation',
                  DETAIL = 'The target holds a different message under its key, or the same message under another key.',
                  HINT = 'Import into a target that holds no rows of its own within the source''s keys.';
    END IF;
    rows_read := coalesce(rows_read, 0) + n_read;
    rows_inserted := coalesce(rows_inserted, 0) + n_inserted;
    IF n_read > 0 THEN
        RAISE NOTICE 'xip83.import into %: % rows read, % inserted, up to %; % read, % inserted so far',
            target, n_read, n_inserted,
            CASE kind WHEN 'envelope' THEN pg_catalog.format('originator %s sequence %s', originator, last_key)
                      ELSE pg_catalog.format('id %s', last_key) END,
            rows_read, rows_inserted;
    END IF;

    -- A short batch ends an originator (or the import): move to the next one.
    IF n_read < batch_rows THEN
        IF kind <> 'envelope' THEN
            RETURN QUERY SELECT NULL::int, coalesce(last_key, after_key), rows_read, rows_inserted, true;
            RETURN;
        END IF;
        EXECUTE pg_catalog.format('SELECT s.originator_node_id FROM %s s WHERE s.originator_node_id > $1
                                    ORDER BY s.originator_node_id LIMIT 1', source)
           INTO originator USING originator;
        RETURN QUERY SELECT originator, NULL::bigint, rows_read, rows_inserted, originator IS NULL;
        RETURN;
    END IF;
    RETURN QUERY SELECT originator, last_key, rows_read, rows_inserted, false;
END $$;

CREATE PROCEDURE xip83.import(source regclass, target regclass, batch_rows int DEFAULT 10000,
                              blob_source regclass DEFAULT NULL, resume boolean DEFAULT true,
                              INOUT rows_read bigint DEFAULT NULL,
                              INOUT rows_inserted bigint DEFAULT NULL)
LANGUAGE plpgsql AS $$
DECLARE
    st record;
BEGIN
    SELECT * INTO st
      FROM xip83.import_step(source, target, batch_rows, blob_source, resume,
                             NULL::int, NULL::bigint, NULL::bigint, NULL::bigint);
    LOOP
        COMMIT;
        EXIT WHEN st.done;
        SELECT * INTO st
          FROM xip83.import_step(source, target, batch_rows, blob_source, resume,
                                 st.next_originator, st.next_key, st.total_read,
                                 st.total_inserted);
    END LOOP;
    rows_read := st.total_read;
    rows_inserted := st.total_inserted;
END $$;

REVOKE EXECUTE ON FUNCTION xip83.import_step(regclass, regclass, int, regclass, boolean, int,
                                             bigint, bigint, bigint) FROM PUBLIC;

COMMENT ON FUNCTION xip83.import_step(regclass, regclass, int, regclass, boolean, int, bigint, bigint, bigint) IS
'Internal to xip83.import: one batch of an import, the next position and running totals. Raises 23505 when a source row conflicts with a different target row. Runs as the caller. Not executable by PUBLIC.';
COMMENT ON PROCEDURE xip83.import(regclass, regclass, int, regclass, boolean, bigint, bigint) IS
'Copies a node''s table (v3 group or welcome messages; d14n envelopes, or a meta table with blob_source) into the xip83 table of that kind, batch_rows rows per transaction in key order, keys kept; resumes after the highest key the target holds within the source''s keys (resume => false: from the beginning); idempotent. A NOTICE per batch; returns the rows read and inserted. CALL it outside a transaction block. Runs as the caller: needs SELECT on the sources, SELECT and INSERT on the target, USAGE and UPDATE on the target''s id sequence (v3), EXECUTE on xip83.import_step.';
