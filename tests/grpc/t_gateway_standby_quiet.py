"""xip83-gateway alone on a hot standby of a quiet primary.

A standby learns a feed's start horizons from the records the primary's
notifier writes, and the notifier runs only while the feed is used: a
standby built (pg_basebackup) while the primary's notifier is idle has none,
and refuses them until the primary writes again. A gateway on it alone must
still come up: it prints ready, answers Pings, and its streams' requests
wait for the feed's start (feed_started 0), nothing arriving meanwhile.
Once the primary writes, the feed starts, the waves end with every row
written before and the live rows come, each exactly once; rows written
after that come live. The notifier's idle time is lowered for the test
(restored at the end)."""
import re
import time

from standbytest import (BINDIR, DB, PGCTL, PRIMARY, STANDBY, Client, Writes, build_standby, gw,
                         remove_standby, sql, until)
from gatewaytest import metrics
from grpctest import check, run


def notifier_running():
    return sql(PRIMARY, "SELECT count(*) FROM pg_stat_activity WHERE datname = '%s'"
               " AND application_name = 'xip83 notifier'" % DB) != "0"


def test():
    check(PGCTL and BINDIR, "XIP83_PGCTL (the driver's pg_ctl wrapper) is needed")
    sql(PRIMARY, "ALTER SYSTEM SET xip83.notifier_idle_ms = 500")
    sql(PRIMARY, "SELECT pg_reload_conf()")
    t_start = time.monotonic()
    try:
        w = Writes()
        w.write(b"before")
        # nothing uses the feed now: the notifier leaves and writes no more horizons
        until("the primary's notifier leaves", lambda: not notifier_running(), 20)
        build_standby()
        check(not notifier_running(), "the primary stayed quiet during the base backup")
        g = gw("--dsn", STANDBY, "--poll-ms", "20", "--metrics", "127.0.0.1:0")
        c = Client(g, 1)
        check(metrics(g)["xip83_gateway_feed_started"] == 0,
              "the standby had no horizons: the feed has not started")
        # the gateway serves: a Ping is answered, no row arrives before the feed's start
        c.v3.pong(1, 5, "while the feed waits for its start")
        c.quiet(Writes(), "before the feed's start", 1.0)
        check(not any(c.done.values()), "a wave ended before the feed had its start horizons")
        check(g.proc.poll() is None, "the gateway is up")

        # the primary writes: its notifier logs the horizons, the feed starts
        t0 = time.monotonic()
        w.write(b"live")
        c.want(w, "once the primary wrote", 30)
        started_s = time.monotonic() - t0
        check(metrics(g)["xip83_gateway_feed_started"] == 1, "feed_started once it started")
        w.write(b"after")
        c.want(w, "rows written after the feed's start")
        check(g.stop() == 0, "the gateway exits 0")
        err = g.proc.stderr.read()
        check(re.search(r"live feed: no start horizons yet", err), "the wait was said: %s" % err)
        check(re.search(r"live feed: started after \d+ tries", err), "the start was said: %s" % err)
        check(len(re.findall(r"no start horizons yet", err)) <= 3,
              "the wait is said now and then, not on every try: %s" % err)
        print("the feed started %.1f s after the primary's first write; %d group rows and %d"
              " envelopes once each; %.1f s in all" % (started_s, len(w.groups), len(w.seqs),
                                                      time.monotonic() - t_start))
    finally:
        remove_standby()
        sql(PRIMARY, "ALTER SYSTEM RESET xip83.notifier_idle_ms")
        sql(PRIMARY, "SELECT pg_reload_conf()")


run(test)
