"""XIP-83 Subscribe over the browser's own WebSocket (subprotocol xip83.v1:
one gRPC length-prefixed message per binary WebSocket message, the status
last with flag 0x80), both bindings at once in headless Chromium, from a
page of an origin --cors-origin allows: the server answers the subprotocol;
Started first; a Mutate's wave above its cursor, tagged with its mutate_id,
TopicsLive, CatchupComplete; live rows exactly once, tagged 0; a page Ping
gets its Pong and the gateway's in-band Pings (--keepalive-ms) are answered
by the page; a second Mutate adds a topic with its backlog, a Mutate that
removes a topic stops its rows. A gateway restart (SIGTERM: each stream
ends UNAVAILABLE in a last status message) is survived by the page, which
reconnects to the same port and adds its topics again from the cursors of
the rows it has: the rows written while the gateway was down and after it
came back arrive exactly once. A text message closes the WebSocket with
1003. A page of an origin not allowed cannot open
the WebSocket."""
import os

from browsertest import (D14N_SUBSCRIBE, V3_SUBSCRIBE, Browser, StaticServer, build, check, free_port,
                         gateway_at, put_envelope, put_group, q, run, take, take_until)

U = os.urandom(4).hex().encode()
UNAVAILABLE = 14


def is_(kind, **fields):
    return lambda e: e["type"] == kind and all(e.get(k) == v for k, v in fields.items())


def wave(b, sid, mutate_id):
    """Up to the CatchupComplete of mutate_id: (its rows, TopicsLive topics, other rows)."""
    got = take_until(b, sid, is_("catchupComplete", mutate=mutate_id), what="CatchupComplete %d" % mutate_id)
    rows = [tuple(r) for e in got if "rows" in e and e["mutate"] == mutate_id for r in e["rows"]]
    other = [tuple(r) for e in got if "rows" in e and e["mutate"] != mutate_id for r in e["rows"]]
    live = [t for e in got if e["type"] == "topicsLive" for t in e["topics"]]
    return rows, live, other


def rows_until(b, sid, n, seconds=20):
    """The next n rows of any lane (Pings, Pongs and the like skipped)."""
    out = []
    while len(out) < n:
        got = take_until(b, sid, lambda e: "rows" in e, seconds, "row %d of %d (have %s)" % (len(out) + 1, n, out))
        out += [tuple(r) for r in got[-1]["rows"]]
    return out


def no_rows(b, sid, seconds=0.5):
    got = [e for e in take(b, sid, 100, seconds) if "rows" in e]
    check(got == [], "no more rows: %s" % got)


def test():
    built = build()
    allowed, refused = StaticServer(built), StaticServer(built)
    port = free_port()
    args = ("--cors-origin", allowed.origin, "--keepalive-ms", "1000", "--drain-ms", "2000")
    g = gateway_at(port, *args)
    b = Browser()
    check(b.goto(allowed.origin + "/index.html") == 200, "the page loads")
    ws = "ws://127.0.0.1:%d" % port

    # v3: group A from a cursor; d14n: topic T of originator N from a cursor
    a, c = b"A" + U, b"C" + U
    ta, tc = "00" + a.hex(), "00" + c.hex()
    ids_a = [put_group(a, b"a%d" % i + U) for i in range(3)]
    n = 1000 + int.from_bytes(os.urandom(2), "big")
    t1, t2 = (b"\x01D" + U).hex(), (b"\x01E" + U).hex()
    for seq in range(1, 4):
        put_envelope(n, seq, bytes.fromhex(t1))
    put_envelope(n + 1, 1, bytes.fromhex(t2))
    for sid, path, d14n in (("v3", V3_SUBSCRIBE, False), ("d", D14N_SUBSCRIBE, True)):
        check(b.js("return await xip83.wsOpen(%s, %s, %s, true);" % (q(sid), q(ws + path), q(d14n))),
              "the WebSocket of %s opens" % sid)
        got = take(b, sid, 2)
        check(len(got) == 2 and got[0] == dict(got[0], type="open", protocol="xip83.v1"),
              "the server answers the subprotocol xip83.v1: %s" % got)
        check(got[1] == dict(got[1], type="started", keepalive=1000), "Started first: %s" % got)
    b.js("xip83.ws('v3').mutate(1, [[%s, %d]], []); xip83.ws('d').mutate(1, [[%s, {%d: 1}]], []);"
         % (q(ta), ids_a[0], q(t1), n))
    rows, live, other = wave(b, "v3", 1)
    check(rows == [(ta, ids_a[1]), (ta, ids_a[2])] and live == [ta] and other == [],
          "v3 wave above the cursor, TopicsLive: %s %s %s" % (rows, live, other))
    rows, live, other = wave(b, "d", 1)
    check(rows == [(n, 2, t1), (n, 3, t1)] and live == [t1] and other == [],
          "d14n wave above the cursor, TopicsLive: %s %s %s" % (rows, live, other))

    # live rows, once each, tagged 0
    la = [put_group(a, b"live%d" % i + U) for i in range(2)]
    put_group(c, b"c-unsubscribed" + U)
    put_envelope(n, 4, bytes.fromhex(t1))
    put_envelope(n + 1, 2, bytes.fromhex(t2))
    check(rows_until(b, "v3", 2) == [(ta, i) for i in la], "v3 live rows")
    check(rows_until(b, "d", 1) == [(n, 4, t1)], "d14n live row")
    no_rows(b, "v3")
    no_rows(b, "d", 0.1)

    # Ping/Pong both ways: the page's Ping, then the gateway's keepalive Ping
    # (answered by the page) while the streams are idle
    b.js("xip83.ws('v3').ping(77); xip83.ws('d').ping(78);")
    take_until(b, "v3", is_("pong", nonce=77), 10, "the Pong of nonce 77")
    take_until(b, "d", is_("pong", nonce=78), 10, "the Pong of nonce 78")
    take_until(b, "v3", is_("ping"), 10, "the gateway's keepalive Ping (v3)")
    take_until(b, "d", is_("ping"), 10, "the gateway's keepalive Ping (d14n)")

    # a second Mutate adds C with its backlog; one that removes A stops A's rows
    b.js("xip83.ws('v3').mutate(2, [[%s, 0]], []); xip83.ws('d').mutate(2, [[%s, {}]], []);" % (q(tc), q(t2)))
    rows, live, _ = wave(b, "v3", 2)
    check(len(rows) == 1 and rows[0][0] == tc and live == [tc], "v3 wave of C: %s %s" % (rows, live))
    rows, live, _ = wave(b, "d", 2)
    check(rows == [(n + 1, 1, t2), (n + 1, 2, t2)] and live == [t2], "d14n wave of E: %s %s" % (rows, live))
    b.js("xip83.ws('v3').mutate(0, [], [%s]); xip83.ws('d').mutate(0, [], [%s]);" % (q(ta), q(t1)))
    take_until(b, "v3", is_("catchupComplete", mutate=0), 10, "the ack of the removal (v3)")
    take_until(b, "d", is_("catchupComplete", mutate=0), 10, "the ack of the removal (d14n)")
    put_group(a, b"a-removed" + U)
    put_envelope(n, 5, bytes.fromhex(t1))
    lc = put_group(c, b"c-live" + U)
    put_envelope(n + 1, 3, bytes.fromhex(t2))
    check(rows_until(b, "v3", 1) == [(tc, lc)], "v3: C's row only after A's removal")
    check(rows_until(b, "d", 1) == [(n + 1, 3, t2)], "d14n: E's row only after D's removal")
    no_rows(b, "v3")
    no_rows(b, "d", 0.1)

    # the gateway restarts: the page reconnects and resubscribes from its cursors
    check(g.stop() == 0, "the gateway exits 0 on SIGTERM")
    for sid in ("v3", "d"):
        got = take_until(b, sid, is_("close"), 10, "the close of %s" % sid)
        st = [e for e in got if e["type"] == "status"]
        check(st and st[-1]["code"] == UNAVAILABLE, "%s ends UNAVAILABLE in its last message: %s" % (sid, got[-3:]))
        check(got[-1]["code"] == 1000, "then the server closes with 1000: %s" % got[-1])
    down = [put_group(c, b"c-down%d" % i + U) for i in range(2)]
    for seq in (4, 5):
        put_envelope(n + 1, seq, bytes.fromhex(t2))
    g = gateway_at(port, *args)
    up = [put_group(c, b"c-up%d" % i + U) for i in range(2)]
    for seq in (6, 7):
        put_envelope(n + 1, seq, bytes.fromhex(t2))
    got = rows_until(b, "v3", 4, 30)
    check(got == [(tc, i) for i in down + up], "v3: the rows of the restart, once, in order: %s" % got)
    got = rows_until(b, "d", 4, 30)
    check(got == [(n + 1, s, t2) for s in (4, 5, 6, 7)], "d14n: the rows of the restart, once, in order: %s" % got)
    no_rows(b, "v3")
    no_rows(b, "d", 0.1)
    check(b.js("return xip83.ws('v3').reconnects;") >= 1, "the page reconnected")

    # a text message is not of the subprotocol: the server closes with 1003
    check(b.js("return await xip83.wsOpen('x', %s, false, false);" % q(ws + V3_SUBSCRIBE)), "a third WebSocket")
    b.js("xip83.ws('x').ws.send('hello');")
    got = take_until(b, "x", is_("close"), 10, "the close after a text message")
    check(got[-1]["code"] == 1003, "a text message closes with 1003: %s" % got)

    # an origin not allowed: the handshake is refused
    check(b.goto(refused.origin + "/index.html") == 200, "the other page loads")
    check(b.js("return await xip83.wsOpen('r', %s, false, false);" % q(ws + V3_SUBSCRIBE)) is False,
          "a WebSocket from an origin not allowed does not open")
    b.close()


if __name__ == "__main__":
    run(test)
