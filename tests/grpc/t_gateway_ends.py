"""xip83-gateway counts a stream the transport ended for a bound as the
client saw it end. A client that grants no window while its wave's pages
pile up passes --max-conn-memory: the transport resets the stream
(ENHANCE_YOUR_CALM, RESOURCE_EXHAUSTED to gRPC clients) and drops its queue;
xip83_gateway_stream_ends_total counts it RESOURCE_EXHAUSTED, not CANCELLED,
and the limit's own counter counts it too. A well-behaved client's wave (one
that fits the bound) on another connection completes afterwards."""
import os
import time

from gatewaytest import Stalled, Stream, gateway, metrics, mutate, psql, put_group
from grpctest import check, run

U = os.urandom(4).hex().encode()
TOPIC = b"E" + U
ROWS = 2000
SMALL = b"e" + U    # a wave that fits the bound, for the well-behaved client


def test():
    # 500 bytes a row: the wave is far more than the 256 KiB a connection may hold
    psql("INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash)"
         " SELECT decode(:'a1', 'hex'), convert_to(rpad('row' || i, 500, '.'), 'UTF8'),"
         " sha256(decode(:'a1', 'hex') || convert_to(rpad('row' || i, 500, '.'), 'UTF8'))"
         " FROM generate_series(1, %d) i;" % ROWS, TOPIC.hex())
    for i in range(100):
        put_group(SMALL, b"small %d" % i)
    g = gateway("--pool", "1", "--metrics", "127.0.0.1:0", "--max-conn-memory", "256k")
    stalled = Stalled(g.ports["h2c"])
    stalled.stream(mutate(1, [TOPIC]))
    deadline = time.monotonic() + 20
    while metrics(g).get('xip83_gateway_limit_reached_total{limit="max_conn_memory"}', 0) < 1:
        check(time.monotonic() < deadline, "the stalled stream never passed --max-conn-memory")
        time.sleep(0.05)
    deadline = time.monotonic() + 10
    while sum(v for k, v in metrics(g).items() if k.startswith("xip83_gateway_streams{")) > 0:
        check(time.monotonic() < deadline, "the reset stream stays open")
        time.sleep(0.05)
    m = metrics(g)
    ends = {k: v for k, v in m.items() if k.startswith("xip83_gateway_stream_ends_total") and v}
    check(m.get('xip83_gateway_stream_ends_total{code="RESOURCE_EXHAUSTED"}', 0) == 1
          and m.get('xip83_gateway_stream_ends_total{code="CANCELLED"}', 0) == 0,
          "the reset stream is counted RESOURCE_EXHAUSTED: %s" % ends)
    print("ends after the reset: %s" % ends)

    s = Stream(g.channel())
    s.next()  # Started
    s.mutate(2, adds=[(b"\x00" + SMALL, 0)])
    rows, _, _ = s.wave(2, timeout=60)
    check(len(rows) == 100 and len(set(rows)) == 100, "a well-behaved wave after it: %d rows" % len(rows))
    s.close()
    stalled.close()
    check(g.stop() == 0, "the gateway exits 0")


run(test)
