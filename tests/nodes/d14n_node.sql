-- A d14n (decentralized) node's envelope tables in their production layout,
-- in schema public: envelope metadata and envelope bytes in two tables, each
-- partitioned by LIST (originator) and every originator's partition by RANGE
-- bands of 1,000,000 sequence ids, created on demand by the node's own SQL
-- function; the node's insert functions. Nothing of xip83 here: this is what
-- a node brings. tests/nodes/README.md says what it models.

CREATE TABLE public.payers (
    id      serial PRIMARY KEY,
    address text   NOT NULL UNIQUE
);

CREATE TABLE public.gateway_envelopes_meta (
    gateway_time           timestamp NOT NULL DEFAULT now(),
    originator_node_id     int       NOT NULL,
    originator_sequence_id bigint    NOT NULL,
    topic                  bytea     NOT NULL,
    payer_id               int       REFERENCES public.payers (id),
    expiry                 bigint    NOT NULL,
    PRIMARY KEY (originator_node_id, originator_sequence_id)
) PARTITION BY LIST (originator_node_id);
-- Topic queries read (topic, originator, sequence) and the time from the index alone.
CREATE INDEX gateway_envelopes_meta_topic_idx
    ON public.gateway_envelopes_meta (topic, originator_node_id, originator_sequence_id)
    INCLUDE (gateway_time);

CREATE TABLE public.gateway_envelopes_blob (
    originator_node_id     int    NOT NULL,
    originator_sequence_id bigint NOT NULL,
    originator_envelope    bytea  NOT NULL,
    PRIMARY KEY (originator_node_id, originator_sequence_id)
) PARTITION BY LIST (originator_node_id);

-- Creates, when missing, the originator's list partition of both tables and
-- the band of 1,000,000 sequence ids that holds sequence_id. Serialized, so
-- two writers racing for a band do not both create it and two creators do not
-- wait for each other's locks on the parents.
CREATE FUNCTION public.ensure_gateway_envelope_partitions(originator int, sequence_id bigint)
RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    band_start bigint := (sequence_id / 1000000) * 1000000;
    parent     text;
    list_part  text;
    band_part  text;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtext('gateway_envelopes_partitions'));
    FOREACH parent IN ARRAY ARRAY['gateway_envelopes_meta', 'gateway_envelopes_blob'] LOOP
        list_part := format('%s_o%s', parent, originator);
        band_part := format('%s_s%s', list_part, band_start);
        IF to_regclass(format('public.%I', list_part)) IS NULL THEN
            EXECUTE format('CREATE TABLE public.%I PARTITION OF public.%I'
                           ' FOR VALUES IN (%s) PARTITION BY RANGE (originator_sequence_id)',
                           list_part, parent, originator);
        END IF;
        IF to_regclass(format('public.%I', band_part)) IS NULL THEN
            EXECUTE format('CREATE TABLE public.%I PARTITION OF public.%I'
                           ' FOR VALUES FROM (%s) TO (%s)',
                           band_part, list_part, band_start, band_start + 1000000);
        END IF;
    END LOOP;
END;
$$;

-- A batch of envelopes, one array per column. Envelopes already stored are
-- skipped (a retried batch is success); returns the rows inserted. An
-- envelope for an originator or band without a partition fails with
-- "no partition of relation" (23514): the partitions are created and the
-- batch is tried again.
CREATE FUNCTION public.insert_gateway_envelopes(originator_node_ids int[],
                                                originator_sequence_ids bigint[],
                                                topics bytea[], payer_ids int[],
                                                gateway_times timestamp[], expiries bigint[],
                                                originator_envelopes bytea[])
RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    inserted bigint;
    pair     record;
    created  boolean := false;
BEGIN
    LOOP
        BEGIN
            -- meta, then blob: the order the partitions are created in, so a
            -- writer and a partition creator never wait for each other in a circle
            INSERT INTO public.gateway_envelopes_meta
                    (originator_node_id, originator_sequence_id, topic, payer_id,
                     gateway_time, expiry)
                SELECT n, s, t, p, coalesce(g, now()), e
                  FROM unnest(originator_node_ids, originator_sequence_ids, topics, payer_ids,
                              gateway_times, expiries) AS b(n, s, t, p, g, e)
                ON CONFLICT DO NOTHING;
            GET DIAGNOSTICS inserted = ROW_COUNT;
            INSERT INTO public.gateway_envelopes_blob
                    (originator_node_id, originator_sequence_id, originator_envelope)
                SELECT * FROM unnest(originator_node_ids, originator_sequence_ids,
                                     originator_envelopes)
                ON CONFLICT DO NOTHING;
            RETURN inserted;
        EXCEPTION WHEN check_violation THEN
            -- once is enough: the partitions now exist, any other failure is real
            IF created OR SQLERRM NOT LIKE 'no partition of relation%' THEN
                RAISE;
            END IF;
            created := true;
            FOR pair IN SELECT DISTINCT n, s / 1000000 AS band
                          FROM unnest(originator_node_ids, originator_sequence_ids) AS b(n, s) LOOP
                PERFORM public.ensure_gateway_envelope_partitions(pair.n, pair.band * 1000000);
            END LOOP;
        END;
    END LOOP;
END;
$$;

-- One envelope: the batch of one.
CREATE FUNCTION public.insert_gateway_envelope(originator_node_id int,
                                               originator_sequence_id bigint, topic bytea,
                                               payer_id int, gateway_time timestamp,
                                               expiry bigint, originator_envelope bytea)
RETURNS bigint
LANGUAGE sql AS $$
    SELECT public.insert_gateway_envelopes(ARRAY[originator_node_id],
                                           ARRAY[originator_sequence_id], ARRAY[topic],
                                           ARRAY[payer_id], ARRAY[gateway_time], ARRAY[expiry],
                                           ARRAY[originator_envelope]);
$$;
