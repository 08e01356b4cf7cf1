"""xip83-gateway keeps serving its HTTP/2 side while the database is down:
with the server stopped for 10 s, a client that writes large Mutates (only
removes: nothing the database must answer) as fast as they complete sends
far more than the connection's 16 MiB and the stream's 1 MiB receive
windows, so each write completes only if the gateway keeps reading the
connection and granting window (WINDOW_UPDATE) all along; a blocked event
loop (a libpq call waiting on the stopped server) or a window not granted
shows as a write that waits. Every write must complete within WRITE_LIMIT
seconds, Pings must be answered, and once the server is back the same stream
adds a topic and gets its rows, then a live row exactly once."""
import asyncio
import os
import subprocess
import time

import grpc

from gatewaytest import M, V3, V3_SUBSCRIBE, gateway, msg, put_group
from grpctest import Failure, check, run

U = os.urandom(4).hex().encode()
DOWN_S = 10
WRITE_LIMIT = 3.0
REMOVES = 1500                    # identifiers of 120 bytes: a ~190 KB request


def mutate(mutate_id=0, adds=(), removes=()):
    req = V3 + "SubscribeRequest"
    subs = [msg(req + ".V1.Mutate.Subscription", topic=t, id_cursor=c) for t, c in adds]
    return msg(req, v1=msg(req + ".V1", mutate=msg(req + ".V1.Mutate", mutate_id=mutate_id,
                                                       adds=subs, removes=list(removes))))


def ping(nonce):
    req = V3 + "SubscribeRequest"
    return msg(req, v1=msg(req + ".V1", ping=msg(V3 + "Ping", nonce=nonce)))


async def main(g, pgctl):
    ch = grpc.aio.insecure_channel(g.target)
    call = ch.stream_stream(V3_SUBSCRIBE, request_serializer=lambda m: m.SerializeToString(),
                            response_deserializer=M[V3 + "SubscribeResponse"].FromString)(timeout=300)
    responses = asyncio.Queue()

    async def read():
        try:
            async for r in call:
                await responses.put(r.v1)
        except grpc.aio.AioRpcError as e:
            await responses.put(e)
        await responses.put(None)
    reader = asyncio.ensure_future(read())

    async def next_of(kind, timeout=30):
        while True:
            r = await asyncio.wait_for(responses.get(), timeout)
            if r is None or isinstance(r, Exception):
                raise Failure("the stream ended: %s" % r)
            if r.WhichOneof("response") == kind:
                return r

    await next_of("started")
    big = mutate(removes=[b"\x00" + (b"%06d" % i) * 20 for i in range(REMOVES)])
    size = len(big.SerializeToString())

    loop = asyncio.get_running_loop()
    stop = await loop.run_in_executor(None, lambda: subprocess.run(
        [pgctl, "stop", "-m", "fast"], capture_output=True, text=True, timeout=120))
    check(stop.returncode == 0, "pg_ctl stop: %s" % stop.stdout + stop.stderr)
    t_down = time.monotonic()
    written = worst = 0
    pongs = 0
    try:
        while time.monotonic() - t_down < DOWN_S:
            t0 = time.monotonic()
            try:
                await asyncio.wait_for(call.write(big), WRITE_LIMIT)
            except asyncio.TimeoutError:
                raise Failure("a %d-byte Mutate not taken within %.0f s while the database was down"
                              " (%d bytes taken before)" % (size, WRITE_LIMIT, written))
            worst = max(worst, time.monotonic() - t0)
            written += size
            await asyncio.sleep(0.02)     # a steady writer, not a CPU hog
            if written // size % 20 == 0:
                pongs += 1
                await asyncio.wait_for(call.write(ping(pongs)), WRITE_LIMIT)
                pong = await next_of("pong", WRITE_LIMIT)
                check(pong.pong.nonce == pongs, "the pong's nonce")
    finally:
        start = await loop.run_in_executor(None, lambda: subprocess.run(
            [pgctl, "start"], capture_output=True, text=True, timeout=120))
    check(start.returncode == 0, "pg_ctl start: %s" % start.stdout + start.stderr)
    check(written > 32 << 20, "only %d bytes written in %d s" % (written, DOWN_S))
    print("database down %d s: %d MB of Mutates taken, the slowest write %.2f s, %d pongs"
          % (DOWN_S, written >> 20, worst, pongs))

    # the same stream, once the server is back
    t = b"D" + U
    before = await loop.run_in_executor(None, put_group, t, b"d0" + U)
    deadline = time.monotonic() + 60
    while True:
        await call.write(mutate(1, adds=[(b"\x00" + t, 0)]))
        r = await asyncio.wait_for(responses.get(), 30)
        rows = []
        while r is not None and not isinstance(r, Exception):
            kind = r.WhichOneof("response")
            if kind == "messages":
                rows += [m.v1.id for m in r.messages.group_messages]
            if kind == "catchup_complete" and r.catchup_complete.mutate_id == 1:
                break
            r = await asyncio.wait_for(responses.get(), 30)
        check(r is not None and not isinstance(r, Exception), "the stream ended after the restart: %s" % r)
        if rows == [before] or time.monotonic() > deadline:
            break
    check(rows == [before], "the wave after the restart: %s" % rows)
    live = await loop.run_in_executor(None, put_group, t, b"d1" + U)
    while True:
        r = await next_of("messages")
        got = [m.v1.id for m in r.messages.group_messages]
        if got:
            break
    check(got == [live], "the live row once: %s" % got)
    call.cancel()
    reader.cancel()
    await ch.close()


def test():
    pgctl = os.environ.get("XIP83_PGCTL")
    check(pgctl, "XIP83_PGCTL (a pg_ctl wrapper) is needed")
    g = gateway("--pool", "2")
    try:
        asyncio.run(main(g, pgctl))
    finally:
        if subprocess.run(["pg_isready", "-q"]).returncode != 0:
            subprocess.run([pgctl, "start"], capture_output=True, timeout=120)
    check(g.stop() == 0, "exit 0")


run(test)
