"""xip83-gateway exactly once at scale, across a database restart: 1,000 v3
Subscribe streams (grpc.aio, over four HTTP/2 connections) add, remove and
re-add topics from cursors of their choosing while four writers insert
100,000 rows into those topics (commits interleave; some transactions draw
their ids, then commit after later ones), and the database restarts
(XIP83_PGCTL restart -m fast) halfway through the writes. A stream that ends
UNAVAILABLE (or ABORTED: late writes lost with the restart) resubscribes like
a real client: a new stream, its topics added from the last id it holds per
topic. At the end, for every client and every add of a topic (an "epoch",
across reconnects): the rows received are the topic's rows above the add's
cursor in ascending order, each once, all of them for a topic still held and
a leading run of them for a removed one; no row arrives for a topic between
its removal's acknowledgement and its next add, nor before a wave's seam.
XIP83_ONCE_STREAMS, XIP83_ONCE_ROWS and XIP83_ONCE_SECONDS (the writers'
pace) scale it; under XIP83_SANITIZE=1 the defaults are a tenth."""
import asyncio
import os
import random
import time

import grpc
import grpc.aio

from gatewaytest import M, V3, V3_SUBSCRIBE, gateway, msg
from grpctest import Failure, check, run

SMALL = os.environ.get("XIP83_SANITIZE") == "1"
STREAMS = int(os.environ.get("XIP83_ONCE_STREAMS") or (100 if SMALL else 1000))
ROWS = int(os.environ.get("XIP83_ONCE_ROWS") or (10000 if SMALL else 100000))
SECONDS = float(os.environ.get("XIP83_ONCE_SECONDS") or 40)
CHANNELS = 4
WRITERS = 4
BATCH = 250                      # rows a statement
N_TOPICS = max(STREAMS // 2, 8)
HELD = 2                         # topics a client holds at most
U = os.urandom(3).hex()
TOPICS = [("o%d" % i + U).encode() for i in range(N_TOPICS)]
REQ = V3 + "SubscribeRequest"


class Epoch:
    """One add of a topic by one client, followed across its reconnects."""

    def __init__(self, topic, cursor):
        self.topic, self.cursor = topic, cursor
        self.rows = []
        self.removed = False

    def take(self, i, bad, how):
        if (self.rows[-1] if self.rows else self.cursor) >= i:
            bad.append("%s row %d of %s after %s (cursor %d)" % (how, i, self.topic, self.rows[-3:], self.cursor))
        self.rows.append(i)

    def resume_at(self):
        return self.rows[-1] if self.rows else self.cursor


class Client:
    """A client: its intent (topics held, as epochs) outlives its streams."""

    def __init__(self, n, rng):
        self.n, self.rng = n, rng
        self.held = {}           # topic -> Epoch
        self.epochs = []
        self.next_id = 1
        self.bad = []
        self.reconnects = 0
        self.ends = {}
        self.call = None

    def new_stream(self, ch):
        self.call = ch.stream_stream(V3_SUBSCRIBE, request_serializer=lambda m: m.SerializeToString(),
                                     response_deserializer=M[V3 + "SubscribeResponse"].FromString)(timeout=600)
        self.pending = {}        # mutate_id -> Epochs it adds (by topic)
        self.live = {}           # topic -> Epoch its live rows belong to on this stream
        self.going_live = []

    async def mutate(self, adds=(), removes=()):
        m = self.next_id
        self.next_id += 1
        sub = REQ + ".V1.Mutate.Subscription"
        req = msg(REQ, v1=msg(REQ + ".V1", mutate=msg(
            REQ + ".V1.Mutate", mutate_id=m, removes=[b"\x00" + t for t in removes],
            adds=[msg(sub, topic=b"\x00" + e.topic, id_cursor=e.resume_at()) for e in adds])))
        self.pending[m] = ({e.topic: e for e in adds}, list(removes))
        await self.send(req)

    async def send(self, req):
        try:
            await asyncio.wait_for(self.call.write(req), 30)
        except asyncio.TimeoutError:
            self.bad.append("a request not taken within 30 s")
        except Exception:
            # the stream ended under it: the resubscription carries the intent
            pass

    async def step(self, top):
        """One racing Mutate: remove a held topic, re-add one (remove and add
        in one Mutate, from a new cursor), or add another."""
        r = self.rng.random()
        t = self.rng.choice(TOPICS)
        if self.held and r < 0.3:
            t = self.rng.choice(sorted(self.held))
            self.held.pop(t).removed = True
            await self.mutate(removes=[t])
            return
        if self.held and (r < 0.6 or len(self.held) >= HELD):
            t = self.rng.choice(sorted(self.held))
        # cursors: the whole topic, or somewhere in what is written so far
        e = Epoch(t, 0 if self.rng.random() < 0.2 else self.rng.randint(0, top))
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
                if kind == "messages":
                    tag = r.v1.messages.mutate_id
                    for g in r.v1.messages.group_messages:
                        t, i = g.v1.group_id, g.v1.id
                        if tag:
                            e = self.pending[tag][0].get(t) if tag in self.pending else None
                        else:
                            e = self.live.get(t)
                        if e is None:
                            self.bad.append("row %d of %s tagged %d with no epoch for it" % (i, t, tag))
                        else:
                            e.take(i, self.bad, "wave %d" % tag if tag else "live")
                elif kind == "ping":
                    # a real client answers, or the gateway reaps it
                    await self.send(msg(REQ, v1=msg(REQ + ".V1", pong=msg(V3 + "Pong", nonce=r.v1.ping.nonce))))
                elif kind == "topics_live":
                    self.going_live += [bytes(t[1:]) for t in r.v1.topics_live.topics]
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

    async def resubscribe(self, ch):
        self.reconnects += 1
        self.new_stream(ch)
        if self.held:
            await self.mutate(adds=list(self.held.values()))


class Run:
    def __init__(self):
        self.top = 0
        self.written = 0
        self.writing = True
        self.failed_statements = 0

    async def sh(self, *cmd, stdin=None):
        p = await asyncio.create_subprocess_exec(*cmd, stdin=asyncio.subprocess.PIPE,
                                                 stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await p.communicate(stdin.encode() if stdin else None)
        return p.returncode, out.decode()

    async def psql(self, sql, *args):
        cmd = ["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1"]
        for i, a in enumerate(args, 1):
            cmd += ["-v", "a%d=%s" % (i, a)]
        return await self.sh(*cmd, stdin=sql)

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
                # the restart: the statement rolled back (or never ran); again
                self.failed_statements += 1
                await asyncio.sleep(0.3)
            ids = [int(x) for x in out.split() if x.isdigit()]
            self.top = max([self.top] + ids)
            self.written += BATCH
            await asyncio.sleep(max(0.0, pace - (time.monotonic() - t0)))

    async def restart(self, at):
        while self.written < at:
            await asyncio.sleep(0.1)
        t0 = time.monotonic()
        rc, out = await self.sh(os.environ["XIP83_PGCTL"], "restart", "-m", "fast")
        check(rc == 0, "pg_ctl restart: %s" % out)
        print("restart after %d rows, %.1f s" % (self.written, time.monotonic() - t0))


async def main(g):
    chans = [grpc.aio.insecure_channel(g.target, options=[("grpc.use_local_subchannel_pool", 1)])
             for _ in range(CHANNELS)]
    rng = random.Random(int(U, 16))
    clients = [Client(n, random.Random(rng.random())) for n in range(STREAMS)]
    run = Run()

    async def client_life(c):
        ch = chans[c.n % CHANNELS]
        c.new_stream(ch)
        while True:
            code = await c.read()
            c.ends[code] = c.ends.get(code, 0) + 1
            if code not in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.ABORTED) or c.done:
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
    statements = -(-ROWS // (BATCH * WRITERS))
    writers = [asyncio.ensure_future(run.writer(k, statements, SECONDS / statements)) for k in range(WRITERS)]
    restart = asyncio.ensure_future(run.restart(ROWS // 2))
    mutators = [asyncio.ensure_future(client_mutates(c)) for c in clients]
    await asyncio.gather(*writers)
    run.writing = False
    print("rows written in %.1f s" % (time.monotonic() - t0), flush=True)
    await asyncio.gather(restart, *mutators)
    t_written = time.monotonic() - t0
    rc, out = await run.psql("SELECT convert_from(group_id, 'UTF8'), id FROM xip83.group_messages"
                             " WHERE convert_from(group_id, 'UTF8') LIKE 'o%' || :'a1' ORDER BY id;", U)
    check(rc == 0, "reading the rows back")
    ids = {}
    for line in out.splitlines():
        t, i = line.split("|")
        ids.setdefault(t.encode(), []).append(int(i))

    def owed(e):
        return [i for i in ids.get(e.topic, []) if i > e.cursor]

    def caught_up(c):
        return all(e.resume_at() == (owed(e)[-1:] or [e.cursor])[0] for e in c.held.values())

    # everything written reaches the topics still held (streams ending meanwhile resubscribe)
    deadline = time.monotonic() + 90
    while not all(caught_up(c) for c in clients):
        if time.monotonic() > deadline:
            late = [c for c in clients if not caught_up(c)]
            raise Failure("%d clients not caught up, e.g. %d: %s" % (
                len(late), late[0].n, [(e.topic, e.resume_at(), owed(e)[-1:], len(e.rows), len(owed(e)))
                                       for e in late[0].held.values()]))
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
    for c in clients:
        check(not c.bad, "client %d: %s" % (c.n, c.bad[:3]))
        for e in c.epochs:
            want = owed(e)
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
    print("%d streams, %d rows written (%d statements retried), %d adds checked, %d rows received and"
          " checked, %d reconnects, ends %s; writes %.1f s, all caught up %.1f s"
          % (STREAMS, sum(len(v) for v in ids.values()), run.failed_statements, epochs, checked, reconnects,
             ends, t_written, t_all))
    for ch in chans:
        await ch.close()


def test():
    check(os.environ.get("XIP83_PGCTL"), "XIP83_PGCTL (a pg_ctl wrapper) is needed")
    g = gateway("--pool", "4")
    asyncio.run(main(g))
    check(g.stop() == 0, "exit 0")


run(test)
