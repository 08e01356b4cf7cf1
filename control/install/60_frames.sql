-- Ready-to-send XIP-83 frames: wave pages, whole waves, wave handles, the
-- live lane and the control messages as serialized SubscribeResponse bytes a
-- node forwards without decoding; a decoder to read them back in SQL.
-- A frame is at most max_frame_bytes and never splits a message (a larger
-- message gets a frame of its own and a WARNING); messages is how many it
-- carries, last_id (d14n: last_node_id, last_sequence_id) the position of its
-- last one: the cursor of the next page.
--
-- Frames are not a family of their own: they are what the wave functions
-- return when given the frame arguments mutate_id and max_frame_bytes (both
-- required), as overloads of the same names. Every overload's argument count
-- stays apart from the node's calls of the same name, so a call with untyped
-- parameters never becomes ambiguous: hence the d14n frame forms take source
-- without a default. Functions 0.1.0 had are CREATE OR REPLACE, so the update
-- from 0.1.0 runs this part as it is.

-- One page of a wave as frames: the rows the *_wave_scan page returns; with
-- the limit NULL, the whole wave one frame per call (the streams below).
CREATE FUNCTION xip83.group_wave_scan(
    topics bytea[], floors bigint[], scan_cursor bigint, ceiling bigint, page_limit int,
    mutate_id bigint, max_frame_bytes int, source regclass DEFAULT 'xip83.group_messages')
RETURNS TABLE (frame bytea, messages int, last_id bigint)
AS 'MODULE_PATHNAME', 'group_wave_frames' LANGUAGE C STABLE ROWS 1;
COMMENT ON FUNCTION xip83.group_wave_scan(bytea[], bigint[], bigint, bigint, int, bigint, int, regclass) IS
'One page of a group-message wave (the rows of the page form) as SubscribeResponse frames tagged with mutate_id, each at most max_frame_bytes; page_limit NULL: the whole wave, one frame per call. Needs SELECT on source. Reads with the statement''s snapshot (or the one after a horizon read in it).';

CREATE FUNCTION xip83.welcome_wave_scan(
    topics bytea[], floors bigint[], scan_cursor bigint, ceiling bigint, page_limit int,
    mutate_id bigint, max_frame_bytes int, source regclass DEFAULT 'xip83.welcome_messages')
RETURNS TABLE (frame bytea, messages int, last_id bigint)
AS 'MODULE_PATHNAME', 'welcome_wave_frames' LANGUAGE C STABLE ROWS 1;
COMMENT ON FUNCTION xip83.welcome_wave_scan(bytea[], bigint[], bigint, bigint, int, bigint, int, regclass) IS
'One page of a welcome wave as SubscribeResponse frames tagged with mutate_id; V1 or WelcomePointer arm by message_type, wrapper_algorithm as wire = db + 1; page_limit NULL: the whole wave, one frame per call. Needs SELECT on source. Snapshot as the group frames.';

CREATE FUNCTION xip83.envelope_wave_scan(
    cursor_topics bytea[], cursor_node_ids int[], cursor_sequence_ids bigint[],
    ceiling_node_ids int[], ceiling_sequence_ids bigint[], scan_node_id int,
    scan_sequence_id bigint, row_limit int, mutate_id bigint, max_frame_bytes int,
    source regclass, blob_source regclass DEFAULT NULL)
RETURNS TABLE (frame bytea, messages int, last_node_id int, last_sequence_id bigint)
AS 'MODULE_PATHNAME', 'envelope_wave_frames' LANGUAGE C STABLE ROWS 1;
COMMENT ON FUNCTION xip83.envelope_wave_scan(bytea[], int[], bigint[], int[], bigint[], int, bigint, int, bigint, int, regclass, regclass) IS
'One page of a d14n wave as SubscribeResponse Envelopes frames tagged with mutate_id, each envelope embedded as stored; row_limit NULL: the whole wave, one frame per call. source is required here (xip83.envelopes for the extension''s table). Needs SELECT on source and blob_source. Snapshot as the row page.';

-- A whole wave as frames for a cursor:
--   DECLARE w CURSOR FOR SELECT * FROM xip83.group_wave_stream(..., mutate_id, max_frame_bytes);
--   FETCH 10 FROM w;  -- ten frames, read as they are fetched
-- Inlined like the row streams (30_wave_v3.sql): STABLE, not STRICT, no SET
-- clause, every name qualified. An argument holding a volatile function or a
-- sub-select stops the inlining; for such arguments use a wave handle
-- (xip83.wave_open), which streams whatever the arguments.
CREATE FUNCTION xip83.group_wave_stream(
    topics bytea[], floors bigint[], scan_cursor bigint, ceiling bigint, mutate_id bigint,
    max_frame_bytes int, source regclass DEFAULT 'xip83.group_messages')
RETURNS TABLE (frame bytea, messages int, last_id bigint)
LANGUAGE sql STABLE ROWS 1000 AS $$
    SELECT (w.r).* FROM (SELECT xip83.group_wave_scan(topics, floors, scan_cursor, ceiling,
                                NULL::int, mutate_id, max_frame_bytes, source) AS r) AS w
$$;
COMMENT ON FUNCTION xip83.group_wave_stream(bytea[], bigint[], bigint, bigint, bigint, int, regclass) IS
'The whole group wave as frames for a cursor: each FETCH reads only the frames it returns (when inlined: plain arguments; otherwise use wave_open). Needs SELECT on source. One snapshot for the whole wave.';

CREATE FUNCTION xip83.welcome_wave_stream(
    topics bytea[], floors bigint[], scan_cursor bigint, ceiling bigint, mutate_id bigint,
    max_frame_bytes int, source regclass DEFAULT 'xip83.welcome_messages')
RETURNS TABLE (frame bytea, messages int, last_id bigint)
LANGUAGE sql STABLE ROWS 1000 AS $$
    SELECT (w.r).* FROM (SELECT xip83.welcome_wave_scan(topics, floors, scan_cursor, ceiling,
                                NULL::int, mutate_id, max_frame_bytes, source) AS r) AS w
$$;
COMMENT ON FUNCTION xip83.welcome_wave_stream(bytea[], bigint[], bigint, bigint, bigint, int, regclass) IS
'The whole welcome wave as frames for a cursor: each FETCH reads only the frames it returns (when inlined: plain arguments; otherwise use wave_open). Needs SELECT on source. One snapshot for the whole wave.';

CREATE FUNCTION xip83.envelope_wave_stream(
    cursor_topics bytea[], cursor_node_ids int[], cursor_sequence_ids bigint[],
    ceiling_node_ids int[], ceiling_sequence_ids bigint[], scan_node_id int,
    scan_sequence_id bigint, mutate_id bigint, max_frame_bytes int,
    source regclass, blob_source regclass DEFAULT NULL)
RETURNS TABLE (frame bytea, messages int, last_node_id int, last_sequence_id bigint)
LANGUAGE sql STABLE ROWS 1000 AS $$
    SELECT (w.r).* FROM (SELECT xip83.envelope_wave_scan(
        cursor_topics, cursor_node_ids, cursor_sequence_ids, ceiling_node_ids,
        ceiling_sequence_ids, scan_node_id, scan_sequence_id, NULL::int, mutate_id,
        max_frame_bytes, source, blob_source) AS r) AS w
$$;
COMMENT ON FUNCTION xip83.envelope_wave_stream(bytea[], int[], bigint[], int[], bigint[], int, bigint, bigint, int, regclass, regclass) IS
'The whole d14n wave as frames for a cursor: each FETCH reads only the frames it returns (when inlined: plain arguments; otherwise use wave_open). source is required here. Needs SELECT on source and blob_source. One snapshot for the whole wave.';

-- Wave handles: open a wave once (any argument expressions), read its rows
-- or frames in later statements through the *_wave_scan overloads that take
-- the handle, close it; it ends with the transaction. One wave_open for
-- every kind: the kind is an argument, and the v3 and d14n forms differ in
-- their wave arguments (and argument count).
CREATE FUNCTION xip83.wave_open(
    kind text, topics bytea[], floors bigint[], scan_cursor bigint, ceiling bigint,
    source regclass DEFAULT NULL)
RETURNS int AS 'MODULE_PATHNAME', 'wave_open' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION xip83.wave_open(text, bytea[], bigint[], bigint, bigint, regclass) IS
'Opens a v3 wave of kind group or welcome (source NULL: xip83.group_messages or xip83.welcome_messages) and returns its handle for group_wave_scan(handle, ...) / welcome_wave_scan(handle, ...), until wave_close or transaction end. Needs SELECT on source. Every read uses the snapshot taken here.';

CREATE FUNCTION xip83.wave_open(
    kind text, cursor_topics bytea[], cursor_node_ids int[], cursor_sequence_ids bigint[],
    ceiling_node_ids int[], ceiling_sequence_ids bigint[], scan_node_id int,
    scan_sequence_id bigint, source regclass DEFAULT 'xip83.envelopes',
    blob_source regclass DEFAULT NULL)
RETURNS int AS 'MODULE_PATHNAME', 'wave_open_d14n' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION xip83.wave_open(text, bytea[], int[], bigint[], int[], bigint[], int, bigint, regclass, regclass) IS
'Opens a d14n wave (kind envelope) and returns its handle for envelope_wave_scan(handle, ...), until wave_close or transaction end. Needs SELECT on source and blob_source. Every read uses the snapshot taken here.';

CREATE FUNCTION xip83.group_wave_scan(handle int, row_limit int)
RETURNS TABLE (id bigint, created_at timestamp, group_id bytea, data bytea,
               is_commit boolean, sender_hmac bytea, should_push boolean)
AS 'MODULE_PATHNAME', 'group_wave_fetch' LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 500;
COMMENT ON FUNCTION xip83.group_wave_scan(int, int) IS
'The next row_limit rows of an open group wave (xip83.wave_open), in id order; fewer at its end. Privileges were checked at open; reads with the snapshot taken at open.';

CREATE FUNCTION xip83.welcome_wave_scan(handle int, row_limit int)
RETURNS TABLE (id bigint, created_at timestamp, installation_key bytea, data bytea,
               hpke_public_key bytea, wrapper_algorithm smallint, welcome_metadata bytea,
               message_type smallint)
AS 'MODULE_PATHNAME', 'welcome_wave_fetch' LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 500;
COMMENT ON FUNCTION xip83.welcome_wave_scan(int, int) IS
'The next row_limit rows of an open welcome wave (xip83.wave_open), in id order; fewer at its end. Privileges were checked at open; reads with the snapshot taken at open.';

CREATE FUNCTION xip83.envelope_wave_scan(handle int, row_limit int)
RETURNS TABLE (originator_node_id int, originator_sequence_id bigint,
               gateway_time timestamp, topic bytea, originator_envelope bytea)
AS 'MODULE_PATHNAME', 'envelope_wave_fetch' LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 500;
COMMENT ON FUNCTION xip83.envelope_wave_scan(int, int) IS
'The next row_limit rows of an open d14n wave (xip83.wave_open) in (originator, sequence) order; fewer at its end. Privileges were checked at open; reads with the snapshot taken at open.';

CREATE FUNCTION xip83.group_wave_scan(handle int, page_limit int, mutate_id bigint,
                                      max_frame_bytes int)
RETURNS TABLE (frame bytea, messages int, last_id bigint)
AS 'MODULE_PATHNAME', 'group_wave_frames_fetch' LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 1;
COMMENT ON FUNCTION xip83.group_wave_scan(int, int, bigint, int) IS
'The next page_limit rows of an open group wave as frames tagged with mutate_id. Privileges were checked at open; reads with the snapshot taken at open.';

CREATE FUNCTION xip83.welcome_wave_scan(handle int, page_limit int, mutate_id bigint,
                                        max_frame_bytes int)
RETURNS TABLE (frame bytea, messages int, last_id bigint)
AS 'MODULE_PATHNAME', 'welcome_wave_frames_fetch' LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 1;
COMMENT ON FUNCTION xip83.welcome_wave_scan(int, int, bigint, int) IS
'The next page_limit rows of an open welcome wave as frames tagged with mutate_id. Privileges were checked at open; reads with the snapshot taken at open.';

CREATE FUNCTION xip83.envelope_wave_scan(handle int, row_limit int, mutate_id bigint,
                                         max_frame_bytes int)
RETURNS TABLE (frame bytea, messages int, last_node_id int, last_sequence_id bigint)
AS 'MODULE_PATHNAME', 'envelope_wave_frames_fetch' LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 1;
COMMENT ON FUNCTION xip83.envelope_wave_scan(int, int, bigint, int) IS
'The next row_limit rows of an open d14n wave as Envelopes frames tagged with mutate_id. Privileges were checked at open; reads with the snapshot taken at open.';

CREATE OR REPLACE FUNCTION xip83.wave_close(handle int)
RETURNS void AS 'MODULE_PATHNAME', 'wave_close' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION xip83.wave_close(int) IS
'Closes an open wave handle and releases its scans, locks and snapshot (the end of the transaction does it too). No privileges beyond having opened it in this transaction.';

-- The live lane as frames (mutate_id 0): the rows of the live fetch
-- functions, in their order (late rows first). With each frame, what the
-- consumer advances by: last_id, the highest id in the frame (d14n: per
-- originator in the frame, the highest sequence id), and the late cursor to
-- pass next. The kind is an argument, as for wave_open.
CREATE FUNCTION xip83.live_frames(kind text, after_id bigint, row_limit int, late_after bigint,
                                  max_frame_bytes int)
RETURNS TABLE (frame bytea, messages int, last_id bigint, late_cursor bigint)
AS 'MODULE_PATHNAME', 'live_frames' LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 1;
COMMENT ON FUNCTION xip83.live_frames(text, bigint, int, bigint, int) IS
'Kind group or welcome: the rows of live_group_messages or live_welcome_messages(after_id, row_limit, late_after) as frames tagged mutate_id 0, with the highest id and the late cursor of each. Privileges and snapshot as the live fetch (horizon first, then a new snapshot).';

CREATE FUNCTION xip83.live_frames(kind text, node_ids int[], after_sequence_ids bigint[],
                                  row_limit int, late_after bigint, max_frame_bytes int)
RETURNS TABLE (frame bytea, messages int, originator_node_ids int[], sequence_ids bigint[],
               late_cursor bigint)
AS 'MODULE_PATHNAME', 'live_frames_d14n' LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 1;
COMMENT ON FUNCTION xip83.live_frames(text, int[], bigint[], int, bigint, int) IS
'Kind envelope: the rows of live_envelopes(node_ids, after_sequence_ids, row_limit, late_after) as Envelopes frames tagged mutate_id 0, with each frame''s originators, their highest sequence ids in it, and the late cursor. Privileges and snapshot as live_envelopes.';

-- Control frames, one function: the kind picks the message, and each kind
-- takes only the input it uses. v3 and d14n define these messages with the
-- same numbers and types, so both bindings get the same bytes.
CREATE FUNCTION xip83.control_frame(kind text, value bigint DEFAULT NULL,
                                    binding text DEFAULT 'v3', topics bytea[] DEFAULT NULL)
RETURNS bytea AS 'MODULE_PATHNAME', 'control_frame' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION xip83.control_frame(text, bigint, text, bytea[]) IS
'A SubscribeResponse control frame: started (value: keepalive interval in ms), topics_live (topics, in order), catchup_complete (value: the Mutate''s id, >= 0), ping or pong (value: the nonce, its 64 bits the wire''s uint64). Pure: reads no table, needs no privilege.';

-- Inspection.
CREATE FUNCTION xip83.decode_frame(frame bytea, binding text, message text DEFAULT 'response')
RETURNS jsonb AS 'MODULE_PATHNAME', 'decode_frame' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION xip83.decode_frame(bytea, text, text) IS
'A SubscribeResponse (message response: what a node sends) or SubscribeRequest (request: what a client sends) of binding v3 or d14n as jsonb: .proto field names, fields present on the wire, bytes as hex. Malformed bytes: 22P03. Pure: reads no table.';

CREATE OR REPLACE FUNCTION xip83.envelope_target_topic(originator_envelope bytea)
RETURNS bytea AS 'MODULE_PATHNAME', 'envelope_target_topic' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION xip83.envelope_target_topic(bytea) IS
'The target topic of a serialized OriginatorEnvelope, through its nested UnsignedOriginatorEnvelope, PayerEnvelope, ClientEnvelope and AuthenticatedData. Malformed bytes: 22P03. Pure: reads no table.';
