-- What the node now holds.
\set ON_ERROR_STOP on
\pset footer off
SELECT 'group_messages' AS kind, count(*) AS messages, count(DISTINCT group_id) AS topics,
       min(id) AS first_id, max(id) AS last_id FROM xip83.group_messages
UNION ALL
SELECT 'welcome_messages', count(*), count(DISTINCT installation_key), min(id), max(id)
  FROM xip83.welcome_messages;

SELECT originator_node_id, count(*) AS envelopes, count(DISTINCT topic) AS topics,
       max(originator_sequence_id) AS last_sequence_id
  FROM xip83.envelopes GROUP BY 1 ORDER BY 1;

SELECT id, encode(group_id, 'hex') AS group_id, convert_from(data, 'UTF8') AS data, is_commit
  FROM xip83.group_messages ORDER BY id LIMIT 3;
