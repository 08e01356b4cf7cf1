-- Live fetch, and the fence that lets a hot standby serve it: late rows the
-- consumer has passed, then primary-key range scans up to the horizon (or, on
-- a standby, up to the horizon read on the primary once replay passed its
-- fence); every row carries the late cursor to pass next time.

CREATE FUNCTION xip83.live_group_messages(after_id bigint, row_limit int, late_after bigint,
                                          source regclass DEFAULT 'xip83.group_messages',
                                          up_to bigint DEFAULT NULL, fence pg_lsn DEFAULT NULL)
RETURNS TABLE (id bigint, created_at timestamp, group_id bytea, data bytea,
               is_commit boolean, sender_hmac bytea, should_push boolean,
               late_cursor bigint)
AS 'MODULE_PATHNAME', 'live_group_messages' LANGUAGE C VOLATILE PARALLEL UNSAFE
ROWS 100;
CREATE FUNCTION xip83.live_welcome_messages(after_id bigint, row_limit int, late_after bigint,
                                            source regclass DEFAULT 'xip83.welcome_messages',
                                            up_to bigint DEFAULT NULL, fence pg_lsn DEFAULT NULL)
RETURNS TABLE (id bigint, created_at timestamp, installation_key bytea, data bytea,
               hpke_public_key bytea, wrapper_algorithm smallint, welcome_metadata bytea,
               message_type smallint, late_cursor bigint)
AS 'MODULE_PATHNAME', 'live_welcome_messages' LANGUAGE C VOLATILE PARALLEL UNSAFE
ROWS 100;
CREATE FUNCTION xip83.live_envelopes(node_ids int[], after_sequence_ids bigint[], row_limit int,
                                     late_after bigint,
                                     source regclass DEFAULT 'xip83.envelopes',
                                     blob_source regclass DEFAULT NULL,
                                     up_to_sequence_ids bigint[] DEFAULT NULL,
                                     fence pg_lsn DEFAULT NULL)
RETURNS TABLE (originator_node_id int, originator_sequence_id bigint, gateway_time timestamp,
               topic bytea, originator_envelope bytea, late_cursor bigint)
AS 'MODULE_PATHNAME', 'live_envelopes' LANGUAGE C VOLATILE PARALLEL UNSAFE
ROWS 100;

-- Read replicas: a feed's horizons with the fence a standby must replay to
-- see every row at or below them (src/feed/standby.c).
CREATE FUNCTION xip83.horizon_fence(source regclass DEFAULT 'xip83.group_messages',
    OUT horizon bigint, OUT originator_node_ids int[], OUT originator_horizons bigint[],
    OUT fence pg_lsn, OUT timeline_id int, OUT system_identifier bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'horizon_fence' LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION xip83.live_group_messages(bigint, int, bigint, regclass, bigint, pg_lsn) IS
  'Rows a live consumer has not seen: late group messages at or below after_id written since late cursor late_after, then ids in (after_id, group_horizon()], at most row_limit rows. Reads the horizon first, then with a new snapshot, whatever the isolation level (refused under SERIALIZABLE). Each row carries the late cursor to pass next; the consumer''s cursor becomes the highest id it received. source: xip83.group_messages or a table xip83.track follows as group. Needs USAGE on its schema and SELECT on it. up_to and fence (from xip83.horizon_fence on the primary): on a standby, waits up to xip83.standby_wait_ms for replay to pass fence (X83F0 past it, X83F1 if promoted short of it), then reads up to up_to; without them a standby reads up to its replayed horizon; up_to without fence is refused there (22023). Out of recovery up_to only lowers the horizon, and a fence beyond the server''s WAL is refused (X83F1: a promoted standby whose old primary went on).';
COMMENT ON FUNCTION xip83.live_welcome_messages(bigint, int, bigint, regclass, bigint, pg_lsn) IS
  'The live fetch of welcomes (see live_group_messages). source, up_to and fence as for live_group_messages.';
COMMENT ON FUNCTION xip83.live_envelopes(int[], bigint[], int, bigint, regclass, regclass, bigint[], pg_lsn) IS
  'The live fetch of envelopes: late envelopes of the listed originators, then per listed originator sequence ids in (after, horizon], ordered (originator, sequence); an originator listed twice counts once, with its lowest cursor. source: xip83.envelopes or a table xip83.track follows as envelope, with blob_source the blob table it was tracked with (else NULL). Needs SELECT on both. up_to_sequence_ids (paired with node_ids) and fence: as up_to and fence of live_group_messages.';
COMMENT ON FUNCTION xip83.horizon_fence(regclass) IS
  'The horizons of source (horizon for a group or welcome table, originator arrays for an envelope table) and, read right after them, the fence: the primary''s WAL position before which every commit at or below them lies, with its timeline and system identifier. Pass horizon and fence to a live fetch on a standby. On a standby: its replayed horizons and replay position. Needs SELECT on source.';
