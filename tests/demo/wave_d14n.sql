-- A d14n wave as a node replays it: pin the ceilings when the wave starts,
-- then page two topics from every originator in (originator, sequence) order,
-- each page starting after the last row of the one before.
\set ON_ERROR_STOP on
\pset footer off
SELECT * FROM xip83.originator_ceilings();

CREATE TEMP TABLE demo_wave AS
SELECT array_agg(t.topic ORDER BY t.topic, o.node) AS topics,
       array_agg(o.node ORDER BY t.topic, o.node) AS nodes,
       array_agg(0::bigint) AS floors,
       (SELECT array_agg(originator_node_id) FROM xip83.originator_ceilings()) AS ceiling_nodes,
       (SELECT array_agg(max_sequence_id) FROM xip83.originator_ceilings()) AS ceilings
  FROM (SELECT DISTINCT topic FROM xip83.envelopes ORDER BY topic LIMIT 2) AS t,
       (VALUES (100), (200), (300)) AS o(node);

\set scan_node 0
\set scan_sequence 0
\echo page 1
SELECT originator_node_id, originator_sequence_id, left(encode(topic, 'hex'), 10) AS topic,
       convert_from(originator_envelope, 'UTF8') AS envelope
  FROM demo_wave, xip83.envelope_wave_scan(topics, nodes, floors, ceiling_nodes, ceilings,
                                           :scan_node, :scan_sequence, 5);
SELECT originator_node_id AS scan_node, originator_sequence_id AS scan_sequence
  FROM demo_wave, xip83.envelope_wave_scan(topics, nodes, floors, ceiling_nodes, ceilings,
                                           :scan_node, :scan_sequence, 5)
 ORDER BY 1 DESC, 2 DESC LIMIT 1 \gset
\echo page 2, after (:scan_node, :scan_sequence)
SELECT originator_node_id, originator_sequence_id, left(encode(topic, 'hex'), 10) AS topic,
       convert_from(originator_envelope, 'UTF8') AS envelope
  FROM demo_wave, xip83.envelope_wave_scan(topics, nodes, floors, ceiling_nodes, ceilings,
                                           :scan_node, :scan_sequence, 5);
\echo the whole wave as a stream through a cursor: each FETCH reads only what it returns
BEGIN;
DECLARE wave CURSOR FOR
SELECT s.originator_node_id, s.originator_sequence_id, left(encode(s.topic, 'hex'), 10) AS topic
  FROM demo_wave, xip83.envelope_wave_stream(topics, nodes, floors, ceiling_nodes, ceilings,
                                             0, 0) AS s;
FETCH 3 FROM wave;
FETCH 3 FROM wave;
CLOSE wave;
COMMIT;
