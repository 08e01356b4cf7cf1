"""Hostile and broken browsers' connections cannot hurt xip83-gateway: random
bytes that are not HTTP (400), a body of random bytes, a chunked body with a
bad chunk size, base64 text that is not, two requests pipelined (the first
answered, then closed), a connection dropped mid-request and mid-response,
an Upgrade followed by junk or dropped mid-frame, data after a WebSocket
close; many calls cancelled by closing their connections. Afterwards the
gateway still serves, holds no stream, and exits 0 on SIGTERM (under make
SANITIZE=1, with no report)."""
import os
import random
import socket
import struct
import time
import urllib.request

from gatewaytest import GROUP_MESSAGES, V3, V3_SUBSCRIBE, gateway, msg, put_group
from grpctest import check, run
from webtest import Conn, WebReader, WebSocket, WsStream

U = os.urandom(4).hex().encode()
F = V3 + "SubscribeGroupMessagesRequest.Filter"


def send_and_drain(port, data, timeout=5):
    """Sends data; what comes back until the server closes (or timeout)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    got = b""
    try:
        s.sendall(data)
        while True:
            b = s.recv(65536)
            if not b:
                break
            got += b
    except (ConnectionError, socket.timeout):
        pass
    finally:
        s.close()
    return got


def post(path, body, ctype="application/grpc-web", extra=b"Connection: close\r\n"):
    return (b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: %s\r\nContent-Length: %d\r\n%s\r\n"
            % (path.encode(), ctype.encode(), len(body), extra)) + body


def metric(srv, name):
    """The sum of a metric's lines."""
    text = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % srv.ports["metrics"], timeout=10).read()
    return sum(float(line.split()[-1]) for line in text.decode().splitlines()
               if line.startswith(name + " ") or line.startswith(name + "{"))


def test():
    rnd = random.Random(47)
    t0 = time.monotonic()
    srv = gateway("--metrics", "127.0.0.1:0", "--request-timeout-ms", "1000")
    port = srv.ports["h2c"]
    g = b"X" + U
    put_group(g, b"x" + U)
    req = msg(V3 + "SubscribeGroupMessagesRequest", filters=[msg(F, group_id=g, id_cursor=0)]).SerializeToString()
    good = struct.pack(">BI", 0, len(req)) + req

    got = send_and_drain(port, b"GET" + bytes(rnd.randrange(256) for _ in range(4096)))
    check(got.startswith(b"HTTP/1.1 400 "), "random bytes: %r" % got[:40])
    for _ in range(4):
        junk = bytes(rnd.randrange(256) for _ in range(rnd.randrange(1, 3000)))
        send_and_drain(port, post(GROUP_MESSAGES, junk + b"\x00" * 5), timeout=3)
    got = send_and_drain(port, b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/grpc-web\r\n"
                         b"Transfer-Encoding: chunked\r\n\r\nzz\r\n" % GROUP_MESSAGES.encode())
    check(b" 400 " in got.split(b"\r\n")[-1] or b"HTTP/1.1 400" in got or b"HTTP/1.1 200" in got,
          "a bad chunk size: %r" % got[:80])
    got = send_and_drain(port, post(GROUP_MESSAGES, b"!!!!not base64", "application/grpc-web-text"))
    check(b"grpc-status: 13" in __import__("base64").b64decode(got.split(b"\r\n\r\n", 1)[1].split(b"\r\n")[1]),
          "text that is not base64: %r" % got[:300])
    got = send_and_drain(port, post("/nope/A", b"", extra=b"") + post("/nope/B", b""), timeout=3)
    check(got.count(b"HTTP/1.1 ") >= 1, "pipelined: %r" % got[:200])

    # dropped mid-request, mid-response, and many calls cancelled by a close
    for i in range(30):
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        data = post(GROUP_MESSAGES, good)
        s.sendall(data[:rnd.randrange(1, len(data))] if i % 2 else data)
        if i % 3 == 0:
            time.sleep(0.01)
        s.close()

    # WebSockets: junk after the Upgrade, dropped mid-frame, data after a close
    for what in ("junk", "cut", "after-close"):
        conn = Conn(port)
        ws = WebSocket(conn, V3_SUBSCRIBE)
        check(ws.status == 101, "the Upgrade (%s)" % what)
        if what == "junk":
            conn.sock.sendall(bytes(rnd.randrange(256) for _ in range(2000)))
        elif what == "cut":
            conn.sock.sendall(b"\x82\xfe\x10\x00\x01\x02\x03\x04abc")
        else:
            ws.close()
            try:
                ws.send(b"late")
            except OSError:
                pass
        time.sleep(0.05)
        conn.close()
    for _ in range(20):
        s = WsStream(port)
        s.started()
        s.mutate(1, adds=[(b"\x00" + g, 0)])
        s.conn.close()

    # still serving, and nothing left behind
    r = WebReader(Conn(port), GROUP_MESSAGES, msg(V3 + "SubscribeGroupMessagesRequest",
                                                  filters=[msg(F, group_id=g, id_cursor=0)]), V3 + "GroupMessage")
    check(r.next().v1.data == b"x" + U, "served after all that")
    r.web.conn.close()
    deadline = time.monotonic() + 10
    while True:
        streams = metric(srv, "xip83_gateway_streams")
        if streams == 0 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    check(streams == 0, "streams left open: %s" % streams)
    print("t_gateway_web_hostile: %.1f s" % (time.monotonic() - t0))
    check(srv.stop() == 0, "the gateway's exit: %s" % srv.proc.stderr.read()[-2000:])


run(test)
