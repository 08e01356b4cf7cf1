"""xip83-gateway keeps serving while DDL holds a lock on a table the feed
reads (a migration's ALTER TABLE, or one queued behind a long query, which
blocks every reader after it): the feed's fetches give up on the lock after
their lock_timeout and retry on the next tick, so the event loop is never
held longer. With ACCESS EXCLUSIVE held on xip83.group_messages for
LOCK_S seconds and a notice making the feed fetch, Pings on a stream are
answered within PONG_LIMIT throughout; a group row written meanwhile (its
INSERT waits for the lock) reaches the stream once, after the lock is
released."""
import os
import subprocess
import time

from gatewaytest import Stream, gateway, put_group, put_welcome
from grpctest import check, run

U = os.urandom(4).hex().encode()
LOCK_S = 6
PONG_LIMIT = 1.0


def test():
    g = gateway("--pool", "2")
    try:
        a = Stream(g.channel())
        check(a.next().WhichOneof("response") == "started", "Started")
        t = b"L" + U
        a.add_group_topic(1, t, [put_group(t, b"l0" + U)])

        lock = subprocess.Popen(
            ["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-c", "BEGIN",
             "-c", "LOCK TABLE xip83.group_messages IN ACCESS EXCLUSIVE MODE",
             "-c", "SELECT pg_sleep(%d)" % LOCK_S, "-c", "COMMIT"],
            stdout=subprocess.DEVNULL)
        time.sleep(0.5)
        # a welcome row: its notice makes the feed fetch, the group kind first
        put_welcome(b"k" + U, b"w0" + U)
        # a group row whose INSERT waits for the lock
        writer = subprocess.Popen(
            ["psql", "-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1", "-c",
             "INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash)"
             " VALUES (decode('%s', 'hex'), decode('%s', 'hex'), sha256(decode('%s', 'hex')))"
             " RETURNING id" % (t.hex(), (b"l1" + U).hex(), (t + b"l1" + U).hex())],
            stdout=subprocess.PIPE, text=True)
        t0 = time.monotonic()
        worst = 0.0
        nonce = 0
        while lock.poll() is None:
            nonce += 1
            worst = max(worst, a.pong(nonce, PONG_LIMIT, "while the table was locked"))
            time.sleep(0.2)
        check(lock.returncode == 0, "the locking transaction failed")
        held = time.monotonic() - t0
        out, _ = writer.communicate(timeout=60)
        check(writer.returncode == 0, "the waiting INSERT failed")
        live = int(out.strip().splitlines()[0])
        print("table locked %.1f s: %d pongs, the slowest %.3f s" % (held, nonce, worst))
        check(held > LOCK_S - 2, "the lock was held only %.1f s" % held)
        check(a.live_rows(1) == [("g", live)], "the row written under the lock, once")
        a.quiet(1)
        a.close()
    finally:
        check(g.stop() == 0, "exit 0")


run(test)
