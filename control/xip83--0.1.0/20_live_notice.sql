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
