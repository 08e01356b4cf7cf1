"""xip83-gateway's bidirectional Subscribe, both bindings, with grpcio:
Started first; a Mutate's wave replays above the cursors, tagged with its
mutate_id, then TopicsLive and CatchupComplete; live rows after it, tagged 0,
exactly once, for subscribed topics only; a second Mutate adds a topic with
its backlog; a remove stops a topic; rows written while a wave runs arrive
exactly once across the seam; refusals end the stream with the engine's
codes; half-close ends it OK; any other method is UNIMPLEMENTED; TLS."""
import os
import tempfile
import threading

import grpc

from gatewaytest import Stream, gateway, put_envelope, put_group, put_welcome
from grpctest import check, expect_status, make_cert, run

U = os.urandom(4).hex().encode()    # rows unique to this run (the tables dedupe by hash)


def v3(ch):
    a, b, k = b"A" + U, b"B" + U, b"K" + U
    ids_a = [put_group(a, b"a%d" % i + U) for i in range(3)]
    id_b = put_group(b, b"b0" + U)
    id_k = put_welcome(k, b"k0" + U)
    s = Stream(ch)
    r = s.next()
    check(r.WhichOneof("response") == "started", "Started first, not %s" % r)
    s.mutate(1, adds=[(b"\x00" + a, ids_a[0]), (b"\x01" + k, 0)])
    rows, live, other = s.wave(1)
    check(sorted(rows) == sorted([("g", ids_a[1]), ("g", ids_a[2]), ("w", id_k)]),
          "wave 1 replays above the cursors: %s" % rows)
    check(sorted(live) == sorted([b"\x00" + a, b"\x01" + k]), "TopicsLive: %s" % live)
    check(other == [], "nothing else during the wave: %s" % other)
    # live: subscribed topics only, once, tagged 0
    la = put_group(a, b"a-live" + U)
    put_group(b, b"b-live" + U)
    lk = put_welcome(k, b"k-live" + U)
    got = s.live_rows(2)
    check(sorted(got) == sorted([("g", la), ("w", lk)]), "live rows: %s" % got)
    # a second Mutate: B with its backlog (the row written while it was not subscribed too)
    s.mutate(2, adds=[(b"\x00" + b, 0)])
    rows, live, other = s.wave(2)
    check(("g", id_b) in rows and len(rows) == 2, "wave 2 replays B's two rows: %s" % rows)
    check(live == [b"\x00" + b], "TopicsLive B: %s" % live)
    # remove A: acked at once (mutate_id 0), then A's rows stop
    s.mutate(0, removes=[b"\x00" + a])
    r = s.next()
    check(r.WhichOneof("response") == "catchup_complete" and r.catchup_complete.mutate_id == 0,
          "a Mutate without adds is acked: %s" % r)
    put_group(a, b"a-after-remove" + U)
    lb = put_group(b, b"b-after" + U)
    check(s.live_rows(1) == [("g", lb)], "only B after A's removal")
    s.quiet(0.5)

    # exactly once across the seam: rows of C keep coming while C's wave runs
    c = b"C" + U
    first = [put_group(c, b"c%d" % i + U) for i in range(20)]
    written = list(first)
    done = threading.Event()

    def writer():
        for i in range(20, 80):
            written.append(put_group(c, b"c%d" % i + U))
        done.set()
    t = threading.Thread(target=writer)
    t.start()
    s.mutate(3, adds=[(b"\x00" + c, 0)])
    rows, live, other = s.wave(3)
    seen = rows + other
    t.join()
    while len(seen) < 80:
        seen += s.live_rows(1)
    ids = [i for _, i in seen]
    check(sorted(ids) == sorted(written), "every C row exactly once: %d rows, %d distinct, %d written"
          % (len(ids), len(set(ids)), len(written)))
    s.quiet(0.5)
    # half-close: OK once the waves are done
    s.close()
    check(s.end() is None, "half-close ends OK")

    # refusals: adds with mutate_id 0
    s = Stream(ch)
    s.next()
    s.mutate(0, adds=[(b"\x00" + a, 0)])
    e = s.end()
    check(e is not None and e.code() == grpc.StatusCode.INVALID_ARGUMENT,
          "adds with mutate_id 0: %s" % (e and e.code()))
    # a topic kind past v3's
    s = Stream(ch)
    s.next()
    s.mutate(5, adds=[(b"\x07x", 0)])
    e = s.end()
    check(e is not None and e.code() == grpc.StatusCode.INVALID_ARGUMENT, "unknown topic kind")


def d14n(ch):
    t1, t2 = b"\x00T1" + U, b"\x03T2" + U
    for seq in range(1, 4):
        put_envelope(100, seq, t1)
    put_envelope(200, 1, t1)
    put_envelope(200, 2, t2)
    s = Stream(ch, d14n=True)
    check(s.next().WhichOneof("response") == "started", "Started first")
    # originator 100 seen up to 1; 200 not named: replayed from the start
    s.mutate(9, adds=[(t1, {100: 1})])
    rows, live, other = s.wave(9)
    check(rows == [(100, 2), (100, 3), (200, 1)], "d14n wave in (originator, sequence) order: %s" % rows)
    check(live == [t1], "TopicsLive: %s" % live)
    put_envelope(100, 4, t1)
    put_envelope(200, 3, t2)
    put_envelope(300, 1, t1)
    got = s.live_rows(2)
    check(got == [(100, 4), (300, 1)], "live envelopes, a new originator too: %s" % got)
    s.mutate(10, adds=[(t2, {})])
    rows, live, other = s.wave(10)
    check(rows == [(200, 2), (200, 3)], "second wave: %s" % rows)
    s.mutate(0, removes=[t1])
    s.next()
    put_envelope(100, 5, t1)
    put_envelope(200, 4, t2)
    check(s.live_rows(1) == [(200, 4)], "removed topic stops")
    s.mutate(11, adds=[(b"\x09bad", {})])
    e = s.end()
    check(e is not None and e.code() == grpc.StatusCode.INVALID_ARGUMENT, "d14n kinds stop at 0x05")


def tls():
    """The same over TLS (--tls-cert, --tls-key; ALPN h2)."""
    with tempfile.TemporaryDirectory() as d:
        cert, key = make_cert(d)
        g = gateway("--tls-cert", cert, "--tls-key", key)
        with open(cert, "rb") as f:
            creds = grpc.ssl_channel_credentials(root_certificates=f.read())
        ch = grpc.secure_channel("127.0.0.1:%d" % g.ports["tls"], creds)
        t = b"TLS" + U
        i = put_group(t, b"tls" + U)
        s = Stream(ch)
        check(s.next().WhichOneof("response") == "started", "Started over TLS")
        s.mutate(1, adds=[(b"\x00" + t, 0)])
        rows, _, _ = s.wave(1)
        check(rows == [("g", i)], "a wave over TLS: %s" % rows)
        s.close()
        check(s.end() is None, "OK over TLS")
        check(g.stop() == 0, "exit 0")


def test():
    g = gateway("--pool", "2")
    ch = g.channel()
    v3(ch)
    d14n(ch)
    tls()
    # other methods of the services, and unknown ones
    for path in ("/xmtp.mls.api.v1.MlsApi/QueryGroupMessages", "/xmtp.xmtpv4.message_api.QueryApi/QueryEnvelopes"):
        expect_status(lambda: ch.unary_unary(path)(b"", timeout=10), grpc.StatusCode.UNIMPLEMENTED, path)
    check(g.stop() == 0, "the gateway exits 0 on SIGTERM")


run(test)
