"""xip83-gateway with many streams, a slow client and a drain, with grpcio:
- 200 streams (150 bidirectional v3 Subscribe over two connections, 50
  SubscribeTopics), each with a wave of its own: the database connections
  stay at pool + 1 (measured in pg_stat_activity while the waves run and
  after), every stream finishes its wave, and one live row of a topic all
  Subscribe streams hold reaches each of them exactly once;
- a client that stops reading while 80 MiB of live rows arrive for its
  topic, in bursts of 10 MiB: its stream alone ends RESOURCE_EXHAUSTED
  (64 MiB pending), a reading client of the same topic gets every row and
  stays open;
- the metrics page reports streams, topics, rows and the ended stream;
- SIGTERM: every open stream ends UNAVAILABLE and the gateway exits 0."""
import os
import time

import grpc

from gatewaytest import (D14N, ENV, M, TOPICS, V3_SUBSCRIBE, Reader, Stream, db_connections, gateway, metrics,
                         msg,
                         psql, put_group)
from grpctest import Requests, check, run

U = os.urandom(4).hex()
POOL = 4


def many(g):
    n_bidi, n_topics = 150, 50
    # one row per stream's own topic, and a backlog of 5 on the shared one
    psql("INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash)"
         " SELECT convert_to('own' || i || :'a1', 'UTF8'), convert_to('d' || i, 'UTF8'),"
         " sha256(convert_to('own' || i || :'a1' || 'd' || i, 'UTF8')) FROM generate_series(0, 149) i;", U)
    for i in range(5):
        put_group(b"shared" + U.encode(), b"s%d" % i)
    psql("INSERT INTO xip83.envelopes (originator_node_id, originator_sequence_id, topic, originator_envelope)"
         " SELECT 5, i, '\\x01'::bytea || convert_to('t' || i || :'a1', 'UTF8'), '\\x0a00'::bytea"
         " FROM generate_series(0, 49) i;", U)
    chans = [g.channel(**{"grpc.use_local_subchannel_pool": 1}) for _ in range(2)]
    streams = [Stream(chans[i % 2]) for i in range(n_bidi)]
    for st in streams:
        check(st.next().WhichOneof("response") == "started", "Started")
    for i, st in enumerate(streams):
        st.mutate(1, adds=[(b"\x00own%d%s" % (i, U.encode()), 0), (b"\x00shared" + U.encode(), 0)])
    TF = D14N + "SubscribeTopicsRequest.TopicFilter"
    readers = [Reader(chans[i % 2], TOPICS, msg(D14N + "SubscribeTopicsRequest",
                                                filters=[msg(TF, topic=b"\x01t%d%s" % (i, U.encode()))]),
                      D14N + "SubscribeTopicsResponse") for i in range(n_topics)]
    during = db_connections()
    for i, st in enumerate(streams):
        rows, live, _ = st.wave(1, timeout=60)
        check(len(rows) == 6 and len(live) == 2, "stream %d: wave of %d rows, %d topics live" % (i, len(rows), len(live)))
    for r in readers:
        check(r.next().status_update.status == 1, "STARTED")
        check(len(r.next().envelopes.envelopes) == 1, "one envelope")
        check(r.next().status_update.status == 2, "CATCHUP_COMPLETE")
    after = db_connections()
    print("db connections with 200 streams: %d during the waves, %d after (pool %d)" % (during, after, POOL))
    check(during <= POOL + 1 and after <= POOL + 1, "connections: %d, %d > pool + 1" % (during, after))
    t0 = time.monotonic()
    put_group(b"shared" + U.encode(), b"live")
    for st in streams:
        check(len(st.live_rows(1)) == 1, "the live row")
    print("one live row to %d streams: %.0f ms after its insert returned" % (n_bidi, (time.monotonic() - t0) * 1000))
    m = metrics(g)
    check(m['xip83_gateway_streams{method="%s"}' % V3_SUBSCRIBE] == n_bidi, "streams metric")
    # each loop's index counts the shared topic once
    loops = m["xip83_gateway_loops"]
    check(n_bidi + 1 <= m['xip83_gateway_topics{binding="v3"}'] <= n_bidi + loops,
          "topics metric: %s" % m['xip83_gateway_topics{binding="v3"}'])
    check(m["xip83_gateway_db_connections"] == POOL + 1, "db_connections metric: feed and pool")
    for st in streams:
        st.quiet(0)
    return streams + readers


def slow(g):
    big = b"big" + U.encode()
    slow_ch = g.channel(**{"grpc.use_local_subchannel_pool": 1, "grpc.http2.bdp_probe": 0})
    reqs = Requests()
    call = slow_ch.stream_stream(V3_SUBSCRIBE, request_serializer=lambda m: m.SerializeToString(),
                                 response_deserializer=M["xmtp.mls.api.v1.SubscribeResponse"].FromString)(reqs, timeout=300)
    fast = Stream(g.channel(**{"grpc.use_local_subchannel_pool": 1}), timeout=300)
    fast.next()
    sub = "xmtp.mls.api.v1.SubscribeRequest"
    add = msg(sub + ".V1.Mutate", adds=[msg(sub + ".V1.Mutate.Subscription", topic=b"\x00" + big)], mutate_id=1)
    reqs.put(msg(sub, v1=msg(sub + ".V1", mutate=add)))
    fast.mutate(1, adds=[(b"\x00" + big, 0)])
    fast.wave(1)
    time.sleep(0.5)
    # 80 rows of 1 MiB, in bursts of 10 the reading client takes before the next
    for burst in range(8):
        psql("INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash)"
             " SELECT decode(:'a1', 'hex'), decode(lpad('', 2097152, md5(i::text)), 'hex'),"
             " sha256(decode(:'a1', 'hex') || decode(lpad('', 2097152, md5(i::text)), 'hex'))"
             " FROM generate_series(:'a2'::int * 10, :'a2'::int * 10 + 9) i;", big.hex(), burst)
        check(len(fast.live_rows(10, timeout=120)) == 10, "the reading client gets burst %d" % burst)
    deadline = time.monotonic() + 30
    while metrics(g).get('xip83_gateway_stream_ends_total{code="RESOURCE_EXHAUSTED"}', 0) < 1:
        check(time.monotonic() < deadline, "no RESOURCE_EXHAUSTED for the slow stream")
        time.sleep(0.2)
    fast.quiet(0.2)
    put_group(big, b"after")
    check(len(fast.live_rows(1)) == 1, "the reading client goes on")
    check(metrics(g)['xip83_gateway_stream_ends_total{code="RESOURCE_EXHAUSTED"}'] == 1,
          "one stream ended RESOURCE_EXHAUSTED")
    # the slow client reads at last: what was queued, then the status
    n = 0
    try:
        for _ in call:
            n += 1
        check(False, "the slow stream ended OK")
    except grpc.RpcError as e:
        check(e.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, "slow stream: %s %s" % (e.code(), e.details()))
    print("slow client: %d frames queued before RESOURCE_EXHAUSTED" % n)
    return fast


def test():
    g = gateway("--pool", str(POOL), "--metrics", "127.0.0.1:0", "--drain-ms", "5000")
    open_calls = many(g)
    open_calls.append(slow(g))
    g.proc.send_signal(15)
    for c in open_calls:
        e = c.end()
        check(e is not None and e.code() == grpc.StatusCode.UNAVAILABLE, "drain: %s" % (e and e.code()))
    g.proc.wait(30)
    check(g.proc.returncode == 0, "exit %s after SIGTERM" % g.proc.returncode)


run(test)
