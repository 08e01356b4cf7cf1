"""A stream the client resets before the server's end of it left is closed
as cancelled, also when the client's END_STREAM came first and the method
had finished the stream already (grpc-js cancels with END_STREAM and
RST_STREAM(CANCEL) together): the trailers never reached it. A stream whose
trailers left before the client's reset, and one that ended normally, are
not cancelled. A canary stream on another connection answers throughout."""
import time

import hyperframe.frame

from grpctest import ECHO_PATH, Canary, RawH2, Server, check, run, stats


def test():
    srv = Server("--h2c", "127.0.0.1:0")
    canary = Canary(srv)
    before = stats(canary.ch)

    raw = RawH2(srv.ports["h2c"])
    # END_STREAM and RST_STREAM(CANCEL) in one write: the echo's finish (OK on
    # half-close) is submitted, but its trailers have not left
    sid = raw.request(ECHO_PATH)
    raw.conn.send_data(sid, b"\0\0\0\0\x02hi", end_stream=True)
    data = raw.conn.data_to_send()
    raw.sock.sendall(data + hyperframe.frame.RstStreamFrame(sid, error_code=8).serialize())
    time.sleep(0.3)
    st = stats(canary.ch)
    check(st["cancelled"] - before["cancelled"] == 1,
          "END_STREAM then RST_STREAM(CANCEL): %d cancelled" % (st["cancelled"] - before["cancelled"]))

    # a call that ended (trailers read), then reset: not cancelled
    raw2 = RawH2(srv.ports["h2c"])
    sid = raw2.request(ECHO_PATH)
    raw2.send_message(sid, b"done", end=True)
    check(raw2.wait_status(sid, "the echo's trailers") == 0, "the echo's status")
    raw2.sock.sendall(hyperframe.frame.RstStreamFrame(sid, error_code=8).serialize())
    time.sleep(0.3)
    after = stats(canary.ch)
    check(after["cancelled"] == st["cancelled"], "a reset after the trailers counted as cancelled")
    # the Stats calls themselves and the finished echo closed normally
    check(after["closed"] - before["closed"] >= 2, "closed normally: %s" % after)
    canary.check("around the cancels")
    raw.close()
    raw2.close()
    canary.close()
    check(srv.stop() == 0, "the server exited %s" % srv.proc.returncode)


run(test)
