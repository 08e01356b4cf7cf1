-- Read replicas, on the primary: horizon_fence returns the horizons with a
-- fence no later than the WAL written so far, on this timeline and system;
-- LiveNotice carries a fence both ways; up_to only lowers what a live fetch
-- reads on the primary; bad arguments get clear errors. A tracked table of
-- its own keeps the other tests' rows and horizons out of it.
-- Starts from empty tables and fresh ids, whatever ran before in this database.
TRUNCATE xip83.group_messages, xip83.welcome_messages, xip83.envelopes RESTART IDENTITY;
CREATE TABLE fence_groups (
    id bigserial PRIMARY KEY, created_at timestamp NOT NULL DEFAULT now(),
    group_id bytea NOT NULL, data bytea NOT NULL, group_id_data_hash bytea NOT NULL UNIQUE,
    is_commit boolean DEFAULT NULL, sender_hmac bytea, should_push boolean);
CREATE INDEX ON fence_groups (group_id, id);
SELECT xip83.track('fence_groups', 'group');
INSERT INTO fence_groups (group_id, data, group_id_data_hash)
SELECT '\x01', int4send(i), sha256(int4send(i)) FROM generate_series(1, 5) i;
SELECT max(id) AS top FROM fence_groups \gset

SELECT horizon = :top AS at_top, originator_node_ids IS NULL AS v3,
       fence IS NOT NULL AND fence <= pg_current_wal_insert_lsn() AS fence_written,
       timeline_id = (SELECT timeline_id FROM pg_control_checkpoint()) AS same_timeline,
       system_identifier = (SELECT system_identifier FROM pg_control_system()) AS same_system
  FROM xip83.horizon_fence('fence_groups');
SELECT horizon IS NULL AS no_v3_horizon, originator_node_ids IS NOT NULL AS originators
  FROM xip83.horizon_fence('xip83.envelopes');
SELECT horizon_fence.horizon = xip83.welcome_horizon() AS welcome
  FROM xip83.horizon_fence('xip83.welcome_messages');

-- up_to lowers the horizon on the primary; a fence there waits for nothing,
-- and one beyond its WAL (a promoted server's old primary went on) is refused
SELECT count(*) FROM xip83.live_group_messages(:top - 5, 100, 0, 'fence_groups', up_to => :top - 2);
SELECT count(*) FROM xip83.live_group_messages(:top - 5, 100, 0, 'fence_groups', up_to => :top + 100,
                                               fence => pg_current_wal_insert_lsn());
\set VERBOSITY sqlstate
SELECT count(*) FROM xip83.live_group_messages(:top - 5, 100, 0, 'fence_groups', up_to => :top + 100,
                                               fence => 'FFFFFFFF/0');
SELECT count(*) FROM xip83.live_envelopes('{}', '{}', 10, 0, up_to_sequence_ids => '{}',
                                          fence => pg_current_wal_insert_lsn() + 16777216);
\set VERBOSITY default
SELECT count(*) FROM xip83.live_envelopes('{}', '{}', 10, 0, up_to_sequence_ids => '{}');

-- the notice's fence, both ways
SELECT fence, timeline_id, system_identifier FROM xip83.live_notice_decode(
    xip83.live_notice_encode(7, 'live', 3, 0, 0, '{}', '{}', '0/1A2B3C4', 2, 7000000000000000001));
SELECT fence, timeline_id, system_identifier FROM xip83.live_notice_decode(xip83.live_notice_encode(7, 'live', 3, 0, 0, '{}', '{}'));

-- bad arguments
\set VERBOSITY sqlstate
SELECT * FROM xip83.horizon_fence(NULL);
SELECT * FROM xip83.horizon_fence('pg_class');
SELECT count(*) FROM xip83.live_envelopes(ARRAY[1], ARRAY[0::bigint], 10, 0,
                                          up_to_sequence_ids => ARRAY[1, 2]::bigint[]);
SELECT xip83.live_notice_encode(7, 'live', 3, 0, 0, '{}', '{}', '0/1', -1);
SELECT fence, timeline_id, system_identifier FROM xip83.live_notice_decode('');
\set VERBOSITY default
SELECT xip83.untrack('fence_groups');
DROP TABLE fence_groups;
