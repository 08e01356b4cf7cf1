-- LiveNotice, the payload of NOTIFY xip83_live, as SQL: a consumer in any
-- language can decode a notice with one query.

CREATE FUNCTION xip83.live_notice_encode(
    epoch bigint, state text, tick bigint, group_horizon bigint, welcome_horizon bigint,
    originator_node_ids int[], originator_horizons bigint[],
    fence pg_lsn DEFAULT NULL, timeline_id int DEFAULT NULL, system_identifier bigint DEFAULT NULL)
RETURNS text
AS 'MODULE_PATHNAME', 'live_notice_encode' LANGUAGE C IMMUTABLE PARALLEL SAFE;

-- The fence a notice carries (0.2.0) comes last: the WAL position a standby
-- must have replayed to see every row at or below the horizons the notice
-- stands for.
CREATE FUNCTION xip83.live_notice_decode(
    payload text,
    OUT epoch bigint, OUT state text, OUT tick bigint, OUT group_horizon bigint,
    OUT welcome_horizon bigint, OUT originator_node_ids int[], OUT originator_horizons bigint[],
    OUT fence pg_lsn, OUT timeline_id int, OUT system_identifier bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'live_notice_decode' LANGUAGE C IMMUTABLE PARALLEL SAFE;

COMMENT ON FUNCTION xip83.live_notice_encode(bigint, text, bigint, bigint, bigint, int[], bigint[], pg_lsn, int, bigint) IS
'A LiveNotice as the base64 text NOTIFY xip83_live carries. epoch must be at least 1 and state "live" or "stopping", as the notifier sends them (22023 otherwise); fence, timeline_id and system_identifier are optional; reads no table or snapshot. Executable by PUBLIC.';
COMMENT ON FUNCTION xip83.live_notice_decode(text) IS
'The fields of a NOTIFY xip83_live payload, with its fence: WAL position, timeline and system identifier of the primary (NULLs when the notice has none; a forged fence can only make a consumer wait). Raises 22P02 on anything the notifier could not have sent (not base64, not a LiveNotice, no epoch, no live/stopping state, an empty payload) and 22003 on out-of-range numbers; reads no table or snapshot. A notice is only a wake-up: read rows through the live fetch functions. Executable by PUBLIC.';
