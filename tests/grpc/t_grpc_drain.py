"""Drain of the gateway's gRPC transport on SIGTERM: the listener closes at
once (new connections are refused), every connection gets GOAWAY (NO_ERROR),
every open stream ends UNAVAILABLE after what it had queued; a client that
reads nothing cannot hold the process past the drain's grace (--drain-ms),
and the server exits 0."""
import signal
import socket
import time

import grpc
import hyperframe.frame

from grpctest import (ECHO_PATH, STREAM_PATH, RawH2, Requests, Server, check, check_stream_message,
                      expect_status, run, stream_request)

GRACE_MS = 3000


def test():
    srv = Server("--h2c", "127.0.0.1:0", "--drain-ms", str(GRACE_MS))
    port = srv.ports["h2c"]
    ch = srv.channel()
    held = [ch.unary_stream(STREAM_PATH)(stream_request(1, 32, hold=True), timeout=60) for _ in range(3)]
    for c in held:
        check_stream_message(next(c), 0, 32)
    reqs = Requests()
    echo = ch.stream_stream(ECHO_PATH)(reqs, timeout=60)
    reqs.put(b"mid-flight")
    check(next(echo) == b"mid-flight", "echo before the drain")
    # a client that stops reading a long stream: only the grace ends it
    slow_ch = srv.channel(**{"grpc.use_local_subchannel_pool": 1, "grpc.http2.bdp_probe": 0})
    slow = slow_ch.unary_stream(STREAM_PATH)(stream_request(2048, 65536), timeout=60)
    check_stream_message(next(slow), 0, 65536)
    raw = RawH2(port)
    sid = raw.request(ECHO_PATH)
    raw.send_message(sid, b"raw")
    raw.wait(lambda f: isinstance(f, hyperframe.frame.DataFrame) and f.stream_id == sid and f.data, "raw echo")
    time.sleep(0.5)

    t0 = time.monotonic()
    srv.proc.send_signal(signal.SIGTERM)
    for c in held:
        details = expect_status(lambda: list(c), grpc.StatusCode.UNAVAILABLE, "held stream")
        check(details == "server is shutting down", "held stream ended with %r" % details)
    expect_status(lambda: next(echo), grpc.StatusCode.UNAVAILABLE, "bidi echo")
    f = raw.wait(lambda f: isinstance(f, hyperframe.frame.GoAwayFrame), "GOAWAY")
    check(f.error_code == 0 and f.last_stream_id == sid, "GOAWAY code %d last stream %d" % (f.error_code, f.last_stream_id))
    status = raw.wait_status(sid, "raw trailers")
    check(status == 14, "raw stream: grpc-status %d" % status)
    raw.close()

    # still draining (the slow client), and no longer listening
    check(srv.proc.poll() is None, "the server exited before the grace with a client still stalled")
    s = socket.socket()
    s.settimeout(5)
    try:
        s.connect(("127.0.0.1", port))
        refused = False
    except ConnectionRefusedError:
        refused = True
    s.close()
    check(refused, "a new connection was accepted while draining")

    check(srv.stop(timeout=GRACE_MS / 1000 + 10) == 0, "the server exited %s" % srv.proc.returncode)
    took = time.monotonic() - t0
    check(GRACE_MS / 1000 - 0.5 <= took < GRACE_MS / 1000 + 5, "drained in %.1f s" % took)
    # the slow client gets what reached it, then the end
    expect_status(lambda: list(slow), grpc.StatusCode.UNAVAILABLE, "the slow stream")
    ch.close()
    slow_ch.close()


run(test)
