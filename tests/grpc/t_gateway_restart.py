"""xip83-gateway across a database restart (XIP83_PGCTL restart -m fast):
the live feed reconnects from its cursors, so a stream that was live before
gets every row written after the restart exactly once, or, when the server
reports that late writes owed to it were lost (X83L0), ends ABORTED as the
session engine says; new streams are served (their waves on pool and control
connections that the restart broke and the gateway reconnected). A wave
whose page is in flight when the server restarts (held by a table lock so
that it is) goes on: the page is asked again once the pool has reconnected,
and the wave ends with its rows exactly once, the stream never failed."""
import os
import subprocess
import time

import grpc

from gatewaytest import Stream, db_connections, gateway, psql, put_group
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

    # a page in flight across a restart: held back by a lock, then lost with its backend
    t3 = b"W" + U
    owed = [put_group(t3, b"w%d" % i + U) for i in range(3)]
    lock = subprocess.Popen(["psql", "-X", "-q", "-c", "BEGIN",
                             "-c", "LOCK TABLE xip83.group_messages IN ACCESS EXCLUSIVE MODE",
                             "-c", "SELECT pg_sleep(120)"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        waiting = "SELECT count(*) FROM pg_locks WHERE relation = 'xip83.group_messages'::regclass AND %s;"
        wait_for(lambda: psql(waiting % "granted AND mode = 'AccessExclusiveLock'") == "1", "the lock")
        s3 = Stream(ch)
        s3.next()
        s3.mutate(3, adds=[(b"\x00" + t3, 0)])
        wait_for(lambda: int(psql(waiting % "NOT granted")) >= 1, "a wave page waiting for the lock")
        subprocess.run([pgctl, "restart", "-m", "fast"], check=True, capture_output=True, timeout=120)
        lock.wait(timeout=60)
    finally:
        if lock.poll() is None:
            lock.kill()
    rows, _, _ = s3.wave(3, timeout=60)
    check(sorted(i for _, i in rows) == owed, "the wave across the restart: %s, owed %s" % (rows, owed))
    x = put_group(t3, b"wx" + U)
    check(s3.live_rows(1) == [("g", x)], "live after the wave that crossed the restart")
    print("a wave whose page was in flight during the restart went on")
    check(g.stop() == 0, "exit 0")


def wait_for(cond, what, seconds=20):
    deadline = time.monotonic() + seconds
    while not cond():
        check(time.monotonic() < deadline, "%s within %d s" % (what, seconds))
        time.sleep(0.05)


run(test)
