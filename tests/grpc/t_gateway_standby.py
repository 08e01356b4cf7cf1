"""xip83-gateway on a hot standby: a standby of the test's server is built
here (pg_basebackup as the server's user, its own data directory and socket
under the run directory, stopped and removed at the end whatever happens).

Two gateways: one against the standby alone (it polls the standby's replayed
horizons) and one fenced (rows and waves on the standby, LISTEN and horizons
on the primary). Streams of both bindings on both must receive every row
written on the primary exactly once, waves and live: rows written while
replay is paused (nothing of them before replay resumes), a fenced gateway
started while replay is paused (its ceilings must be rows the standby has),
a late committer and late writes. Then, with replay paused again and a
late committer, late writes and later rows waiting in the WAL, the primary
stops (after a restart it comes back from, first: the fenced gateway
reconnects to it) and the standby is promoted: both gateways, the one
serving from it alone and the fenced one, which lost its primary, follow on
from their cursors, the late cursor included, LISTEN there, and their
streams get the waiting rows and the rows written on the promoted server
during the switch and after it, each once. The primary is started again at
the end."""
import os
import re
import subprocess

from standbytest import (BINDIR, PGCTL, PRIMARY, SB_DATA, STANDBY, T, Client, Late, Writes,
                         build_standby, caught_up, gw, learned, on_standby, pause, remove_standby,
                         resume, sb_ctl, sql, until)
from grpctest import check, run


def test():
    check(PGCTL and BINDIR, "XIP83_PGCTL (the driver's pg_ctl wrapper) is needed")
    primary_down = False
    w = Writes()
    w.write(b"before")
    sql(PRIMARY, "SELECT xip83.group_horizon(), xip83.late_cursor()")
    try:
        build_standby()
        # the standby knows the horizons once it replayed the notifier's full record
        top = max(w.groups)
        until("the standby learns the horizons", lambda: learned(top), 120)

        # polls far apart: the promotion falls between two of them, with rows unread
        alone = gw("--dsn", STANDBY, "--poll-ms", "1500")
        fenced = gw("--dsn", PRIMARY, "--standby-dsn", STANDBY)
        ca, cf = Client(alone, 1), Client(fenced, 1)
        for c, name in ((ca, "standby alone"), (cf, "fenced")):
            c.want(w, name + ": the wave")
        w.write(b"live")
        for c, name in ((ca, "standby alone"), (cf, "fenced")):
            c.want(w, name + ": live")

        # replay paused: nothing written meanwhile may arrive; a fenced gateway
        # started now has ceilings the standby has replayed
        pause()
        seen = Writes()
        seen.groups, seen.seqs = list(w.groups), list(w.seqs)
        w.write(b"paused")
        fenced2 = gw("--dsn", PRIMARY, "--standby-dsn", STANDBY)
        c2 = Client(fenced2, 7)
        for c, name in ((ca, "standby alone"), (cf, "fenced"), (c2, "fenced, started while paused")):
            c.quiet(seen, name + " during the pause")
        resume()
        for c, name in ((ca, "standby alone"), (cf, "fenced"), (c2, "fenced, started while paused")):
            c.want(w, name + ": rows written during the pause")

        # a late committer, and late writes the feeds get on their late lanes
        late = Late(b"late")
        hole = w.hole()
        w.write(b"above")
        late.commit(w)
        for c, name in ((ca, "standby alone"), (cf, "fenced"), (c2, "fenced, started while paused")):
            c.want(w, name + ": a late committer")
        w.fill(hole)
        for c, name in ((ca, "standby alone"), (cf, "fenced"), (c2, "fenced, started while paused")):
            c.want(w, name + ": late writes")
        check(fenced2.stop() == 0, "the second fenced gateway exits 0")

        # the primary restarts: the fenced gateway reconnects to it (its standby is no primary)
        rc = subprocess.run([PGCTL, "restart", "-m", "fast"], capture_output=True, text=True, timeout=120)
        check(rc.returncode == 0, "restarting the primary: %s" % rc.stderr)
        w.write(b"restarted")
        for c, name in ((ca, "standby alone"), (cf, "fenced")):
            c.want(w, name + ": after the primary's restart")

        # the standby crashes and comes back short of where it had replayed:
        # consistent at its restartpoint, the last rows' commits held back by
        # recovery_min_apply_delay. New streams' waves take the feeds' cursors
        # as ceilings, read before the crash: their pages must wait for replay
        caught_up()
        sql(STANDBY, "CHECKPOINT")
        w.write(b"sbcrash")
        for c, name in ((ca, "standby alone"), (cf, "fenced")):
            c.want(w, name + ": before the standby's crash")
        auto = os.path.join(SB_DATA, "postgresql.auto.conf")
        with open(auto) as f:
            conf = f.read()
        with open(auto, "a") as f:
            f.write("recovery_min_apply_delay = '5s'\n")
        sb_ctl("stop", "-m", "immediate")
        sb_ctl("start")
        have = int(sql(STANDBY, "SELECT count(*) FROM xip83.group_messages WHERE group_id = '\\x%s'"
                       % T.hex()))
        check(have < len(w.groups), "the restarted standby is behind: %d of %d rows" % (have, len(w.groups)))
        c3, c4 = Client(fenced, 9), Client(alone, 9)
        for c, name in ((c3, "fenced"), (c4, "standby alone")):
            c.want(w, name + ": a wave on the restarted standby, behind its ceilings")
        with open(auto, "w") as f:
            f.write(conf)
        sb_ctl("reload")
        w.write(b"sbback")
        for c, name in ((ca, "standby alone"), (cf, "fenced"), (c3, "fenced, new"), (c4, "alone, new")):
            c.want(w, name + ": after the standby's crash")

        # promotion with a late committer, late writes and later rows still
        # waiting in the WAL: the feed's late cursor must carry over
        hole = w.hole()
        w.write(b"over")
        for c, name in ((ca, "standby alone"), (cf, "fenced")):
            c.want(w, name + ": rows above the holes")
        caught_up()
        pause()
        waiting_late = Late(b"late2")
        w.write(b"waiting")
        waiting_late.commit(w)
        w.fill(hole)
        lsn = sql(PRIMARY, "SELECT pg_current_wal_lsn()")
        until("the standby receives %s" % lsn, lambda: sql(
            STANDBY, "SELECT pg_last_wal_receive_lsn() >= '%s'" % lsn) == "t")
        # the primary goes first: the fenced gateway loses its LISTEN and horizons
        rc = subprocess.run([PGCTL, "stop", "-m", "fast"], capture_output=True, text=True, timeout=120)
        check(rc.returncode == 0, "stopping the primary: %s" % rc.stderr)
        primary_down = True
        sb_ctl("promote")
        check(sql(STANDBY, "SELECT pg_is_in_recovery()") == "f", "promoted")
        check(sql(STANDBY, "SELECT count(*) FROM xip83.group_messages WHERE data = '\\x%s'"
                  % waiting_late.data.hex()) == "1", "the promoted server has the late row")
        # rows written on the promoted server while the gateways switch, then after, one of them late
        def on_promoted():
            w.write(b"switch")
            for c, name in ((ca, "standby alone"), (cf, "fenced")):
                c.want(w, name + ": across the promotion")
            after = Late(b"late3")
            w.write(b"promoted")
            after.commit(w)
        on_standby(on_promoted)
        for c, name in ((ca, "standby alone"), (cf, "fenced")):
            c.want(w, name + ": rows written on the promoted server")
        for g, name in ((alone, "alone"), (fenced, "fenced")):
            check(g.stop() == 0, "the %s gateway exits 0" % name)
            err = g.proc.stderr.read()
            check(re.search(r"feed promoted.*\n(.*\n)*.*feed (live|back)", err),
                  "the %s feed followed the promotion and hears notices there: %s" % (name, err))
        print("%d group rows and %d envelopes once each on every stream, across a replay pause,"
              " late committers and the promotion" % (len(w.groups), len(w.seqs)))
    finally:
        remove_standby()
        if primary_down:
            subprocess.run([PGCTL, "start"], capture_output=True, timeout=120)


run(test)
