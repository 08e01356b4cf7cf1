"""xip83-gateway counts a client's cancel as CANCELLED in
xip83_gateway_stream_ends_total, also when the cancel comes as grpc-js
sends it: END_STREAM (an empty DATA frame) and RST_STREAM(CANCEL) in one
write. The half-close alone ends a Subscribe stream OK, but that OK never
leaves: the client cancelled first. Raw HTTP/2 frames (python3-h2) on both
Subscribe methods and a server stream; a Subscribe half-closed without a
reset is the control, counted OK."""
import os
import time

from gatewaytest import D14N_SUBSCRIBE, GROUP_MESSAGES, V3_SUBSCRIBE, gateway, metrics
from grpctest import RawH2, check, run

U = os.urandom(4).hex().encode()
CANCEL = 8


def ends(g, code):
    return metrics(g).get('xip83_gateway_stream_ends_total{code="%s"}' % code, 0)


def cancel_like_grpc_js(raw, path, request=None):
    """HEADERS; then DATA (the request, or empty) with END_STREAM and RST_STREAM(CANCEL) in one write."""
    sid = raw.request(path)
    body = b"" if request is None else b"\x00" + len(request).to_bytes(4, "big") + request
    raw.conn.send_data(sid, body, end_stream=True)
    raw.conn.reset_stream(sid, error_code=CANCEL)
    raw.flush()
    return sid


def test():
    g = gateway("--pool", "2", "--metrics", "127.0.0.1:0")
    raw = RawH2(g.ports["h2c"])
    # the control: a Subscribe half-closed with nothing pending ends OK
    sid = raw.request(V3_SUBSCRIBE)
    raw.conn.send_data(sid, b"", end_stream=True)
    raw.flush()
    check(raw.wait_status(sid, "the control's status") == 0, "a half-closed Subscribe ends OK")
    deadline = time.monotonic() + 10
    while ends(g, "OK") < 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    check(ends(g, "OK") == 1, "the control is counted OK: %s" % ends(g, "OK"))

    n = 0
    for _ in range(5):
        cancel_like_grpc_js(raw, V3_SUBSCRIBE)
        cancel_like_grpc_js(raw, D14N_SUBSCRIBE)
        # SubscribeGroupMessagesRequest{filters{group_id}}
        cancel_like_grpc_js(raw, GROUP_MESSAGES, b"\x0a\x0b\x0a\x09C" + U)
        n += 3
    deadline = time.monotonic() + 10
    while ends(g, "CANCELLED") < n and time.monotonic() < deadline:
        time.sleep(0.05)
    m = metrics(g)
    check(ends(g, "CANCELLED") == n, "%d cancels counted CANCELLED: %s" % (n, m))
    check(ends(g, "OK") == 1, "no cancel counted OK: %s" % ends(g, "OK"))
    raw.close()
    check(g.stop() == 0, "exit 0 on SIGTERM")


run(test)
