-- LiveNotice round trip, a fixed wire vector, and bad payloads.
SELECT xip83.live_notice_encode(7, 'live', 3, 1000, 20, ARRAY[100, 200], ARRAY[5, 0]::bigint[]);
SELECT * FROM xip83.live_notice_decode(
    xip83.live_notice_encode(7, 'live', 3, 1000, 20, ARRAY[100, 200], ARRAY[5, 0]::bigint[]));

-- Bytes written by hand from the wire format: epoch=1 (08 01), state=STOPPING
-- (10 02), group_horizon=300 (20 ac 02), one originator {node 5, horizon 9}
-- (32 04 08 05 10 09).
SELECT encode('\x0801100220ac02320408051009'::bytea, 'base64') AS hand_payload \gset
SELECT * FROM xip83.live_notice_decode(:'hand_payload');
SELECT xip83.live_notice_encode(1, 'stopping', 0, 300, 0, ARRAY[5], ARRAY[9]::bigint[]) = :'hand_payload' AS same_bytes;

-- Bad input: clear errors, never a crash, never a notice of zeros. A payload
-- the notifier could not have sent (empty, no epoch, no live/stopping state)
-- is refused like one that does not parse.
SELECT * FROM xip83.live_notice_decode('');
SELECT * FROM xip83.live_notice_decode(encode('\x1001'::bytea, 'base64'));        -- live, no epoch
SELECT * FROM xip83.live_notice_decode(encode('\x0801'::bytea, 'base64'));        -- epoch, no state
SELECT * FROM xip83.live_notice_decode(encode('\x08011007'::bytea, 'base64'));    -- state 7
SELECT * FROM xip83.live_notice_decode(encode('\x080110'::bytea, 'base64'));      -- truncated
SELECT * FROM xip83.live_notice_decode(encode('\x0801100232'::bytea, 'base64'));  -- truncated originator
SELECT xip83.live_notice_encode(0, 'live', 0, 0, 0, '{}', '{}');
SELECT xip83.live_notice_encode(1, 'unspecified', 0, 0, 0, '{}', '{}');
SELECT * FROM xip83.live_notice_decode('not base64!');
SELECT * FROM xip83.live_notice_decode(encode('\xffffffff'::bytea, 'base64'));
SELECT * FROM xip83.live_notice_decode(NULL);
SELECT xip83.live_notice_encode(-1, 'live', 0, 0, 0, '{}', '{}');
SELECT xip83.live_notice_encode(1, 'sleeping', 0, 0, 0, '{}', '{}');
SELECT xip83.live_notice_encode(1, 'live', 0, 0, 0, ARRAY[1, 2], ARRAY[1]::bigint[]);
SELECT xip83.live_notice_encode(1, 'live', 0, 0, 0, ARRAY[1, NULL], ARRAY[1, 2]::bigint[]);
SELECT xip83.live_notice_encode(1, 'live', 0, 0, 0, ARRAY[[1], [2]], ARRAY[1, 2]::bigint[]);
SELECT xip83.live_notice_encode(1, 'live', 0, 0, 0, ARRAY[-1], ARRAY[1]::bigint[]);

-- The SQLSTATEs: 22P02 for payloads, 22023 for encode arguments.
\set VERBOSITY sqlstate
SELECT * FROM xip83.live_notice_decode('');
SELECT * FROM xip83.live_notice_decode(encode('\x08011007'::bytea, 'base64'));
SELECT * FROM xip83.live_notice_decode(encode('\x080110'::bytea, 'base64'));
SELECT xip83.live_notice_encode(0, 'live', 0, 0, 0, '{}', '{}');
\set VERBOSITY default
