"""Shared by tests/grpc/t_*.py: runs build/client/xip83-grpc-echo (the
gateway's gRPC transport with test methods) on 127.0.0.1, and speaks to it
with real clients: grpcio, and python3-h2 where a test needs the frames
themselves. Every test is bounded in time (an alarm) and stops its servers.
"""
import os
import queue
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import traceback

import grpc
import h2.config
import h2.connection
import hpack
import hyperframe.frame

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ECHO = os.environ.get("XIP83_GRPC_ECHO") or os.path.join(TOP, "build/client/xip83-grpc-echo")
ECHO_PATH = "/xip83.test.Echo/Echo"
STREAM_PATH = "/xip83.test.Echo/Stream"
FAIL_PATH = "/xip83.test.Echo/Fail"
STATS_PATH = "/xip83.test.Echo/Stats"
# what the gateway will serve (WIRE.md); not implemented by this transport
REAL_PATHS = [
    "/xmtp.mls.api.v1.MlsApi/Subscribe",
    "/xmtp.mls.api.v1.MlsApi/SubscribeGroupMessages",
    "/xmtp.mls.api.v1.MlsApi/SubscribeWelcomeMessages",
    "/xmtp.xmtpv4.message_api.QueryApi/Subscribe",
    "/xmtp.xmtpv4.message_api.QueryApi/SubscribeTopics",
]
_servers = []


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)


class Server:
    """One xip83-grpc-echo process (or another program that prints its
    ports the same way: "KIND PORT" lines, then "ready"); ports as printed."""

    def __init__(self, *args, measure_memory=False, program=ECHO):
        env = dict(os.environ)
        if measure_memory:
            # an ASan build (make SANITIZE=1) keeps freed memory in quarantine
            env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":quarantine_size_mb=0"
        self.proc = subprocess.Popen([program, *args], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, env=env)
        _servers.append(self)
        self.ports = {}
        while True:
            # the test's alarm bounds this wait
            line = self.proc.stdout.readline()
            if not line:
                self.proc.wait()
                raise Failure("the server exited: " + self.proc.stderr.read())
            kind, _, port = line.strip().partition(" ")
            if kind == "ready":
                break
            self.ports[kind] = int(port)

    @property
    def target(self):
        return "127.0.0.1:%d" % self.ports["h2c"]

    def channel(self, **options):
        return grpc.insecure_channel(self.target, options=list(options.items()))

    def stop(self, timeout=10):
        """SIGTERM, then the exit code (killed after timeout)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise Failure("the server did not exit within %ss of SIGTERM" % timeout)
        return self.proc.returncode


def make_cert(d):
    """A self-signed certificate for localhost and 127.0.0.1 in d: (cert, key)."""
    cert, key = os.path.join(d, "cert.pem"), os.path.join(d, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-days", "1", "-subj", "/CN=localhost", "-addext",
                    "subjectAltName=DNS:localhost,IP:127.0.0.1", "-keyout", key, "-out", cert],
                   check=True, capture_output=True, timeout=30)
    return cert, key


def stats(channel):
    """The server's counters, from its Stats method."""
    (text,) = list(channel.unary_stream(STATS_PATH)(b"", timeout=10))
    return {k: int(v) for k, v in (kv.split("=") for kv in text.decode().split())}


def stream_request(count, size, hold=False):
    return struct.pack(">III", count, size, 1 if hold else 0)


def check_stream_message(msg, seq, size):
    check(len(msg) == size, "message %d has %d bytes, not %d" % (seq, len(msg), size))
    check(struct.unpack(">Q", msg[:8])[0] == seq, "message %d came as %d" % (seq, struct.unpack(">Q", msg[:8])[0]))
    check(msg[8:] == bytes([seq & 0xFF]) * (size - 8), "message %d has wrong bytes" % seq)


class Requests:
    """A request iterator fed from the test: put() sends, close() half-closes."""

    _END = object()

    def __init__(self):
        self.q = queue.Queue()

    def put(self, msg):
        self.q.put(msg)

    def close(self):
        self.q.put(self._END)

    def __iter__(self):
        return self

    def __next__(self):
        item = self.q.get()
        if item is self._END:
            raise StopIteration
        return item


def expect_status(call_fn, code, what):
    """Runs call_fn, which must raise an RpcError with code; returns its details."""
    try:
        call_fn()
    except grpc.RpcError as e:
        check(e.code() == code, "%s: %s (%s), not %s" % (what, e.code(), e.details(), code))
        return e.details()
    raise Failure("%s: succeeded, not %s" % (what, code))


class RawH2:
    """A bare HTTP/2 client connection for frame-level checks: python3-h2
    writes the frames; what comes back is parsed frame by frame (hyperframe,
    hpack) with no connection state machine, as h2's would refuse frames that
    follow a GOAWAY (RFC 9113 allows them: streams below its id go on)."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        self.conn.initiate_connection()
        self.flush()
        self.buf = b""
        self.decoder = hpack.Decoder()
        self.frames = []

    def flush(self):
        data = self.conn.data_to_send()
        if data:
            self.sock.sendall(data)

    def request(self, path, extra=()):
        sid = self.conn.get_next_available_stream_id()
        self.conn.send_headers(sid, [(":method", "POST"), (":scheme", "http"), (":path", path),
                                     (":authority", "127.0.0.1"), ("content-type", "application/grpc"),
                                     ("te", "trailers"), *extra])
        self.flush()
        return sid

    def send_message(self, sid, body, flag=0, length=None, end=False):
        """One gRPC message: flag, length (its own unless given), body."""
        self.conn.send_data(sid, bytes([flag]) + struct.pack(">I", len(body) if length is None else length)
                            + body, end_stream=end)
        self.flush()

    def _parse(self):
        while len(self.buf) >= 9:
            frame, length = hyperframe.frame.Frame.parse_frame_header(memoryview(self.buf[:9]))
            if len(self.buf) < 9 + length:
                return
            frame.parse_body(memoryview(self.buf[9:9 + length]))
            self.buf = self.buf[9 + length:]
            if isinstance(frame, hyperframe.frame.HeadersFrame):
                # the block decodes in order on the connection (one HPACK table)
                frame.headers = self.decoder.decode(frame.data, raw=True)
            elif isinstance(frame, hyperframe.frame.SettingsFrame) and "ACK" not in frame.flags:
                try:
                    self.sock.sendall(hyperframe.frame.SettingsFrame(0, flags=["ACK"]).serialize())
                except ConnectionError:
                    pass	# the server closed; what it sent before is still read
            self.frames.append(frame)

    def wait(self, pred, what, timeout=10):
        """Reads until a frame satisfies pred; returns it."""
        deadline = time.monotonic() + timeout
        while True:
            for i, f in enumerate(self.frames):
                if pred(f):
                    return self.frames.pop(i)
            left = deadline - time.monotonic()
            check(left > 0, "no %s within %ss" % (what, timeout))
            self.sock.settimeout(left)
            try:
                data = self.sock.recv(65536)
            except socket.timeout:
                continue
            check(data, "the server closed the connection while waiting for %s" % what)
            self.buf += data
            self._parse()

    def wait_status(self, sid, what, timeout=10):
        """The grpc-status of stream sid (trailers, or a trailers-only response)."""
        f = self.wait(lambda f: isinstance(f, hyperframe.frame.HeadersFrame) and f.stream_id == sid
                      and any(k == b"grpc-status" for k, _ in f.headers), what, timeout)
        return int(dict(f.headers)[b"grpc-status"])

    def close(self):
        self.sock.close()


class Canary:
    """An Echo stream on its own connection, round-tripped every 50 ms on a thread."""

    def __init__(self, srv, limit=0.5):
        self.ch = srv.channel()
        self.reqs = Requests()
        self.call = self.ch.stream_stream(ECHO_PATH)(self.reqs, timeout=120)
        self.limit = limit	# generous: a loaded CI machine, under ASan
        self.worst = 0.0
        self.n = 0
        self.error = None
        self.stop = False
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.thread.start()

    def loop(self):
        try:
            while not self.stop:
                t0 = time.monotonic()
                body = b"canary %d" % self.n
                self.reqs.put(body)
                if next(self.call) != body:
                    raise Exception("the canary's echo came back wrong")
                self.worst = max(self.worst, time.monotonic() - t0)
                self.n += 1
                time.sleep(0.05)
        except Exception as e:	# noqa: BLE001 - reported by check()
            self.error = e

    def check(self, what):
        check(self.error is None, "the canary failed %s: %r" % (what, self.error))
        check(self.n > 0, "the canary made no round trip %s" % what)
        check(self.worst < self.limit, "the canary's slowest round trip %.3f s %s" % (self.worst, what))

    def close(self):
        self.stop = True
        self.thread.join()
        self.reqs.close()
        list(self.call)
        self.ch.close()


def run(test):
    """Runs test() within 240 s; exit 0 when it passes."""
    def alarm(signum, frame):
        raise Failure("the test took longer than 240 s")

    signal.signal(signal.SIGALRM, alarm)
    signal.alarm(240)
    rc = 0
    try:
        test()
    except Exception:
        traceback.print_exc()
        rc = 1
    finally:
        signal.alarm(0)
        for s in _servers:
            if s.proc.poll() is None:
                s.proc.kill()
                s.proc.wait()
    sys.stdout.flush()
    os._exit(rc)	# grpcio's threads must not hold the exit up
