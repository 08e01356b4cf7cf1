"""xip83-gateway's server-streaming subscriptions with grpcio, as deployed
clients call them: MlsApi/SubscribeGroupMessages and
SubscribeWelcomeMessages (one GroupMessage / WelcomeMessage per response:
rows above each filter's id_cursor, then live ones, of the filtered topics
only) and QueryApi/SubscribeTopics (STARTED, the envelopes above each
filter's cursor, CATCHUP_COMPLETE, then live envelopes). Rows written while
the catch-up runs arrive exactly once. A malformed request is
INVALID_ARGUMENT."""
import os
import threading

import grpc

from gatewaytest import (D14N, ENV, GROUP_MESSAGES, TOPICS, V3, WELCOME_MESSAGES, Reader,
                         envelope_position, gateway, msg, put_envelope, put_group, put_welcome)
from grpctest import Failure, check, expect_status, run

U = os.urandom(4).hex().encode()


def groups(ch):
    a, b, x = b"GA" + U, b"GB" + U, b"GX" + U
    ia = [put_group(a, b"a%d" % i + U) for i in range(3)]
    ib = put_group(b, b"b0" + U)
    put_group(x, b"x0" + U)
    F = V3 + "SubscribeGroupMessagesRequest.Filter"
    req = msg(V3 + "SubscribeGroupMessagesRequest",
              filters=[msg(F, group_id=a, id_cursor=ia[0]), msg(F, group_id=b, id_cursor=0)])
    r = Reader(ch, GROUP_MESSAGES, req, V3 + "GroupMessage")
    got = sorted((m.v1.group_id, m.v1.id) for m in r.take(3))
    check(got == sorted([(a, ia[1]), (a, ia[2]), (b, ib)]), "catch-up above the cursors: %s" % got)
    la = put_group(a, b"a-live" + U)
    put_group(x, b"x-live" + U)
    lb = put_group(b, b"b-live" + U)
    got = [(m.v1.group_id, m.v1.id, m.v1.data) for m in r.take(2)]
    check(got == [(a, la, b"a-live" + U), (b, lb, b"b-live" + U)], "live, in id order: %s" % got)
    r.quiet(0.5)
    r.call.cancel()

    # exactly once across the catch-up
    c = b"GC" + U
    written = [put_group(c, b"c%d" % i + U) for i in range(10)]
    t = threading.Thread(target=lambda: written.extend(put_group(c, b"c%d" % i + U) for i in range(10, 50)))
    t.start()
    r = Reader(ch, GROUP_MESSAGES, msg(V3 + "SubscribeGroupMessagesRequest",
                                       filters=[msg(F, group_id=c, id_cursor=0)]), V3 + "GroupMessage")
    t.join()
    ids = [m.v1.id for m in r.take(50)]
    check(sorted(ids) == sorted(written), "every row once: %d, %d distinct" % (len(ids), len(set(ids))))
    r.quiet(0.5)
    r.call.cancel()


def welcomes(ch):
    k = b"WK" + U
    i0 = put_welcome(k, b"w0" + U)
    F = V3 + "SubscribeWelcomeMessagesRequest.Filter"
    r = Reader(ch, WELCOME_MESSAGES, msg(V3 + "SubscribeWelcomeMessagesRequest",
                                         filters=[msg(F, installation_key=k, id_cursor=0)]), V3 + "WelcomeMessage")
    m = r.next()
    check(m.v1.id == i0 and m.v1.installation_key == k and m.v1.data == b"w0" + U, "welcome catch-up: %s" % m)
    i1 = put_welcome(k, b"w1" + U)
    put_group(k, b"not-a-welcome" + U)
    check(r.next().v1.id == i1, "live welcome")
    r.quiet(0.5)
    r.call.cancel()


def topics(ch):
    t1, t2 = b"\x01S1" + U, b"\x02S2" + U
    for seq in range(1, 4):
        put_envelope(7, seq, t1)
    put_envelope(8, 1, t2)
    TF = D14N + "SubscribeTopicsRequest.TopicFilter"
    req = msg(D14N + "SubscribeTopicsRequest", filters=[
        msg(TF, topic=t1, last_seen=msg(ENV + "Cursor", node_id_to_sequence_id={7: 1})),
        msg(TF, topic=t2)])
    r = Reader(ch, TOPICS, req, D14N + "SubscribeTopicsResponse")
    first = r.next()
    check(first.WhichOneof("response") == "status_update" and first.status_update.status == 1,
          "STARTED first: %s" % first)
    got = []
    while True:
        x = r.next()
        if x.WhichOneof("response") == "status_update":
            check(x.status_update.status == 2, "CATCHUP_COMPLETE after the catch-up: %s" % x)
            break
        got += [envelope_position(e) for e in x.envelopes.envelopes]
    check(sorted(got) == [(7, 2), (7, 3), (8, 1)], "catch-up: %s" % got)
    put_envelope(7, 4, t1)
    put_envelope(9, 1, b"\x01other" + U)
    put_envelope(8, 2, t2)
    got = []
    while len(got) < 2:
        got += [envelope_position(e) for e in r.next().envelopes.envelopes]
    check(got == [(7, 4), (8, 2)], "live envelopes: %s" % got)
    r.quiet(0.5)
    r.call.cancel()


def test():
    g = gateway("--pool", "2")
    ch = g.channel()
    groups(ch)
    welcomes(ch)
    topics(ch)
    # a request that is not one: a field cut short
    expect_status(lambda: list(ch.unary_stream(GROUP_MESSAGES)(b"\x0a\x05ab", timeout=10)),
                  grpc.StatusCode.INVALID_ARGUMENT, "malformed request")
    check(g.stop() == 0, "exit 0 on SIGTERM")


run(test)
