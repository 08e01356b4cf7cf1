-- v3 wave scans: the rows of a wave (topics from their floors up to a pinned
-- ceiling) in ascending id order, read by a k-way merge over the per-topic
-- (topic, id) index or a filtered walk of the id index, whichever is cheaper.
-- `source` may name a node's own table of the same layout. Functions that
-- 0.1.0 had are written CREATE OR REPLACE, so the update from 0.1.0 runs this
-- part as it is (control/xip83--0.1.0--0.2.0.sql). The frame and wave-handle
-- forms of these names are in 60_frames.sql.

-- One stateless page: rows m with m.group_id = topics[i] and m.id > floors[i]
-- for some i, m.id > scan_cursor, m.id <= ceiling; ascending id; at most
-- page_limit rows. The next page passes the last id as scan_cursor. With
-- page_limit NULL: the whole wave, one row per call, which streams only in a
-- target list: *_wave_stream below puts it there.
CREATE OR REPLACE FUNCTION xip83.group_wave_scan(
    topics bytea[], floors bigint[], scan_cursor bigint, ceiling bigint, page_limit int,
    source regclass DEFAULT 'xip83.group_messages')
RETURNS TABLE (id bigint, created_at timestamp, group_id bytea, data bytea,
               is_commit boolean, sender_hmac bytea, should_push boolean)
AS 'MODULE_PATHNAME', 'group_wave_scan' LANGUAGE C STABLE ROWS 500;

CREATE OR REPLACE FUNCTION xip83.welcome_wave_scan(
    topics bytea[], floors bigint[], scan_cursor bigint, ceiling bigint, page_limit int,
    source regclass DEFAULT 'xip83.welcome_messages')
RETURNS TABLE (id bigint, created_at timestamp, installation_key bytea, data bytea,
               hpke_public_key bytea, wrapper_algorithm smallint, welcome_metadata bytea,
               message_type smallint)
AS 'MODULE_PATHNAME', 'welcome_wave_scan' LANGUAGE C STABLE ROWS 500;

-- A whole wave as a stream for a cursor:
--   DECLARE w CURSOR FOR SELECT * FROM xip83.group_wave_stream(...);
--   FETCH 500 FROM w;  -- until it returns fewer than 500 rows
-- A set-returning function in FROM is materialized whole before its first
-- row; this SQL function is inlined by the planner, which puts the scan (with
-- page_limit NULL) in a target list where it runs one row per call, so memory
-- stays bounded and each FETCH costs only the rows it returns. Keep it STABLE
-- and not STRICT: either would stop the inlining. So would a SET clause: the
-- body is parsed under the caller's search_path, so it names every function
-- by schema and uses no operator. Inlined, it runs the scan as the caller,
-- with the scan's checks.
CREATE OR REPLACE FUNCTION xip83.group_wave_stream(
    topics bytea[], floors bigint[], scan_cursor bigint, ceiling bigint,
    source regclass DEFAULT 'xip83.group_messages')
RETURNS TABLE (id bigint, created_at timestamp, group_id bytea, data bytea,
               is_commit boolean, sender_hmac bytea, should_push boolean)
LANGUAGE sql STABLE ROWS 100000 AS $$
    SELECT (w.r).* FROM (SELECT xip83.group_wave_scan(topics, floors, scan_cursor, ceiling,
                                                      NULL::int, source) AS r) AS w
$$;

CREATE OR REPLACE FUNCTION xip83.welcome_wave_stream(
    topics bytea[], floors bigint[], scan_cursor bigint, ceiling bigint,
    source regclass DEFAULT 'xip83.welcome_messages')
RETURNS TABLE (id bigint, created_at timestamp, installation_key bytea, data bytea,
               hpke_public_key bytea, wrapper_algorithm smallint, welcome_metadata bytea,
               message_type smallint)
LANGUAGE sql STABLE ROWS 100000 AS $$
    SELECT (w.r).* FROM (SELECT xip83.welcome_wave_scan(topics, floors, scan_cursor, ceiling,
                                                        NULL::int, source) AS r) AS w
$$;

-- The highest id a wave may pin as its ceiling: over xip83's own tables the
-- kind's horizon (commit-order safe, needs the library preloaded), over a
-- node's own table its highest visible id. Volatile: the horizon moves.
CREATE OR REPLACE FUNCTION xip83.group_ceiling(source regclass DEFAULT 'xip83.group_messages')
RETURNS bigint AS 'MODULE_PATHNAME', 'group_ceiling' LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE OR REPLACE FUNCTION xip83.welcome_ceiling(source regclass DEFAULT 'xip83.welcome_messages')
RETURNS bigint AS 'MODULE_PATHNAME', 'welcome_ceiling' LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION xip83.group_wave_scan(bytea[], bigint[], bigint, bigint, int, regclass) IS
'One page of a group-message wave: rows of source with group_id = topics[i] and id > floors[i] for some i, id > scan_cursor, id <= ceiling, ascending id, at most page_limit rows; page_limit NULL: the whole wave, one row per call (streams in a target list, as group_wave_stream puts it). Snapshot: the statement''s, or one taken right after the horizon this session last read under it (docs/concepts.md, "What every scan and fetch checks"). Executable by PUBLIC; the caller needs USAGE on the source''s schema and SELECT on it (42501), and row-level security is refused.';
COMMENT ON FUNCTION xip83.welcome_wave_scan(bytea[], bigint[], bigint, bigint, int, regclass) IS
'One page of a welcome wave, as group_wave_scan with installation_key for group_id. Same snapshot contract and privileges.';
COMMENT ON FUNCTION xip83.group_wave_stream(bytea[], bigint[], bigint, bigint, regclass) IS
'A whole group wave for a cursor: the rows of every page concatenated, each FETCH reading only what it returns. Inlined SQL (no SET clause, every name qualified) over group_wave_scan with page_limit NULL: reads every row under the snapshot of its first row; privileges of group_wave_scan. An argument holding a volatile function or a sub-select stops the inlining (the wave is then read whole before the first row): use xip83.wave_open for such arguments.';
COMMENT ON FUNCTION xip83.welcome_wave_stream(bytea[], bigint[], bigint, bigint, regclass) IS
'A whole welcome wave for a cursor; as group_wave_stream.';
COMMENT ON FUNCTION xip83.group_ceiling(regclass) IS
'The highest id a group wave may pin: group_horizon() over xip83.group_messages, else the highest non-NULL id visible to the statement''s snapshot (needs a unique index on (id)). Executable by PUBLIC; needs USAGE on the source''s schema and SELECT on it.';
COMMENT ON FUNCTION xip83.welcome_ceiling(regclass) IS
'The highest id a welcome wave may pin; as group_ceiling over xip83.welcome_messages.';
