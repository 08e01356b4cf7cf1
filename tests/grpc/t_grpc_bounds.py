"""The transport's memory and connection bounds, each reached by a hostile
client while a canary Echo stream on a connection of its own keeps answering
at once: partly received messages over --max-conn-input end the stream that
passed it (RESOURCE_EXHAUSTED) while the connection's other partial message
completes; queued output over --max-conn-memory (streams of a client that
grants no window, counted as the chunks really allocated) resets the stream
that passed it with ENHANCE_YOUR_CALM and frees its queue; the process over
--max-memory refuses a connection holding more than its share and not the
canary; a grpcio client that stops reading sees RESOURCE_EXHAUSTED; connections past --max-connections are closed at accept. Each is
counted, and a well-behaved client is served afterwards."""
import socket
import struct
import time

import grpc
import h2.settings
import hyperframe.frame

from grpctest import (ECHO_PATH, STREAM_PATH, Canary, RawH2, Server, check, run, stats,
                      stream_request)

MAX_MESSAGE = 1 << 20
CONN_INPUT = 256 << 10
CONN_MEMORY = 4 << 20
MEMORY = 7 << 20
MAX_CONNECTIONS = 8


class Raw(RawH2):
    """RawH2 announcing an initial stream window of its choice (0: reads nothing),
    whose DATA frames are written as they are (the server's window, not h2's view of it)."""

    def __init__(self, port, window):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        self.conn.local_settings = h2.settings.Settings(
            client=True, initial_values={h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: window})
        self.conn.initiate_connection()
        if window:
            self.conn.increment_flow_control_window(1 << 30)
        self.flush()
        self.buf = b""
        self.decoder = __import__("hpack").Decoder()
        self.frames = []
        # the server's SETTINGS (acknowledged by _parse) raise its windows
        self.wait(lambda f: isinstance(f, hyperframe.frame.SettingsFrame) and "ACK" not in f.flags,
                  "the server's SETTINGS")

    def data(self, sid, payload, end=False):
        out = b""
        for i in range(0, len(payload), 16384):
            last = end and i + 16384 >= len(payload)
            out += hyperframe.frame.DataFrame(sid, data=payload[i:i + 16384],
                                              flags=["END_STREAM"] if last else []).serialize()
        self.sock.sendall(out)


def conn_input(srv):
    raw = Raw(srv.ports["h2c"], 1 << 24)
    first = raw.request(ECHO_PATH)
    body = bytes(range(256)) * (200 << 2)		# 200 KiB: within the bound alone
    raw.data(first, b"\0" + struct.pack(">I", len(body)) + body[:100 << 10])
    second = raw.request(ECHO_PATH)
    raw.data(second, b"\0" + struct.pack(">I", len(body)) + body[:150 << 10])
    status = raw.wait_status(second, "the stream over the connection's input bound")
    check(status == 8, "over --max-conn-input: grpc-status %d, not 8" % status)
    # the first one's message completes and comes back
    raw.data(first, body[100 << 10:], end=True)
    got = 0
    while True:
        f = raw.wait(lambda f: f.stream_id == first and isinstance(
            f, (hyperframe.frame.DataFrame, hyperframe.frame.HeadersFrame)), "the first stream's echo")
        if isinstance(f, hyperframe.frame.DataFrame):
            got += len(f.data)
        elif any(k == b"grpc-status" for k, _ in f.headers):
            check(int(dict(f.headers)[b"grpc-status"]) == 0, "the first stream's status: %s" % f.headers)
            break
    check(got == len(body) + 5, "the first stream's echo: %d bytes" % got)
    print("--max-conn-input: the second partial message refused, the first echoed (%d bytes)" % got)
    raw.close()


def output(srv, canary):
    # streams that read nothing: each queues up to the echo server's 1 MiB of 1,000-byte messages
    a = Raw(srv.ports["h2c"], 0)
    sids = []
    for i in range(5):
        sids.append(a.request(STREAM_PATH))
        a.send_message(sids[-1], stream_request(100000, 1000, hold=True), end=True)
    f = a.wait(lambda f: isinstance(f, hyperframe.frame.RstStreamFrame), "a stream reset over --max-conn-memory")
    check(f.error_code == 11, "reset with error code %d, not ENHANCE_YOUR_CALM" % f.error_code)
    st = stats(canary.ch)
    print("--max-conn-memory: stream %d reset; %s" % (f.stream_id, st))
    check(st["max_conn_memory"] >= 1, "max_conn_memory counted: %s" % st)
    check(st["memory"] <= CONN_MEMORY + (1 << 20), "the process holds %d bytes" % st["memory"])
    # pending counts each 1,000-byte message's chunk as allocated, not its bytes
    check(st["pending"] >= 3 * (1 << 20), "pending %d for three full queues" % st["pending"])
    canary.check("with a connection at its memory bound")

    # another such connection takes the process over --max-memory: its streams are
    # refused (it holds more than its share), the canary's echoes are not
    b = Raw(srv.ports["h2c"], 0)
    for i in range(4):
        b.send_message(b.request(STREAM_PATH), stream_request(100000, 1000, hold=True), end=True)
    f = b.wait(lambda f: isinstance(f, hyperframe.frame.RstStreamFrame), "a stream reset over --max-memory")
    check(f.error_code == 11, "reset with error code %d, not ENHANCE_YOUR_CALM" % f.error_code)
    time.sleep(0.3)
    st = stats(canary.ch)
    print("--max-memory: %s" % st)
    check(st["max_memory"] >= 1, "max_memory counted: %s" % st)
    check(st["memory"] <= MEMORY + (1 << 20), "the process holds %d bytes, over %d" % (st["memory"], MEMORY))
    canary.check("with the process at its memory bound")
    return [a, b]


def grpcio_sees(srv, canary):
    """What a real client sees of the reset: RESOURCE_EXHAUSTED."""
    ch = srv.channel(**{"grpc.http2.bdp_probe": 0, "grpc.use_local_subchannel_pool": 1})
    calls = [ch.unary_stream(STREAM_PATH)(stream_request(100000, 1000, hold=True), timeout=20) for _ in range(5)]
    codes = []
    for c in calls:
        try:
            time.sleep(0.3)
            for i, _ in enumerate(c):
                if i == 5000:
                    codes.append("read")
                    break
        except grpc.RpcError as e:
            codes.append(e.code())
        c.cancel()
    ch.close()
    print("grpcio streams not read past --max-conn-memory: %s" % codes)
    check(grpc.StatusCode.RESOURCE_EXHAUSTED in codes, "grpcio saw %s" % codes)
    canary.check("with a grpcio client at its memory bound")


def connections(srv, canary):
    socks = []
    refused = 0
    for i in range(MAX_CONNECTIONS + 2):
        s = socket.create_connection(("127.0.0.1", srv.ports["h2c"]))
        s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + hyperframe.frame.SettingsFrame(0).serialize())
        socks.append(s)
    time.sleep(0.5)
    for s in socks:
        s.settimeout(0.05)
        try:
            while s.recv(65536):
                pass
            refused += 1
        except socket.timeout:
            pass
        except ConnectionError:
            refused += 1
    st = stats(canary.ch)
    print("--max-connections %d: %d of %d refused; %s" % (MAX_CONNECTIONS, refused, len(socks), st))
    check(refused >= 2, "only %d connections refused" % refused)
    check(st["max_connections"] >= refused, "max_connections counted: %s" % st)
    check(st["connections"] <= MAX_CONNECTIONS, "%d connections open" % st["connections"])
    canary.check("with connections refused")
    for s in socks:
        s.close()


def test():
    srv = Server("--h2c", "127.0.0.1:0", "--max-message", str(MAX_MESSAGE), "--max-conn-input",
                 str(CONN_INPUT), "--max-conn-memory", str(CONN_MEMORY), "--max-memory", str(MEMORY),
                 "--max-connections", str(MAX_CONNECTIONS), measure_memory=True)
    canary = Canary(srv)
    conn_input(srv)
    canary.check("after the input bound")
    held = output(srv, canary)
    for h in held:
        h.close()
    time.sleep(0.3)
    grpcio_sees(srv, canary)
    connections(srv, canary)
    time.sleep(0.3)
    st = stats(canary.ch)
    check(st["pending"] == 0 and st["input"] == 0, "all given back: %s" % st)
    canary.close()
    # a well-behaved client afterwards: a whole stream of 2 MiB read as it comes
    ch = srv.channel()
    n = sum(1 for _ in ch.unary_stream(STREAM_PATH)(stream_request(2000, 1000), timeout=20))
    check(n == 2000, "a stream afterwards: %d messages" % n)
    ch.close()
    check(srv.stop() == 0, "the server exited %s" % srv.proc.returncode)


run(test)
