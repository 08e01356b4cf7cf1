"""xip83-gateway keeps serving while a backend it waits on is alive and
stuck (stopped with SIGSTOP: the server is there, its socket open, and no
lock, timeout or silent network ends the wait). First the pool's backends,
before any page ran on them: a wave's first page (whose statement is not
prepared there yet) goes out without blocking, so Pings on another stream
are answered within PONG_LIMIT, and the wave completes once they run again.
Then the live feed's backend: the feed's next round waits for it on the
feed's own thread, so Pings are answered throughout STUCK_S and a new
stream gets its Started; once the backend runs again the row written
meanwhile arrives once, and so does one written after. Last, the feed's backend is stopped again until the
feed's offline poll waits on it: SIGTERM must still end the gateway, with
exit 0, within the stop timeout."""
import os
import signal
import time

from gatewaytest import GATEWAY, Stream, psql, put_group
from grpctest import Server, check, run

U = os.urandom(4).hex().encode()
STUCK_S = 6
# past the feed's silence deadline (3 s): its offline poll is a query then
OFFLINE_S = 4
PONG_LIMIT = 1.0


def feed_backend():
    """The backend of the feed's connection: its last query read live rows,
    listened or asked for the notifier (the pool's read waves)."""
    pid = psql("SELECT pid FROM pg_stat_activity WHERE application_name = 'xip83-gateway'"
               " AND datname = current_database() AND query ~ 'xip83\\.live_|LISTEN|feed_status' ORDER BY backend_start LIMIT 1;")
    check(pid != "", "the feed's backend is found")
    return int(pid)


def pool_backends():
    """The pool's backends, before any page ran on them: they ran no query."""
    pids = psql("SELECT pid FROM pg_stat_activity WHERE application_name = 'xip83-gateway'"
                " AND datname = current_database() AND query = '';").split()
    check(len(pids) == 2, "the pool's two backends are found: %s" % pids)
    return [int(p) for p in pids]


def test():
    # named in its DSN: the driver's PGAPPNAME would name the tests' own connections alike
    dsn = "dbname=%s application_name=xip83-gateway" % os.environ.get("PGDATABASE", "xip83_libpq")
    g = Server("--dsn", dsn, "--listen", "127.0.0.1:0", "--pool", "2", program=GATEWAY)
    stopped = []
    try:
        a = Stream(g.channel())
        check(a.next().WhichOneof("response") == "started", "Started")
        t = b"K" + U
        first = put_group(t, b"k0" + U)

        stopped = pool_backends()
        for p in stopped:
            os.kill(p, signal.SIGSTOP)
        a.mutate(1, adds=[(b"\x00" + t, 0)])
        b = Stream(g.channel())
        check(b.next(timeout=PONG_LIMIT).WhichOneof("response") == "started", "Started, the pool stopped")
        pool_pongs, pool_worst = b.pongs(3, PONG_LIMIT, "while the pool's backends were stopped")
        for p in stopped:
            os.kill(p, signal.SIGCONT)
        stopped = []
        rows, _, _ = a.wave(1)
        check(rows == [("g", first)], "the wave once the pool's backends run again: %s" % rows)
        print("pool backends stopped 3 s: %d pongs, the slowest %.3f s" % (pool_pongs, pool_worst))

        stopped = [feed_backend()]
        os.kill(stopped[0], signal.SIGSTOP)
        during = put_group(t, b"k1" + U)   # its notice starts a round the backend cannot answer
        nonce, worst = a.pongs(STUCK_S, PONG_LIMIT, "while the feed's backend was stopped")
        c = Stream(g.channel())
        check(c.next(timeout=PONG_LIMIT).WhichOneof("response") == "started",
              "a new stream is Started while the feed's backend is stopped")
        os.kill(stopped[0], signal.SIGCONT)
        stopped = []
        print("feed backend stopped %d s: %d pongs, the slowest %.3f s" % (STUCK_S, nonce, worst))
        check(a.live_rows(1, timeout=60) == [("g", during)], "the row written meanwhile, once")
        after = put_group(t, b"k2" + U)
        check(a.live_rows(1) == [("g", after)], "a row written after, once")
        a.quiet(1)
        for s in (a, b, c):
            s.close()

        # SIGTERM while the feed's thread waits in a query that does not end
        stopped = [feed_backend()]
        os.kill(stopped[0], signal.SIGSTOP)
        a2 = Stream(g.channel())
        check(a2.next().WhichOneof("response") == "started", "Started")
        a2.pongs(OFFLINE_S, PONG_LIMIT, "while the feed's backend was stopped again")
        t0 = time.monotonic()
        check(g.stop() == 0, "exit 0 with the feed's backend stopped")
        print("exit %.1f s after SIGTERM with the feed's backend stopped" % (time.monotonic() - t0))
    finally:
        for p in stopped:
            os.kill(p, signal.SIGCONT)
        g.stop()


run(test)
