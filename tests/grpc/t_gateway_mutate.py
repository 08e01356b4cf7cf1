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
After each, a well-behaved client's wave holds its rows. XIP83_MUTATE_P50_MS,
XIP83_MUTATE_P99_MS and XIP83_MUTATE_MAX_MS set the canary's bounds (by
default generous, for a loaded CI machine)."""
import json
import os
import subprocess
import sys
import time
import urllib.request

import grpc

from gatewaytest import M, V3, V3_SUBSCRIBE, Responses, Stream, gateway, put_group
from grpctest import Failure, Requests, check, run

U = os.urandom(4).hex().encode()
N = 100000
# Before Mutates were applied in slices the loop gave p50 86-147 ms, max 372-696 ms;
# bounds for a loaded CI machine (under ASan everything takes about 3 times as long)
SLOW = 3 if os.environ.get("XIP83_SANITIZE") == "1" else 1
P50_MS = float(os.environ.get("XIP83_MUTATE_P50_MS") or 20 * SLOW)
P99_MS = float(os.environ.get("XIP83_MUTATE_P99_MS") or 100 * SLOW)
MAX_MS = float(os.environ.get("XIP83_MUTATE_MAX_MS") or 400 * SLOW)
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


def metrics(g):
    text = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % g.ports["metrics"], timeout=10).read().decode()
    return {k: float(v) for k, _, v in (line.rpartition(" ") for line in text.splitlines()
                                        if line and not line.startswith("#"))}


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
    c = Canary(g, 3)
    t0 = time.monotonic()
    n = 0
    while time.monotonic() - t0 < 3:
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
    c = Canary(g, 3)
    t0 = time.monotonic()
    k = 0
    while time.monotonic() - t0 < 3:
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
    c = Canary(g, 3)
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
    c = Canary(g, 3)
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


def test():
    g = gateway("--metrics", "127.0.0.1:0", "--max-connection-topic-mib", str(CONN_MIB))
    for n, attack in enumerate((removes, add_remove_loop, topics_live, one_connection)):
        t0 = time.monotonic()
        attack(g)
        well_behaved(g, n)
        print("%s: %.1f s" % (attack.__name__, time.monotonic() - t0))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "canary":
        canary_main(sys.argv[2], float(sys.argv[3]))
    run(test)
