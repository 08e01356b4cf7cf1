"""xip83-gateway exactly once at scale, across a database restart and a
crash: 1,000 Subscribe streams (grpc.aio, over four HTTP/2 connections), a
quarter of them d14n (QueryApi/Subscribe: envelopes keyed by originator and
sequence, vector cursors), the rest v3, add, remove and re-add topics from
cursors of their choosing while writers insert 100,000 rows into those
topics: four v3 writers (commits interleave; some transactions draw their
ids, then commit after later ones) and two d14n writers with two originators
each (sequence ids of their own choosing, ascending per originator; some
transactions commit after later sequences of their originator, and a batch
that failed is retried with the same ids, ON CONFLICT DO NOTHING, as the
node does). The database restarts (XIP83_PGCTL restart -m fast) at a third
of the writes and crashes (stop -m immediate, then start) at two thirds. A
stream that ends UNAVAILABLE (or ABORTED: late writes lost with the restart)
resubscribes like a real client: a new stream, its topics added from the
last position it holds per topic (v3: an id; d14n: per originator). At the
end, for every client and every add of a topic (an "epoch", across
reconnects): the rows received are the topic's rows above the add's cursor
in ascending order (d14n: per originator), each once, all of them for a
topic still held and a leading run of them for a removed one; no row
arrives for a topic between its removal's acknowledgement and its next add,
nor before a wave's seam. XIP83_ONCE_STREAMS, XIP83_ONCE_ROWS and
XIP83_ONCE_SECONDS (the writers' pace) scale it; under XIP83_SANITIZE=1 the
defaults are a tenth."""
import asyncio
import collections
import os
import random
import threading
import time

import grpc
import grpc.aio

from gatewaytest import D14N, D14N_SUBSCRIBE, ENV, M, V3, V3_SUBSCRIBE, envelope, envelope_position, gateway, msg
from grpctest import Failure, check, run

SMALL = os.environ.get("XIP83_SANITIZE") == "1"
STREAMS = int(os.environ.get("XIP83_ONCE_STREAMS") or (100 if SMALL else 1000))
ROWS = int(os.environ.get("XIP83_ONCE_ROWS") or (10000 if SMALL else 100000))
SECONDS = float(os.environ.get("XIP83_ONCE_SECONDS") or 40)
CHANNELS = 4
WRITERS = 4                      # v3
D_WRITERS = 2                    # d14n, two originators each
BATCH = 250                      # rows a statement
D_STREAMS = STREAMS // 4
D_ROWS = ROWS // 4
HELD = 2                         # topics a client holds at most
U = os.urandom(3).hex()
N_TOPICS = max((STREAMS - D_STREAMS) // 2, 8)
TOPICS = [("o%d" % i + U).encode() for i in range(N_TOPICS)]
# d14n topics are kind-prefixed as stored (kind 0: group messages)
D_TOPICS = [b"\x00" + ("d%d" % i + U).encode() for i in range(max(D_STREAMS // 2, 8))]
ORIGINATORS = [100 + i for i in range(2 * D_WRITERS)]
TOPIC_OF = {}                    # (originator, sequence) -> topic, as the d14n writers chose it


class Epoch:
    """One add of a topic by one client, followed across its reconnects.
    v3: cursor an id, rows ids; d14n: cursor {originator: sequence}, rows
    (originator, sequence)."""

    def __init__(self, topic, cursor):
        self.topic, self.cursor = topic, cursor
        self.rows = []
        self.removed = False
        self.last = {}           # d14n: originator -> last sequence received

    def take(self, i, bad, how):
        if isinstance(i, tuple):
            o, q = i
            if self.last.get(o, self.cursor.get(o, 0)) >= q:
                bad.append("%s envelope %s of %s after %s (cursor %s)" % (how, i, self.topic, self.rows[-3:],
                                                                         self.cursor))
            self.last[o] = q
        elif (self.rows[-1] if self.rows else self.cursor) >= i:
            bad.append("%s row %d of %s after %s (cursor %d)" % (how, i, self.topic, self.rows[-3:], self.cursor))
        self.rows.append(i)

    def resume_at(self):
        if isinstance(self.cursor, dict):
            return {**self.cursor, **self.last}
        return self.rows[-1] if self.rows else self.cursor


class Client:
    """A client: its intent (topics held, as epochs) outlives its streams."""

    def __init__(self, n, rng, d14n=False):
        self.n, self.rng, self.d14n = n, rng, d14n
        self.pkg = D14N if d14n else V3
        self.topics = D_TOPICS if d14n else TOPICS
        self.held = {}           # topic -> Epoch
        self.epochs = []
        self.next_id = 1
        self.bad = []
        self.reconnects = 0
        self.stalls = []         # when a request was not taken within 30 s
        self.stalled = False
        self.dead_writes = 0     # requests left pending on a stream that had ended
        self.ends = {}
        self.call = None

    def new_stream(self, ch):
        self.call = ch.stream_stream(D14N_SUBSCRIBE if self.d14n else V3_SUBSCRIBE,
                                     request_serializer=lambda m: m.SerializeToString(),
                                     response_deserializer=M[self.pkg + "SubscribeResponse"].FromString)(timeout=600)
        self.pending = {}        # mutate_id -> Epochs it adds (by topic)
        self.live = {}           # topic -> Epoch its live rows belong to on this stream
        self.going_live = []
        self.fresh = True        # no request taken on this stream yet

    async def mutate(self, adds=(), removes=()):
        m = self.next_id
        self.next_id += 1
        req = self.pkg + "SubscribeRequest"
        sub = req + ".V1.Mutate.Subscription"
        if self.d14n:
            subs = [msg(sub, topic=e.topic, last_seen=msg(ENV + "Cursor", node_id_to_sequence_id=e.resume_at()))
                    for e in adds]
        else:
            subs = [msg(sub, topic=b"\x00" + e.topic, id_cursor=e.resume_at()) for e in adds]
        req = msg(req, v1=msg(req + ".V1", mutate=msg(
            req + ".V1.Mutate", mutate_id=m, removes=[self.wire_topic(t) for t in removes], adds=subs)))
        self.pending[m] = ({e.topic: e for e in adds}, list(removes))
        await self.send(req)

    def wire_topic(self, t):
        return t if self.d14n else b"\x00" + t

    async def send(self, req):
        call = self.call
        try:
            await asyncio.wait_for(call.write(req), 30)
            self.fresh = False
        except asyncio.TimeoutError:
            if call is not self.call or call.done():
                # grpc.aio may leave a write pending on a call that ended meanwhile:
                # the resubscription carries the intent
                self.dead_writes += 1
                return
            # as a real client would: this stream is given up, a new one carries the intent.
            # Kept because such a wait was traced to the client's side, not the gateway's:
            # at the first one, the gateway held every stream open and healthy with nothing
            # unread and nothing queued (stream receive windows at 1 MiB with under 300
            # bytes unacknowledged, connection windows at 16 MiB, output empty, each
            # connection read), and ss showed empty send and receive queues on both ends,
            # most connections idle for 15 s: the request never reached the socket. The
            # gateway's own side of this is t_gateway_dbdown.py, strict.
            self.stalls.append((time.monotonic(), self.n % CHANNELS, self.fresh))
            self.stalled = True
            call.cancel()
        except Exception:
            # the stream ended under it: the resubscription carries the intent
            pass

    async def step(self, top):
        """One racing Mutate: remove a held topic, re-add one (remove and add
        in one Mutate, from a new cursor), or add another."""
        r = self.rng.random()
        t = self.rng.choice(self.topics)
        if self.held and r < 0.3:
            t = self.rng.choice(sorted(self.held))
            self.held.pop(t).removed = True
            await self.mutate(removes=[t])
            return
        if self.held and (r < 0.6 or len(self.held) >= HELD):
            t = self.rng.choice(sorted(self.held))
        # cursors: the whole topic, or somewhere in what is written so far
        # (d14n: for some originators, the others from their start)
        whole = self.rng.random() < 0.2
        if self.d14n:
            e = Epoch(t, {} if whole else {o: self.rng.randint(0, q) for o, q in top.d14n.items()
                                           if self.rng.random() < 0.7})
        else:
            e = Epoch(t, 0 if whole else self.rng.randint(0, top.v3))
        old = self.held.get(t)
        if old:
            old.removed = True
        self.held[t] = e
        self.epochs.append(e)
        await self.mutate(adds=[e], removes=[t] if old else [])

    async def read(self):
        """Reads this stream to its end; its status code."""
        try:
            async for r in self.call:
                kind = r.v1.WhichOneof("response")
                if kind in ("messages", "envelopes"):
                    tag = getattr(r.v1, kind).mutate_id
                    if kind == "envelopes":
                        rows = [(TOPIC_OF.get(k), k) for k in map(envelope_position, r.v1.envelopes.envelopes)]
                    else:
                        rows = [(g.v1.group_id, g.v1.id) for g in r.v1.messages.group_messages]
                    for t, i in rows:
                        if tag:
                            e = self.pending[tag][0].get(t) if tag in self.pending else None
                        else:
                            e = self.live.get(t)
                        if e is None:
                            self.bad.append("row %s of %s tagged %d with no epoch for it" % (i, t, tag))
                        else:
                            e.take(i, self.bad, "wave %d" % tag if tag else "live")
                elif kind == "ping":
                    # a real client answers, or the gateway reaps it
                    req = self.pkg + "SubscribeRequest"
                    await self.send(msg(req, v1=msg(req + ".V1", pong=msg(self.pkg + "Pong",
                                                                           nonce=r.v1.ping.nonce))))
                elif kind == "topics_live":
                    self.going_live += [bytes(t) if self.d14n else bytes(t[1:]) for t in r.v1.topics_live.topics]
                elif kind == "catchup_complete":
                    adds, removes = self.pending.pop(r.v1.catchup_complete.mutate_id, ({}, []))
                    for t in removes:
                        self.live.pop(t, None)
                    for t in self.going_live:
                        if t in adds:
                            self.live[t] = adds[t]
                        else:
                            self.bad.append("TopicsLive names %s, not added by its wave" % t)
                    self.going_live = []
            return grpc.StatusCode.OK
        except grpc.aio.AioRpcError as e:
            return e.code()
        except asyncio.CancelledError:
            # grpc.aio's word for a call this client cancelled itself
            if self.stalled or self.done:
                return grpc.StatusCode.CANCELLED
            raise

    async def resubscribe(self, ch):
        self.reconnects += 1
        self.new_stream(ch)
        if self.held:
            await self.mutate(adds=list(self.held.values()))


class Top:
    """The highest positions written so far: v3 id, d14n sequence per originator."""

    def __init__(self):
        self.v3 = 0
        self.d14n = {}


class Run:
    def __init__(self):
        self.top = Top()
        self.written = 0
        self.writing = True
        self.failed_statements = 0
        self.gaps = 0
        self.events = []         # (restart or crash, when)

    async def sh(self, *cmd, stdin=None, env=None):
        p = await asyncio.create_subprocess_exec(*cmd, stdin=asyncio.subprocess.PIPE,
                                                 stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                                                 env=env)
        out, err = await p.communicate(stdin.encode() if stdin else None)
        return p.returncode, out.decode()

    async def psql(self, sql, *args, app=None):
        cmd = ["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1"]
        for i, a in enumerate(args, 1):
            cmd += ["-v", "a%d=%s" % (i, a)]
        return await self.sh(*cmd, stdin=sql, env=dict(os.environ, PGAPPNAME=app) if app else None)

    async def writer(self, k, statements, pace):
        rng = random.Random(k)
        insert = ("INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash)"
                  " SELECT convert_to('o' || floor(random() * %d)::int || :'a1', 'UTF8'),"
                  " convert_to(:'a2' || '-' || j, 'UTF8'),"
                  " sha256(convert_to(:'a2' || '-' || j || random()::text, 'UTF8'))"
                  " FROM generate_series(1, %d) j RETURNING id;" % (N_TOPICS, BATCH))
        for i in range(statements):
            t0 = time.monotonic()
            # every fifth statement a late committer: its ids drawn, others commit above them first
            sql = "BEGIN;\n%s\nSELECT pg_sleep(%.2f);\nCOMMIT;" % (insert, rng.uniform(0.2, 1.0)) \
                if i % 5 == 2 else insert
            while True:
                rc, out = await self.psql(sql, U, "%s-%d-%d" % (U, k, i))
                if rc == 0:
                    break
                # a restart: the statement rolled back (or never ran); again
                self.failed_statements += 1
                await asyncio.sleep(0.3)
            ids = [int(x) for x in out.split() if x.isdigit()]
            self.top.v3 = max([self.top.v3] + ids)
            self.written += BATCH
            await asyncio.sleep(max(0.0, pace - (time.monotonic() - t0)))

    def envelopes(self, node, first, rng):
        """An INSERT of BATCH envelopes of node from sequence first on, on random topics."""
        values = []
        for q in range(first, first + BATCH):
            t = rng.choice(D_TOPICS)
            TOPIC_OF[(node, q)] = t
            values.append("(%d, %d, '\\x%s', '\\x%s')" % (node, q, t.hex(),
                                                          envelope(node, q, t).SerializeToString().hex()))
        return ("INSERT INTO xip83.envelopes (originator_node_id, originator_sequence_id, topic,"
                " originator_envelope) VALUES %s ON CONFLICT DO NOTHING;" % ", ".join(values))

    async def late_envelopes(self, sql, app, node, last):
        """A late committer: its sequences are taken before later ones of its
        originator commit. Not retried when a restart ends it: the node
        would, but a retry after later sequences committed is a late write,
        which a stream that resubscribed above it never gets (a vector
        cursor cannot name a hole). The sequences stay a gap."""
        rc, _ = await self.psql(sql, app=app)
        if rc == 0:
            self.top.d14n[node] = max(self.top.d14n.get(node, 0), last)
        else:
            self.failed_statements += 1
            self.gaps += 1

    async def sleeping(self, app, task):
        """Waits until the late committer app has inserted (it sleeps before its commit), or ended."""
        while not task.done():
            rc, out = await self.psql("SELECT count(*) FROM pg_stat_activity WHERE application_name = :'a1'"
                                      " AND query LIKE '%pg_sleep%';", app)
            if rc == 0 and out.strip() == "1":
                return
            await asyncio.sleep(0.05)

    async def d14n_writer(self, k, statements, pace):
        rng = random.Random(1000 + k)
        nodes = ORIGINATORS[2 * k:2 * k + 2]
        following = {o: 1 for o in nodes}        # the next sequence of each originator
        lates = []
        for i in range(statements):
            t0 = time.monotonic()
            node = nodes[i % 2]
            first = following[node]
            following[node] += BATCH
            sql = self.envelopes(node, first, rng)
            if i % 5 == 2:
                # a late committer: later sequences of its originator commit first
                app = "once-%s-%d-%d" % (U, k, i)
                task = asyncio.ensure_future(self.late_envelopes(
                    "BEGIN;\n%s\nSELECT pg_sleep(%.2f);\nCOMMIT;" % (sql, rng.uniform(0.5, 1.5)), app, node,
                    first + BATCH - 1))
                lates.append(task)
                await self.sleeping(app, task)
            else:
                while True:
                    rc, _ = await self.psql(sql)
                    if rc == 0:
                        break
                    # a batch that failed is retried with the same ids; a repeat is no late write
                    self.failed_statements += 1
                    await asyncio.sleep(0.3)
                self.top.d14n[node] = max(self.top.d14n.get(node, 0), first + BATCH - 1)
            self.written += BATCH
            await asyncio.sleep(max(0.0, pace - (time.monotonic() - t0)))
        await asyncio.gather(*lates)

    async def restart(self, at, crash):
        while self.written < at:
            await asyncio.sleep(0.1)
        t0 = time.monotonic()
        if crash:
            # a crash: no checkpoint, no saved horizons; recovery replays the WAL
            rc, out = await self.sh(os.environ["XIP83_PGCTL"], "stop", "-m", "immediate")
            check(rc == 0, "pg_ctl stop -m immediate: %s" % out)
            rc, out = await self.sh(os.environ["XIP83_PGCTL"], "start")
            check(rc == 0, "pg_ctl start after the crash: %s" % out)
        else:
            rc, out = await self.sh(os.environ["XIP83_PGCTL"], "restart", "-m", "fast")
            check(rc == 0, "pg_ctl restart: %s" % out)
        self.events.append(("crash" if crash else "restart", t0))
        print("%s after %d rows, %.1f s" % ("crash" if crash else "restart", self.written,
                                            time.monotonic() - t0), flush=True)


async def restart_then_crash(run):
    await run.restart(ROWS // 3, crash=False)
    await run.restart(2 * ROWS // 3, crash=True)


async def main(g):
    chans = [grpc.aio.insecure_channel(g.target, options=[("grpc.use_local_subchannel_pool", 1)])
             for _ in range(CHANNELS)]
    rng = random.Random(int(U, 16))
    # every fourth client d14n
    clients = [Client(n, random.Random(rng.random()), d14n=n % 4 == 3) for n in range(STREAMS)]
    run = Run()

    async def client_life(c):
        ch = chans[c.n % CHANNELS]
        c.new_stream(ch)
        while True:
            code = await c.read()
            c.ends[code] = c.ends.get(code, 0) + 1
            stalled, c.stalled = c.stalled, False
            if code not in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.ABORTED) and not stalled or c.done:
                return code
            await asyncio.sleep(c.rng.uniform(0.05, 0.5))
            await c.resubscribe(ch)

    async def client_mutates(c):
        # a few racing Mutates while the rows are written
        await c.step(run.top)
        while run.writing:
            await asyncio.sleep(c.rng.uniform(0.3, 1.0) * SECONDS / 4)
            if run.writing and not c.call.done():
                await c.step(run.top)

    t0 = time.monotonic()
    for c in clients:
        c.done = False
    lives = [asyncio.ensure_future(client_life(c)) for c in clients]
    statements = -(-(ROWS - D_ROWS) // (BATCH * WRITERS))
    d_statements = -(-D_ROWS // (BATCH * D_WRITERS))
    writers = [asyncio.ensure_future(run.writer(k, statements, SECONDS / statements)) for k in range(WRITERS)]
    writers += [asyncio.ensure_future(run.d14n_writer(k, d_statements, SECONDS / d_statements))
                for k in range(D_WRITERS)]
    restarts = asyncio.ensure_future(restart_then_crash(run))
    mutators = [asyncio.ensure_future(client_mutates(c)) for c in clients]
    await asyncio.gather(*writers)
    run.writing = False
    print("rows written in %.1f s" % (time.monotonic() - t0), flush=True)
    await asyncio.gather(restarts, *mutators)
    t_written = time.monotonic() - t0
    rc, out = await run.psql("SELECT convert_from(group_id, 'UTF8'), id FROM xip83.group_messages"
                             " WHERE convert_from(group_id, 'UTF8') LIKE 'o%' || :'a1' ORDER BY id;", U)
    check(rc == 0, "reading the rows back")
    ids = {}
    for line in out.splitlines():
        t, i = line.split("|")
        ids.setdefault(t.encode(), []).append(int(i))
    rc, out = await run.psql("SELECT encode(topic, 'hex'), originator_node_id, originator_sequence_id"
                             " FROM xip83.envelopes ORDER BY 2, 3;")
    check(rc == 0, "reading the envelopes back")
    for line in out.splitlines():
        t, o, q = line.split("|")
        ids.setdefault(bytes.fromhex(t), []).append((int(o), int(q)))

    def owed(e):
        if isinstance(e.cursor, dict):
            return [(o, q) for o, q in ids.get(e.topic, []) if q > e.cursor.get(o, 0)]
        return [i for i in ids.get(e.topic, []) if i > e.cursor]

    def caught_up(c):
        if c.d14n:
            return all(all(r.get(o, 0) >= q for o, q in owed(e)) for e, r in
                       ((e, e.resume_at()) for e in c.held.values()))
        return all(e.resume_at() == (owed(e)[-1:] or [e.cursor])[0] for e in c.held.values())

    def by_originator(rows):
        out = {}
        for o, q in rows:
            out.setdefault(o, []).append(q)
        return out

    # everything written reaches the topics still held (streams ending meanwhile resubscribe)
    deadline = time.monotonic() + 90
    while not all(caught_up(c) for c in clients):
        if time.monotonic() > deadline:
            late = [c for c in clients if not caught_up(c)]
            c = late[0]
            raise Failure("%d clients not caught up (%d d14n), e.g. %d: %s; Mutates unanswered %s, ends %s,"
                          " problems %s" % (
                              len(late), sum(c.d14n for c in late), c.n,
                              [(e.topic, e.resume_at(), owed(e)[-1:], len(e.rows), len(owed(e)))
                               for e in c.held.values()], sorted(c.pending), c.ends, c.bad[:3]))
        for c in clients:
            check(not lives[c.n].done(), "client %d ended: %s" % (c.n, lives[c.n].done() and lives[c.n].result()))
        await asyncio.sleep(0.5)
    await asyncio.sleep(1.0)     # a repeated row would come now
    t_all = time.monotonic() - t0
    for c in clients:
        c.done = True
        c.call.cancel()
    await asyncio.gather(*lives, return_exceptions=True)
    checked = epochs = 0
    d_checked = 0
    for c in clients:
        check(not c.bad, "client %d: %s" % (c.n, c.bad[:3]))
        for e in c.epochs:
            want = owed(e)
            if c.d14n:
                # per originator, in sequence order; rows stop at a removal: a leading run of each
                got, want = by_originator(e.rows), by_originator(want)
                for o in set(got) | set(want):
                    g, w = got.get(o, []), want.get(o, [])
                    if e.removed:
                        w = w[:len(g)]
                    if g != w:
                        k = next((k for k, (a, b) in enumerate(zip(g, w)) if a != b), min(len(g), len(w)))
                        raise Failure("d14n client %d, %s add of %s above %s, originator %d: %d envelopes,"
                                      " %d owed; from #%d got %s, owed %s"
                                      % (c.n, "removed" if e.removed else "held", e.topic, e.cursor, o, len(g),
                                         len(w), k, g[k:k + 4], w[k:k + 4]))
                d_checked += len(e.rows)
                checked += len(e.rows)
                epochs += 1
                continue
            # rows stop at a removal: the leading run of what was owed
            if e.removed:
                want = want[:len(e.rows)]
            if e.rows != want:
                k = next((k for k, (a, b) in enumerate(zip(e.rows, want)) if a != b), min(len(e.rows), len(want)))
                raise Failure("client %d, %s add of %s above %d: %d rows, %d owed; from #%d got %s, owed %s"
                              % (c.n, "removed" if e.removed else "held", e.topic, e.cursor, len(e.rows),
                                 len(want), k, e.rows[k:k + 4], want[k:k + 4]))
            checked += len(e.rows)
            epochs += 1
    reconnects = sum(c.reconnects for c in clients)
    ends = {}
    for c in clients:
        for k, v in c.ends.items():
            ends[k.name] = ends.get(k.name, 0) + v
    stalls = sorted(t for c in clients for t in c.stalls)
    if stalls:
        print("%d streams given up on a request not taken within 30 s (%d of them new streams), at %s s,"
              " on channels %s; %s" % (
                  len(stalls), sum(f for _, _, f in stalls), sorted({"%.0f" % (t - t0) for t, _, _ in stalls}),
                  sorted({ch for _, ch, _ in stalls}), ", ".join("%s at %.0f s" % (k, t - t0) for k, t in run.events)))
    print("%d requests left pending on streams that had ended" % sum(c.dead_writes for c in clients))
    print("%d streams (%d d14n), %d rows written (%d statements failed, %d d14n batches left as gaps),"
          " %d adds checked, %d rows received and checked (%d envelopes), %d reconnects, ends %s;"
          " writes %.1f s, all caught up %.1f s"
          % (STREAMS, sum(c.d14n for c in clients), sum(len(v) for v in ids.values()), run.failed_statements,
             run.gaps, epochs, checked, d_checked, reconnects, ends, t_written, t_all))
    for ch in chans:
        await ch.close()


def test():
    check(os.environ.get("XIP83_PGCTL"), "XIP83_PGCTL (a pg_ctl wrapper) is needed")
    g = gateway("--pool", "4")
    # the gateway's stderr is read all along (a full pipe would stop it) and its end shown on a failure
    log = collections.deque(maxlen=40)
    threading.Thread(target=lambda: log.extend(g.proc.stderr), daemon=True).start()
    try:
        asyncio.run(main(g))
    except Exception:
        print("the gateway's last lines:\n" + "".join(log))
        raise
    check(g.stop() == 0, "exit 0")


run(test)
