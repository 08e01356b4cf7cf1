"""xip83-gateway's gRPC-Web over HTTP/1.1, from raw sockets: the server
streams in binary and in base64 text (the wave, then live rows as they are
written, the response's head at once with subscribed: true), the trailer
message on the same connection kept alive for a second call; CORS (a
preflight allowed and one refused, the headers exposed, none for an origin
not listed); UNIMPLEMENTED for an unknown path and for the bidirectional
Subscribe (which says to use the WebSocket); a request answered at its head
whose body comes later keeps its connection; Expect: 100-continue; an
oversized request (RESOURCE_EXHAUSTED), headers over 16 KiB (431), a
request whose body never completes (ended by --request-timeout-ms);
gRPC-Web on an HTTP/2 stream (the trailer message in the body, END_STREAM
on its DATA, no trailers HEADERS); h2c and HTTP/1.1 on one port; over TLS,
ALPN http/1.1; and a drain that ends an open call UNAVAILABLE."""
import base64
import os
import socket
import struct
import ssl
import tempfile
import time

from gatewaytest import (D14N, GROUP_MESSAGES, TOPICS, V3, V3_SUBSCRIBE, Reader, envelope_position, gateway,
                         msg, put_envelope, put_group)
import hyperframe.frame

from grpctest import RawH2, check, make_cert, run
from webtest import Conn, WebCall, WebReader, expect_end

U = os.urandom(4).hex().encode()
ORIGIN = "http://app.example"
F = V3 + "SubscribeGroupMessagesRequest.Filter"


def groups_request(group, cursor=0):
    return msg(V3 + "SubscribeGroupMessagesRequest", filters=[msg(F, group_id=group, id_cursor=cursor)])


def streams(port, text):
    """A wave and live rows on one connection; a second call on it after the first ends."""
    g = (b"T" if text else b"B") + U
    ids = [put_group(g, b"w%d" % i + U) for i in range(3)]
    conn = Conn(port)
    t0 = time.monotonic()
    r = WebReader(conn, GROUP_MESSAGES, groups_request(g), V3 + "GroupMessage", text=text,
                  headers=[("Origin", ORIGIN)])
    check(time.monotonic() - t0 < 10, "the head at once")
    h = r.web.headers
    check(h.get("subscribed") == "true", "subscribed: true in the head: %s" % h)
    check(h.get("content-type") == ("application/grpc-web-text+proto" if text else "application/grpc-web+proto"),
          "content type %s" % h.get("content-type"))
    check(h.get("transfer-encoding") == "chunked", "chunked")
    check(h.get("access-control-allow-origin") == ORIGIN and "grpc-status" in
          h.get("access-control-expose-headers", ""), "CORS on an allowed origin: %s" % h)
    got = [m.v1.id for m in r.take(3)]
    check(got == ids, "the wave: %s, not %s" % (got, ids))
    live = put_group(g, b"live" + U)
    m = r.next()
    check((m.v1.id, m.v1.data) == (live, b"live" + U), "the live row: %s" % m)
    r.quiet(0.3)
    conn.sock.shutdown(socket.SHUT_RDWR)
    conn.close()

    # an unknown method: UNIMPLEMENTED, and the connection serves the next call
    conn = Conn(port)
    call = WebCall(conn, "/xmtp.mls.api.v1.MlsApi/NoSuchMethod", b"", text=text)
    check(call.status == 200, "status %d" % call.status)
    try:
        list(call)
        raise AssertionError("no error")
    except Exception as e:
        check(getattr(e, "status", None) == 12, "unknown method: %r" % e)
    r = WebReader(conn, GROUP_MESSAGES, groups_request(g, ids[-1]), V3 + "GroupMessage", text=text)
    m = r.next()
    check(m.v1.id == live, "a second call on the kept-alive connection: %s" % m)
    conn.close()


def cors(port):
    conn = Conn(port)
    conn.request("OPTIONS", GROUP_MESSAGES, [("Origin", ORIGIN), ("Access-Control-Request-Method", "POST"),
                                             ("Access-Control-Request-Headers",
                                              "content-type,x-grpc-web,x-evil,x-user-agent")])
    status, h = conn.head()
    check(status == 204, "preflight allowed: %d" % status)
    check(h.get("access-control-allow-origin") == ORIGIN, "allow-origin %s" % h)
    check(h.get("access-control-allow-headers") == "content-type, x-grpc-web, x-user-agent",
          "allowed headers %s" % h.get("access-control-allow-headers"))
    check("POST" in h.get("access-control-allow-methods", "") and h.get("access-control-max-age") == "600",
          "methods and max-age %s" % h)
    # refused on the same connection, kept alive
    conn.request("OPTIONS", GROUP_MESSAGES, [("Origin", "http://evil.example"),
                                             ("Access-Control-Request-Method", "POST")])
    status, h = conn.head()
    check(status == 403 and "access-control-allow-origin" not in h, "preflight refused: %d %s" % (status, h))
    # a call from an origin not listed: served, without CORS headers (the browser refuses it)
    call = WebCall(conn, "/nope/Nope", b"", headers=[("Origin", "http://evil.example")])
    check(not any(k.startswith("access-control") for k in call.headers), "no CORS headers: %s" % call.headers)
    conn.close()


def refusals(port):
    conn = Conn(port)
    call = WebCall(conn, V3_SUBSCRIBE, b"")
    try:
        list(call)
        raise AssertionError("no error")
    except Exception as e:
        check(getattr(e, "status", None) == 12 and "WebSocket" in e.message and "xip83.v1" in e.message,
              "Subscribe over gRPC-Web: %r" % e)
    # a request message announced over the gateway's limit (64 MiB): refused at its prefix
    conn.request("POST", GROUP_MESSAGES, [("Content-Type", "application/grpc-web")],
                 b"\x00" + (65 << 20).to_bytes(4, "big") + b"\x0a")
    status, _ = conn.head()
    frames = list(WebCall.frames(type("C", (), {"conn": conn, "text": False})()))
    check(status == 200 and frames[-1][0] == 0x80 and b"grpc-status: 8" in frames[-1][1],
          "an oversized request: %s" % frames)
    conn.close()

    # the head answered before the body came (as http.client and browsers may
    # send them apart): the body is read and dropped, and the connection goes on
    conn = Conn(port)
    conn.sock.sendall(b"POST /nope/Nope HTTP/1.1\r\nHost: x\r\nContent-Type: application/grpc-web\r\n"
                      b"Content-Length: 5\r\n\r\n")
    call = WebCall.__new__(WebCall)
    call.conn, call.text = conn, False
    call.status, call.headers = conn.head()
    check("connection" not in call.headers, "the early answer keeps the connection: %s" % call.headers)
    frames = list(call.frames())
    check(b"grpc-status: 12" in frames[-1][1], "answered at its head: %s" % frames)
    conn.sock.sendall(b"\x00\x00\x00\x00\x00")
    try:
        list(WebCall(conn, "/nope/Again", b""))
        raise AssertionError("no error")
    except Exception as e:
        check(getattr(e, "status", None) == 12, "the next request on it: %r" % e)
    conn.close()

    # Expect: 100-continue (curl, before a larger body): asked, then answered
    conn = Conn(port)
    conn.sock.sendall(b"POST /nope/Nope HTTP/1.1\r\nHost: x\r\nContent-Type: application/grpc-web\r\n"
                      b"Expect: 100-continue\r\nContent-Length: 5\r\n\r\n")
    check(conn.head()[0] == 100, "100 Continue")
    conn.sock.sendall(b"\x00\x00\x00\x00\x00")
    call = WebCall.__new__(WebCall)
    call.conn, call.text = conn, False
    call.status, call.headers = conn.head()
    check(call.status == 200 and b"grpc-status: 12" in list(call.frames())[-1][1], "after 100 Continue")
    conn.close()

    # headers over 16 KiB: 431, closed
    conn = Conn(port)
    conn.request("POST", GROUP_MESSAGES, [("X-Big", "a" * 20000)])
    status, _ = conn.head()
    check(status == 431, "huge headers: %d" % status)
    conn.close()

    # a body that never completes: the request timeout ends it
    conn = Conn(port)
    t0 = time.monotonic()
    conn.sock.sendall(b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/grpc-web\r\n"
                      b"Content-Length: 100\r\n\r\n\x00\x00\x00\x00" % GROUP_MESSAGES.encode())
    status, _ = conn.head()
    frames = list(WebCall.frames(type("C", (), {"conn": conn, "text": False})()))
    elapsed = time.monotonic() - t0
    check(frames and frames[-1][0] == 0x80 and b"grpc-status: 8" in frames[-1][1],
          "a stalled request ends RESOURCE_EXHAUSTED: %s" % frames)
    check(0.8 < elapsed < 8, "after the request timeout: %.2f s" % elapsed)
    try:
        conn.more()
        raise AssertionError("still open")
    except (EOFError, ConnectionError):
        pass
    conn.close()

    # a head that never completes: closed
    conn = Conn(port)
    conn.sock.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nX-Slow: ")
    t0 = time.monotonic()
    try:
        conn.more()
        raise AssertionError("answered %r" % conn.buf)
    except (EOFError, ConnectionError):
        pass
    check(time.monotonic() - t0 < 8, "a stalled head closed in %.2f s" % (time.monotonic() - t0))
    conn.close()


def over_h2(port):
    g = b"H" + U
    i = put_group(g, b"h2" + U)
    raw = RawH2(port)
    sid = raw.conn.get_next_available_stream_id()
    raw.conn.send_headers(sid, [(":method", "POST"), (":scheme", "http"), (":path", GROUP_MESSAGES),
                                (":authority", "x"), ("content-type", "application/grpc-web-text"),
                                ("origin", ORIGIN)])
    body = groups_request(g).SerializeToString()
    raw.conn.send_data(sid, base64.b64encode(struct.pack(">BI", 0, len(body)) + body), end_stream=True)
    raw.flush()
    f = raw.wait(lambda f: isinstance(f, hyperframe.frame.HeadersFrame) and f.stream_id == sid, "the head")
    h = dict(f.headers)
    check(h[b":status"] == b"200" and h[b"content-type"] == b"application/grpc-web-text+proto"
          and h.get(b"access-control-allow-origin") == ORIGIN.encode(), "the head over HTTP/2: %s" % h)
    f = raw.wait(lambda f: isinstance(f, hyperframe.frame.DataFrame) and f.stream_id == sid and f.data, "a row")
    m = base64.b64decode(f.data)
    got = msg(V3 + "GroupMessage").FromString(m[5:])
    check(got.v1.id == i, "the row over HTTP/2: %s" % got)
    # an unknown method: no trailers-only HEADERS, the trailer message ends the body
    sid = raw.conn.get_next_available_stream_id()
    raw.conn.send_headers(sid, [(":method", "POST"), (":scheme", "http"), (":path", "/nope/Nope"),
                                (":authority", "x"), ("content-type", "application/grpc-web+proto")],
                          end_stream=True)
    raw.flush()
    f = raw.wait(lambda f: isinstance(f, hyperframe.frame.HeadersFrame) and f.stream_id == sid, "the head")
    check(b"grpc-status" not in dict(f.headers) and "END_STREAM" not in f.flags, "a head, not trailers-only")
    f = raw.wait(lambda f: isinstance(f, hyperframe.frame.DataFrame) and f.stream_id == sid, "the body")
    check(f.data[0] == 0x80 and b"grpc-status: 12" in f.data and "END_STREAM" in f.flags,
          "the trailer message ends the stream: %r %s" % (f.data, f.flags))
    raw.close()


def sniffing(srv):
    """h2c (grpcio) and HTTP/1.1 on the same port, at once."""
    t = b"\x05" + U
    node = 1000 + int(U, 16) % 100000
    put_envelope(node, 1, t)
    req = msg(D14N + "SubscribeTopicsRequest",
              filters=[msg(D14N + "SubscribeTopicsRequest.TopicFilter", topic=t)])
    ch = srv.channel()
    h2 = Reader(ch, TOPICS, req, D14N + "SubscribeTopicsResponse")
    web = WebReader(Conn(srv.ports["h2c"]), TOPICS, req, D14N + "SubscribeTopicsResponse")
    for r in (h2, web):
        seen = []
        while (node, 1) not in seen:
            m = r.next()
            seen += [envelope_position(e) for e in m.envelopes.envelopes]
    put_envelope(node, 2, t)
    for r in (h2, web):
        seen = []
        while (node, 2) not in seen:
            seen += [envelope_position(e) for e in r.next().envelopes.envelopes]
    h2.call.cancel()
    ch.close()
    return web


def tls(cert, key):
    srv = gateway("--tls-cert", cert, "--tls-key", key)
    g = b"S" + U
    i = put_group(g, b"tls" + U)
    ctx = ssl.create_default_context(cafile=cert)
    ctx.set_alpn_protocols(["http/1.1"])
    sock = ctx.wrap_socket(socket.create_connection(("127.0.0.1", srv.ports["tls"]), timeout=30),
                           server_hostname="localhost")
    check(sock.selected_alpn_protocol() == "http/1.1", "ALPN %s" % sock.selected_alpn_protocol())
    r = WebReader(Conn(sock=sock), GROUP_MESSAGES, groups_request(g), V3 + "GroupMessage")
    check(r.next().v1.id == i, "gRPC-Web over TLS")
    check(srv.stop() == 0, "the TLS gateway's exit")


def test():
    srv = gateway("--cors-origin", "http://other.example," + ORIGIN, "--request-timeout-ms", "1000")
    port = srv.ports["h2c"]
    streams(port, text=False)
    streams(port, text=True)
    cors(port)
    refusals(port)
    over_h2(port)
    web = sniffing(srv)
    # drain: the open call ends UNAVAILABLE, its connection closes
    srv.proc.send_signal(15)
    expect_end(web, 14, "a drained gRPC-Web call")
    check(srv.proc.wait(20) == 0, "the gateway's exit")
    with tempfile.TemporaryDirectory() as d:
        tls(*make_cert(d))


run(test)
