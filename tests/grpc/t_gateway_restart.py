"""xip83-gateway across a database restart (XIP83_PGCTL restart -m fast):
the live feed reconnects from its cursors, so a stream that was live before
gets every row written after the restart exactly once, or, when the server
reports that late writes owed to it were lost (X83L0), ends ABORTED as the
session engine says; new streams are served (their waves on pool and control
connections that the restart broke and the gateway reconnected)."""
import os
import subprocess
import time

import grpc

from gatewaytest import Stream, db_connections, gateway, put_group
from grpctest import check, run

U = os.urandom(4).hex().encode()


def test():
    pgctl = os.environ.get("XIP83_PGCTL")
    check(pgctl, "XIP83_PGCTL (a pg_ctl wrapper) is needed")
    g = gateway("--pool", "2")
    ch = g.channel()
    t = b"R" + U
    before = [put_group(t, b"r%d" % i + U) for i in range(3)]
    s = Stream(ch)
    s.next()
    s.mutate(1, adds=[(b"\x00" + t, 0)])
    rows, _, _ = s.wave(1)
    check(sorted(i for _, i in rows) == before, "wave before the restart")
    check(len(s.live_rows(1) if put_group(t, b"live0" + U) else []) == 1, "live before the restart")

    subprocess.run([pgctl, "restart", "-m", "fast"], check=True, capture_output=True, timeout=120)
    after = [put_group(t, b"after%d" % i + U) for i in range(5)]
    got = []
    aborted = None
    while len(got) < 5 and aborted is None:
        r = s.q.get(timeout=30)
        if r is None:
            aborted = s.error
        elif r.WhichOneof("response") == "messages":
            check(r.messages.mutate_id == 0, "live rows tagged 0")
            got += [i for _, i in s.rows(r)]
    if aborted is not None:
        check(aborted.code() == grpc.StatusCode.ABORTED, "ended %s, not ABORTED" % aborted.code())
        print("the live stream ended ABORTED (late writes lost with the restart)")
    else:
        check(got == after, "every row after the restart once, in order: %s vs %s" % (got, after))
        print("the live stream went on across the restart")

    # a new stream after the restart: its wave runs on reconnected connections
    s2 = Stream(ch)
    s2.next()
    s2.mutate(2, adds=[(b"\x00" + t, 0)])
    rows, live, _ = s2.wave(2)
    ids = sorted(i for _, i in rows)
    check(ids[:3] == before and set(after) <= set(ids), "a new stream's wave after the restart: %s" % ids)
    x = put_group(t, b"x" + U)
    check(s2.live_rows(1) == [("g", x)], "live after the restart")
    check(db_connections() <= 2 + 1, "connections after the restart: %d" % db_connections())
    check(g.stop() == 0, "exit 0")


run(test)
