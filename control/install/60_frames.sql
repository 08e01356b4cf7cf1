-- Ready-to-send XIP-83 frames: wave pages, whole waves, wave handles, the
-- live lane and the control messages as serialized SubscribeResponse bytes a
-- node forwards without decoding; decoders to read them back in SQL.
-- A frame is at most max_frame_bytes and never splits a message (a larger
-- message gets a frame of its own and a WARNING); messages is how many it
-- carries, last_id (d14n: last_node_id, last_sequence_id) the position of its
-- last one: the cursor of the next page.

-- One page of a wave as frames: the rows the *_wave_scan page returns.
CREATE FUNCTION xip83.group_wave_frames(
    topics bytea[], floors bigint[], scan_cursor bigint, ceiling bigint, page_limit int,
    mutate_id bigint, max_frame_bytes int DEFAULT 2097152,
    source regclass DEFAULT 'xip83.group_messages')
RETURNS TABLE (frame bytea, messages int, last_id bigint)
AS 'MODULE_PATHNAME', 'group_wave_frames' LANGUAGE C STABLE ROWS 1;
COMMENT ON FUNCTION xip83.group_wave_frames(bytea[], bigint[], bigint, bigint, int, bigint, int, regclass) IS
'One page of a group-message wave (the rows of group_wave_scan) as SubscribeResponse frames tagged with mutate_id. Needs SELECT on source. Reads with the statement''s snapshot (or the one after a horizon read in it).';

CREATE FUNCTION xip83.welcome_wave_frames(
    topics bytea[], floors bigint[], scan_cursor bigint, ceiling bigint, page_limit int,
    mutate_id bigint, max_frame_bytes int DEFAULT 2097152,
    source regclass DEFAULT 'xip83.welcome_messages')
RETURNS TABLE (frame bytea, messages int, last_id bigint)
AS 'MODULE_PATHNAME', 'welcome_wave_frames' LANGUAGE C STABLE ROWS 1;
COMMENT ON FUNCTION xip83.welcome_wave_frames(bytea[], bigint[], bigint, bigint, int, bigint, int, regclass) IS
'One page of a welcome wave (the rows of welcome_wave_scan) as SubscribeResponse frames tagged with mutate_id; V1 or WelcomePointer arm by message_type, wrapper_algorithm as wire = db + 1. Needs SELECT on source. Snapshot as group_wave_frames.';

CREATE FUNCTION xip83.envelope_wave_frames(
    cursor_topics bytea[], cursor_node_ids int[], cursor_sequence_ids bigint[],
    ceiling_node_ids int[], ceiling_sequence_ids bigint[], scan_node_id int,
    scan_sequence_id bigint, row_limit int, mutate_id bigint,
    max_frame_bytes int DEFAULT 2097152, source regclass DEFAULT 'xip83.envelopes',
    blob_source regclass DEFAULT NULL)
RETURNS TABLE (frame bytea, messages int, last_node_id int, last_sequence_id bigint)
AS 'MODULE_PATHNAME', 'envelope_wave_frames' LANGUAGE C STABLE ROWS 1;
COMMENT ON FUNCTION xip83.envelope_wave_frames(bytea[], int[], bigint[], int[], bigint[], int, bigint, int, bigint, int, regclass, regclass) IS
'One page of a d14n wave (the rows of envelope_wave_scan) as SubscribeResponse Envelopes frames tagged with mutate_id, each envelope embedded as stored. Needs SELECT on source and blob_source. Snapshot as envelope_wave_scan.';

-- A whole wave as frames, one frame per call, for the stream wrappers below.
CREATE FUNCTION xip83.group_wave_frames_rows(
    topics bytea[], floors bigint[], scan_cursor bigint, ceiling bigint, mutate_id bigint,
    max_frame_bytes int, source regclass,
    OUT frame bytea, OUT messages int, OUT last_id bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'group_wave_frames_rows' LANGUAGE C STABLE ROWS 1000;
COMMENT ON FUNCTION xip83.group_wave_frames_rows(bytea[], bigint[], bigint, bigint, bigint, int, regclass) IS
'The whole group wave past scan_cursor as frames, one per call (value per call); behind group_wave_frames_stream. Needs SELECT on source. One snapshot taken at the first call.';

CREATE FUNCTION xip83.welcome_wave_frames_rows(
    topics bytea[], floors bigint[], scan_cursor bigint, ceiling bigint, mutate_id bigint,
    max_frame_bytes int, source regclass,
    OUT frame bytea, OUT messages int, OUT last_id bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'welcome_wave_frames_rows' LANGUAGE C STABLE ROWS 1000;
COMMENT ON FUNCTION xip83.welcome_wave_frames_rows(bytea[], bigint[], bigint, bigint, bigint, int, regclass) IS
'The whole welcome wave past scan_cursor as frames, one per call; behind welcome_wave_frames_stream. Needs SELECT on source. One snapshot taken at the first call.';

CREATE FUNCTION xip83.envelope_wave_frames_rows(
    cursor_topics bytea[], cursor_node_ids int[], cursor_sequence_ids bigint[],
    ceiling_node_ids int[], ceiling_sequence_ids bigint[], scan_node_id int,
    scan_sequence_id bigint, mutate_id bigint, max_frame_bytes int, source regclass,
    blob_source regclass,
    OUT frame bytea, OUT messages int, OUT last_node_id int, OUT last_sequence_id bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'envelope_wave_frames_rows' LANGUAGE C STABLE ROWS 1000;
COMMENT ON FUNCTION xip83.envelope_wave_frames_rows(bytea[], int[], bigint[], int[], bigint[], int, bigint, bigint, int, regclass, regclass) IS
'The whole d14n wave past the scan position as frames, one per call; behind envelope_wave_frames_stream. Needs SELECT on source and blob_source. One snapshot taken at the first call.';

-- A whole wave as frames for a cursor:
--   DECLARE w CURSOR FOR SELECT * FROM xip83.group_wave_frames_stream(...);
--   FETCH 10 FROM w;  -- ten frames, read as they are fetched
-- Like the row streams, these SQL wrappers are inlined by the planner, which
-- puts the C function in a target list where it runs one frame per FETCHed
-- row. They carry no SET clause and are STABLE, not STRICT: any of those
-- would stop the inlining (every reference in them is schema-qualified). An
-- argument holding a volatile function or a sub-select stops it too; for such
-- arguments use a wave handle (xip83.*_wave_open), which streams whatever the
-- arguments.
CREATE FUNCTION xip83.group_wave_frames_stream(
    topics bytea[], floors bigint[], scan_cursor bigint, ceiling bigint, mutate_id bigint,
    max_frame_bytes int DEFAULT 2097152, source regclass DEFAULT 'xip83.group_messages')
RETURNS TABLE (frame bytea, messages int, last_id bigint)
LANGUAGE sql STABLE ROWS 1000 AS $$
    SELECT (w.r).* FROM (SELECT xip83.group_wave_frames_rows(topics, floors, scan_cursor,
                                ceiling, mutate_id, max_frame_bytes, source) AS r) AS w
$$;
COMMENT ON FUNCTION xip83.group_wave_frames_stream(bytea[], bigint[], bigint, bigint, bigint, int, regclass) IS
'The whole group wave as frames for a cursor: each FETCH reads only the frames it returns (when inlined: plain arguments; otherwise use group_wave_open). Needs SELECT on source. One snapshot for the whole wave.';

CREATE FUNCTION xip83.welcome_wave_frames_stream(
    topics bytea[], floors bigint[], scan_cursor bigint, ceiling bigint, mutate_id bigint,
    max_frame_bytes int DEFAULT 2097152, source regclass DEFAULT 'xip83.welcome_messages')
RETURNS TABLE (frame bytea, messages int, last_id bigint)
LANGUAGE sql STABLE ROWS 1000 AS $$
    SELECT (w.r).* FROM (SELECT xip83.welcome_wave_frames_rows(topics, floors, scan_cursor,
                                ceiling, mutate_id, max_frame_bytes, source) AS r) AS w
$$;
COMMENT ON FUNCTION xip83.welcome_wave_frames_stream(bytea[], bigint[], bigint, bigint, bigint, int, regclass) IS
'The whole welcome wave as frames for a cursor: each FETCH reads only the frames it returns (when inlined: plain arguments; otherwise use welcome_wave_open). Needs SELECT on source. One snapshot for the whole wave.';

CREATE FUNCTION xip83.envelope_wave_frames_stream(
    cursor_topics bytea[], cursor_node_ids int[], cursor_sequence_ids bigint[],
    ceiling_node_ids int[], ceiling_sequence_ids bigint[], scan_node_id int,
    scan_sequence_id bigint, mutate_id bigint, max_frame_bytes int DEFAULT 2097152,
    source regclass DEFAULT 'xip83.envelopes', blob_source regclass DEFAULT NULL)
RETURNS TABLE (frame bytea, messages int, last_node_id int, last_sequence_id bigint)
LANGUAGE sql STABLE ROWS 1000 AS $$
    SELECT (w.r).* FROM (SELECT xip83.envelope_wave_frames_rows(
        cursor_topics, cursor_node_ids, cursor_sequence_ids, ceiling_node_ids,
        ceiling_sequence_ids, scan_node_id, scan_sequence_id, mutate_id, max_frame_bytes,
        source, blob_source) AS r) AS w
$$;
COMMENT ON FUNCTION xip83.envelope_wave_frames_stream(bytea[], int[], bigint[], int[], bigint[], int, bigint, bigint, int, regclass, regclass) IS
'The whole d14n wave as frames for a cursor: each FETCH reads only the frames it returns (when inlined: plain arguments; otherwise use envelope_wave_open). Needs SELECT on source and blob_source. One snapshot for the whole wave.';

-- Wave handles: open a wave once (any argument expressions), fetch its rows
-- or frames in later statements, close it; it ends with the transaction.
CREATE FUNCTION xip83.group_wave_open(
    topics bytea[], floors bigint[], scan_cursor bigint, ceiling bigint,
    source regclass DEFAULT 'xip83.group_messages')
RETURNS int AS 'MODULE_PATHNAME', 'group_wave_open' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION xip83.group_wave_open(bytea[], bigint[], bigint, bigint, regclass) IS
'Opens a group wave and returns its handle for group_wave_fetch / group_wave_frames_fetch, until wave_close or transaction end. Needs SELECT on source. Every fetch reads with the snapshot taken here.';

CREATE FUNCTION xip83.welcome_wave_open(
    topics bytea[], floors bigint[], scan_cursor bigint, ceiling bigint,
    source regclass DEFAULT 'xip83.welcome_messages')
RETURNS int AS 'MODULE_PATHNAME', 'welcome_wave_open' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION xip83.welcome_wave_open(bytea[], bigint[], bigint, bigint, regclass) IS
'Opens a welcome wave and returns its handle for welcome_wave_fetch / welcome_wave_frames_fetch, until wave_close or transaction end. Needs SELECT on source. Every fetch reads with the snapshot taken here.';

CREATE FUNCTION xip83.envelope_wave_open(
    cursor_topics bytea[], cursor_node_ids int[], cursor_sequence_ids bigint[],
    ceiling_node_ids int[], ceiling_sequence_ids bigint[], scan_node_id int,
    scan_sequence_id bigint, source regclass DEFAULT 'xip83.envelopes',
    blob_source regclass DEFAULT NULL)
RETURNS int AS 'MODULE_PATHNAME', 'envelope_wave_open' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION xip83.envelope_wave_open(bytea[], int[], bigint[], int[], bigint[], int, bigint, regclass, regclass) IS
'Opens a d14n wave and returns its handle for envelope_wave_fetch / envelope_wave_frames_fetch, until wave_close or transaction end. Needs SELECT on source and blob_source. Every fetch reads with the snapshot taken here.';

CREATE FUNCTION xip83.group_wave_fetch(handle int, row_limit int)
RETURNS TABLE (id bigint, created_at timestamp, group_id bytea, data bytea,
               is_commit boolean, sender_hmac bytea, should_push boolean)
AS 'MODULE_PATHNAME', 'group_wave_fetch' LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 500;
COMMENT ON FUNCTION xip83.group_wave_fetch(int, int) IS
'The next row_limit rows of an open group wave, in id order; fewer at its end. Privileges were checked at open; reads with the snapshot taken at open.';

CREATE FUNCTION xip83.welcome_wave_fetch(handle int, row_limit int)
RETURNS TABLE (id bigint, created_at timestamp, installation_key bytea, data bytea,
               hpke_public_key bytea, wrapper_algorithm smallint, welcome_metadata bytea,
               message_type smallint)
AS 'MODULE_PATHNAME', 'welcome_wave_fetch' LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 500;
COMMENT ON FUNCTION xip83.welcome_wave_fetch(int, int) IS
'The next row_limit rows of an open welcome wave, in id order; fewer at its end. Privileges were checked at open; reads with the snapshot taken at open.';

CREATE FUNCTION xip83.envelope_wave_fetch(handle int, row_limit int)
RETURNS TABLE (originator_node_id int, originator_sequence_id bigint,
               gateway_time timestamp, topic bytea, originator_envelope bytea)
AS 'MODULE_PATHNAME', 'envelope_wave_fetch' LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 500;
COMMENT ON FUNCTION xip83.envelope_wave_fetch(int, int) IS
'The next row_limit rows of an open d14n wave in (originator, sequence) order; fewer at its end. Privileges were checked at open; reads with the snapshot taken at open.';

CREATE FUNCTION xip83.group_wave_frames_fetch(handle int, page_limit int, mutate_id bigint,
                                              max_frame_bytes int DEFAULT 2097152)
RETURNS TABLE (frame bytea, messages int, last_id bigint)
AS 'MODULE_PATHNAME', 'group_wave_frames_fetch' LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 1;
COMMENT ON FUNCTION xip83.group_wave_frames_fetch(int, int, bigint, int) IS
'The next page_limit rows of an open group wave as frames tagged with mutate_id. Privileges were checked at open; reads with the snapshot taken at open.';

CREATE FUNCTION xip83.welcome_wave_frames_fetch(handle int, page_limit int, mutate_id bigint,
                                                max_frame_bytes int DEFAULT 2097152)
RETURNS TABLE (frame bytea, messages int, last_id bigint)
AS 'MODULE_PATHNAME', 'welcome_wave_frames_fetch' LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 1;
COMMENT ON FUNCTION xip83.welcome_wave_frames_fetch(int, int, bigint, int) IS
'The next page_limit rows of an open welcome wave as frames tagged with mutate_id. Privileges were checked at open; reads with the snapshot taken at open.';

CREATE FUNCTION xip83.envelope_wave_frames_fetch(handle int, row_limit int, mutate_id bigint,
                                                 max_frame_bytes int DEFAULT 2097152)
RETURNS TABLE (frame bytea, messages int, last_node_id int, last_sequence_id bigint)
AS 'MODULE_PATHNAME', 'envelope_wave_frames_fetch' LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 1;
COMMENT ON FUNCTION xip83.envelope_wave_frames_fetch(int, int, bigint, int) IS
'The next row_limit rows of an open d14n wave as Envelopes frames tagged with mutate_id. Privileges were checked at open; reads with the snapshot taken at open.';

CREATE FUNCTION xip83.wave_close(handle int)
RETURNS void AS 'MODULE_PATHNAME', 'wave_close' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION xip83.wave_close(int) IS
'Closes an open wave handle and releases its scans, locks and snapshot (the end of the transaction does it too). No privileges beyond having opened it in this transaction.';

-- The live lane as frames (mutate_id 0): the rows of the live fetch
-- functions, in their order (late rows first). With each frame, what the
-- consumer advances by: last_id, the highest id in the frame (d14n: per
-- originator in the frame, the highest sequence id), and the late cursor to
-- pass next.
CREATE FUNCTION xip83.live_group_frames(after_id bigint, row_limit int, late_after bigint,
                                        max_frame_bytes int DEFAULT 2097152)
RETURNS TABLE (frame bytea, messages int, last_id bigint, late_cursor bigint)
AS 'MODULE_PATHNAME', 'live_group_frames' LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 1;
COMMENT ON FUNCTION xip83.live_group_frames(bigint, int, bigint, int) IS
'The rows of live_group_messages(after_id, row_limit, late_after) as frames tagged mutate_id 0, with the highest id and the late cursor of each. Privileges and snapshot as live_group_messages (horizon first, then a new snapshot).';

CREATE FUNCTION xip83.live_welcome_frames(after_id bigint, row_limit int, late_after bigint,
                                          max_frame_bytes int DEFAULT 2097152)
RETURNS TABLE (frame bytea, messages int, last_id bigint, late_cursor bigint)
AS 'MODULE_PATHNAME', 'live_welcome_frames' LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 1;
COMMENT ON FUNCTION xip83.live_welcome_frames(bigint, int, bigint, int) IS
'The rows of live_welcome_messages(after_id, row_limit, late_after) as frames tagged mutate_id 0, with the highest id and the late cursor of each. Privileges and snapshot as live_welcome_messages.';

CREATE FUNCTION xip83.live_envelope_frames(node_ids int[], after_sequence_ids bigint[],
                                           row_limit int, late_after bigint,
                                           max_frame_bytes int DEFAULT 2097152)
RETURNS TABLE (frame bytea, messages int, originator_node_ids int[], sequence_ids bigint[],
               late_cursor bigint)
AS 'MODULE_PATHNAME', 'live_envelope_frames' LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 1;
COMMENT ON FUNCTION xip83.live_envelope_frames(int[], bigint[], int, bigint, int) IS
'The rows of live_envelopes(node_ids, after_sequence_ids, row_limit, late_after) as Envelopes frames tagged mutate_id 0, with each frame''s originators, their highest sequence ids in it, and the late cursor. Privileges and snapshot as live_envelopes.';

-- Control frames. v3 and d14n define these messages with the same numbers
-- and types, so both bindings get the same bytes.
CREATE FUNCTION xip83.frame_started(keepalive_interval_ms int, binding text DEFAULT 'v3')
RETURNS bytea AS 'MODULE_PATHNAME', 'frame_started' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION xip83.frame_started(int, text) IS
'A SubscribeResponse Started frame advertising keepalive_interval_ms. Pure: reads no table, needs no privilege.';

CREATE FUNCTION xip83.frame_topics_live(topics bytea[], binding text DEFAULT 'v3')
RETURNS bytea AS 'MODULE_PATHNAME', 'frame_topics_live' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION xip83.frame_topics_live(bytea[], text) IS
'A SubscribeResponse TopicsLive frame listing topics in order. Pure: reads no table, needs no privilege.';

CREATE FUNCTION xip83.frame_catchup_complete(mutate_id bigint, binding text DEFAULT 'v3')
RETURNS bytea AS 'MODULE_PATHNAME', 'frame_catchup_complete' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION xip83.frame_catchup_complete(bigint, text) IS
'A SubscribeResponse CatchupComplete frame acking the Mutate mutate_id (>= 0). Pure: reads no table, needs no privilege.';

CREATE FUNCTION xip83.frame_ping(nonce bigint, binding text DEFAULT 'v3')
RETURNS bytea AS 'MODULE_PATHNAME', 'frame_ping' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION xip83.frame_ping(bigint, text) IS
'A SubscribeResponse Ping frame; the nonce''s 64 bits are the wire''s uint64. Pure: reads no table, needs no privilege.';

CREATE FUNCTION xip83.frame_pong(nonce bigint, binding text DEFAULT 'v3')
RETURNS bytea AS 'MODULE_PATHNAME', 'frame_pong' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION xip83.frame_pong(bigint, text) IS
'A SubscribeResponse Pong frame answering a client Ping with its nonce. Pure: reads no table, needs no privilege.';

-- Inspection.
CREATE FUNCTION xip83.decode_subscribe_request(frame bytea, binding text)
RETURNS jsonb AS 'MODULE_PATHNAME', 'decode_subscribe_request' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION xip83.decode_subscribe_request(bytea, text) IS
'A client SubscribeRequest (binding v3 or d14n) as jsonb: .proto field names, fields present on the wire, bytes as hex. Malformed bytes: 22P03. Pure: reads no table.';

CREATE FUNCTION xip83.decode_subscribe_response(frame bytea, binding text)
RETURNS jsonb AS 'MODULE_PATHNAME', 'decode_subscribe_response' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION xip83.decode_subscribe_response(bytea, text) IS
'A node SubscribeResponse frame (binding v3 or d14n) as jsonb: .proto field names, fields present on the wire, bytes as hex. Malformed bytes: 22P03. Pure: reads no table.';

CREATE FUNCTION xip83.envelope_target_topic(originator_envelope bytea)
RETURNS bytea AS 'MODULE_PATHNAME', 'envelope_target_topic' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION xip83.envelope_target_topic(bytea) IS
'The target topic of a serialized OriginatorEnvelope, through its nested UnsignedOriginatorEnvelope, PayerEnvelope, ClientEnvelope and AuthenticatedData. Malformed bytes: 22P03. Pure: reads no table.';
