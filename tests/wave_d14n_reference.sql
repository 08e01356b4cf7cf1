-- The d14n wave in plain SQL, for the tests and the benchmark: the definition
-- of a page and of the ceilings that xip83.envelope_wave_scan and
-- xip83.originator_ceilings must equal row for row, the production partition
-- layout (meta and blob tables, LIST by originator, RANGE bands of 1,000,000
-- sequence ids, topic index declared on the parent), and a data generator.
-- Loaded by sql/wave_d14n.sql (\i), tests/libpq/t_wave_d14n.c and
-- tests/bench/bench_wave_d14n.c.

-- One page of a wave, by definition: entries repeated for a (topic,
-- originator) count once with their lowest floor, a repeated ceiling with its
-- lowest value; with blob_source the payload comes from the blob table. A
-- floor of -1 reads sequence 0, 0 means sequence 0 was seen; topics may be
-- empty.
CREATE FUNCTION wave_d14n_reference_page(
    cursor_topics bytea[], cursor_node_ids int[], cursor_sequence_ids bigint[],
    ceiling_node_ids int[], ceiling_sequence_ids bigint[],
    scan_node_id int, scan_sequence_id bigint, row_limit int,
    source regclass DEFAULT 'xip83.envelopes', blob_source regclass DEFAULT NULL)
RETURNS TABLE (originator_node_id int, originator_sequence_id bigint,
               gateway_time timestamp, topic bytea, originator_envelope bytea)
LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN QUERY EXECUTE format($q$
        WITH floors AS (
            SELECT f.topic, f.node, min(f.seq) AS seq
              FROM unnest($1, $2, $3) AS f(topic, node, seq)
             GROUP BY f.topic, f.node),
        ceilings AS (
            SELECT c.node, min(c.seq) AS seq
              FROM unnest($4, $5) AS c(node, seq)
             GROUP BY c.node)
        SELECT e.originator_node_id, e.originator_sequence_id, e.gateway_time, e.topic, %s
          FROM %s e
          JOIN floors f ON f.topic = e.topic AND f.node = e.originator_node_id
                       AND e.originator_sequence_id > f.seq
          JOIN ceilings c ON c.node = e.originator_node_id
                         AND e.originator_sequence_id <= c.seq
          %s
         WHERE (e.originator_node_id, e.originator_sequence_id) > ($6, $7)
         ORDER BY e.originator_node_id, e.originator_sequence_id
         LIMIT $8 $q$,
        CASE WHEN blob_source IS NULL THEN 'e.originator_envelope' ELSE 'b.originator_envelope' END,
        source,
        CASE WHEN blob_source IS NULL THEN ''
             ELSE format('JOIN %s b ON b.originator_node_id = e.originator_node_id'
                         ' AND b.originator_sequence_id = e.originator_sequence_id', blob_source)
        END)
    USING cursor_topics, cursor_node_ids, cursor_sequence_ids, ceiling_node_ids,
          ceiling_sequence_ids, scan_node_id, scan_sequence_id, row_limit;
END $$;

-- The ceilings, by definition: every originator present with max(), or each
-- distinct listed originator with its max() or -1 (sequence 0 is a real one).
CREATE FUNCTION wave_d14n_reference_ceilings(node_ids int[],
                                             source regclass DEFAULT 'xip83.envelopes')
RETURNS TABLE (originator_node_id int, max_sequence_id bigint)
LANGUAGE plpgsql STABLE AS $$
BEGIN
    IF node_ids IS NULL THEN
        RETURN QUERY EXECUTE format(
            'SELECT originator_node_id, max(originator_sequence_id) FROM %s'
            ' GROUP BY originator_node_id ORDER BY originator_node_id', source);
    ELSE
        RETURN QUERY EXECUTE format(
            'SELECT n.node, coalesce((SELECT max(e.originator_sequence_id) FROM %s e'
            '                          WHERE e.originator_node_id = n.node), -1)'
            '  FROM (SELECT DISTINCT unnest($1) AS node) n ORDER BY n.node', source)
        USING node_ids;
    END IF;
END $$;

-- Production's layout: a meta and a blob table keyed by the same pair, both
-- LIST-partitioned by originator; bands are added by wave_d14n_add_band.
CREATE FUNCTION wave_d14n_production_layout(meta text, blob text)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('CREATE TABLE %s (
        originator_node_id int NOT NULL, originator_sequence_id bigint NOT NULL,
        topic bytea NOT NULL, gateway_time timestamp NOT NULL DEFAULT now(),
        expiry bigint, payer_id int,
        PRIMARY KEY (originator_node_id, originator_sequence_id))
        PARTITION BY LIST (originator_node_id)', meta);
    EXECUTE format('CREATE INDEX ON %s (topic, originator_node_id, originator_sequence_id)', meta);
    EXECUTE format('CREATE TABLE %s (
        originator_node_id int NOT NULL, originator_sequence_id bigint NOT NULL,
        originator_envelope bytea NOT NULL,
        PRIMARY KEY (originator_node_id, originator_sequence_id))
        PARTITION BY LIST (originator_node_id)', blob);
END $$;

-- The partition of `parent` for one originator and one band of 1,000,000
-- sequence ids (band b holds [b * 1e6, (b + 1) * 1e6)), made when missing.
CREATE FUNCTION wave_d14n_add_band(parent text, originator int, band bigint)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF to_regclass(format('%s_o%s', parent, originator)) IS NULL THEN
        EXECUTE format('CREATE TABLE %s_o%s PARTITION OF %s FOR VALUES IN (%s)
                        PARTITION BY RANGE (originator_sequence_id)',
                       parent, originator, parent, originator);
    END IF;
    IF to_regclass(format('%s_o%s_b%s', parent, originator, band)) IS NULL THEN
        EXECUTE format('CREATE TABLE %s_o%s_b%s PARTITION OF %s_o%s
                        FOR VALUES FROM (%s) TO (%s)',
                       parent, originator, band, parent, originator,
                       band * 1000000, (band + 1) * 1000000);
    END IF;
END $$;

-- Copies envelopes from a table of xip83.envelopes' layout into a meta/blob
-- pair in the production layout, adding the bands the rows need.
CREATE FUNCTION wave_d14n_load_split(staging regclass, meta text, blob text)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('SELECT wave_d14n_add_band(%L, o, b), wave_d14n_add_band(%L, o, b)
                      FROM (SELECT DISTINCT originator_node_id AS o,
                                   originator_sequence_id / 1000000 AS b FROM %s) s',
                   meta, blob, staging);
    EXECUTE format('INSERT INTO %s (originator_node_id, originator_sequence_id, topic,
                                    gateway_time, expiry, payer_id)
                    SELECT originator_node_id, originator_sequence_id, topic, gateway_time,
                           expiry, payer_id FROM %s', meta, staging);
    EXECUTE format('INSERT INTO %s (originator_node_id, originator_sequence_id, originator_envelope)
                    SELECT originator_node_id, originator_sequence_id, originator_envelope
                      FROM %s', blob, staging);
END $$;

-- Appends n random envelopes to `target`: originators drawn by weight
-- (`thresholds` are the cumulative weights that start the second, third, ...
-- originator), topics '\x00' || int4 with index floor(ntopics * u^2), payloads
-- of `payload` bytes (a multiple of 32), sequences per originator from 1 in
-- steps of `stride`, after the highest already stored.
CREATE FUNCTION wave_d14n_generate(target regclass, n bigint, originators int[],
                                   thresholds float8[], ntopics int, payload int,
                                   stride bigint DEFAULT 1)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format($q$
        WITH tops AS (
            SELECT t.o, coalesce((SELECT max(x.originator_sequence_id) FROM %1$s x
                                   WHERE x.originator_node_id = t.o), 0) AS top
              FROM unnest($2) AS t(o))
        INSERT INTO %1$s (originator_node_id, originator_sequence_id, topic, gateway_time,
                          originator_envelope)
        SELECT g.o, tops.top + $5 * row_number() OVER (PARTITION BY g.o ORDER BY g.i),
               '\x00'::bytea || int4send(floor($3 * g.u * g.u)::int),
               timestamp '2026-01-01' + g.i * interval '1 millisecond',
               decode(repeat(encode(sha256(int8send(g.i)), 'hex'), $4 / 32), 'hex')
          FROM (SELECT i, $2[width_bucket(random(), $1) + 1] AS o, random() AS u
                  FROM generate_series(1, $6) i) g
          JOIN tops ON tops.o = g.o
         ORDER BY g.i $q$, target)
    USING thresholds, originators, ntopics, payload, stride, n;
END $$;
