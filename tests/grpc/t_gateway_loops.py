"""xip83-gateway with two event loops (--loops 2): 32 client connections,
which the kernel spreads over the loops, each with a v3 and a d14n Subscribe
stream holding the same topics. Every row, from the waves and live, reaches
every stream exactly once and in order (ids for v3, sequences per originator
for d14n) while writers race the waves, and across a database restart (or the
stream ends ABORTED, as the session engine says when late writes were lost).
The metrics add the loops up (both hold streams; one feed and the pool's
connections), and SIGTERM drains both loops: exit 0."""
import os
import subprocess
import threading
import time

import grpc

from gatewaytest import Stream, gateway, metrics, msg, psql, put_envelope, put_group
from grpctest import Failure, check, run

U = os.urandom(4).hex().encode()
CONNS = 32
NODE = 100 + int.from_bytes(os.urandom(2), "big") % 800


class Client:
    """One connection's two streams and what each got, in order."""

    def __init__(self, ch):
        self.v3 = Stream(ch, timeout=300)
        self.d14n = Stream(ch, d14n=True, timeout=300)
        self.got = {self.v3: [], self.d14n: []}
        self.aborted = {}
        for s in (self.v3, self.d14n):
            check(s.next().WhichOneof("response") == "started", "Started")

    def take(self, s, until, timeout=60):
        """Reads s until what it got satisfies until(got), or it ended ABORTED."""
        deadline = time.monotonic() + timeout
        while not until(self.got[s]) and s not in self.aborted:
            left = deadline - time.monotonic()
            check(left > 0, "%s stream: %d rows, still short" % ("d14n" if s.d14n else "v3", len(self.got[s])))
            r = s.next(left)
            if r is None:
                check(s.error.code() == grpc.StatusCode.ABORTED, "a stream ended %s" % s.error)
                self.aborted[s] = True
                break
            kind = r.WhichOneof("response")
            if kind == "ping":
                s.send(pong=msg(s.pkg + "Pong", nonce=r.ping.nonce))
            if kind in ("messages", "envelopes"):
                self.got[s] += s.rows(r)


def test():
    pgctl = os.environ.get("XIP83_PGCTL")
    check(pgctl, "XIP83_PGCTL (a pg_ctl wrapper) is needed")
    g = gateway("--loops", "2", "--pool", "2", "--metrics", "127.0.0.1:0")
    t1, t2, te = b"L1" + U, b"L2" + U, b"\x01LE" + U
    v3_ids = [put_group(t1 if i % 2 else t2, b"b%d" % i + U) for i in range(6)]
    seq = [0]

    def envelope():
        seq[0] += 1
        put_envelope(NODE, seq[0], te)
        return NODE, seq[0]

    d14n_ids = [envelope() for _ in range(6)]
    clients = [Client(g.channel(**{"grpc.use_local_subchannel_pool": 1})) for _ in range(CONNS)]
    for c in clients:
        c.v3.mutate(1, adds=[(b"\x00" + t1, 0), (b"\x00" + t2, 0)])
        c.d14n.mutate(1, adds=[(te, {})])

    # writers race the waves
    def write(n, tag):
        for i in range(n):
            v3_ids.append(put_group(t1 if i % 2 else t2, b"%s%d" % (tag, i) + U))
            d14n_ids.append(envelope())
    w = threading.Thread(target=write, args=(20, b"w"))
    w.start()
    w.join()
    for c in clients:
        c.take(c.v3, lambda got: len(got) >= len(v3_ids))
        c.take(c.d14n, lambda got: len(got) >= len(d14n_ids))
    for n, c in enumerate(clients):
        check(c.got[c.v3] == [("g", i) for i in v3_ids],
              "connection %d, v3: %s, not %s" % (n, c.got[c.v3], v3_ids))
        check(c.got[c.d14n] == d14n_ids, "connection %d, d14n: %s, not %s" % (n, c.got[c.d14n], d14n_ids))

    # the loops' listeners share their port with each other, never with another gateway's
    try:
        other = gateway("--loops", "2", "--listen", "127.0.0.1:%d" % g.ports["h2c"])
        other.stop()
        check(False, "a second gateway with two loops listened on the first's port")
    except Failure as e:
        check("in use" in str(e), "the second gateway's refusal: %s" % e)

    # the loops add up in the metrics, each loop's figures as of the scrape
    m = metrics(g)
    per_loop = [m.get('xip83_gateway_loop_streams{loop="%d"}' % i, 0) for i in range(2)]
    print("streams per loop: %s; connections per loop: %s" % (
        per_loop, [m.get('xip83_gateway_loop_connections{loop="%d"}' % i, 0) for i in range(2)]))
    check(m["xip83_gateway_loops"] == 2, "two loops")
    check(all(n > 0 for n in per_loop), "streams on both loops: %s" % per_loop)
    check(sum(per_loop) == 2 * CONNS, "the loops' streams add up: %s" % per_loop)
    check(m["xip83_gateway_connections"] == CONNS, "connections: %s" % m["xip83_gateway_connections"])
    check(m["xip83_gateway_pool_size"] == 2, "the pool split, not doubled")
    check(m["xip83_gateway_db_connections"] == 3, "one feed and the pool: %s" % m["xip83_gateway_db_connections"])

    # across a database restart: the one feed reconnects from its cursors for both loops
    subprocess.run([pgctl, "restart", "-m", "fast"], check=True, capture_output=True, timeout=120)
    n_v3, n_d14n = len(v3_ids), len(d14n_ids)
    write(5, b"r")
    for c in clients:
        c.take(c.v3, lambda got: len(got) >= len(v3_ids))
        c.take(c.d14n, lambda got: len(got) >= len(d14n_ids))
    aborted = 0
    for n, c in enumerate(clients):
        for s, want, start in ((c.v3, [("g", i) for i in v3_ids], n_v3), (c.d14n, d14n_ids, n_d14n)):
            if s in c.aborted:
                aborted += 1
                check(c.got[s] == want[:len(c.got[s])], "connection %d: rows before ABORTED" % n)
            else:
                check(c.got[s] == want, "connection %d after the restart: %s, not %s"
                      % (n, c.got[s][start:], want[start:]))
    print("after the restart: %d of %d streams went on, %d ended ABORTED" % (
        2 * CONNS - aborted, 2 * CONNS, aborted))
    check(g.stop() == 0, "both loops drained: exit 0")

    # --write-hold-ms: what is queued waits for more, and still leaves
    h = gateway("--loops", "1", "--write-hold-ms", "40")
    s = Stream(h.channel())
    check(s.next().WhichOneof("response") == "started", "Started with a write hold")
    s.mutate(7, adds=[(b"\x00" + t1, 0)])
    rows, _, _ = s.wave(7)
    owed = [int(i) for i in psql("SELECT id FROM xip83.group_messages WHERE group_id = decode(:'a1', 'hex')"
                                 " ORDER BY id;", t1.hex()).split()]
    check(rows == [("g", i) for i in owed], "the wave with a write hold: %s" % rows)
    x = put_group(t1, b"held" + U)
    check(s.live_rows(1, timeout=10) == [("g", x)], "a live row with a write hold, once")
    n, worst = s.pongs(1, 2.0, "with a write hold")
    print("write hold 40 ms: wave and live row once; %d Pongs, the slowest %.3f s" % (n, worst))
    check(h.stop() == 0, "exit 0")


run(test)
