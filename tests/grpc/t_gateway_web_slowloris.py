"""HTTP/1.1 clients that dribble their headers (slowloris) cannot hurt an
HTTP/2 stream on the same gateway: a Subscribe canary's Ping/Pong stays
prompt while they send a byte at a time; each HTTP/1.1 connection counts
against --max-connections (those past it are closed at once), and one whose
request head is not whole within --handshake-timeout-ms is closed, dribble
as it may."""
import socket
import time

from gatewaytest import GROUP_MESSAGES, Stream, gateway
from grpctest import check, run

SLOW = 60
MAX = 40


def test():
    srv = gateway("--max-connections", str(MAX), "--handshake-timeout-ms", "2000")
    ch = srv.channel()
    canary = Stream(ch)
    check(canary.next().WhichOneof("response") == "started", "the canary's Started")
    canary.pong(1, 10, "before the attack")
    head = b"POST %s HTTP/1.1\r\nHost: x\r\nX-Slow: " % GROUP_MESSAGES.encode() + b"a" * 10000
    socks = []
    for _ in range(SLOW):
        s = socket.create_connection(("127.0.0.1", srv.ports["h2c"]), timeout=10)
        s.setblocking(False)
        socks.append(s)
    t0 = time.monotonic()
    alive = set(range(SLOW))
    refused_early = None
    worst = 0.0
    n = 0
    while alive and time.monotonic() - t0 < 8:
        for i in list(alive):
            try:
                socks[i].send(head[n % len(head):n % len(head) + 1])
                if socks[i].recv(1) == b"":
                    alive.discard(i)
            except BlockingIOError:
                pass
            except OSError:
                alive.discard(i)
        n += 1
        if refused_early is None and time.monotonic() - t0 > 1.0:
            refused_early = SLOW - len(alive)
        t1 = time.monotonic()
        canary.pong(100 + n, 1.5, "while %d connections dribble headers" % len(alive))
        worst = max(worst, time.monotonic() - t1)
    elapsed = time.monotonic() - t0
    check(refused_early is not None and refused_early >= SLOW - (MAX - 1),
          "%s of %d refused at once past --max-connections %d" % (refused_early, SLOW, MAX))
    check(not alive, "%d dribbling connections still open after %.1f s" % (len(alive), elapsed))
    check(elapsed < 6, "the dribblers closed by the handshake timeout: %.1f s" % elapsed)
    print("the canary's slowest Pong %.3f s over %d rounds; dribblers gone in %.1f s" % (worst, n, elapsed))
    for s in socks:
        s.close()
    canary.pong(9999, 10, "after the attack")
    canary.close()
    check(canary.end() is None, "the canary ends OK")
    check(srv.stop() == 0, "the gateway's exit")


run(test)
