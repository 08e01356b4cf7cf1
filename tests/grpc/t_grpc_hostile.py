"""Hostile and broken clients cannot hurt the gateway's gRPC transport: an
HTTP/1.1 request that is not gRPC-Web (405, and the connection kept), random bytes before and after the HTTP/2 preface, plaintext
on the TLS port, a request that is not a gRPC call (GET: 405; another
content-type: 415), request headers over 16 KiB, a request that ends inside
a message (INTERNAL), 500 streams opened and reset at once, a rapid-reset
flood (its connection alone ends: GOAWAY), connections
dropped mid-message. Each is answered or closed on its own; afterwards the
server still serves and exits 0 (under make SANITIZE=1, with no report)."""
import random
import socket
import tempfile

import grpc
import hyperframe.frame

from grpctest import ECHO_PATH, RawH2, Server, check, make_cert, run, stats

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


def closed_after(port, data):
    """Sends data; true when the server then closes the connection."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        s.sendall(data)
        while True:
            got = s.recv(65536)
            if not got:
                return True
    except (ConnectionError, socket.timeout) as e:
        return isinstance(e, ConnectionError)
    finally:
        s.close()


def test():
    rnd = random.Random(83)
    with tempfile.TemporaryDirectory() as d:
        cert, key = make_cert(d)
        srv = Server("--h2c", "127.0.0.1:0", "--tls", "127.0.0.1:0", "--cert", cert, "--key", key)
    port, tls_port = srv.ports["h2c"], srv.ports["tls"]

    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    check(s.recv(65536).startswith(b"HTTP/1.1 405 "), "HTTP/1.1 GET was not answered 405")
    s.close()
    check(closed_after(port, bytes(rnd.randrange(256) for _ in range(4096))), "random bytes")
    for _ in range(20):
        junk = bytes(rnd.randrange(256) for _ in range(rnd.randrange(1, 2000)))
        check(closed_after(port, PREFACE + junk), "preface and junk")
    check(closed_after(tls_port, PREFACE + b"\x00" * 100), "plaintext on the TLS port")

    raw = RawH2(port)
    sid = raw.conn.get_next_available_stream_id()
    raw.conn.send_headers(sid, [(":method", "GET"), (":scheme", "http"), (":path", ECHO_PATH),
                                (":authority", "x")], end_stream=True)
    raw.flush()
    f = raw.wait(lambda f: isinstance(f, hyperframe.frame.HeadersFrame) and f.stream_id == sid, "GET answer")
    check(dict(f.headers)[b":status"] == b"405", "GET: %s" % f.headers)
    sid = raw.request(ECHO_PATH, extra=[("x-junk", "a" * 10)])
    raw.conn.send_headers(sid + 2, [(":method", "POST"), (":scheme", "http"), (":path", ECHO_PATH),
                                    (":authority", "x"), ("content-type", "text/plain")], end_stream=True)
    raw.flush()
    f = raw.wait(lambda f: isinstance(f, hyperframe.frame.HeadersFrame) and f.stream_id == sid + 2, "415")
    check(dict(f.headers)[b":status"] == b"415", "text/plain: %s" % f.headers)
    # the request on sid ends inside a message
    raw.send_message(sid, b"short", length=100, end=True)
    status = raw.wait_status(sid, "INTERNAL for a cut message")
    check(status == 13, "cut message: grpc-status %d" % status)
    sid = raw.request(ECHO_PATH, extra=[("x-big-%d" % i, "v" * 1000) for i in range(20)])
    f = raw.wait(lambda f: isinstance(f, hyperframe.frame.RstStreamFrame) and f.stream_id == sid,
                 "RST_STREAM for 20 KB of headers")
    # 500 streams opened and reset at once: the connection goes on
    for _ in range(500):
        raw.conn.reset_stream(raw.request(ECHO_PATH))
    raw.flush()
    raw.conn.ping(b"afterrst")
    raw.flush()
    raw.wait(lambda f: isinstance(f, hyperframe.frame.PingFrame) and f.opaque_data == b"afterrst"
             and "ACK" in f.flags, "PING after the resets")
    # dropped with a message half sent
    sid = raw.request(ECHO_PATH)
    raw.send_message(sid, b"x" * 100, length=50000)
    raw.close()

    # a rapid-reset flood (CVE-2023-44487) ends its own connection only:
    # nghttp2's limit (a burst of 1,000 resets, then 33 a second) answers
    # GOAWAY INTERNAL_ERROR
    raw = RawH2(port)
    try:
        for _ in range(5000):
            raw.conn.reset_stream(raw.request(ECHO_PATH))
    except ConnectionError:
        pass
    f = raw.wait(lambda f: isinstance(f, hyperframe.frame.GoAwayFrame), "GOAWAY for a reset flood")
    check(f.error_code == 2, "reset flood: GOAWAY code %d" % f.error_code)
    raw.close()

    ch = srv.channel()
    check(list(ch.stream_stream(ECHO_PATH)(iter([b"still"]), timeout=10)) == [b"still"], "echo afterwards")
    st = stats(ch)
    check(st["streams"] == 1 and st["connections"] == 1, "nothing left behind: %s" % st)
    ch.close()
    rc = srv.stop()
    check(rc == 0, "the server exited %s: %s" % (rc, srv.proc.stderr.read()[-3000:]))


run(test)
