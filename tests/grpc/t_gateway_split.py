"""A split: the standby of a fenced xip83-gateway is promoted while its
primary goes on. Rows are then written on both servers; the primary's are
not the promoted server's and cannot reach it. The fenced feed reads its
rows on the promoted server with the primary's horizons and fence: it must
notice at its next round, serve from the promoted server
alone from its cursors (LISTEN there), and deliver the rows written there
once each, those written after the switch too. Here the promoted server's
WAL has grown past the primary's fences, so no fence tells the servers
apart: the feed asks the standby whether it is still in recovery. Reading
on with the primary's horizons instead, the promoted server's own rows,
which carry ids above them, would never arrive."""
import re

from gatewaytest import put_group
from grpctest import check, run
from standbytest import (PRIMARY, STANDBY, U, Client, Writes, build_standby, caught_up, gw, learned,
                         on_standby, remove_standby, sb_ctl, sql, until)

OTHER = b"X" + U    # a topic nobody subscribed to, written on the old primary


def test():
    w = Writes()
    w.write(b"before")
    sql(PRIMARY, "SELECT xip83.group_horizon(), xip83.late_cursor()")
    g = None
    try:
        build_standby()
        top = max(w.groups)
        until("the standby learns the horizons", lambda: learned(top), 120)
        g = gw("--dsn", PRIMARY, "--standby-dsn", STANDBY)
        c = Client(g, 1)
        c.want(w, "the wave")
        w.write(b"live")
        c.want(w, "live")

        caught_up()
        sb_ctl("promote")
        check(sql(STANDBY, "SELECT pg_is_in_recovery()") == "f", "promoted")
        # the promoted server's rows: no notice reaches the feed's LISTEN on the primary
        on_standby(w.write, b"promoted")
        # the promoted server's WAL grows past the primary's, so no fence of
        # the primary lies beyond it; then the primary commits a row: a notice
        sql(STANDBY, "CREATE TABLE gw_split_pad AS SELECT repeat('x', 2000) AS pad"
                     " FROM generate_series(1, 5000)")
        put_group(OTHER, b"split" + U)
        fence = sql(PRIMARY, "SELECT fence FROM xip83.horizon_fence()")
        check(sql(STANDBY, "SELECT pg_current_wal_insert_lsn() > '%s'" % fence) == "t",
              "the promoted server's WAL passed the primary's fence")
        c.want(w, "the promoted server's rows, after the switch")
        on_standby(w.write, b"after")
        c.want(w, "rows written on the promoted server after the switch")
        check(g.stop() == 0, "the gateway exits 0")
        err = g.proc.stderr.read()
        g = None
        check(re.search(r"feed promoted", err), "the feed followed the promoted server: %s" % err)
        print("split: %d group rows and %d envelopes once each" % (len(w.groups), len(w.seqs)))
    finally:
        if g is not None:
            g.stop()
        remove_standby()


run(test)
