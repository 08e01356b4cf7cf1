"""Limits of the gateway's gRPC transport, on one connection: a request
message over the limit ends that stream alone with RESOURCE_EXHAUSTED, as
soon as its 5-byte prefix is in (the body is never awaited, and the client is
told to stop sending with RST_STREAM NO_ERROR), while the other streams of
the connection go on; and 1,000 streams are open at once on one connection."""

import grpc
import hyperframe.frame

from grpctest import (ECHO_PATH, STREAM_PATH, RawH2, Requests, Server, check,
                      check_stream_message, expect_status, run, stats, stream_request)

LIMIT = 1 << 20


def over_limit(srv):
    ch = srv.channel()
    # streams open before the refused one, on the same connection
    reqs = Requests()
    echo = ch.stream_stream(ECHO_PATH)(reqs, timeout=60)
    reqs.put(b"before")
    check(next(echo) == b"before", "echo before")
    held = ch.unary_stream(STREAM_PATH)(stream_request(1, 64, hold=True), timeout=60)
    check_stream_message(next(held), 0, 64)

    details = expect_status(lambda: list(ch.stream_stream(ECHO_PATH)(iter([b"x" * (LIMIT + 1)]), timeout=20)),
                            grpc.StatusCode.RESOURCE_EXHAUSTED, "over the limit")
    check("%d vs. %d" % (LIMIT + 1, LIMIT) in details, "over the limit says %r" % details)
    # exactly the limit is fine
    reqs.put(b"y" * LIMIT)
    check(next(echo) == b"y" * LIMIT, "echo of a message at the limit")

    st = stats(ch)
    check(st["connections"] == 1, "one channel, one connection: %s" % st)
    check(st["streams"] == 3, "echo, held stream and Stats open: %s" % st)
    reqs.put(b"after")
    check(next(echo) == b"after", "echo after")
    reqs.close()
    check(list(echo) == [] and echo.code() == grpc.StatusCode.OK, "echo ended %s" % echo.code())
    held.cancel()
    ch.close()

    # a prefix announcing 1 GiB, then silence: refused without waiting for the body
    raw = RawH2(srv.ports["h2c"])
    sid = raw.request(ECHO_PATH)
    raw.send_message(sid, b"only this", length=1 << 30)
    status = raw.wait_status(sid, "RESOURCE_EXHAUSTED for a 1 GiB announcement", timeout=5)
    check(status == 8, "1 GiB announced: grpc-status %d" % status)
    f = raw.wait(lambda f: isinstance(f, hyperframe.frame.RstStreamFrame) and f.stream_id == sid,
                 "RST_STREAM after the refusal", timeout=5)
    check(f.error_code == 0, "RST_STREAM error code %d, not NO_ERROR" % f.error_code)
    raw.close()


def thousand_streams(srv):
    ch = srv.channel()
    calls = [ch.unary_stream(STREAM_PATH)(stream_request(1, 16, hold=True), timeout=30)
             for _ in range(1000)]
    # every one has its first message while all are held open: concurrent
    for i, c in enumerate(calls):
        check_stream_message(next(c), 0, 16)
    # the 1,001st would wait for a slot: Stats comes on a connection of its own
    side = srv.channel(**{"grpc.use_local_subchannel_pool": 1})
    st = stats(side)
    check(st["connections"] == 2 and st["streams"] == 1001, "1,000 held streams and Stats: %s" % st)
    reqs = Requests()
    echo = ch.stream_stream(ECHO_PATH)(reqs, timeout=60)
    for c in calls:
        c.cancel()
    reqs.put(b"still here")
    check(next(echo) == b"still here", "echo after 1,000 cancels")
    reqs.close()
    list(echo)
    st = stats(side)
    check(st["streams"] == 1 and st["pending"] == 0, "after the cancels: %s" % st)
    side.close()
    ch.close()


def test():
    srv = Server("--h2c", "127.0.0.1:0", "--max-message", str(LIMIT))
    over_limit(srv)
    thousand_streams(srv)
    check(srv.stop() == 0, "the server exited %s" % srv.proc.returncode)


run(test)
