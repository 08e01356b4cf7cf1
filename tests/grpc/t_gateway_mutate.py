"""xip83-gateway applies large Mutates without stalling its other clients,
and bounds them. While one client does the worst it can, a canary stream on
another connection (a process of its own) pings every few milliseconds and
its Ping -> Pong round trips are asserted:
- removes: a request over 4 MiB, and a Mutate of 100,001 removes, end their
  stream RESOURCE_EXHAUSTED; Mutates of 100,000 removes (3.5 MB each) back
  to back are each acked;
- one stream adds 100,000 topics and removes them again, in a loop, each
  Mutate acked in order;
- a wave of 100,000 topics: its TopicsLive comes in several messages, each
  within the 2 MiB frame bound, together every topic, before CatchupComplete;
- 4 streams of one connection adding 100,000 topics a Mutate: the stream
  that takes the connection past --max-connection-topic-mib ends
  RESOURCE_EXHAUSTED, the others go on (and the metric counts it).
- live rows written while a Mutate of 100,000 removes is applied in slices:
  a topic it keeps gets each once, in order; the topic it removes last gets
  a leading run of its rows and none after the ack.
After each, a well-behaved client's wave holds its rows. XIP83_MUTATE_P50_MS,
XIP83_MUTATE_P99_MS and XIP83_MUTATE_MAX_MS set the canary's bounds (by
default generous, for a loaded CI machine)."""
import json
import os
import subprocess
import sys
import threading
import time

import grpc

from gatewaytest import M, V3, V3_SUBSCRIBE, Responses, Stream, gateway, metrics, msg, put_group
from grpctest import Failure, Requests, check, run

U = os.urandom(4).hex().encode()
N = 100000
# Before Mutates were applied in slices the loop gave p50 86-147 ms, max 372-696 ms;
# bounds for a loaded CI machine (under ASan everything takes about 3 times as long)
SLOW = 3 if os.environ.get("XIP83_SANITIZE") == "1" else 1
P50_MS = float(os.environ.get("XIP83_MUTATE_P50_MS") or 20 * SLOW)
P99_MS = float(os.environ.get("XIP83_MUTATE_P99_MS") or 250 * SLOW)
MAX_MS = float(os.environ.get("XIP83_MUTATE_MAX_MS") or 1000 * SLOW)
CONN_MIB = 64


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7f
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(tag, body):
    return bytes([tag << 3 | 2]) + varint(len(body)) + body


def mutate_body(adds=(), removes=()):
    """A v3 Mutate's adds (cursor 0) and removes, encoded: fast for 100,000 topics."""
    return b"".join(field(1, field(1, t)) for t in adds) + b"".join(field(2, t) for t in removes)


def request(body, mutate_id=0):
    if mutate_id:
        body += b"\x20" + varint(mutate_id)
    return field(1, field(1, body))


def topics(prefix, n=N):
    return [b"\x00" + prefix + b"%s-%08d" % (U, i) for i in range(n)]


class Raw(Responses):
    """A v3 Subscribe stream whose requests are bytes encoded here."""

    def __init__(self, ch):
        self.reqs = Requests()
        Responses.__init__(self, ch.stream_stream(
            V3_SUBSCRIBE, response_deserializer=M[V3 + "SubscribeResponse"].FromString)(
                self.reqs, timeout=120), lambda r: r.v1)
        check(self.next().WhichOneof("response") == "started", "Started first")

    def ack(self, mutate_id, timeout=60):
        """Reads up to the CatchupComplete of mutate_id: the TopicsLive messages before it."""
        live = []
        while True:
            r = self.next(timeout)
            kind = r.WhichOneof("response")
            if kind == "topics_live":
                live.append(r.topics_live)
            elif kind == "catchup_complete":
                check(r.catchup_complete.mutate_id == mutate_id,
                      "acked %d, expected %d" % (r.catchup_complete.mutate_id, mutate_id))
                return live

    def ended(self, code, text, read=False):
        """The stream's end (read: next() met it already)."""
        e = self.error if read else self.end(60)
        check(e is not None and e.code() == code and text in (e.details() or ""),
              "the stream ended %s, expected %s (%s)" % (e and (e.code(), e.details()), code, text))


def channel(g):
    return g.channel(**{"grpc.use_local_subchannel_pool": 1, "grpc.max_receive_message_length": 4 << 20})


# ---------------------------------------------------------------- the canary

def canary_main(target, seconds):
    """In a process of its own: Pings for seconds, prints the round trips (ms) as JSON."""
    ch = grpc.insecure_channel(target, options=[("grpc.use_local_subchannel_pool", 1)])
    s = Stream(ch)
    check(s.next().WhichOneof("response") == "started", "canary: Started first")
    print("ready", flush=True)
    out = []
    t0 = time.monotonic()
    n = 0
    while time.monotonic() - t0 < seconds:
        n += 1
        out.append(s.pong(n, 10, "(canary)") * 1000)
        time.sleep(0.005)
    print(json.dumps(out), flush=True)
    sys.stdout.flush()
    os._exit(0)


class Canary:
    def __init__(self, g, seconds):
        self.p = subprocess.Popen([sys.executable, __file__, "canary", g.target, str(seconds)],
                                  stdout=subprocess.PIPE, text=True)
        check(self.p.stdout.readline().strip() == "ready", "the canary started")

    def result(self, what):
        line = self.p.stdout.readline()
        self.p.wait()
        check(line, "the canary reported (%s)" % what)
        ms = sorted(json.loads(line))
        p50, p99, top = ms[len(ms) // 2], ms[min(len(ms) - 1, len(ms) * 99 // 100)], ms[-1]
        print("%s: canary %d Pings, p50 %.1f ms, p99 %.1f ms, max %.1f ms" % (what, len(ms), p50, p99, top))
        check(len(ms) >= 50, "%s: only %d Pings" % (what, len(ms)))
        check(p50 <= P50_MS and p99 <= P99_MS and top <= MAX_MS,
              "%s: canary p50 %.1f ms, p99 %.1f ms, max %.1f ms (at most %g, %g, %g)"
              % (what, p50, p99, top, P50_MS, P99_MS, MAX_MS))


def well_behaved(g, n):
    """A client on its own connection: its wave holds the rows written before it."""
    t = b"good-%s-%d" % (U, n)
    ids = [put_group(t, b"r%d" % i) for i in range(3)]
    s = Stream(channel(g))
    check(s.next().WhichOneof("response") == "started", "Started first")
    s.add_group_topic(1, t, ids)
    s.close()


# ---------------------------------------------------------------- the attacks

def removes(g):
    ch = channel(g)
    s = Raw(ch)
    s.reqs.put(request(mutate_body(removes=[b"\x00" + b"x" * 40] * 130000)))
    s.ended(grpc.StatusCode.RESOURCE_EXHAUSTED, "")
    s = Raw(ch)
    s.reqs.put(request(mutate_body(removes=[b"\x00"] * (N + 1))))
    s.ended(grpc.StatusCode.RESOURCE_EXHAUSTED, "100001 removes")
    body = mutate_body(removes=topics(b"r"))
    s = Raw(ch)
    c = Canary(g, 2.5)
    t0 = time.monotonic()
    n = 0
    while time.monotonic() - t0 < 2.5:
        s.reqs.put(request(body))
        n += 1
        s.ack(0)
    c.result("Mutates of 100,000 removes, back to back (%d)" % n)
    s.reqs.close()
    check(s.end() is None, "the remover's stream closes OK")


def add_remove_loop(g):
    names = topics(b"l")
    adds, rems = mutate_body(adds=names), mutate_body(removes=names)
    s = Raw(channel(g))
    c = Canary(g, 2.5)
    t0 = time.monotonic()
    k = 0
    while time.monotonic() - t0 < 2.5:
        k += 1
        s.reqs.put(request(adds, k))
        s.reqs.put(request(rems))
        # the adds' wave may end before or after the removes' ack: both come
        acks = set()
        while len(acks) < 2:
            r = s.next(60)
            if r.WhichOneof("response") == "catchup_complete":
                acks.add(r.catchup_complete.mutate_id)
        check(acks == {0, k}, "acks %s" % acks)
    c.result("100,000 topics added and removed in a loop (%d rounds)" % k)
    s.reqs.close()
    check(s.end() is None, "the looping stream closes OK")


def topics_live(g):
    names = topics(b"t")
    s = Raw(channel(g))
    c = Canary(g, 2.5)
    s.reqs.put(request(mutate_body(adds=names), 9))
    live = s.ack(9)
    c.result("a wave of 100,000 topics")
    sizes = [len(m.SerializeToString()) for m in live]
    got = [t for m in live for t in m.topics]
    print("TopicsLive: %d messages of %s bytes" % (len(live), sizes))
    check(len(live) >= 2 and max(sizes) <= 2 << 20, "TopicsLive in messages within 2 MiB: %s" % sizes)
    check(sorted(got) == sorted(names), "TopicsLive names every topic once")
    s.reqs.close()
    check(s.end() is None, "closes OK")


def one_connection(g):
    ch = channel(g)
    streams = [Raw(ch) for _ in range(4)]
    c = Canary(g, 2.5)
    ended = None
    # one Mutate at a time: the stream whose Mutate crosses the bound ends, no other
    for k in range(1, 10):
        for i, s in enumerate(streams):
            s.reqs.put(request(mutate_body(adds=topics(b"c%d-%d-" % (i, k))), k))
            try:
                s.ack(k)
            except Failure:
                ended = s
                break
        if ended:
            break
    c.result("4 streams of one connection adding 100,000 topics a Mutate")
    check(ended is not None, "a stream ended at the connection's bound")
    ended.ended(grpc.StatusCode.RESOURCE_EXHAUSTED, "the topics of this connection's streams take more than", True)
    m = metrics(g)
    check(m["xip83_gateway_topic_bound_ends_total"] == 1,
          "the metric counts it: %s" % m["xip83_gateway_topic_bound_ends_total"])
    check(m["xip83_gateway_connection_topic_bytes_limit"] == CONN_MIB << 20, "the bound's metric")
    print("topic_bytes %d after the end" % m["xip83_gateway_topic_bytes"])
    for s in streams:
        if s is not ended:
            s.reqs.put(request(b"", 0))
            s.ack(0)
            s.reqs.close()
            check(s.end() is None, "the other streams of the connection go on")


def live_during_slices(g):
    """Live rows routed while a Mutate is applied in slices: the client sees it
    applied at once. A stream holds a and b; its Mutate removes 100,000 other
    topics, then a, while rows of both are written: every row of b comes once
    and in order, a's rows are a leading run of them, none after the ack."""
    a, b = b"la-" + U, b"lb-" + U
    s = Raw(channel(g))
    s.reqs.put(request(mutate_body(adds=[b"\x00" + a, b"\x00" + b]), 1))
    s.ack(1)
    written = {a: [], b: []}
    stop = threading.Event()

    def write():
        n = 0
        while not stop.is_set():
            for t in (a, b):
                n += 1
                written[t].append(put_group(t, b"%d" % n))

    th = threading.Thread(target=write, daemon=True)
    th.start()
    time.sleep(0.5)
    got = {a: [], b: []}
    after_ack = []
    acked = False
    s.reqs.put(request(mutate_body(removes=topics(b"u", N - 1) + [b"\x00" + a])))
    t0 = time.monotonic()
    while time.monotonic() - t0 < 1.5 or not acked:
        r = s.next(30)
        kind = r.WhichOneof("response")
        if kind == "catchup_complete":
            check(r.catchup_complete.mutate_id == 0, "the removes' ack")
            acked = True
        elif kind == "messages":
            check(r.messages.mutate_id == 0, "live rows only")
            for m in r.messages.group_messages:
                got[m.v1.group_id].append(m.v1.id)
                if acked and m.v1.group_id == a:
                    after_ack.append(m.v1.id)
    stop.set()
    th.join()

    def take(r):
        for m in r.messages.group_messages:
            got[m.v1.group_id].append(m.v1.id)
            after_ack.extend([m.v1.id] if m.v1.group_id == a else [])

    # the last rows committed reach the stream a feed round later
    deadline = time.monotonic() + 30
    while len(got[b]) < len(written[b]) and time.monotonic() < deadline:
        try:
            r = s.next(max(0.1, deadline - time.monotonic()))
        except Failure:
            break           # the check below says what is missing
        if r.WhichOneof("response") == "messages":
            take(r)
    # then anything more, a repeat say, comes before the Pong of a Ping sent now
    s.reqs.put(msg(V3 + "SubscribeRequest", v1=msg(V3 + "SubscribeRequest.V1", ping=msg(V3 + "Ping", nonce=7)))
               .SerializeToString())
    while True:
        r = s.next(30)
        kind = r.WhichOneof("response")
        if kind == "pong":
            break
        if kind == "messages":
            take(r)
    print("rows written: a %d, b %d; received: a %d, b %d" % (len(written[a]), len(written[b]), len(got[a]), len(got[b])))
    check(got[b] == written[b], "every row of b once, in order: %s / %s" % (got[b], written[b]))
    check(got[a] == written[a][:len(got[a])], "a's rows are a leading run: %s / %s" % (got[a], written[a]))
    check(not after_ack, "no row of a after the ack: %s" % after_ack)
    check(len(got[a]) < len(written[a]), "rows of a were written after its removal")
    s.reqs.close()
    check(s.end() is None, "closes OK")


def test():
    g = gateway("--metrics", "127.0.0.1:0", "--max-connection-topic-mib", str(CONN_MIB))
    for n, attack in enumerate((removes, add_remove_loop, topics_live, one_connection, live_during_slices)):
        t0 = time.monotonic()
        attack(g)
        well_behaved(g, n)
        print("%s: %.1f s" % (attack.__name__, time.monotonic() - t0))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "canary":
        canary_main(sys.argv[2], float(sys.argv[3]))
    run(test)
