"""xip83-gateway's --metrics listener never holds the loop, and running out
of descriptors pauses every listener, that one too. 50 connections to
--metrics that never send a request cost a Ping on a canary stream (another
connection) nothing: each is served as its bytes come, 8 at once at most
(the rest closed at accept), and closed after the scrape timeout; a real
scrape is answered meanwhile or right after, and counts them. Then a gateway
run with a small RLIMIT_NOFILE gets more connections than it has
descriptors, and one to --metrics on top: it must not spin (its CPU time
over a second stays small, where a level-triggered listener left on epoll
would take the whole core), the canary's Pings stay prompt, the exhaustion
is counted, and once the extra connections go the pending scrape is served
and a new client's wave completes."""
import os
import socket
import time

import hyperframe.frame

from gatewaytest import GATEWAY, Stream, put_group
from grpctest import Server, check, run

U = os.urandom(4).hex().encode()
PONG_LIMIT = 0.5		# generous: a loaded CI machine, under ASan
NOFILE = 64


def scrape(port, timeout=10):
    """The metrics page as {name{labels}: value}."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        data = b""
        while True:
            b = s.recv(65536)
            if not b:
                break
            data += b
    head, _, body = data.partition(b"\r\n\r\n")
    check(head.startswith(b"HTTP/1.1 200"), "scrape: %r" % head[:80])
    out = {}
    for line in body.decode().splitlines():
        if line and not line.startswith("#"):
            k, _, v = line.rpartition(" ")
            out[k] = float(v)
    return out


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def canary(g):
    ch = g.channel()
    s = Stream(ch)
    check(s.next().WhichOneof("response") == "started", "Started")
    return ch, s


def silent_scrapers():
    dsn = "dbname=" + os.environ.get("PGDATABASE", "xip83_libpq")
    g = Server("--dsn", dsn, "--listen", "127.0.0.1:0", "--metrics", "127.0.0.1:0", program=GATEWAY)
    ch, s = canary(g)
    silent = [socket.create_connection(("127.0.0.1", g.ports["metrics"])) for _ in range(50)]
    n, worst = s.pongs(1.5, PONG_LIMIT, "with 50 silent scrapers")
    print("50 silent scrapers: %d Pings, the slowest Pong %.3f s" % (n, worst))
    t0 = time.monotonic()
    page = scrape(g.ports["metrics"])
    print("a real scrape took %.3f s" % (time.monotonic() - t0))
    refused = page['xip83_gateway_limit_reached_total{limit="metrics_connections"}']
    check(refused >= 40, "metrics connections refused: %d" % refused)
    # the 8 served ones time out
    for c in silent:
        c.settimeout(5)
        try:
            c.recv(1)
        except ConnectionError:
            pass
        c.close()
    page = scrape(g.ports["metrics"])
    check(page['xip83_gateway_limit_reached_total{limit="metrics_timeout"}'] >= 1, "scrape timeouts counted")
    check(page['xip83_gateway_limit{limit="max_connections"}'] > 0, "max_connections shown")
    s.pong(1000, PONG_LIMIT, "after the silent scrapers")
    s.close()
    ch.close()
    check(g.stop() == 0, "exit 0")


def descriptors():
    dsn = "dbname=" + os.environ.get("PGDATABASE", "xip83_libpq")
    g = Server("--nofile=%d" % NOFILE, GATEWAY, "--dsn", dsn, "--listen", "127.0.0.1:0", "--metrics",
               "127.0.0.1:0", "--max-connections", "1000", "--pool", "1", program="prlimit")
    ch, s = canary(g)
    flood = []
    for i in range(NOFILE):
        c = socket.create_connection(("127.0.0.1", g.ports["h2c"]))
        c.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + hyperframe.frame.SettingsFrame(0).serialize())
        flood.append(c)
    time.sleep(0.3)
    pending = socket.create_connection(("127.0.0.1", g.ports["metrics"]))
    pending.sendall(b"GET /metrics HTTP/1.1\r\n\r\n")
    cpu0 = cpu_seconds(g.proc.pid)
    n, worst = s.pongs(1.5, PONG_LIMIT, "out of descriptors")
    cpu = cpu_seconds(g.proc.pid) - cpu0
    print("out of descriptors: %.2f s of CPU in 1.5 s; %d Pings, the slowest Pong %.3f s" % (cpu, n, worst))
    check(cpu < 0.5, "the gateway spun: %.2f s of CPU in 1.5 s" % cpu)
    for c in flood:
        c.close()
    pending.settimeout(10)
    data = b""
    while True:
        b = pending.recv(65536)
        if not b:
            break
        data += b
    pending.close()
    check(data.startswith(b"HTTP/1.1 200"), "the pending scrape: %r" % data[:80])
    line = [x for x in data.decode().splitlines() if x.startswith('xip83_gateway_limit_reached_total{limit="descriptors"}')]
    check(line and float(line[0].split()[-1]) >= 1, "descriptor exhaustion counted: %s" % line)
    # the canary, and a new client's wave
    s.pong(1000, PONG_LIMIT, "after the descriptors came back")
    ch2, s2 = canary(g)
    t = b"D" + U
    s2.add_group_topic(1, t, [put_group(t, b"d0" + U)])
    s2.close()
    s.close()
    ch2.close()
    ch.close()
    check(g.stop() == 0, "exit 0")


def test():
    silent_scrapers()
    descriptors()


run(test)
