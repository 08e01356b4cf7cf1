"""The transport's timeouts, each against the client it is for, while a
canary Echo stream on a connection of its own keeps answering at once:
a TCP connection that sends no HTTP/2 preface (or part of it), and a TLS
connection that never finishes its handshake, are closed after
--handshake-timeout-ms; a connection with no stream gets GOAWAY(NO_ERROR)
and is closed after --idle-timeout-ms, one with a stream open is not; a
stream holding part of a request message with no new byte of it for
--request-timeout-ms ends RESOURCE_EXHAUSTED while a stream on the same
connection that trickles its message on goes on, and a header block left
unfinished closes its connection. Each is counted, and a new client is
served afterwards."""
import socket
import ssl
import tempfile
import time

import hpack
import hyperframe.frame

from grpctest import (ECHO_PATH, STREAM_PATH, Canary, Failure, RawH2, Server, check,
                      make_cert, run, stats, stream_request)

HANDSHAKE_MS = 600
IDLE_MS = 1500
REQUEST_MS = 1000
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


def closed_within(sock, seconds, t0=None):
    """Seconds from t0 (now) until the server closed sock (reading whatever it
    sent); a Failure after seconds."""
    t0 = time.monotonic() if t0 is None else t0
    sock.settimeout(0.1)
    while time.monotonic() - t0 < seconds:
        try:
            if not sock.recv(65536):
                return time.monotonic() - t0
        except socket.timeout:
            continue
        except ConnectionError:
            return time.monotonic() - t0
    raise Failure("not closed within %.1f s" % seconds)


def handshakes(srv):
    t0 = time.monotonic()
    silent = socket.create_connection(("127.0.0.1", srv.ports["h2c"]))
    partial = socket.create_connection(("127.0.0.1", srv.ports["h2c"]))
    partial.sendall(PREFACE[:10])
    tls = socket.create_connection(("127.0.0.1", srv.ports["tls"]))
    # a ClientHello, and nothing after the server's answer
    hello = socket.create_connection(("127.0.0.1", srv.ports["tls"]))
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.set_alpn_protocols(["h2"])
    out = ssl.MemoryBIO()
    obj = ctx.wrap_bio(ssl.MemoryBIO(), out)
    try:
        obj.do_handshake()
    except ssl.SSLWantReadError:
        pass
    hello.sendall(out.read())
    for sock, what in ((silent, "a silent h2c connection"), (partial, "half a preface"),
                       (tls, "a TLS connection without a ClientHello"),
                       (hello, "a TLS handshake left after the ClientHello")):
        took = closed_within(sock, 5, t0)
        check(took >= HANDSHAKE_MS / 1000 * 0.8, "%s closed after only %.3f s" % (what, took))
        print("%s: closed after %.2f s" % (what, took))
        sock.close()


def idle(srv):
    bare = RawH2(srv.ports["h2c"])
    busy = RawH2(srv.ports["h2c"])
    held = busy.request(STREAM_PATH)
    busy.send_message(held, stream_request(1, 16, hold=True), end=True)
    t0 = time.monotonic()
    f = bare.wait(lambda f: isinstance(f, hyperframe.frame.GoAwayFrame), "GOAWAY on an idle connection", 6)
    took = time.monotonic() - t0
    check(f.error_code == 0, "the idle GOAWAY's error code %d" % f.error_code)
    check(took >= IDLE_MS / 1000 * 0.8, "an idle connection closed after only %.3f s" % took)
    closed_within(bare.sock, 3)
    print("idle connection: GOAWAY after %.2f s, then closed" % took)
    bare.close()
    # the one with a stream open is still served, past twice the idle timeout
    time.sleep(max(0.0, 2 * IDLE_MS / 1000 - (time.monotonic() - t0)))
    sid = busy.request(ECHO_PATH)
    busy.send_message(sid, b"still open", end=True)
    check(busy.wait_status(sid, "an echo on the busy connection") == 0, "echo on the busy connection")
    busy.close()


def requests(srv):
    raw = RawH2(srv.ports["h2c"])
    stuck = raw.request(ECHO_PATH)
    raw.send_message(stuck, b"x" * 10, length=100)
    slow = raw.request(ECHO_PATH)
    raw.send_message(slow, b"y" * 10, length=40)
    t0 = time.monotonic()
    # the slow one gets a byte every third of the timeout: never stalled that long
    for i in range(30):
        time.sleep(REQUEST_MS / 3000)
        raw.conn.send_data(slow, b"y")
        raw.flush()
        if any(isinstance(f, hyperframe.frame.HeadersFrame) and f.stream_id == stuck for f in raw.frames):
            break
        raw.sock.settimeout(0.01)
        try:
            raw.buf += raw.sock.recv(65536)
            raw._parse()
        except socket.timeout:
            pass
    status = raw.wait_status(stuck, "the stalled request's end", 5)
    took = time.monotonic() - t0
    check(status == 8, "the stalled request ended with grpc-status %d, not 8" % status)
    check(took >= REQUEST_MS / 1000 * 0.8, "the stalled request ended after only %.3f s" % took)
    print("stalled request: RESOURCE_EXHAUSTED after %.2f s" % took)
    raw.conn.send_data(slow, b"y" * (40 - 10 - i - 1), end_stream=True)
    raw.flush()
    check(raw.wait_status(slow, "the trickled request's echo") == 0, "the trickled request failed")
    raw.close()

    # a header block that never ends: the connection is closed
    t0 = time.monotonic()
    sock = socket.create_connection(("127.0.0.1", srv.ports["h2c"]))
    block = hpack.Encoder().encode([(":method", "POST"), (":scheme", "http"), (":path", ECHO_PATH),
                                    (":authority", "127.0.0.1"), ("content-type", "application/grpc")])
    sock.sendall(PREFACE + hyperframe.frame.SettingsFrame(0).serialize()
                 + hyperframe.frame.HeadersFrame(1, data=block[:len(block) // 2]).serialize())
    took = closed_within(sock, 6, t0)
    check(took >= REQUEST_MS / 1000 * 0.8, "an unfinished header block closed after only %.3f s" % took)
    print("unfinished header block: connection closed after %.2f s" % took)
    sock.close()


def test():
    with tempfile.TemporaryDirectory() as d:
        cert, key = make_cert(d)
        srv = Server("--h2c", "127.0.0.1:0", "--tls", "127.0.0.1:0", "--cert", cert, "--key", key,
                     "--handshake-timeout-ms", str(HANDSHAKE_MS), "--idle-timeout-ms", str(IDLE_MS),
                     "--request-timeout-ms", str(REQUEST_MS))
    canary = Canary(srv)
    handshakes(srv)
    canary.check("while connections sent no preface")
    idle(srv)
    canary.check("while connections idled")
    requests(srv)
    canary.check("while requests stalled")
    st = stats(canary.ch)
    print(st)
    check(st["handshake_timeout"] >= 4, "handshake timeouts counted: %s" % st)
    check(st["idle_timeout"] >= 1, "idle timeouts counted: %s" % st)
    check(st["request_timeout"] >= 2, "request timeouts counted: %s" % st)
    canary.close()
    # a well-behaved client afterwards
    ch = srv.channel()
    check(list(ch.stream_stream(ECHO_PATH)(iter([b"after"]), timeout=10)) == [b"after"], "echo afterwards")
    ch.close()
    check(srv.stop() == 0, "the server exited %s" % srv.proc.returncode)


run(test)
