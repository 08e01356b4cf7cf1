"""xip83-gateway: no client leaves a wave connection busy for the others.

A raw HTTP/2 client grants its streams no flow-control window
(INITIAL_WINDOW_SIZE 0, no WINDOW_UPDATE): nothing the gateway sends them
leaves, not even their trailers, so their streams stay after they end. On
one wave connection (--pool 1) such a stream:
- sends a Mutate whose wave sends a page query, and at once an invalid
  Mutate (mutate_id 0 with adds): the stream fails while its page is in
  flight;
- sends 257 Mutates that start waves: the 257th passes the 256 waves a
  stream may have in flight, again while a page is in flight.
After each, the page's result must have been taken: a well-behaved grpcio
client's wave completes with all its rows (not UNAVAILABLE "another command
is already in progress"), pool_busy reads 0 and no wave connection needed a
reconnect (pool_resets_total 0). A canary stream on another connection gets
its Pongs promptly throughout.

Then the gateway's bound of waves in flight (--max-waves 300): a
zero-window client's stream, paused by a wave it does not read, holds 250
waves, and another stream of it that starts 100 more ends
RESOURCE_EXHAUSTED alone
(waves_refused_total 1); the well-behaved client's wave still completes."""
import os
import time

from gatewaytest import Stalled, Stream, gateway, metrics, mutate, psql
from grpctest import check, run

U = os.urandom(4).hex().encode()
BIG = b"P" + U           # rows enough for pages that take a moment
ROWS = 3000


def well_behaved(g, mutate_id, what):
    """A grpcio client's wave of BIG: every row, then CatchupComplete."""
    s = Stream(g.channel())
    s.next()  # Started
    s.mutate(mutate_id, adds=[(b"\x00" + BIG, 0)])
    rows, _, _ = s.wave(mutate_id, timeout=60)
    check(len(rows) == ROWS and len(set(rows)) == ROWS,
          "%s: the well-behaved wave has %d rows, not %d" % (what, len(rows), ROWS))
    s.close()


def settled(g, what):
    """No page in flight left behind, none reconnected for it."""
    deadline = time.monotonic() + 20
    while metrics(g)["xip83_gateway_pool_busy"] != 0:
        check(time.monotonic() < deadline, "%s: pool_busy stays above 0" % what)
        time.sleep(0.1)
    check(metrics(g)["xip83_gateway_pool_resets_total"] == 0,
          "%s: a wave connection came back busy and was reconnected" % what)


def test():
    # 500 bytes a row: a wave of BIG is more than a stream may have queued and still read pages
    psql("INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash)"
         " SELECT decode(:'a1', 'hex'), convert_to(rpad('row' || i, 500, '.'), 'UTF8'),"
         " sha256(decode(:'a1', 'hex') || convert_to(rpad('row' || i, 500, '.'), 'UTF8'))"
         " FROM generate_series(1, %d) i;" % ROWS, BIG.hex())
    g = gateway("--pool", "1", "--metrics", "127.0.0.1:0")
    canary = Stream(g.channel(**{"grpc.use_local_subchannel_pool": 1}))
    canary.next()  # Started
    well_behaved(g, 1, "before any attack")

    # a wave, then at once an invalid Mutate: the stream fails with its page in flight
    bad = Stalled(g.ports["h2c"])
    for i in range(5):
        bad.stream(mutate(7, [BIG]) + mutate(0, [BIG]))
    _, worst = canary.pongs(1.5, 5, "after the invalid Mutates")
    settled(g, "invalid Mutates")
    well_behaved(g, 2, "after the invalid Mutates")

    # 257 waves in flight: the last one fails the stream, a page in flight
    bad.stream(b"".join(mutate(i + 1, [BIG + b"%d" % i]) for i in range(257)))
    _, w = canary.pongs(1.5, 5, "after 257 waves")
    worst = max(worst, w)
    settled(g, "257 waves")
    well_behaved(g, 3, "after 257 waves")
    m = metrics(g)
    check(m['xip83_gateway_stream_ends_total{code="INVALID_ARGUMENT"}'] == 5, "5 invalid Mutates counted")
    check(m['xip83_gateway_stream_ends_total{code="RESOURCE_EXHAUSTED"}'] == 1, "257 waves counted")
    bad.close()
    check(g.stop() == 0, "the gateway exits 0")

    # the gateway's bound of waves in flight: the stream passing it ends alone
    g = gateway("--pool", "1", "--metrics", "127.0.0.1:0", "--max-waves", "300")
    hog = Stalled(g.ports["h2c"])
    # BIG's wave pauses the stream (its rows are not read), which then holds its waves
    sid = hog.stream(mutate(1, [BIG]))
    deadline = time.monotonic() + 20
    while metrics(g)["xip83_gateway_pending_bytes"] < 1024 * 1024:
        check(time.monotonic() < deadline, "the hog's stream pauses")
        time.sleep(0.1)
    hog.conn.send_data(sid, b"".join(mutate(i + 2, [BIG + b"h%d" % i]) for i in range(249)))
    hog.flush()
    deadline = time.monotonic() + 20
    while metrics(g)["xip83_gateway_waves_in_flight"] < 250:
        check(time.monotonic() < deadline, "the hog's 250 waves: %s" % metrics(g))
        time.sleep(0.1)
    hog.stream(b"".join(mutate(i + 1, [BIG + b"x%d" % i]) for i in range(100)))
    deadline = time.monotonic() + 20
    while metrics(g)["xip83_gateway_waves_refused_total"] < 1:
        check(time.monotonic() < deadline, "no wave refused past --max-waves")
        time.sleep(0.1)
    m = metrics(g)
    check(m["xip83_gateway_waves_max"] == 300, "waves_max")
    check(m['xip83_gateway_stream_ends_total{code="RESOURCE_EXHAUSTED"}'] == 1,
          "only the stream past the bound ended")
    check(m["xip83_gateway_waves_in_flight"] <= 350, "waves in flight %d" % m["xip83_gateway_waves_in_flight"])
    hog.conn.close_connection()
    hog.flush()
    hog.close()
    deadline = time.monotonic() + 20
    while metrics(g)["xip83_gateway_waves_in_flight"] > 0:
        check(time.monotonic() < deadline, "the hog's waves end with its connection")
        time.sleep(0.1)
    well_behaved(g, 4, "after the bound of waves")
    settled(g, "the bound of waves")
    check(g.stop() == 0, "the gateway exits 0")
    print("waves after each attack complete; canary's slowest Pong %.1f ms" % (worst * 1000))


run(test)
