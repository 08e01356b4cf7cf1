"""Browsers' ways into xip83-gateway, spoken from Python on raw sockets for
tests/grpc/t_gateway_web*.py: gRPC-Web over HTTP/1.1 (binary and base64
text, a chunked response read as it streams) and XIP-83 Subscribe over a
WebSocket (subprotocol xip83.v1, the framing written here: RFC 6455, client
frames masked). Calls look like grpcio's to gatewaytest's Responses, Reader
and Stream: iterables of messages that end by raising WebStatus (an RpcError
with code() and details()) unless the status is OK."""
import base64
import os
import socket
import struct

import grpc

from gatewaytest import D14N, D14N_SUBSCRIBE, M, V3, V3_SUBSCRIBE, Reader, Responses, Stream
from grpctest import Failure, check

WEB = "application/grpc-web+proto"
TEXT = "application/grpc-web-text+proto"
CODES = {c.value[0]: c for c in grpc.StatusCode}


class WebStatus(grpc.RpcError):
    """A call's end: its status, message and, for a WebSocket, the close code."""

    def __init__(self, status, message, close=None):
        grpc.RpcError.__init__(self, "%s %s" % (status, message))
        self.status, self.message, self.close = status, message, close

    def code(self):
        return CODES.get(self.status, grpc.StatusCode.UNKNOWN)

    def details(self):
        return self.message


def frame(payload, flag=0):
    return struct.pack(">BI", flag, len(payload)) + payload


def trailer_fields(payload):
    out = {}
    for line in payload.decode().split("\r\n"):
        if line:
            k, _, v = line.partition(":")
            out[k.strip().lower()] = v.strip()
    return out


class Conn:
    """An HTTP/1.1 connection (plain, or a socket wrapped in TLS already)."""

    def __init__(self, port=None, sock=None, timeout=30):
        self.sock = sock or socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.buf = b""

    def more(self):
        got = self.sock.recv(65536)
        if not got:
            raise EOFError("the server closed the connection")
        self.buf += got

    def line(self):
        while b"\r\n" not in self.buf:
            self.more()
        line, _, self.buf = self.buf.partition(b"\r\n")
        return line

    def take(self, n):
        while len(self.buf) < n:
            self.more()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def head(self):
        """The response's status (int) and headers (lower-cased names)."""
        status = int(self.line().split(b" ")[1])
        headers = {}
        while True:
            line = self.line()
            if not line:
                return status, headers
            k, _, v = line.decode("latin-1").partition(":")
            headers[k.strip().lower()] = v.strip()

    def chunks(self):
        """A chunked body's chunks, as they come."""
        while True:
            n = int(self.line().split(b";")[0], 16)
            data = self.take(n)
            check(self.take(2) == b"\r\n", "a chunk's end")
            if n == 0:
                return
            yield data

    def request(self, method, path, headers=(), body=b""):
        h = "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\n" % (method, path)
        for k, v in headers:
            h += "%s: %s\r\n" % (k, v)
        if body or method == "POST":
            h += "Content-Length: %d\r\n" % len(body)
        self.sock.sendall(h.encode() + b"\r\n" + body)

    def close(self):
        # a reader thread blocked in recv would keep the connection open past close()
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


class WebCall:
    """A gRPC-Web call on conn: POST the request, then iterate the response
    messages (bytes); the trailer ends it (WebStatus unless OK)."""

    def __init__(self, conn, path, request, text=False, headers=()):
        self.conn, self.text = conn, text
        body = frame(request)
        if text:
            body = base64.b64encode(body)
        conn.request("POST", path, [("Content-Type", TEXT if text else WEB), ("X-Grpc-Web", "1"),
                                    *headers], body)
        self.status, self.headers = conn.head()
        self.trailers = None

    def frames(self):
        """(flag, payload) of each message, in order, the trailer last."""
        pending = b""
        for chunk in self.conn.chunks():
            pending += base64.b64decode(chunk) if self.text else chunk
            while len(pending) >= 5:
                flag, n = struct.unpack(">BI", pending[:5])
                if len(pending) < 5 + n:
                    break
                yield flag, pending[5:5 + n]
                pending = pending[5 + n:]
        check(pending == b"", "bytes after the last message: %r" % pending)

    def __iter__(self):
        check(self.status == 200, "HTTP status %d" % self.status)
        try:
            for m in self.messages():
                yield m
        except (OSError, EOFError) as e:
            raise WebStatus(-1, "the connection: %r" % e)

    def messages(self):
        for flag, payload in self.frames():
            if flag & 0x80:
                self.trailers = trailer_fields(payload)
                continue
            check(self.trailers is None, "a message after the trailers")
            yield payload
        check(self.trailers is not None, "no trailer message")
        status = int(self.trailers.get("grpc-status", "-1"))
        if status != 0:
            raise WebStatus(status, self.trailers.get("grpc-message", ""))


class WebReader(Reader):
    """gatewaytest's Reader over a gRPC-Web call."""

    def __init__(self, conn, path, request, response, text=False, headers=()):
        self.web = WebCall(conn, path, request.SerializeToString(), text, headers)
        self.cls = M[response]
        Responses.__init__(self, self.web, self.cls.FromString)


# ------------------------------------------------------------------ WebSocket

class WebSocket:
    """A client WebSocket on conn: the Upgrade, then frames."""

    def __init__(self, conn, path, protocol="xip83.v1", origin=None):
        self.conn = conn
        key = base64.b64encode(os.urandom(16)).decode()
        headers = [("Upgrade", "websocket"), ("Connection", "Upgrade"), ("Sec-WebSocket-Key", key),
                   ("Sec-WebSocket-Version", "13")]
        if protocol:
            headers.append(("Sec-WebSocket-Protocol", protocol))
        if origin:
            headers.append(("Origin", origin))
        conn.request("GET", path, headers)
        self.status, self.headers = conn.head()
        self.close_code = None
        self.pongs = []

    def send_frame(self, opcode, payload, fin=True):
        mask = os.urandom(4)
        n = len(payload)
        head = bytes([(0x80 if fin else 0) | opcode])
        if n < 126:
            head += bytes([0x80 | n])
        elif n < 65536:
            head += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            head += bytes([0x80 | 127]) + struct.pack(">Q", n)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.conn.sock.sendall(head + mask + masked)

    def recv_frame(self):
        """(fin, opcode, payload) of the server's next frame (never masked)."""
        b0, b1 = self.conn.take(2)
        check(not b1 & 0x80, "a masked frame from the server")
        n = b1 & 0x7f
        if n == 126:
            (n,) = struct.unpack(">H", self.conn.take(2))
        elif n == 127:
            (n,) = struct.unpack(">Q", self.conn.take(8))
        return bool(b0 & 0x80), b0 & 0x0f, self.conn.take(n)

    def recv(self):
        """The next data message's (opcode, payload); pongs as (10, data); a
        close as (8, code)."""
        parts, opcode = [], None
        while True:
            fin, op, payload = self.recv_frame()
            if op == 8:
                self.close_code = struct.unpack(">H", payload[:2])[0] if len(payload) >= 2 else 1005
                return 8, self.close_code
            if op in (9, 10):
                if op == 10:
                    return 10, payload
                continue
            if op != 0:
                opcode = op
            parts.append(payload)
            if fin:
                return opcode, b"".join(parts)

    def send(self, message):
        """One gRPC message in one binary WebSocket message."""
        self.send_frame(2, frame(message))

    def close(self, code=1000):
        self.send_frame(8, struct.pack(">H", code))


class WsCall:
    """The responses of a Subscribe over a WebSocket: SubscribeResponse
    messages until the trailer, then the close."""

    def __init__(self, ws, response):
        self.ws, self.cls = ws, response
        self.trailers = None

    def __iter__(self):
        try:
            for m in self.messages():
                yield m
        except (OSError, EOFError) as e:
            raise WebStatus(-1, "the connection: %r" % e, self.ws.close_code)

    def messages(self):
        while True:
            op, payload = self.ws.recv()
            if op == 8:
                break
            if op == 10:
                self.ws.pongs.append(payload)
                continue
            check(op == 2, "a WebSocket message of opcode %d" % op)
            flag, n = struct.unpack(">BI", payload[:5])
            check(n == len(payload) - 5, "one gRPC message per WebSocket message")
            if flag & 0x80:
                self.trailers = trailer_fields(payload[5:])
                continue
            check(self.trailers is None, "a message after the trailers")
            yield self.cls.FromString(payload[5:])
        if self.trailers is None:
            raise WebStatus(-1, "closed without a trailer", self.ws.close_code)
        raise WebStatus(int(self.trailers.get("grpc-status", "-1")), self.trailers.get("grpc-message", ""),
                        self.ws.close_code)


class _WsRequests:
    def __init__(self, ws):
        self.ws = ws

    def put(self, m):
        self.ws.send(m.SerializeToString())

    def close(self):
        self.ws.close()


class WsStream(Stream):
    """gatewaytest's Stream (Subscribe, either binding) over a WebSocket."""

    def __init__(self, port, d14n=False, conn=None, origin=None):
        self.d14n = d14n
        self.pkg = D14N if d14n else V3
        self.conn = conn or Conn(port)
        self.ws = WebSocket(self.conn, D14N_SUBSCRIBE if d14n else V3_SUBSCRIBE, origin=origin)
        check(self.ws.status == 101, "the Upgrade: %d %s" % (self.ws.status, self.ws.headers))
        check(self.ws.headers.get("sec-websocket-protocol") == "xip83.v1", "the subprotocol answered")
        self.reqs = _WsRequests(self.ws)
        self.call = WsCall(self.ws, M[self.pkg + "SubscribeResponse"])
        Responses.__init__(self, self.call, lambda r: r.v1)

    def started(self):
        r = self.next()
        check(r.WhichOneof("response") == "started", "the first response: %s" % r)
        return r


def expect_end(call, status, what, close=None):
    """The call ends with status (and a WebSocket with close code close)."""
    err = call.end()
    got = 0 if err is None else err.status
    check(got == status, "%s: status %s (%s), not %d" % (what, got, err and err.message, status))
    if close is not None:
        check(err.close == close, "%s: close code %s, not %d" % (what, err.close, close))
    return err
