"""The gateway's gRPC transport answers real gRPC clients over h2c: a bidi
echo of many messages in order (empty, small, 1 MiB), a server stream,
messages paced by a loop timer (and timers gone with cancelled streams),
UNIMPLEMENTED (trailers only) for unknown paths and for the gateway's real
paths not served yet, a percent-encoded grpc-message, compression refused
(grpc-encoding: UNIMPLEMENTED; a compressed flag without it: INTERNAL), and,
frame by frame, HTTP/2 PING answered and SETTINGS_MAX_CONCURRENT_STREAMS of
at least 1,000."""
import struct
import threading
import time

import grpc
import hyperframe.frame

from grpctest import (ECHO_PATH, FAIL_PATH, REAL_PATHS, STREAM_PATH, RawH2, Requests, Server,
                      check, check_stream_message, expect_status, run, stats, stream_request)


def echo_many(ch):
    sizes = [0, 1, 5, 100, 4096, 16384, 16385, 70000]
    msgs = [bytes([i & 0xFF]) * sizes[i % len(sizes)] + struct.pack(">I", i) for i in range(3000)]
    msgs[1000] = b"m" * (1 << 20)	# the server's limit, 4 MiB, is far
    reqs = Requests()
    call = ch.stream_stream(ECHO_PATH)(reqs, timeout=120)

    # the client sends while it reads: both directions flow at once
    def feed():
        for m in msgs:
            reqs.put(m)
        reqs.close()
    t = threading.Thread(target=feed)
    t.start()
    got = 0
    for i, m in enumerate(call):
        check(m == msgs[i], "echo %d differs (%d bytes, want %d)" % (i, len(m), len(msgs[i])))
        got += 1
    t.join()
    check(got == len(msgs), "echo: %d of %d messages back" % (got, len(msgs)))
    check(call.code() == grpc.StatusCode.OK, "echo ended %s" % call.code())


def server_stream(ch):
    n = 0
    call = ch.unary_stream(STREAM_PATH)(stream_request(5000, 300), timeout=60)
    for m in call:
        check_stream_message(m, n, 300)
        n += 1
    check(n == 5000, "server stream: %d of 5000 messages" % n)
    check(call.code() == grpc.StatusCode.OK, "server stream ended %s" % call.code())


def ticks(srv, ch):
    tick = ch.unary_stream("/xip83.test.Echo/Tick")
    t0 = time.monotonic()
    got = [struct.unpack(">Q", m)[0] for m in tick(struct.pack(">II", 5, 100), timeout=10)]
    took = time.monotonic() - t0
    check(got == list(range(5)), "ticks: %s" % got)
    check(0.45 <= took < 3, "5 ticks 100 ms apart took %.2f s" % took)
    # a short timer started after a long one fires first
    slow = tick(struct.pack(">II", 1, 2500), timeout=10)
    time.sleep(0.05)
    t0 = time.monotonic()
    list(tick(struct.pack(">II", 3, 50), timeout=10))
    took = time.monotonic() - t0
    check(took < 1.5, "3 ticks 50 ms apart behind a 2.5 s timer took %.2f s" % took)
    check(len(list(slow)) == 1, "the slow ticker")
    # cancelled streams take their timers with them; the loop goes on
    calls = [tick(struct.pack(">II", 1000, 20), timeout=10) for _ in range(50)]
    for c in calls:
        check(struct.unpack(">Q", next(c))[0] == 0, "first tick")
        c.cancel()
    time.sleep(0.2)
    st = stats(ch)
    check(st["streams"] == 1, "after cancelling the tickers: %s" % st)


def refusals(ch):
    for path in ["/no.such.Service/Method", "/xip83.test.Echo/Nope"] + REAL_PATHS:
        details = expect_status(lambda: list(ch.stream_stream(path)(iter([b"x"]), timeout=10)),
                                grpc.StatusCode.UNIMPLEMENTED, path)
        check(path in details, "UNIMPLEMENTED for %s says %r" % (path, details))
    text = "h\u00e9llo 100% \u2603\nnext line"
    details = expect_status(
        lambda: list(ch.unary_stream(FAIL_PATH)(struct.pack(">I", 14) + text.encode(), timeout=10)),
        grpc.StatusCode.UNAVAILABLE, "Fail")
    check(details == text, "grpc-message came back as %r" % details)
    expect_status(lambda: list(ch.stream_stream(ECHO_PATH)(iter([b"x" * 1000]), timeout=10,
                                                          compression=grpc.Compression.Gzip)),
                  grpc.StatusCode.UNIMPLEMENTED, "gzip")


def frames(port):
    raw = RawH2(port)
    f = raw.wait(lambda f: isinstance(f, hyperframe.frame.SettingsFrame) and "ACK" not in f.flags, "SETTINGS")
    limit = f.settings.get(hyperframe.frame.SettingsFrame.MAX_CONCURRENT_STREAMS)
    check(limit is not None and limit >= 1000, "MAX_CONCURRENT_STREAMS %s" % limit)
    raw.conn.ping(b"xip83-p1")
    raw.flush()
    f = raw.wait(lambda f: isinstance(f, hyperframe.frame.PingFrame) and "ACK" in f.flags, "PING ack")
    check(f.opaque_data == b"xip83-p1", "PING ack carries %r" % f.opaque_data)

    # a message with the compressed flag set, and no grpc-encoding
    sid = raw.request(ECHO_PATH)
    raw.send_message(sid, b"abc", flag=1, end=True)
    status = raw.wait_status(sid, "the answer to a compressed message")
    check(status == 13, "compressed flag: grpc-status %d" % status)

    # the connection goes on: a plain echo on it still works
    sid = raw.request(ECHO_PATH)
    raw.send_message(sid, b"hi", end=True)
    f = raw.wait(lambda f: isinstance(f, hyperframe.frame.DataFrame) and f.stream_id == sid, "echo data")
    check(f.data == b"\x00\x00\x00\x00\x02hi", "raw echo: %r" % f.data)
    status = raw.wait_status(sid, "echo trailers")
    check(status == 0, "raw echo: grpc-status %d" % status)

    # grpc-message on the wire: percent-encoded UTF-8, '%' included
    sid = raw.request(FAIL_PATH)
    raw.send_message(sid, struct.pack(">I", 3) + "bad 100% \u00e9\n".encode(), end=True)
    f = raw.wait(lambda f: isinstance(f, hyperframe.frame.HeadersFrame) and f.stream_id == sid, "Fail's answer")
    check(dict(f.headers).get(b"grpc-message") == b"bad 100%25 %C3%A9%0A", "grpc-message: %s" % f.headers)
    raw.close()


def test():
    srv = Server("--h2c", "127.0.0.1:0")
    ch = srv.channel()
    echo_many(ch)
    server_stream(ch)
    ticks(srv, ch)
    refusals(ch)
    frames(srv.ports["h2c"])
    ch.close()
    check(srv.stop() == 0, "the server exited %s" % srv.proc.returncode)


run(test)
