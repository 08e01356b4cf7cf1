-- 0.1.0's function names, kept for one release (docs/upgrading.md has the
-- table): each is a wrapper of the same signature, volatility and
-- privileges that calls its 0.2.0 replacement, after a WARNING the first
-- time a session calls it. The session remembers the warning in a
-- placeholder setting, xip83_deprecated.<name> (a prefix of its own: xip83.*
-- is reserved for the extension's settings); a transaction rolled back
-- forgets it, and the next call warns again. They run as the caller, with
-- search_path pinned, as the functions they call do. A fresh install has
-- them too, so that a node sees the same functions whichever way it came to
-- 0.2.0.

CREATE FUNCTION xip83.decode_subscribe_request(frame bytea, binding text)
RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF pg_catalog.current_setting('xip83_deprecated.decode_subscribe_request', true) IS NULL THEN
        PERFORM pg_catalog.set_config('xip83_deprecated.decode_subscribe_request', 'warned', false);
        RAISE WARNING 'xip83.decode_subscribe_request is deprecated and will be removed in the next release'
            USING HINT = 'Call xip83.decode_frame(frame, binding, ''request'') instead.';
    END IF;
    RETURN xip83.decode_frame(frame, binding, 'request');
END $$;
COMMENT ON FUNCTION xip83.decode_subscribe_request(frame bytea, binding text) IS
'Deprecated: 0.1.0''s name, kept for one release; warns once per session. Calls xip83.decode_frame(frame, binding, ''request'').';

CREATE FUNCTION xip83.decode_subscribe_response(frame bytea, binding text)
RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF pg_catalog.current_setting('xip83_deprecated.decode_subscribe_response', true) IS NULL THEN
        PERFORM pg_catalog.set_config('xip83_deprecated.decode_subscribe_response', 'warned', false);
        RAISE WARNING 'xip83.decode_subscribe_response is deprecated and will be removed in the next release'
            USING HINT = 'Call xip83.decode_frame(frame, binding, ''response'') instead.';
    END IF;
    RETURN xip83.decode_frame(frame, binding, 'response');
END $$;
COMMENT ON FUNCTION xip83.decode_subscribe_response(frame bytea, binding text) IS
'Deprecated: 0.1.0''s name, kept for one release; warns once per session. Calls xip83.decode_frame(frame, binding, ''response'').';

CREATE FUNCTION xip83.envelope_wave_fetch(handle integer, row_limit integer)
RETURNS TABLE(originator_node_id integer, originator_sequence_id bigint, gateway_time timestamp without time zone, topic bytea, originator_envelope bytea)
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE ROWS 500
SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF pg_catalog.current_setting('xip83_deprecated.envelope_wave_fetch', true) IS NULL THEN
        PERFORM pg_catalog.set_config('xip83_deprecated.envelope_wave_fetch', 'warned', false);
        RAISE WARNING 'xip83.envelope_wave_fetch is deprecated and will be removed in the next release'
            USING HINT = 'Call xip83.envelope_wave_scan(handle, row_limit) instead.';
    END IF;
    RETURN QUERY SELECT * FROM xip83.envelope_wave_scan(handle, row_limit);
END $$;
COMMENT ON FUNCTION xip83.envelope_wave_fetch(handle integer, row_limit integer) IS
'Deprecated: 0.1.0''s name, kept for one release; warns once per session. Calls xip83.envelope_wave_scan(handle, row_limit).';

CREATE FUNCTION xip83.envelope_wave_frames(cursor_topics bytea[], cursor_node_ids integer[], cursor_sequence_ids bigint[], ceiling_node_ids integer[], ceiling_sequence_ids bigint[], scan_node_id integer, scan_sequence_id bigint, row_limit integer, mutate_id bigint, max_frame_bytes integer DEFAULT 2097152, source regclass DEFAULT 'xip83.envelopes'::regclass, blob_source regclass DEFAULT NULL::regclass)
RETURNS TABLE(frame bytea, messages integer, last_node_id integer, last_sequence_id bigint)
LANGUAGE plpgsql STABLE PARALLEL UNSAFE ROWS 1
SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF pg_catalog.current_setting('xip83_deprecated.envelope_wave_frames', true) IS NULL THEN
        PERFORM pg_catalog.set_config('xip83_deprecated.envelope_wave_frames', 'warned', false);
        RAISE WARNING 'xip83.envelope_wave_frames is deprecated and will be removed in the next release'
            USING HINT = 'Call xip83.envelope_wave_scan(cursor_topics, cursor_node_ids, cursor_sequence_ids, ceiling_node_ids, ceiling_sequence_ids, scan_node_id, scan_sequence_id, row_limit, mutate_id, max_frame_bytes, source, blob_source) instead.';
    END IF;
    RETURN QUERY SELECT * FROM xip83.envelope_wave_scan(cursor_topics, cursor_node_ids, cursor_sequence_ids, ceiling_node_ids, ceiling_sequence_ids, scan_node_id, scan_sequence_id, row_limit, mutate_id, max_frame_bytes, source, blob_source);
END $$;
COMMENT ON FUNCTION xip83.envelope_wave_frames(cursor_topics bytea[], cursor_node_ids integer[], cursor_sequence_ids bigint[], ceiling_node_ids integer[], ceiling_sequence_ids bigint[], scan_node_id integer, scan_sequence_id bigint, row_limit integer, mutate_id bigint, max_frame_bytes integer, source regclass, blob_source regclass) IS
'Deprecated: 0.1.0''s name, kept for one release; warns once per session. Calls xip83.envelope_wave_scan(cursor_topics, cursor_node_ids, cursor_sequence_ids, ceiling_node_ids, ceiling_sequence_ids, scan_node_id, scan_sequence_id, row_limit, mutate_id, max_frame_bytes, source, blob_source).';

CREATE FUNCTION xip83.envelope_wave_frames_fetch(handle integer, row_limit integer, mutate_id bigint, max_frame_bytes integer DEFAULT 2097152)
RETURNS TABLE(frame bytea, messages integer, last_node_id integer, last_sequence_id bigint)
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE ROWS 1
SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF pg_catalog.current_setting('xip83_deprecated.envelope_wave_frames_fetch', true) IS NULL THEN
        PERFORM pg_catalog.set_config('xip83_deprecated.envelope_wave_frames_fetch', 'warned', false);
        RAISE WARNING 'xip83.envelope_wave_frames_fetch is deprecated and will be removed in the next release'
            USING HINT = 'Call xip83.envelope_wave_scan(handle, row_limit, mutate_id, max_frame_bytes) instead.';
    END IF;
    RETURN QUERY SELECT * FROM xip83.envelope_wave_scan(handle, row_limit, mutate_id, max_frame_bytes);
END $$;
COMMENT ON FUNCTION xip83.envelope_wave_frames_fetch(handle integer, row_limit integer, mutate_id bigint, max_frame_bytes integer) IS
'Deprecated: 0.1.0''s name, kept for one release; warns once per session. Calls xip83.envelope_wave_scan(handle, row_limit, mutate_id, max_frame_bytes).';

CREATE FUNCTION xip83.envelope_wave_frames_rows(cursor_topics bytea[], cursor_node_ids integer[], cursor_sequence_ids bigint[], ceiling_node_ids integer[], ceiling_sequence_ids bigint[], scan_node_id integer, scan_sequence_id bigint, mutate_id bigint, max_frame_bytes integer, source regclass, blob_source regclass, OUT frame bytea, OUT messages integer, OUT last_node_id integer, OUT last_sequence_id bigint)
RETURNS SETOF record
LANGUAGE plpgsql STABLE PARALLEL UNSAFE ROWS 1000
SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF pg_catalog.current_setting('xip83_deprecated.envelope_wave_frames_rows', true) IS NULL THEN
        PERFORM pg_catalog.set_config('xip83_deprecated.envelope_wave_frames_rows', 'warned', false);
        RAISE WARNING 'xip83.envelope_wave_frames_rows is deprecated and will be removed in the next release'
            USING HINT = 'Call xip83.envelope_wave_stream(cursor_topics, cursor_node_ids, cursor_sequence_ids, ceiling_node_ids, ceiling_sequence_ids, scan_node_id, scan_sequence_id, mutate_id, max_frame_bytes, source, blob_source) instead.';
    END IF;
    RETURN QUERY SELECT * FROM xip83.envelope_wave_stream(cursor_topics, cursor_node_ids, cursor_sequence_ids, ceiling_node_ids, ceiling_sequence_ids, scan_node_id, scan_sequence_id, mutate_id, max_frame_bytes, source, blob_source);
END $$;
COMMENT ON FUNCTION xip83.envelope_wave_frames_rows(cursor_topics bytea[], cursor_node_ids integer[], cursor_sequence_ids bigint[], ceiling_node_ids integer[], ceiling_sequence_ids bigint[], scan_node_id integer, scan_sequence_id bigint, mutate_id bigint, max_frame_bytes integer, source regclass, blob_source regclass, OUT frame bytea, OUT messages integer, OUT last_node_id integer, OUT last_sequence_id bigint) IS
'Deprecated: 0.1.0''s name, kept for one release; warns once per session. Calls xip83.envelope_wave_stream(cursor_topics, cursor_node_ids, cursor_sequence_ids, ceiling_node_ids, ceiling_sequence_ids, scan_node_id, scan_sequence_id, mutate_id, max_frame_bytes, source, blob_source).';

CREATE FUNCTION xip83.envelope_wave_frames_stream(cursor_topics bytea[], cursor_node_ids integer[], cursor_sequence_ids bigint[], ceiling_node_ids integer[], ceiling_sequence_ids bigint[], scan_node_id integer, scan_sequence_id bigint, mutate_id bigint, max_frame_bytes integer DEFAULT 2097152, source regclass DEFAULT 'xip83.envelopes'::regclass, blob_source regclass DEFAULT NULL::regclass)
RETURNS TABLE(frame bytea, messages integer, last_node_id integer, last_sequence_id bigint)
LANGUAGE plpgsql STABLE PARALLEL UNSAFE ROWS 1000
SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF pg_catalog.current_setting('xip83_deprecated.envelope_wave_frames_stream', true) IS NULL THEN
        PERFORM pg_catalog.set_config('xip83_deprecated.envelope_wave_frames_stream', 'warned', false);
        RAISE WARNING 'xip83.envelope_wave_frames_stream is deprecated and will be removed in the next release'
            USING HINT = 'Call xip83.envelope_wave_stream(cursor_topics, cursor_node_ids, cursor_sequence_ids, ceiling_node_ids, ceiling_sequence_ids, scan_node_id, scan_sequence_id, mutate_id, max_frame_bytes, source, blob_source) instead.';
    END IF;
    RETURN QUERY SELECT * FROM xip83.envelope_wave_stream(cursor_topics, cursor_node_ids, cursor_sequence_ids, ceiling_node_ids, ceiling_sequence_ids, scan_node_id, scan_sequence_id, mutate_id, max_frame_bytes, source, blob_source);
END $$;
COMMENT ON FUNCTION xip83.envelope_wave_frames_stream(cursor_topics bytea[], cursor_node_ids integer[], cursor_sequence_ids bigint[], ceiling_node_ids integer[], ceiling_sequence_ids bigint[], scan_node_id integer, scan_sequence_id bigint, mutate_id bigint, max_frame_bytes integer, source regclass, blob_source regclass) IS
'Deprecated: 0.1.0''s name, kept for one release; warns once per session. Calls xip83.envelope_wave_stream(cursor_topics, cursor_node_ids, cursor_sequence_ids, ceiling_node_ids, ceiling_sequence_ids, scan_node_id, scan_sequence_id, mutate_id, max_frame_bytes, source, blob_source).';

CREATE FUNCTION xip83.envelope_wave_open(cursor_topics bytea[], cursor_node_ids integer[], cursor_sequence_ids bigint[], ceiling_node_ids integer[], ceiling_sequence_ids bigint[], scan_node_id integer, scan_sequence_id bigint, source regclass DEFAULT 'xip83.envelopes'::regclass, blob_source regclass DEFAULT NULL::regclass)
RETURNS integer
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF pg_catalog.current_setting('xip83_deprecated.envelope_wave_open', true) IS NULL THEN
        PERFORM pg_catalog.set_config('xip83_deprecated.envelope_wave_open', 'warned', false);
        RAISE WARNING 'xip83.envelope_wave_open is deprecated and will be removed in the next release'
            USING HINT = 'Call xip83.wave_open(''envelope'', cursor_topics, cursor_node_ids, cursor_sequence_ids, ceiling_node_ids, ceiling_sequence_ids, scan_node_id, scan_sequence_id, source, blob_source) instead.';
    END IF;
    RETURN xip83.wave_open('envelope', cursor_topics, cursor_node_ids, cursor_sequence_ids, ceiling_node_ids, ceiling_sequence_ids, scan_node_id, scan_sequence_id, source, blob_source);
END $$;
COMMENT ON FUNCTION xip83.envelope_wave_open(cursor_topics bytea[], cursor_node_ids integer[], cursor_sequence_ids bigint[], ceiling_node_ids integer[], ceiling_sequence_ids bigint[], scan_node_id integer, scan_sequence_id bigint, source regclass, blob_source regclass) IS
'Deprecated: 0.1.0''s name, kept for one release; warns once per session. Calls xip83.wave_open(''envelope'', cursor_topics, cursor_node_ids, cursor_sequence_ids, ceiling_node_ids, ceiling_sequence_ids, scan_node_id, scan_sequence_id, source, blob_source).';

CREATE FUNCTION xip83.envelope_wave_rows(cursor_topics bytea[], cursor_node_ids integer[], cursor_sequence_ids bigint[], ceiling_node_ids integer[], ceiling_sequence_ids bigint[], scan_node_id integer, scan_sequence_id bigint, source regclass, blob_source regclass, OUT originator_node_id integer, OUT originator_sequence_id bigint, OUT gateway_time timestamp without time zone, OUT topic bytea, OUT originator_envelope bytea)
RETURNS SETOF record
LANGUAGE plpgsql STABLE PARALLEL UNSAFE ROWS 100000
SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF pg_catalog.current_setting('xip83_deprecated.envelope_wave_rows', true) IS NULL THEN
        PERFORM pg_catalog.set_config('xip83_deprecated.envelope_wave_rows', 'warned', false);
        RAISE WARNING 'xip83.envelope_wave_rows is deprecated and will be removed in the next release'
            USING HINT = 'Call xip83.envelope_wave_stream(cursor_topics, cursor_node_ids, cursor_sequence_ids, ceiling_node_ids, ceiling_sequence_ids, scan_node_id, scan_sequence_id, source, blob_source) instead.';
    END IF;
    RETURN QUERY SELECT * FROM xip83.envelope_wave_stream(cursor_topics, cursor_node_ids, cursor_sequence_ids, ceiling_node_ids, ceiling_sequence_ids, scan_node_id, scan_sequence_id, source, blob_source);
END $$;
COMMENT ON FUNCTION xip83.envelope_wave_rows(cursor_topics bytea[], cursor_node_ids integer[], cursor_sequence_ids bigint[], ceiling_node_ids integer[], ceiling_sequence_ids bigint[], scan_node_id integer, scan_sequence_id bigint, source regclass, blob_source regclass, OUT originator_node_id integer, OUT originator_sequence_id bigint, OUT gateway_time timestamp without time zone, OUT topic bytea, OUT originator_envelope bytea) IS
'Deprecated: 0.1.0''s name, kept for one release; warns once per session. Calls xip83.envelope_wave_stream(cursor_topics, cursor_node_ids, cursor_sequence_ids, ceiling_node_ids, ceiling_sequence_ids, scan_node_id, scan_sequence_id, source, blob_source).';

CREATE FUNCTION xip83.frame_catchup_complete(mutate_id bigint, binding text DEFAULT 'v3'::text)
RETURNS bytea
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF pg_catalog.current_setting('xip83_deprecated.frame_catchup_complete', true) IS NULL THEN
        PERFORM pg_catalog.set_config('xip83_deprecated.frame_catchup_complete', 'warned', false);
        RAISE WARNING 'xip83.frame_catchup_complete is deprecated and will be removed in the next release'
            USING HINT = 'Call xip83.control_frame(''catchup_complete'', mutate_id, binding) instead.';
    END IF;
    RETURN xip83.control_frame('catchup_complete', mutate_id, binding);
END $$;
COMMENT ON FUNCTION xip83.frame_catchup_complete(mutate_id bigint, binding text) IS
'Deprecated: 0.1.0''s name, kept for one release; warns once per session. Calls xip83.control_frame(''catchup_complete'', mutate_id, binding).';

CREATE FUNCTION xip83.frame_ping(nonce bigint, binding text DEFAULT 'v3'::text)
RETURNS bytea
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF pg_catalog.current_setting('xip83_deprecated.frame_ping', true) IS NULL THEN
        PERFORM pg_catalog.set_config('xip83_deprecated.frame_ping', 'warned', false);
        RAISE WARNING 'xip83.frame_ping is deprecated and will be removed in the next release'
            USING HINT = 'Call xip83.control_frame(''ping'', nonce, binding) instead.';
    END IF;
    RETURN xip83.control_frame('ping', nonce, binding);
END $$;
COMMENT ON FUNCTION xip83.frame_ping(nonce bigint, binding text) IS
'Deprecated: 0.1.0''s name, kept for one release; warns once per session. Calls xip83.control_frame(''ping'', nonce, binding).';

CREATE FUNCTION xip83.frame_pong(nonce bigint, binding text DEFAULT 'v3'::text)
RETURNS bytea
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF pg_catalog.current_setting('xip83_deprecated.frame_pong', true) IS NULL THEN
        PERFORM pg_catalog.set_config('xip83_deprecated.frame_pong', 'warned', false);
        RAISE WARNING 'xip83.frame_pong is deprecated and will be removed in the next release'
            USING HINT = 'Call xip83.control_frame(''pong'', nonce, binding) instead.';
    END IF;
    RETURN xip83.control_frame('pong', nonce, binding);
END $$;
COMMENT ON FUNCTION xip83.frame_pong(nonce bigint, binding text) IS
'Deprecated: 0.1.0''s name, kept for one release; warns once per session. Calls xip83.control_frame(''pong'', nonce, binding).';

CREATE FUNCTION xip83.frame_started(keepalive_interval_ms integer, binding text DEFAULT 'v3'::text)
RETURNS bytea
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF pg_catalog.current_setting('xip83_deprecated.frame_started', true) IS NULL THEN
        PERFORM pg_catalog.set_config('xip83_deprecated.frame_started', 'warned', false);
        RAISE WARNING 'xip83.frame_started is deprecated and will be removed in the next release'
            USING HINT = 'Call xip83.control_frame(''started'', keepalive_interval_ms, binding) instead.';
    END IF;
    RETURN xip83.control_frame('started', keepalive_interval_ms, binding);
END $$;
COMMENT ON FUNCTION xip83.frame_started(keepalive_interval_ms integer, binding text) IS
'Deprecated: 0.1.0''s name, kept for one release; warns once per session. Calls xip83.control_frame(''started'', keepalive_interval_ms, binding).';

CREATE FUNCTION xip83.frame_topics_live(topics bytea[], binding text DEFAULT 'v3'::text)
RETURNS bytea
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF pg_catalog.current_setting('xip83_deprecated.frame_topics_live', true) IS NULL THEN
        PERFORM pg_catalog.set_config('xip83_deprecated.frame_topics_live', 'warned', false);
        RAISE WARNING 'xip83.frame_topics_live is deprecated and will be removed in the next release'
            USING HINT = 'Call xip83.control_frame(''topics_live'', binding => binding, topics => topics) instead.';
    END IF;
    RETURN xip83.control_frame('topics_live', NULL, binding, topics);
END $$;
COMMENT ON FUNCTION xip83.frame_topics_live(topics bytea[], binding text) IS
'Deprecated: 0.1.0''s name, kept for one release; warns once per session. Calls xip83.control_frame(''topics_live'', binding => binding, topics => topics).';

CREATE FUNCTION xip83.group_wave_fetch(handle integer, row_limit integer)
RETURNS TABLE(id bigint, created_at timestamp without time zone, group_id bytea, data bytea, is_commit boolean, sender_hmac bytea, should_push boolean)
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE ROWS 500
SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF pg_catalog.current_setting('xip83_deprecated.group_wave_fetch', true) IS NULL THEN
        PERFORM pg_catalog.set_config('xip83_deprecated.group_wave_fetch', 'warned', false);
        RAISE WARNING 'xip83.group_wave_fetch is deprecated and will be removed in the next release'
            USING HINT = 'Call xip83.group_wave_scan(handle, row_limit) instead.';
    END IF;
    RETURN QUERY SELECT * FROM xip83.group_wave_scan(handle, row_limit);
END $$;
COMMENT ON FUNCTION xip83.group_wave_fetch(handle integer, row_limit integer) IS
'Deprecated: 0.1.0''s name, kept for one release; warns once per session. Calls xip83.group_wave_scan(handle, row_limit).';

CREATE FUNCTION xip83.group_wave_frames(topics bytea[], floors bigint[], scan_cursor bigint, ceiling bigint, page_limit integer, mutate_id bigint, max_frame_bytes integer DEFAULT 2097152, source regclass DEFAULT 'xip83.group_messages'::regclass)
RETURNS TABLE(frame bytea, messages integer, last_id bigint)
LANGUAGE plpgsql STABLE PARALLEL UNSAFE ROWS 1
SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF pg_catalog.current_setting('xip83_deprecated.group_wave_frames', true) IS NULL THEN
        PERFORM pg_catalog.set_config('xip83_deprecated.group_wave_frames', 'warned', false);
        RAISE WARNING 'xip83.group_wave_frames is deprecated and will be removed in the next release'
            USING HINT = 'Call xip83.group_wave_scan(topics, floors, scan_cursor, ceiling, page_limit, mutate_id, max_frame_bytes, source) instead.';
    END IF;
    RETURN QUERY SELECT * FROM xip83.group_wave_scan(topics, floors, scan_cursor, ceiling, page_limit, mutate_id, max_frame_bytes, source);
END $$;
COMMENT ON FUNCTION xip83.group_wave_frames(topics bytea[], floors bigint[], scan_cursor bigint, ceiling bigint, page_limit integer, mutate_id bigint, max_frame_bytes integer, source regclass) IS
'Deprecated: 0.1.0''s name, kept for one release; warns once per session. Calls xip83.group_wave_scan(topics, floors, scan_cursor, ceiling, page_limit, mutate_id, max_frame_bytes, source).';

CREATE FUNCTION xip83.group_wave_frames_fetch(handle integer, page_limit integer, mutate_id bigint, max_frame_bytes integer DEFAULT 2097152)
RETURNS TABLE(frame bytea, messages integer, last_id bigint)
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE ROWS 1
SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF pg_catalog.current_setting('xip83_deprecated.group_wave_frames_fetch', true) IS NULL THEN
        PERFORM pg_catalog.set_config('xip83_deprecated.group_wave_frames_fetch', 'warned', false);
        RAISE WARNING 'xip83.group_wave_frames_fetch is deprecated and will be removed in the next release'
            USING HINT = 'Call xip83.group_wave_scan(handle, page_limit, mutate_id, max_frame_bytes) instead.';
    END IF;
    RETURN QUERY SELECT * FROM xip83.group_wave_scan(handle, page_limit, mutate_id, max_frame_bytes);
END $$;
COMMENT ON FUNCTION xip83.group_wave_frames_fetch(handle integer, page_limit integer, mutate_id bigint, max_frame_bytes integer) IS
'Deprecated: 0.1.0''s name, kept for one release; warns once per session. Calls xip83.group_wave_scan(handle, page_limit, mutate_id, max_frame_bytes).';

CREATE FUNCTION xip83.group_wave_frames_rows(topics bytea[], floors bigint[], scan_cursor bigint, ceiling bigint, mutate_id bigint, max_frame_bytes integer, source regclass, OUT frame bytea, OUT messages integer, OUT last_id bigint)
RETURNS SETOF record
LANGUAGE plpgsql STABLE PARALLEL UNSAFE ROWS 1000
SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF pg_catalog.current_setting('xip83_deprecated.group_wave_frames_rows', true) IS NULL THEN
        PERFORM pg_catalog.set_config('xip83_deprecated.group_wave_frames_rows', 'warned', false);
        RAISE WARNING 'xip83.group_wave_frames_rows is deprecated and will be removed in the next release'
            USING HINT = 'Call xip83.group_wave_stream(topics, floors, scan_cursor, ceiling, mutate_id, max_frame_bytes, source) instead.';
    END IF;
    RETURN QUERY SELECT * FROM xip83.group_wave_stream(topics, floors, scan_cursor, ceiling, mutate_id, max_frame_bytes, source);
END $$;
COMMENT ON FUNCTION xip83.group_wave_frames_rows(topics bytea[], floors bigint[], scan_cursor bigint, ceiling bigint, mutate_id bigint, max_frame_bytes integer, source regclass, OUT frame bytea, OUT messages integer, OUT last_id bigint) IS
'Deprecated: 0.1.0''s name, kept for one release; warns once per session. Calls xip83.group_wave_stream(topics, floors, scan_cursor, ceiling, mutate_id, max_frame_bytes, source).';

CREATE FUNCTION xip83.group_wave_frames_stream(topics bytea[], floors bigint[], scan_cursor bigint, ceiling bigint, mutate_id bigint, max_frame_bytes integer DEFAULT 2097152, source regclass DEFAULT 'xip83.group_messages'::regclass)
RETURNS TABLE(frame bytea, messages integer, last_id bigint)
LANGUAGE plpgsql STABLE PARALLEL UNSAFE ROWS 1000
SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF pg_catalog.current_setting('xip83_deprecated.group_wave_frames_stream', true) IS NULL THEN
        PERFORM pg_catalog.set_config('xip83_deprecated.group_wave_frames_stream', 'warned', false);
        RAISE WARNING 'xip83.group_wave_frames_stream is deprecated and will be removed in the next release'
            USING HINT = 'Call xip83.group_wave_stream(topics, floors, scan_cursor, ceiling, mutate_id, max_frame_bytes, source) instead.';
    END IF;
    RETURN QUERY SELECT * FROM xip83.group_wave_stream(topics, floors, scan_cursor, ceiling, mutate_id, max_frame_bytes, source);
END $$;
COMMENT ON FUNCTION xip83.group_wave_frames_stream(topics bytea[], floors bigint[], scan_cursor bigint, ceiling bigint, mutate_id bigint, max_frame_bytes integer, source regclass) IS
'Deprecated: 0.1.0''s name, kept for one release; warns once per session. Calls xip83.group_wave_stream(topics, floors, scan_cursor, ceiling, mutate_id, max_frame_bytes, source).';

CREATE FUNCTION xip83.group_wave_open(topics bytea[], floors bigint[], scan_cursor bigint, ceiling bigint, source regclass DEFAULT 'xip83.group_messages'::regclass)
RETURNS integer
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF pg_catalog.current_setting('xip83_deprecated.group_wave_open', true) IS NULL THEN
        PERFORM pg_catalog.set_config('xip83_deprecated.group_wave_open', 'warned', false);
        RAISE WARNING 'xip83.group_wave_open is deprecated and will be removed in the next release'
            USING HINT = 'Call xip83.wave_open(''group'', topics, floors, scan_cursor, ceiling, source) instead.';
    END IF;
    RETURN xip83.wave_open('group', topics, floors, scan_cursor, ceiling, source);
END $$;
COMMENT ON FUNCTION xip83.group_wave_open(topics bytea[], floors bigint[], scan_cursor bigint, ceiling bigint, source regclass) IS
'Deprecated: 0.1.0''s name, kept for one release; warns once per session. Calls xip83.wave_open(''group'', topics, floors, scan_cursor, ceiling, source).';

CREATE FUNCTION xip83.group_wave_rows(topics bytea[], floors bigint[], scan_cursor bigint, ceiling bigint, source regclass, OUT id bigint, OUT created_at timestamp without time zone, OUT group_id bytea, OUT data bytea, OUT is_commit boolean, OUT sender_hmac bytea, OUT should_push boolean)
RETURNS SETOF record
LANGUAGE plpgsql STABLE PARALLEL UNSAFE ROWS 100000
SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF pg_catalog.current_setting('xip83_deprecated.group_wave_rows', true) IS NULL THEN
        PERFORM pg_catalog.set_config('xip83_deprecated.group_wave_rows', 'warned', false);
        RAISE WARNING 'xip83.group_wave_rows is deprecated and will be removed in the next release'
            USING HINT = 'Call xip83.group_wave_stream(topics, floors, scan_cursor, ceiling, source) instead.';
    END IF;
    RETURN QUERY SELECT * FROM xip83.group_wave_stream(topics, floors, scan_cursor, ceiling, source);
END $$;
COMMENT ON FUNCTION xip83.group_wave_rows(topics bytea[], floors bigint[], scan_cursor bigint, ceiling bigint, source regclass, OUT id bigint, OUT created_at timestamp without time zone, OUT group_id bytea, OUT data bytea, OUT is_commit boolean, OUT sender_hmac bytea, OUT should_push boolean) IS
'Deprecated: 0.1.0''s name, kept for one release; warns once per session. Calls xip83.group_wave_stream(topics, floors, scan_cursor, ceiling, source).';

CREATE FUNCTION xip83.live_envelope_frames(node_ids integer[], after_sequence_ids bigint[], row_limit integer, late_after bigint, max_frame_bytes integer DEFAULT 2097152)
RETURNS TABLE(frame bytea, messages integer, originator_node_ids integer[], sequence_ids bigint[], late_cursor bigint)
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE ROWS 1
SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF pg_catalog.current_setting('xip83_deprecated.live_envelope_frames', true) IS NULL THEN
        PERFORM pg_catalog.set_config('xip83_deprecated.live_envelope_frames', 'warned', false);
        RAISE WARNING 'xip83.live_envelope_frames is deprecated and will be removed in the next release'
            USING HINT = 'Call xip83.live_frames(''envelope'', node_ids, after_sequence_ids, row_limit, late_after, max_frame_bytes) instead.';
    END IF;
    RETURN QUERY SELECT * FROM xip83.live_frames('envelope', node_ids, after_sequence_ids, row_limit, late_after, max_frame_bytes);
END $$;
COMMENT ON FUNCTION xip83.live_envelope_frames(node_ids integer[], after_sequence_ids bigint[], row_limit integer, late_after bigint, max_frame_bytes integer) IS
'Deprecated: 0.1.0''s name, kept for one release; warns once per session. Calls xip83.live_frames(''envelope'', node_ids, after_sequence_ids, row_limit, late_after, max_frame_bytes).';

CREATE FUNCTION xip83.live_group_frames(after_id bigint, row_limit integer, late_after bigint, max_frame_bytes integer DEFAULT 2097152)
RETURNS TABLE(frame bytea, messages integer, last_id bigint, late_cursor bigint)
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE ROWS 1
SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF pg_catalog.current_setting('xip83_deprecated.live_group_frames', true) IS NULL THEN
        PERFORM pg_catalog.set_config('xip83_deprecated.live_group_frames', 'warned', false);
        RAISE WARNING 'xip83.live_group_frames is deprecated and will be removed in the next release'
            USING HINT = 'Call xip83.live_frames(''group'', after_id, row_limit, late_after, max_frame_bytes) instead.';
    END IF;
    RETURN QUERY SELECT * FROM xip83.live_frames('group', after_id, row_limit, late_after, max_frame_bytes);
END $$;
COMMENT ON FUNCTION xip83.live_group_frames(after_id bigint, row_limit integer, late_after bigint, max_frame_bytes integer) IS
'Deprecated: 0.1.0''s name, kept for one release; warns once per session. Calls xip83.live_frames(''group'', after_id, row_limit, late_after, max_frame_bytes).';

CREATE FUNCTION xip83.live_welcome_frames(after_id bigint, row_limit integer, late_after bigint, max_frame_bytes integer DEFAULT 2097152)
RETURNS TABLE(frame bytea, messages integer, last_id bigint, late_cursor bigint)
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE ROWS 1
SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF pg_catalog.current_setting('xip83_deprecated.live_welcome_frames', true) IS NULL THEN
        PERFORM pg_catalog.set_config('xip83_deprecated.live_welcome_frames', 'warned', false);
        RAISE WARNING 'xip83.live_welcome_frames is deprecated and will be removed in the next release'
            USING HINT = 'Call xip83.live_frames(''welcome'', after_id, row_limit, late_after, max_frame_bytes) instead.';
    END IF;
    RETURN QUERY SELECT * FROM xip83.live_frames('welcome', after_id, row_limit, late_after, max_frame_bytes);
END $$;
COMMENT ON FUNCTION xip83.live_welcome_frames(after_id bigint, row_limit integer, late_after bigint, max_frame_bytes integer) IS
'Deprecated: 0.1.0''s name, kept for one release; warns once per session. Calls xip83.live_frames(''welcome'', after_id, row_limit, late_after, max_frame_bytes).';

CREATE FUNCTION xip83.welcome_wave_fetch(handle integer, row_limit integer)
RETURNS TABLE(id bigint, created_at timestamp without time zone, installation_key bytea, data bytea, hpke_public_key bytea, wrapper_algorithm smallint, welcome_metadata bytea, message_type smallint)
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE ROWS 500
SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF pg_catalog.current_setting('xip83_deprecated.welcome_wave_fetch', true) IS NULL THEN
        PERFORM pg_catalog.set_config('xip83_deprecated.welcome_wave_fetch', 'warned', false);
        RAISE WARNING 'xip83.welcome_wave_fetch is deprecated and will be removed in the next release'
            USING HINT = 'Call xip83.welcome_wave_scan(handle, row_limit) instead.';
    END IF;
    RETURN QUERY SELECT * FROM xip83.welcome_wave_scan(handle, row_limit);
END $$;
COMMENT ON FUNCTION xip83.welcome_wave_fetch(handle integer, row_limit integer) IS
'Deprecated: 0.1.0''s name, kept for one release; warns once per session. Calls xip83.welcome_wave_scan(handle, row_limit).';

CREATE FUNCTION xip83.welcome_wave_frames(topics bytea[], floors bigint[], scan_cursor bigint, ceiling bigint, page_limit integer, mutate_id bigint, max_frame_bytes integer DEFAULT 2097152, source regclass DEFAULT 'xip83.welcome_messages'::regclass)
RETURNS TABLE(frame bytea, messages integer, last_id bigint)
LANGUAGE plpgsql STABLE PARALLEL UNSAFE ROWS 1
SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF pg_catalog.current_setting('xip83_deprecated.welcome_wave_frames', true) IS NULL THEN
        PERFORM pg_catalog.set_config('xip83_deprecated.welcome_wave_frames', 'warned', false);
        RAISE WARNING 'xip83.welcome_wave_frames is deprecated and will be removed in the next release'
            USING HINT = 'Call xip83.welcome_wave_scan(topics, floors, scan_cursor, ceiling, page_limit, mutate_id, max_frame_bytes, source) instead.';
    END IF;
    RETURN QUERY SELECT * FROM xip83.welcome_wave_scan(topics, floors, scan_cursor, ceiling, page_limit, mutate_id, max_frame_bytes, source);
END $$;
COMMENT ON FUNCTION xip83.welcome_wave_frames(topics bytea[], floors bigint[], scan_cursor bigint, ceiling bigint, page_limit integer, mutate_id bigint, max_frame_bytes integer, source regclass) IS
'Deprecated: 0.1.0''s name, kept for one release; warns once per session. Calls xip83.welcome_wave_scan(topics, floors, scan_cursor, ceiling, page_limit, mutate_id, max_frame_bytes, source).';

CREATE FUNCTION xip83.welcome_wave_frames_fetch(handle integer, page_limit integer, mutate_id bigint, max_frame_bytes integer DEFAULT 2097152)
RETURNS TABLE(frame bytea, messages integer, last_id bigint)
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE ROWS 1
SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF pg_catalog.current_setting('xip83_deprecated.welcome_wave_frames_fetch', true) IS NULL THEN
        PERFORM pg_catalog.set_config('xip83_deprecated.welcome_wave_frames_fetch', 'warned', false);
        RAISE WARNING 'xip83.welcome_wave_frames_fetch is deprecated and will be removed in the next release'
            USING HINT = 'Call xip83.welcome_wave_scan(handle, page_limit, mutate_id, max_frame_bytes) instead.';
    END IF;
    RETURN QUERY SELECT * FROM xip83.welcome_wave_scan(handle, page_limit, mutate_id, max_frame_bytes);
END $$;
COMMENT ON FUNCTION xip83.welcome_wave_frames_fetch(handle integer, page_limit integer, mutate_id bigint, max_frame_bytes integer) IS
'Deprecated: 0.1.0''s name, kept for one release; warns once per session. Calls xip83.welcome_wave_scan(handle, page_limit, mutate_id, max_frame_bytes).';

CREATE FUNCTION xip83.welcome_wave_frames_rows(topics bytea[], floors bigint[], scan_cursor bigint, ceiling bigint, mutate_id bigint, max_frame_bytes integer, source regclass, OUT frame bytea, OUT messages integer, OUT last_id bigint)
RETURNS SETOF record
LANGUAGE plpgsql STABLE PARALLEL UNSAFE ROWS 1000
SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF pg_catalog.current_setting('xip83_deprecated.welcome_wave_frames_rows', true) IS NULL THEN
        PERFORM pg_catalog.set_config('xip83_deprecated.welcome_wave_frames_rows', 'warned', false);
        RAISE WARNING 'xip83.welcome_wave_frames_rows is deprecated and will be removed in the next release'
            USING HINT = 'Call xip83.welcome_wave_stream(topics, floors, scan_cursor, ceiling, mutate_id, max_frame_bytes, source) instead.';
    END IF;
    RETURN QUERY SELECT * FROM xip83.welcome_wave_stream(topics, floors, scan_cursor, ceiling, mutate_id, max_frame_bytes, source);
END $$;
COMMENT ON FUNCTION xip83.welcome_wave_frames_rows(topics bytea[], floors bigint[], scan_cursor bigint, ceiling bigint, mutate_id bigint, max_frame_bytes integer, source regclass, OUT frame bytea, OUT messages integer, OUT last_id bigint) IS
'Deprecated: 0.1.0''s name, kept for one release; warns once per session. Calls xip83.welcome_wave_stream(topics, floors, scan_cursor, ceiling, mutate_id, max_frame_bytes, source).';

CREATE FUNCTION xip83.welcome_wave_frames_stream(topics bytea[], floors bigint[], scan_cursor bigint, ceiling bigint, mutate_id bigint, max_frame_bytes integer DEFAULT 2097152, source regclass DEFAULT 'xip83.welcome_messages'::regclass)
RETURNS TABLE(frame bytea, messages integer, last_id bigint)
LANGUAGE plpgsql STABLE PARALLEL UNSAFE ROWS 1000
SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF pg_catalog.current_setting('xip83_deprecated.welcome_wave_frames_stream', true) IS NULL THEN
        PERFORM pg_catalog.set_config('xip83_deprecated.welcome_wave_frames_stream', 'warned', false);
        RAISE WARNING 'xip83.welcome_wave_frames_stream is deprecated and will be removed in the next release'
            USING HINT = 'Call xip83.welcome_wave_stream(topics, floors, scan_cursor, ceiling, mutate_id, max_frame_bytes, source) instead.';
    END IF;
    RETURN QUERY SELECT * FROM xip83.welcome_wave_stream(topics, floors, scan_cursor, ceiling, mutate_id, max_frame_bytes, source);
END $$;
COMMENT ON FUNCTION xip83.welcome_wave_frames_stream(topics bytea[], floors bigint[], scan_cursor bigint, ceiling bigint, mutate_id bigint, max_frame_bytes integer, source regclass) IS
'Deprecated: 0.1.0''s name, kept for one release; warns once per session. Calls xip83.welcome_wave_stream(topics, floors, scan_cursor, ceiling, mutate_id, max_frame_bytes, source).';

CREATE FUNCTION xip83.welcome_wave_open(topics bytea[], floors bigint[], scan_cursor bigint, ceiling bigint, source regclass DEFAULT 'xip83.welcome_messages'::regclass)
RETURNS integer
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF pg_catalog.current_setting('xip83_deprecated.welcome_wave_open', true) IS NULL THEN
        PERFORM pg_catalog.set_config('xip83_deprecated.welcome_wave_open', 'warned', false);
        RAISE WARNING 'xip83.welcome_wave_open is deprecated and will be removed in the next release'
            USING HINT = 'Call xip83.wave_open(''welcome'', topics, floors, scan_cursor, ceiling, source) instead.';
    END IF;
    RETURN xip83.wave_open('welcome', topics, floors, scan_cursor, ceiling, source);
END $$;
COMMENT ON FUNCTION xip83.welcome_wave_open(topics bytea[], floors bigint[], scan_cursor bigint, ceiling bigint, source regclass) IS
'Deprecated: 0.1.0''s name, kept for one release; warns once per session. Calls xip83.wave_open(''welcome'', topics, floors, scan_cursor, ceiling, source).';

CREATE FUNCTION xip83.welcome_wave_rows(topics bytea[], floors bigint[], scan_cursor bigint, ceiling bigint, source regclass, OUT id bigint, OUT created_at timestamp without time zone, OUT installation_key bytea, OUT data bytea, OUT hpke_public_key bytea, OUT wrapper_algorithm smallint, OUT welcome_metadata bytea, OUT message_type smallint)
RETURNS SETOF record
LANGUAGE plpgsql STABLE PARALLEL UNSAFE ROWS 100000
SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF pg_catalog.current_setting('xip83_deprecated.welcome_wave_rows', true) IS NULL THEN
        PERFORM pg_catalog.set_config('xip83_deprecated.welcome_wave_rows', 'warned', false);
        RAISE WARNING 'xip83.welcome_wave_rows is deprecated and will be removed in the next release'
            USING HINT = 'Call xip83.welcome_wave_stream(topics, floors, scan_cursor, ceiling, source) instead.';
    END IF;
    RETURN QUERY SELECT * FROM xip83.welcome_wave_stream(topics, floors, scan_cursor, ceiling, source);
END $$;
COMMENT ON FUNCTION xip83.welcome_wave_rows(topics bytea[], floors bigint[], scan_cursor bigint, ceiling bigint, source regclass, OUT id bigint, OUT created_at timestamp without time zone, OUT installation_key bytea, OUT data bytea, OUT hpke_public_key bytea, OUT wrapper_algorithm smallint, OUT welcome_metadata bytea, OUT message_type smallint) IS
'Deprecated: 0.1.0''s name, kept for one release; warns once per session. Calls xip83.welcome_wave_stream(topics, floors, scan_cursor, ceiling, source).';
