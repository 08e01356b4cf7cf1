"""xip83-gateway keeps serving while the live feed's backend is alive and
stuck: the backend serving the feed's connection is stopped (SIGSTOP), so
the feed's next round waits for it with no timeout to end the wait (no lock,
no silent network: the server is there and its socket stays open). The
feed runs on a thread of its own, so Pings on a stream are answered within
PONG_LIMIT throughout STUCK_S, and a new stream gets its Started. Once the
backend runs again (SIGCONT), the row written meanwhile arrives once, and so
does one written after."""
import os
import signal

from gatewaytest import Stream, gateway, psql, put_group
from grpctest import check, run

U = os.urandom(4).hex().encode()
STUCK_S = 6
PONG_LIMIT = 1.0


def feed_backend():
    """The backend of the feed's connection: its last query read live rows,
    listened or asked for the notifier (the pool's read waves)."""
    pid = psql("SELECT pid FROM pg_stat_activity WHERE application_name = 'xip83-gateway'"
               " AND query ~ 'xip83\\.live_|LISTEN|feed_status' ORDER BY backend_start LIMIT 1;")
    check(pid != "", "the feed's backend is found")
    return int(pid)


def test():
    g = gateway("--pool", "2")
    stopped = None
    try:
        a = Stream(g.channel())
        check(a.next().WhichOneof("response") == "started", "Started")
        t = b"K" + U
        first = put_group(t, b"k0" + U)
        a.add_group_topic(1, t, [first])

        stopped = feed_backend()
        os.kill(stopped, signal.SIGSTOP)
        during = put_group(t, b"k1" + U)   # its notice starts a round the backend cannot answer
        nonce, worst = a.pongs(STUCK_S, PONG_LIMIT, "while the feed's backend was stopped")
        b = Stream(g.channel())
        check(b.next(timeout=PONG_LIMIT).WhichOneof("response") == "started",
              "a new stream is Started while the feed's backend is stopped")
        os.kill(stopped, signal.SIGCONT)
        stopped = None
        print("feed backend stopped %d s: %d pongs, the slowest %.3f s" % (STUCK_S, nonce, worst))
        check(a.live_rows(1, timeout=60) == [("g", during)], "the row written meanwhile, once")
        after = put_group(t, b"k2" + U)
        check(a.live_rows(1) == [("g", after)], "a row written after, once")
        a.quiet(1)
        a.close()
        b.close()
    finally:
        if stopped:
            os.kill(stopped, signal.SIGCONT)
    check(g.stop() == 0, "exit 0")


run(test)
