"""Measures what xip83-grpc-echo's RSS does over rounds of many streams that
open, queue a few small messages to a client that grants no window, and end
at once with their connections (not a test: run by hand).

  rss_rounds.py [ECHO] [ROUNDS] [CONNECTIONS] [STREAMS_PER_CONNECTION]

Prints the server's rss_kb before the first round, with every stream open,
and two seconds after each round's connections closed, and what one idle
connection costs (RSS over 1,000 connections that opened and sit idle)."""
import os
import socket
import struct
import sys
import time

import hpack
import hyperframe.frame

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from grpctest import ECHO, STREAM_PATH, Server, stats  # noqa: E402

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


def connect(port, streams):
    s = socket.create_connection(("127.0.0.1", port))
    enc = hpack.Encoder()
    out = [PREFACE, hyperframe.frame.SettingsFrame(0, settings={4: 0}).serialize()]
    body = struct.pack(">III", 4, 100, 1)
    for i in range(streams):
        sid = 2 * i + 1
        block = enc.encode([(":method", "POST"), (":scheme", "http"), (":path", STREAM_PATH),
                            (":authority", "x"), ("content-type", "application/grpc"), ("te", "trailers")])
        out.append(hyperframe.frame.HeadersFrame(sid, data=block, flags=["END_HEADERS"]).serialize())
        out.append(hyperframe.frame.DataFrame(sid, data=b"\0" + struct.pack(">I", len(body)) + body,
                                              flags=["END_STREAM"]).serialize())
    s.sendall(b"".join(out))
    s.setblocking(False)
    return s


def drain(socks, seconds):
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        for s in socks:
            try:
                while s.recv(1 << 20):
                    pass
            except BlockingIOError:
                pass
        time.sleep(0.05)


def main():
    program = sys.argv[1] if len(sys.argv) > 1 else ECHO
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 9
    conns = int(sys.argv[3]) if len(sys.argv) > 3 else 10
    per = int(sys.argv[4]) if len(sys.argv) > 4 else 1000
    srv = Server("--h2c", "127.0.0.1:0", program=program, measure_memory=True)
    ch = srv.channel()
    print("start: rss_kb %d" % stats(ch)["rss_kb"])
    for r in range(rounds):
        socks = [connect(srv.ports["h2c"], per) for _ in range(conns)]
        drain(socks, 1.0)
        st = stats(ch)
        print("round %d: %d streams open: rss_kb %d pending %d" % (r + 1, st["streams"] - 1, st["rss_kb"], st["pending"]))
        for s in socks:
            s.close()
        time.sleep(2.5)
        print("round %d: closed: rss_kb %d" % (r + 1, stats(ch)["rss_kb"]))
    base = stats(ch)["rss_kb"]
    socks = [connect(srv.ports["h2c"], 0) for _ in range(1000)]
    drain(socks, 3.0)
    st = stats(ch)
    print("1,000 idle connections: %d open, rss_kb %d: %.1f kB each (%s bytes each on the transport's account)"
          % (st["connections"], st["rss_kb"], (st["rss_kb"] - base) / 1000,
             st.get("memory", 0) // st["connections"]))
    for s in socks:
        s.close()
    ch.close()
    srv.stop()


main()
