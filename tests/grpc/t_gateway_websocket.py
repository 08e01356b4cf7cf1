"""XIP-83 Subscribe over a WebSocket (subprotocol xip83.v1), both bindings,
from a WebSocket client written in the test: Started, a wave, TopicsLive,
CatchupComplete, live rows exactly once, XIP-83 Ping/Pong in band and a
WebSocket ping answered, a Mutate that removes a topic; the client's close
ends the stream (no trailer, close 1000); refusals of the Upgrade (no
subprotocol, an origin not listed, a path that is not a bidirectional
method); protocol errors close the WebSocket (a text message 1003, two gRPC
messages in one WebSocket message 1002, a message announced over the limit
1009), a flood of pings from a client that reads none of the pongs is cut
off; a drain ends an open stream with the UNAVAILABLE trailer, then
close 1000."""
import os
import time

from gatewaytest import V3, GROUP_MESSAGES, V3_SUBSCRIBE, gateway, msg, put_envelope, put_group, put_welcome
from grpctest import check, run
from webtest import Conn, WebSocket, WsStream, expect_end, frame

U = os.urandom(4).hex().encode()
ORIGIN = "https://app.example"


def v3(port):
    a, b, k = b"A" + U, b"B" + U, b"K" + U
    ids_a = [put_group(a, b"a%d" % i + U) for i in range(3)]
    id_k = put_welcome(k, b"k0" + U)
    s = WsStream(port, origin=ORIGIN)
    s.started()
    s.mutate(1, adds=[(b"\x00" + a, ids_a[0]), (b"\x01" + k, 0), (b"\x00" + b, 0)])
    rows, live, other = s.wave(1)
    check(sorted(rows) == sorted([("g", ids_a[1]), ("g", ids_a[2]), ("w", id_k)]), "the wave: %s" % rows)
    check(sorted(live) == sorted([b"\x00" + a, b"\x01" + k, b"\x00" + b]), "TopicsLive: %s" % live)
    check(other == [], "nothing else during the wave: %s" % other)
    la = put_group(a, b"a-live" + U)
    lk = put_welcome(k, b"k-live" + U)
    check(sorted(s.live_rows(2)) == sorted([("g", la), ("w", lk)]), "live rows")
    # Ping/Pong in band, and a WebSocket ping answered beside it
    s.pong(7, 10, "over the WebSocket")
    s.ws.send_frame(9, b"are you there")
    t0 = time.monotonic()
    while b"are you there" not in s.ws.pongs:
        check(time.monotonic() - t0 < 10, "no WebSocket pong")
        time.sleep(0.05)
    # a removal stops A
    s.mutate(0, removes=[b"\x00" + a])
    time.sleep(0.3)
    put_group(a, b"a-gone" + U)
    lb = put_group(b, b"b-live" + U)
    check(s.live_rows(1) == [("g", lb)], "only B after A's removal")
    # the client's close is a cancel: the server's close answers it, no trailer
    s.close()
    err = s.end()
    check(err.status == -1 and err.close == 1000, "the client's close: %r %s" % (err, err.close))


def d14n(port):
    t1, t2 = b"\x00W1" + U, b"\x03W2" + U
    node = 2000 + int(U, 16) % 100000
    put_envelope(node, 1, t1)
    s = WsStream(port, d14n=True)
    s.started()
    s.mutate(9, adds=[(t1, {}), (t2, {})])
    rows, live, other = s.wave(9)
    check(rows == [(node, 1)], "the d14n wave: %s" % rows)
    check(sorted(live) == sorted([t1, t2]), "TopicsLive: %s" % live)
    put_envelope(node, 2, t2)
    check(s.live_rows(1) == [(node, 2)], "a live envelope")
    return s


def refusals(port):
    conn = Conn(port)
    ws = WebSocket(conn, V3_SUBSCRIBE, protocol=None)
    check(ws.status == 400, "no subprotocol: %d" % ws.status)
    conn = Conn(port)
    ws = WebSocket(conn, V3_SUBSCRIBE, origin="https://evil.example")
    check(ws.status == 403, "an origin not listed: %d" % ws.status)
    conn = Conn(port)
    ws = WebSocket(conn, GROUP_MESSAGES)
    check(ws.status == 404, "a server stream's path: %d" % ws.status)

    ping = msg(V3 + "SubscribeRequest", v1=msg(V3 + "SubscribeRequest.V1", ping=msg(V3 + "Ping", nonce=1)))
    ping = frame(ping.SerializeToString())
    for what, send, code in (
            ("a text message", lambda ws: ws.send_frame(1, b"hello"), 1003),
            ("two gRPC messages in one", lambda ws: ws.send_frame(2, ping + ping), 1002),
            ("a message announced over the limit",
             lambda ws: ws.send_frame(2, b"\x00" + (65 << 20).to_bytes(4, "big") + b"\x0a"), 1009)):
        ws = WebSocket(Conn(port), V3_SUBSCRIBE)
        check(ws.status == 101, "the Upgrade")
        send(ws)
        while True:
            op, payload = ws.recv()
            if op == 8:
                break
        check(payload == code, "%s: close %s, not %d" % (what, payload, code))


def ping_flood(port):
    ws = WebSocket(Conn(port), V3_SUBSCRIBE)
    check(ws.status == 101, "the Upgrade")
    mask = b"\x01\x02\x03\x04"
    ping = bytes([0x89, 0x80 | 125]) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(b"p" * 125))
    t0 = time.monotonic()
    ws.conn.sock.settimeout(10)
    try:
        for _ in range(100):
            ws.conn.sock.sendall(ping * 1000)
        raise AssertionError("13 MB of pings taken by a client that reads nothing")
    except (ConnectionError, TimeoutError):
        pass
    check(time.monotonic() - t0 < 9, "cut off in %.1f s" % (time.monotonic() - t0))
    ws.conn.close()


def test():
    srv = gateway("--cors-origin", ORIGIN, "--keepalive-ms", "30000")
    port = srv.ports["h2c"]
    v3(port)
    refusals(port)
    ping_flood(port)
    s = d14n(port)
    srv.proc.send_signal(15)
    err = expect_end(s, 14, "a drained WebSocket stream", close=1000)
    check("shutting down" in err.message, "the drain's message: %s" % err.message)
    check(srv.proc.wait(20) == 0, "the gateway's exit")


run(test)
