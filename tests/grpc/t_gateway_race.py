"""xip83-gateway exactly once under racing writes and mutates: 40 v3
Subscribe streams over two connections add, remove and re-add topics (from
cursors of their choosing; a re-add removes in the same Mutate) while two writers keep inserting rows into those
topics (their commits interleave). For every stream and every topic, once everything settled: the rows
of its last add (tagged with that add's mutate_id, then live rows after the
TopicsLive naming the topic) are exactly the topic's rows above that add's
cursor, each once; and no live row of a topic arrives between its removal's
acknowledgement and its next add."""
import os
import random
import threading
import time

from gatewaytest import Stream, gateway, metrics, msg, psql
from grpctest import check, run

U = os.urandom(3).hex()
TOPICS = [("r%d" % i + U).encode() for i in range(8)]
STREAMS = 40
ROUNDS = 12


class Tracker:
    """One stream: its requests, and what came back, by topic and epoch."""

    def __init__(self, ch, rng):
        self.s = Stream(ch, timeout=300)
        self.rng = rng
        self.next_id = 1
        self.subscribed = {}     # topic -> (mutate_id, cursor) of its last add
        self.acked = set()
        self.pending = {}        # mutate_id -> ("add", topic) / ("remove", topic)
        self.rows = {}           # (topic, mutate_id of its add) -> ids received for that epoch
        self.live_topic = {}     # topic -> mutate_id whose TopicsLive named it (live rows go there)
        self.removed = set()     # topics whose removal was acknowledged and not re-added
        self.going_live = []     # topics of the last TopicsLive
        self.bad = []
        self.log = []            # (tag, topic, id) as received, and ("req", ...) as sent

    def step(self, max_id):
        t = self.rng.choice(TOPICS)
        m = self.next_id
        self.next_id += 1
        if t in self.subscribed and self.rng.random() < 0.4:
            self.s.mutate(m, removes=[b"\x00" + t])
            self.log.append(("remove", m, t))
            self.pending[m] = ("remove", t)
            del self.subscribed[t]
        else:
            # a topic held already is removed in the same Mutate: the add then always
            # replays from its own cursor (an add at or above where a live topic stands
            # would be a no-op and keep the earlier epoch)
            c = self.rng.randint(0, max_id)
            self.s.mutate(m, adds=[(b"\x00" + t, c)], removes=[b"\x00" + t] if t in self.subscribed else [])
            self.log.append(("add", m, t, c))
            self.pending[m] = ("add", t)
            self.subscribed[t] = (m, c)
            self.rows[(t, m)] = []

    def drain(self, wait=0.0):
        """Takes what has arrived (waiting up to wait seconds for the first)."""
        deadline = time.monotonic() + wait
        while True:
            left = deadline - time.monotonic()
            try:
                r = self.s.q.get(timeout=max(left, 0.001)) if left > 0 else self.s.q.get_nowait()
            except Exception:
                return
            check(r is not None, "a stream ended: %s" % (self.s.error and self.s.error.details()))
            kind = r.WhichOneof("response")
            if kind == "ping":
                # a test that runs past the keepalive answers like a client
                self.s.send(pong=msg(self.s.pkg + "Pong", nonce=r.ping.nonce))
            elif kind == "catchup_complete":
                m = r.catchup_complete.mutate_id
                self.acked.add(m)
                # the TopicsLive just before it was this wave's: their live rows are its epoch's
                for t in self.going_live:
                    self.live_topic[t] = m
                    self.removed.discard(t)
                self.going_live = []
                what = self.pending.pop(m, None)
                if what and what[0] == "remove":
                    # live rows stop here, until the next add
                    if self.live_topic.get(what[1]) is not None and what[1] not in self.subscribed:
                        self.live_topic[what[1]] = None
                        self.removed.add(what[1])
            elif kind == "messages":
                tag = r.messages.mutate_id
                for g in r.messages.group_messages:
                    t = g.v1.group_id
                    self.log.append((tag, t, g.v1.id))
                    if tag:
                        self.rows.setdefault((t, tag), []).append(g.v1.id)
                    else:
                        m = self.live_topic.get(t)
                        if m is None:
                            self.bad.append("live row %d of %s with no live epoch" % (g.v1.id, t))
                        else:
                            self.rows.setdefault((t, m), []).append(g.v1.id)
            if kind == "topics_live":
                # the CatchupComplete that follows says which wave made them live
                self.going_live += [bytes(t[1:]) for t in r.topics_live.topics]

    def settled(self):
        return not self.pending


def test():
    g = gateway("--pool", "3", "--metrics", "127.0.0.1:0")
    chans = [g.channel(**{"grpc.use_local_subchannel_pool": 1}) for _ in range(2)]
    rng = random.Random(83)
    streams = [Tracker(chans[i % 2], random.Random(rng.random())) for i in range(STREAMS)]
    for st in streams:
        check(st.s.next().WhichOneof("response") == "started", "Started")
    stop = threading.Event()
    n_written = [0]

    def writer(k):
        i = 0
        while not stop.is_set():
            # 10 rows a statement, random topics
            psql("INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash)"
                 " SELECT convert_to('r' || (random() * 7)::int || :'a1', 'UTF8'),"
                 " convert_to(:'a2' || '-' || j, 'UTF8'),"
                 " sha256(convert_to(:'a2' || '-' || j || random()::text, 'UTF8'))"
                 " FROM generate_series(1, 10) j;", U, "%s-%d-%d" % (U, k, i))
            i += 1
            n_written[0] += 10
            # ~50 rows/s each: every add replays its topic from a random cursor and every
            # row goes live to most of the 40 streams, so the rate sets what this Python
            # client decodes (the gateway is not the bottleneck here)
            time.sleep(0.15)
    # two writers, their commits interleaving
    writers = [threading.Thread(target=writer, args=(k,)) for k in range(2)]
    for w in writers:
        w.start()
    t0 = time.monotonic()
    for _ in range(ROUNDS):
        top = int(psql("SELECT coalesce(max(id), 0) FROM xip83.group_messages;") or 0)
        for st in streams:
            st.step(top)
        for st in streams:
            st.drain(0.02)
    stop.set()
    for w in writers:
        w.join()
    t_rounds = time.monotonic() - t0
    deadline = time.monotonic() + 60
    for n, st in enumerate(streams):
        while not st.settled():
            if time.monotonic() >= deadline:
                # what the stuck stream asked and last saw, and the gateway's own count
                print("stream %d: pending %s, error %s" % (n, sorted(st.pending.items()), st.s.error))
                for e in st.log[-12:]:
                    print("  ", e)
                print({k: v for k, v in metrics(g).items() if "wave" in k or "pool" in k or "stream" in k})
            check(time.monotonic() < deadline, "waves did not finish")
            st.drain(0.5)
    print("rounds %.1f s, settled %.1f s after" % (t_rounds, time.monotonic() - t0 - t_rounds))
    time.sleep(1.0)
    for st in streams:
        st.drain(0.2)
    # what each topic holds
    ids = {}
    for line in psql("SELECT convert_from(group_id, 'UTF8'), id FROM xip83.group_messages"
                     " WHERE convert_from(group_id, 'UTF8') LIKE '%' || :'a1';", U).splitlines():
        t, i = line.split("|")
        ids.setdefault(t.encode(), []).append(int(i))
    checked = 0
    for n, st in enumerate(streams):
        check(not st.bad, "stream %d: %s" % (n, st.bad[:3]))
        for t, (m, c) in st.subscribed.items():
            got = st.rows.get((t, m), [])
            want = sorted(i for i in ids.get(t, []) if i > c)
            if sorted(got) != want:
                dup = sorted({i for i in got if got.count(i) > 1})[:5]
                for e in st.log:
                    if (len(e) == 3 and e[1] == t and e[2] in dup) or (e[0] in ("add", "remove") and e[2] == t):
                        print(e)
            check(sorted(got) == want, "stream %d topic %s (add %d above %d): %d rows, %d distinct, %d owed"
                  % (n, t, m, c, len(got), len(set(got)), len(want)))
            checked += len(want)
    print("%d rows written; %d owed rows checked across %d streams" % (n_written[0], checked, STREAMS))
    check(g.stop() == 0, "exit 0")


run(test)
