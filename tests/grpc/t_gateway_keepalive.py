"""xip83-gateway's keepalive: a stream idle for the interval gets a Ping, one
that does not answer it within another interval ends DEADLINE_EXCEEDED, and
any frame sent resets the timer. The gateway pings a connection's idle
streams together: their timers fire on a grid with a step of 1/8 of the
interval, at a phase of the connection's own, so a Ping goes no earlier than
7/8 of the interval of idleness and at most that much early, and the Pings
of one connection's streams leave in one write.

With --keepalive-ms 2400 (a step of 300 ms), on one connection: six streams
opened 40 ms apart (200 ms in all) get their first Pings at no more than two
moments (their own due times would be six, 40 ms apart), each after 2,100 to
2,400 ms of idleness; a stream that answers its Ping gets another one, one
that does not is ended DEADLINE_EXCEEDED; a stream sent a row every 600 ms
gets no Ping."""
import os
import queue
import threading
import time

import grpc

from gatewaytest import Stream, gateway, msg, put_group
from grpctest import check, run

INTERVAL = 2.4
STEP = INTERVAL / 8
U = os.urandom(4).hex().encode()


def first_ping(s, what):
    """Reads up to s's next Ping: its arrival time."""
    while True:
        r = s.next(INTERVAL * 3)
        if r.WhichOneof("response") == "ping":
            return s.arrived, r.ping.nonce
        check(r.WhichOneof("response") in ("messages",), "%s: a %s before the Ping" % (what, r.WhichOneof("response")))


def test():
    srv = gateway("--keepalive-ms", str(int(INTERVAL * 1000)))
    ch = grpc.insecure_channel("127.0.0.1:%d" % srv.ports["h2c"])

    # six streams on one connection, 40 ms apart; each idle since its Started
    streams, started = [], []
    for i in range(6):
        s = Stream(ch)
        r = s.next()
        check(r.WhichOneof("response") == "started", "stream %d: %s first" % (i, r.WhichOneof("response")))
        check(r.started.keepalive_interval_ms == int(INTERVAL * 1000), "Started advertises %d ms"
              % r.started.keepalive_interval_ms)
        streams.append(s)
        started.append(s.arrived)
        time.sleep(0.04)
    check(started[-1] - started[0] < STEP, "the streams took %.0f ms to open, more than a step: run again"
          % ((started[-1] - started[0]) * 1000))

    # a stream with traffic: a row on its topic every 600 ms
    busy = Stream(ch)
    busy.next()
    topic = b"ka" + U
    busy.mutate(1, adds=[(b"\x00" + topic, 0)])
    busy.wave(1)
    stop = threading.Event()

    def writer():
        i = 0
        while not stop.wait(0.6):
            put_group(topic, b"%d" % i)
            i += 1
    w = threading.Thread(target=writer, daemon=True)
    w.start()

    pings = [first_ping(s, "stream %d" % i) for i, s in enumerate(streams)]
    for i, (at, _) in enumerate(pings):
        idle = at - started[i]
        check(idle >= INTERVAL - STEP - 0.02, "stream %d: a Ping after %.0f ms idle, earlier than %d - %d ms"
              % (i, idle * 1000, INTERVAL * 1000, STEP * 1000))
        check(idle <= INTERVAL + 0.5, "stream %d: no Ping until %.0f ms idle" % (i, idle * 1000))
    times = sorted(at for at, _ in pings)
    moments = 1 + sum(1 for a, b in zip(times, times[1:]) if b - a > 0.025)
    print("first Pings after %s ms idle, at %d moment(s)"
          % ([round((at - started[i]) * 1000) for i, (at, _) in enumerate(pings)], moments))
    check(moments <= 2, "the Pings of one connection's streams came at %d moments: %s" % (
        moments, [round((t - times[0]) * 1000) for t in times]))

    # stream 0 answers and gets another Ping; stream 1 does not and is reaped
    streams[0].send(pong=msg(streams[0].pkg + "Pong", nonce=pings[0][1]))
    again, _ = first_ping(streams[0], "stream 0, answered")
    check(again - pings[0][0] >= INTERVAL - STEP - 0.02, "stream 0: the next Ping %.0f ms after the first"
          % ((again - pings[0][0]) * 1000))
    e = streams[1].end(INTERVAL * 3)
    check(e is not None and e.code() == grpc.StatusCode.DEADLINE_EXCEEDED,
          "an unanswered Ping: %s" % (e and (e.code(), e.details()),))
    check("no Pong" in e.details(), "DEADLINE_EXCEEDED says %r" % e.details())

    # the busy stream: rows all along, never a Ping
    stop.set()
    w.join()
    rows = 0
    while True:
        try:
            r = busy.q.get(timeout=0.2)
        except queue.Empty:
            break
        check(r is not None and r.WhichOneof("response") == "messages", "the busy stream got %s"
              % (r and r.WhichOneof("response")))
        rows += len(r.messages.group_messages)
    check(rows >= 5, "the busy stream got %d rows" % rows)
    for s in streams + [busy]:
        s.close()
    ch.close()
    srv.stop()


run(test)
