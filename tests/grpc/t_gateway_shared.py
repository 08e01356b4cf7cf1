"""xip83-gateway's live rows when streams share their bytes: a row's message
is made once per method and queued by reference on every stream that gets
the same bytes. Streams of three methods over one grpcio connection, and
two on a raw HTTP/2 connection whose streams have no flow-control window
(they hold their references while the others write and drop theirs), get
single rows (shared), bursts of rows (each stream its own frame) and rows of
topics only some of them follow. Every stream's rows are checked byte for
byte, in order and once; the raw streams' only after the others are done,
when their window opens: a reference freed too early or bytes of one
stream's frame in another's show here."""
import os
import random

import grpc
import hyperframe.frame

from gatewaytest import (GROUP_MESSAGES, M, V3, V3_SUBSCRIBE, Reader, Stream, gateway, msg, psql,
                         put_group)
from grpctest import RawH2, check, run

U = os.urandom(4).hex().encode()
RNG = random.Random(83)


def put_groups(rows):
    """Stores (group_id, data) rows in one transaction (one feed round); their ids."""
    values = ", ".join("(decode('%s', 'hex'), decode('%s', 'hex'), sha256(decode('%s', 'hex')))"
                       % (g.hex(), d.hex(), (g + d).hex()) for g, d in rows)
    out = psql("INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash) VALUES %s"
               " RETURNING id;" % values)
    return [int(x) for x in out.splitlines()]


def data(i):
    # one length for all: a message of another row's bytes has the right size
    return b"%04d-" % i + U + RNG.randbytes(200)


def subscribe_request(mutate_id, topics):
    sub = V3 + "SubscribeRequest.V1.Mutate.Subscription"
    m = msg(V3 + "SubscribeRequest.V1.Mutate", mutate_id=mutate_id,
            adds=[msg(sub, topic=b"\x00" + t, id_cursor=0) for t in topics])
    return msg(V3 + "SubscribeRequest", v1=msg(V3 + "SubscribeRequest.V1", mutate=m))


def group_request(topics):
    F = V3 + "SubscribeGroupMessagesRequest.Filter"
    return msg(V3 + "SubscribeGroupMessagesRequest", filters=[msg(F, group_id=t, id_cursor=0) for t in topics])


def live_groups(s, n):
    """The next n live group messages of a Subscribe stream, as (id, group_id, data), in order."""
    out = []
    while len(out) < n:
        r = s.next()
        if r.WhichOneof("response") == "messages":
            check(r.messages.mutate_id == 0, "a live row tagged %d" % r.messages.mutate_id)
            out += [(m.v1.id, m.v1.group_id, m.v1.data) for m in r.messages.group_messages]
    return out


def raw_messages(raw, sid, body):
    """Splits a stream's DATA bytes into gRPC messages; every byte must belong to one."""
    out, off = [], 0
    while off < len(body):
        check(len(body) - off >= 5, "stream %d: a cut gRPC prefix" % sid)
        check(body[off] == 0, "stream %d: a compressed flag" % sid)
        n = int.from_bytes(body[off + 1:off + 5], "big")
        check(len(body) - off - 5 >= n, "stream %d: a cut message" % sid)
        out.append(body[off + 5:off + 5 + n])
        off += 5 + n
    return out


def test():
    srv = gateway()
    a, b, c = b"SA" + U, b"SB" + U, b"SC" + U
    ch = grpc.insecure_channel("127.0.0.1:%d" % srv.ports["h2c"])

    # one connection: Subscribe on a, Subscribe on a and b, SubscribeGroupMessages on a and c
    s1, s2 = Stream(ch), Stream(ch)
    for s, mid, topics in ((s1, 1, [a]), (s2, 2, [a, b])):
        check(s.next().WhichOneof("response") == "started", "Started first")
        s.reqs.put(subscribe_request(mid, topics))
        s.wave(mid)
    g = Reader(ch, GROUP_MESSAGES, group_request([a, c]), V3 + "GroupMessage")

    # another: the same two methods with no window (SETTINGS_INITIAL_WINDOW_SIZE 0)
    raw = RawH2(srv.ports["h2c"])
    raw.sock.sendall(hyperframe.frame.SettingsFrame(0, settings={
        hyperframe.frame.SettingsFrame.INITIAL_WINDOW_SIZE: 0}).serialize())
    ra = raw.request(V3_SUBSCRIBE)
    raw.send_message(ra, subscribe_request(1, [a, b]).SerializeToString())
    rg = raw.request(GROUP_MESSAGES)
    raw.send_message(rg, group_request([a]).SerializeToString(), end=True)
    # the grpcio stream of c is live once its first row comes (the raw streams'
    # rows come as their catch-up or live: both are read back below)
    put_group(c, b"c-first" + U)
    first = g.next()
    check(first.v1.data == b"c-first" + U, "the first row of c: %s" % first)

    rows = []                           # (id, group_id, data) in id order
    for i in range(24):
        topic = a if i % 3 else (b if i % 2 else c)
        d = data(i)
        rows.append((put_group(topic, d), topic, d))
        if i % 8 == 7:
            burst = [(a, data(100 + i)), (b, data(200 + i)), (a, data(300 + i)), (c, data(400 + i))]
            rows += [(n, t, d) for n, (t, d) in zip(put_groups(burst), burst)]
    rows.sort()

    def want(topics):
        return [r for r in rows if r[1] in topics]

    got1 = live_groups(s1, len(want([a])))
    check(got1 == want([a]), "Subscribe on a: %s" % [r[0] for r in got1])
    got2 = live_groups(s2, len(want([a, b])))
    check(got2 == want([a, b]), "Subscribe on a and b: %s" % [r[0] for r in got2])
    gotg = [(m.v1.id, m.v1.group_id, m.v1.data) for m in g.take(len(want([a, c])))]
    check(gotg == want([a, c]), "SubscribeGroupMessages on a and c: %s" % [r[0] for r in gotg])
    s1.quiet(0.3)
    s2.quiet(0.1)
    g.quiet(0.1)
    s1.close()
    s2.close()
    g.call.cancel()
    check(s1.end() is None and s2.end() is None, "half-closed Subscribe streams end OK")

    # now the raw streams' window opens: what they queued is read back
    for sid in (0, ra, rg):
        raw.sock.sendall(hyperframe.frame.WindowUpdateFrame(sid, window_increment=1 << 24).serialize())
    body = {ra: b"", rg: b""}
    live_a, live_g, done = [], [], False
    while not done:
        f = raw.wait(lambda f: isinstance(f, hyperframe.frame.DataFrame) and f.stream_id in body,
                     "the queued rows", timeout=30)
        body[f.stream_id] += f.data
        live_a, live_g = [], []
        for m in raw_messages(raw, ra, body[ra]):
            r = M[V3 + "SubscribeResponse"].FromString(m).v1
            if r.WhichOneof("response") == "messages":
                live_a += [(x.v1.id, x.v1.group_id, x.v1.data) for x in r.messages.group_messages]
        for m in raw_messages(raw, rg, body[rg]):
            x = M[V3 + "GroupMessage"].FromString(m)
            if x.v1.group_id == a:
                live_g.append((x.v1.id, x.v1.group_id, x.v1.data))
        done = len(live_a) >= len(want([a, b])) and len(live_g) >= len(want([a]))
    # wave rows, then live ones: each once, whole
    check(sorted(live_a) == want([a, b]), "the held Subscribe stream: %s" % [r[0] for r in live_a])
    check(sorted(live_g) == want([a]), "the held SubscribeGroupMessages stream: %s" % [r[0] for r in live_g])
    raw.close()


run(test)
