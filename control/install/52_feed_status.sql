-- The feed of xip83's own tables at a glance: horizons (NULL where the caller
-- may not read the table), the notifier, its last notice, late writes, the
-- NOTIFY queue, and who holds each horizon (NULL like the horizon). The
-- upgrade from 0.1.0 makes the function and its view again from this part.
CREATE FUNCTION xip83.feed_status(
    OUT group_horizon bigint, OUT welcome_horizon bigint,
    OUT originator_node_ids int[], OUT originator_horizons bigint[],
    OUT notifier_pid int, OUT epoch bigint, OUT state text, OUT ticks bigint,
    OUT last_notice_at timestamptz, OUT notifier_starting boolean,
    OUT late_writes bigint, OUT late_cursor bigint, OUT late_ring_size int,
    OUT group_low_water bigint, OUT group_recent bigint,
    OUT welcome_low_water bigint, OUT welcome_recent bigint,
    OUT envelope_low_water bigint, OUT envelope_recent bigint,
    OUT recent_entries int,
    OUT group_in_flight bigint, OUT group_in_flight_pid int,
    OUT welcome_in_flight bigint, OUT welcome_in_flight_pid int,
    OUT originator_in_flight bigint[], OUT originator_in_flight_pids int[],
    OUT summary_states text[], OUT summary_rows bigint[], OUT summary_pass_ms bigint[],
    OUT summary_memory_kb int)
RETURNS record
AS 'MODULE_PATHNAME', 'feed_status' LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE VIEW xip83.feed_status AS
    SELECT s.*, pg_catalog.pg_notification_queue_usage() AS notification_queue_usage
      FROM xip83.feed_status() s;

COMMENT ON FUNCTION xip83.feed_status() IS
  'One row: horizons (NULL unless the caller may SELECT the table), the notifier (pid, epoch, state, ticks, last notice), late writes committed, the late cursor and the late ring''s size; per kind the recent-writes table''s low-water position (a wave skips a topic whose floor is at or above it and that has no recent write above its floor) and entries in use (NULL like the horizons), and its capacity per kind (xip83.recent_entries); per horizon the lowest position an open transaction may still write and the pid of its backend, which holds the horizon below that position until its transaction ends (NULL when none, or like the horizons); per kind (group, welcome, envelope) the topic summary''s state (waiting: its pass has not started; building; ready: waves skip topics by it; off), rows its pass read and how long the last pass took in ms, and its memory per kind (xip83.summary_memory).';
GRANT SELECT ON xip83.feed_status TO PUBLIC;
COMMENT ON VIEW xip83.feed_status IS
  'xip83.feed_status() with the NOTIFY queue usage.';
