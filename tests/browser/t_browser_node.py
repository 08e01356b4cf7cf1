"""xip83-gateway's gRPC-Web from Node: connect-node's gRPC-Web transport
over HTTP/1.1 (the client generated from proto/ by protoc-gen-es) calls
SubscribeGroupMessages, SubscribeTopics and SubscribeWelcomeMessages: the
headers (subscribed: true)
before the first message, the catch-up above the cursors, then live rows
written by the test, each exactly once; both streams at once on one
client; a cancel ends each stream on the gateway (its open-streams gauge
drops to 0). Then HTTP/1.1 itself (http.client): application/grpc-web-text
(base64 both ways) streams a chunked response whose messages and trailer
frame decode; on one kept-alive connection an unknown method ends
UNIMPLEMENTED, Subscribe over gRPC-Web ends UNIMPLEMENTED saying to use the
WebSocket, a preflight from an allowed origin gets 204 with the CORS
headers, one from another origin 403."""
import base64
import http.client
import os

from browsertest import (GROUP_MESSAGES, TOPICS, V3_SUBSCRIBE, Failure, NodeClient, build, check, gateway, group_stream,
                         open_streams, put_group, q, run, take, topics_stream, wait_for)
from gatewaytest import WELCOME_MESSAGES, put_welcome
from gatewaytest import M, V3, msg

ORIGIN = "http://app.example"
UNIMPLEMENTED = 12


def frames(data):
    """gRPC-Web frames in data: [(flag, bytes)] and what is left."""
    out = []
    while len(data) >= 5 and len(data) >= 5 + int.from_bytes(data[1:5], "big"):
        n = int.from_bytes(data[1:5], "big")
        out.append((data[0], data[5:5 + n]))
        data = data[5 + n:]
    return out, data


def unbase64(text):
    """Decodes base64 text made of padded pieces (one per message): (bytes, text left)."""
    out = b""
    while text:
        end = text.find(b"=")
        if end >= 0:
            while end < len(text) and text[end:end + 1] == b"=":
                end += 1
        elif len(text) >= 4:
            end = len(text) - len(text) % 4
        else:
            break
        out += base64.b64decode(text[:end])
        text = text[end:]
    return out, text


def trailer(resp):
    """The trailer frame of a finished gRPC-Web response: {name: value}."""
    body = resp.read()
    if resp.getheader("content-type", "").startswith("application/grpc-web-text"):
        body, _ = unbase64(body)
    fs, rest = frames(body)
    check(rest == b"" and fs and fs[-1][0] == 0x80, "a trailer frame last: %r" % body)
    return dict(line.split(": ", 1) for line in fs[-1][1].decode().split("\r\n") if line)


def raw(port):
    u = os.urandom(4).hex().encode()
    group = b"H" + u
    ids = [put_group(group, b"h%d" % i + u) for i in range(2)]
    req = msg(V3 + "SubscribeGroupMessagesRequest",
              filters=[msg(V3 + "SubscribeGroupMessagesRequest.Filter", group_id=group)]).SerializeToString()
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    c.request("POST", GROUP_MESSAGES, base64.b64encode(b"\0" + len(req).to_bytes(4, "big") + req),
              {"Content-Type": "application/grpc-web-text", "X-Grpc-Web": "1", "Accept": "application/grpc-web-text"})
    resp = c.getresponse()
    check(resp.status == 200, "grpc-web-text: 200, not %d" % resp.status)
    check(resp.getheader("content-type", "").startswith("application/grpc-web-text"),
          "the response is grpc-web-text: %s" % resp.getheader("content-type"))
    check(resp.getheader("transfer-encoding") == "chunked", "streamed chunked: %s" % resp.getheaders())
    check(resp.getheader("subscribed") == "true", "subscribed: true: %s" % resp.getheaders())
    text, data, got = b"", b"", []
    while len(got) < 2:
        piece = resp.read1(65536)
        check(piece, "the stream ended early: %r" % data)
        dec, text = unbase64(text + piece)
        fs, data = frames(data + dec)
        got += [M[V3 + "GroupMessage"].FromString(m).v1.id for flag, m in fs if flag == 0]
    check(got == ids, "grpc-web-text: the catch-up decodes: %s" % got)
    c.close()

    # http.client writes the headers and the body apart, as browsers may: the
    # connection must stay usable whenever the body comes
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    for i, (path, what, word) in enumerate((("/xip83.Nothing/Here", "an unknown method", ""),
                                            (V3_SUBSCRIBE, "Subscribe over gRPC-Web", "WebSocket"))):
        try:
            c.request("POST", path, b"\0\0\0\0\0", {"Content-Type": "application/grpc-web+proto", "X-Grpc-Web": "1"})
            resp = c.getresponse()
        except (ConnectionError, http.client.HTTPException) as e:
            raise Failure("%s, request %d on a kept-alive connection: %r (the connection was closed after"
                          " the last response, which said nothing of it)" % (what, i + 1, e))
        t = trailer(resp) if resp.getheader("grpc-status") is None else dict(resp.getheaders())
        check(t.get("grpc-status") == str(UNIMPLEMENTED) and word in t.get("grpc-message", ""),
              "%s: UNIMPLEMENTED (%s)" % (what, t))
    try:
        c.request("OPTIONS", GROUP_MESSAGES, headers={"Origin": ORIGIN, "Access-Control-Request-Method": "POST",
                                                      "Access-Control-Request-Headers": "content-type,x-grpc-web"})
        resp = c.getresponse()
    except (ConnectionError, http.client.HTTPException) as e:
        raise Failure("a preflight, request 3 on a kept-alive connection: %r (the connection was closed after"
                      " the last response, which said nothing of it)" % (e,))
    resp.read()
    h = {k.lower(): v for k, v in resp.getheaders()}
    check(resp.status == 204 and h.get("access-control-allow-origin") == ORIGIN
          and "POST" in h.get("access-control-allow-methods", "")
          and "x-grpc-web" in h.get("access-control-allow-headers", "").lower(),
          "a preflight of an allowed origin, on the same connection: %d %s" % (resp.status, h))
    c.request("OPTIONS", GROUP_MESSAGES, headers={"Origin": "http://other.example",
                                                  "Access-Control-Request-Method": "POST"})
    resp = c.getresponse()
    resp.read()
    check(resp.status == 403 and resp.getheader("access-control-allow-origin") is None,
          "a preflight of another origin: 403, not %d %s" % (resp.status, resp.getheaders()))
    c.close()


def welcome_stream(n, base):
    """SubscribeWelcomeMessages: headers, the catch-up from cursor 0, a live
    welcome once, nothing for another installation."""
    u = os.urandom(4).hex().encode()
    key = b"K" + u
    first = put_welcome(key, b"w0" + u)
    n.js("xip83.grpcWeb(xip83.transport(%s), 'w', 'welcome', [[%s, 0]]);" % (q(base), q(key.hex())))
    got = take(n, "w", 2)
    check([e["type"] for e in got] == ["headers", "message"] and got[0]["subscribed"] == "true"
          and got[1]["id"] == first and got[1]["key"] == key.hex(), "headers, then the welcome: %s" % got)
    put_welcome(b"L" + u, b"other" + u)
    live = put_welcome(key, b"w1" + u)
    got = take(n, "w", 1)
    check([e.get("id") for e in got] == [live], "the live welcome: %s" % got)
    check(take(n, "w", 1, 0.5) == [], "nothing more")


def test():
    built = build()
    g = gateway("--metrics", "127.0.0.1:0", "--cors-origin", ORIGIN)
    base = "http://127.0.0.1:%d" % g.ports["h2c"]
    n = NodeClient(built)
    group_stream(n, base, "g")
    topics_stream(n, base, "t")
    welcome_stream(n, base)
    methods = (GROUP_MESSAGES, TOPICS, WELCOME_MESSAGES)
    wait_for(lambda: [open_streams(g, m) for m in methods] == [1, 1, 1], 10, "one open stream of each method")
    n.js("xip83.cancel('g'); xip83.cancel('t'); xip83.cancel('w');")
    wait_for(lambda: [open_streams(g, m) for m in methods] == [0, 0, 0], 10, "the cancelled streams freed on the gateway")
    n.close()
    raw(g.ports["h2c"])
    wait_for(lambda: open_streams(g, GROUP_MESSAGES) == 0, 10, "the grpc-web-text stream freed when its connection closed")


if __name__ == "__main__":
    run(test)
