"""HTTP/2 flow control in the gateway's gRPC transport: a client that stops
reading a server stream of 128 MiB stalls it (the server queues no more than
its producer's cap and its memory stays flat, while its loop goes on serving
other clients), and the stream resumes and completes, every message in order,
once the client reads again. The client keeps its windows at their initial
64 KiB (no BDP probing), so what it can hold is known."""
import time

import grpc

from grpctest import (ECHO_PATH, STREAM_PATH, Server, check, check_stream_message, run, stats,
                      stream_request)

COUNT = 2048
SIZE = 64 * 1024			# 128 MiB in all
PRODUCE_CAP = 1 << 20		# the test server's queue cap (xip83_grpc_echo.c)


def test():
    srv = Server("--h2c", "127.0.0.1:0", measure_memory=True)
    ch = srv.channel(**{"grpc.http2.bdp_probe": 0})
    side = srv.channel(**{"grpc.use_local_subchannel_pool": 1})
    base = stats(side)

    call = ch.unary_stream(STREAM_PATH)(stream_request(COUNT, SIZE), timeout=60)
    check_stream_message(next(call), 0, SIZE)
    # the client reads nothing more; the server sends until the window is shut
    last = None
    for _ in range(30):
        time.sleep(0.2)
        st = stats(side)
        if last is not None and st["produced"] == last["produced"]:
            break
        last = st
    check(st["produced"] == last["produced"], "the stream never stalled: %s" % st)
    check(st["produced"] < 8 * 1024 * 1024, "sent %d bytes to a client that reads nothing" % st["produced"])
    check(st["pending"] <= PRODUCE_CAP + SIZE + 5, "queued while stalled: %s" % st)
    check(st["rss_kb"] - base["rss_kb"] < 16 * 1024, "memory grew from %d to %d kB" % (base["rss_kb"], st["rss_kb"]))
    # the loop still serves others meanwhile
    check(list(side.stream_stream(ECHO_PATH)(iter([b"ping"]), timeout=10)) == [b"ping"], "echo while stalled")

    n = 1
    for m in call:
        check_stream_message(m, n, SIZE)
        n += 1
    check(n == COUNT and call.code() == grpc.StatusCode.OK, "resumed: %d of %d, %s" % (n, COUNT, call.code()))
    st = stats(side)
    check(st["peak"] <= PRODUCE_CAP + SIZE + 5, "the largest queue was %d bytes" % st["peak"])
    check(st["rss_kb"] - base["rss_kb"] < 16 * 1024, "memory grew from %d to %d kB" % (base["rss_kb"], st["rss_kb"]))
    check(st["pending"] == 0 and st["streams"] == 1, "after the stream: %s" % st)
    ch.close()
    side.close()
    check(srv.stop() == 0, "the server exited %s" % srv.proc.returncode)


run(test)
