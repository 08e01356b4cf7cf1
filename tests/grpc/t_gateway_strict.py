"""xip83-gateway's strict parsing of requests: bytes the protobuf wire format
forbids, sent raw, end the call INVALID_ARGUMENT ("malformed request: ..." on
the server-streaming methods, "malformed SubscribeRequest: ..." on
Subscribe) and are never served. Each kind of truncation (a tag, a varint,
a length, an id_cursor or last_seen cut short, a fixed value) and each other
malformation (field number 0, a group or unused wire type, a wire type the
field does not have, a varint beyond 64 bits, a tag or a length written in
more than the 5 bytes protobuf-c reads) follows a valid filter, on
SubscribeGroupMessages, SubscribeWelcomeMessages, SubscribeTopics and in a
Mutate on both Subscribe methods. A row is stored for every filter first: a
call that was served would get it (a cut id_cursor once read as 0). A
canary call with the same valid filter is served before and after."""
import os

import grpc

from gatewaytest import (D14N_SUBSCRIBE, GROUP_MESSAGES, TOPICS, V3_SUBSCRIBE, WELCOME_MESSAGES,
                         Responses, gateway, put_envelope, put_group, put_welcome)
from grpctest import Requests, check, run

U = os.urandom(4).hex().encode()
# SubscribeTopicsResponse{status_update{status: STARTED}}: sent before the request is read
TOPICS_STARTED = b"\x12\x02\x08\x01"


def varint(v):
    out = b""
    while v >= 0x80:
        out += bytes([v & 0x7F | 0x80])
        v >>= 7
    return out + bytes([v])


def ld(num, body):
    """A length-delimited field."""
    return varint(num << 3 | 2) + varint(len(body)) + body


def vi(num, v):
    return varint(num << 3) + varint(v)


# (what, bytes after a valid filter)
AFTER = [
    ("truncated tag", b"\x80"),
    ("truncated varint", b"\x10\x80"),
    ("truncated length", b"\x0a\x05\x0a\x01"),
    ("truncated fixed64", b"\x11\x00\x00\x00"),
    ("truncated fixed32", b"\x15\x00\x00"),
    ("field number 0", b"\x02\x00"),
    ("field number 0 in a two-byte tag", b"\x82\x00\x00"),
    ("group wire type", b"\x0b\x0c"),
    ("wire type 7", b"\x0f"),
    ("filters as a varint", b"\x08\x01"),
    ("tag longer than 5 bytes", b"\x90\x80\x80\x80\x80\x00\x00"),
    # protobuf-c reads a length from 5 bytes at most
    ("length of 0 in 9 bytes", b"\x2a" + b"\x80" * 8 + b"\x00"),
    ("varint beyond 64 bits", b"\x10" + b"\xff" * 9 + b"\x7f"),
]


def server_stream(ch, path, request):
    """Calls path with raw bytes; (responses, the RpcError or None)."""
    r = Responses(ch.unary_stream(path)(request, timeout=20))
    got = []
    while True:
        x = r.q.get(timeout=30)
        if x is None:
            return got, r.error
        got.append(x)


def check_refused(ch, path, request, what):
    got, err = server_stream(ch, path, request)
    got = [x for x in got if not (path == TOPICS and x == TOPICS_STARTED)]
    check(err is not None and err.code() == grpc.StatusCode.INVALID_ARGUMENT,
          "%s on %s: %s, not INVALID_ARGUMENT" % (what, path, err and (err.code(), err.details())))
    check(err.details().startswith("malformed request: "), "%s: the message %r" % (what, err.details()))
    check(got == [], "%s on %s was served: %d responses" % (what, path, len(got)))
    return err.details()


def methods():
    """(path, valid filter body, filter bodies malformed inside, the row's responses)."""
    g, k, t = b"SG" + U, b"SK" + U, b"\x01ST" + U
    put_group(g, b"g" + U)
    put_welcome(k, b"w" + U)
    put_envelope(7, int(U, 16) % 1000000000 + 1, t)
    entry = vi(1, 7) + vi(2, 0)
    return [
        (GROUP_MESSAGES, ld(1, g) + vi(2, 0), [
            ("id_cursor cut by the filter's end", ld(1, g) + b"\x10\xff"),
            ("id_cursor as bytes", ld(1, g) + ld(2, b"")),
            ("group_id as a varint", vi(1, 5)),
        ]),
        (WELCOME_MESSAGES, ld(1, k) + vi(2, 0), [
            ("id_cursor cut by the filter's end", ld(1, k) + b"\x10\xff\xff"),
            ("id_cursor as fixed64", ld(1, k) + b"\x11" + b"\x00" * 8),
        ]),
        (TOPICS, ld(1, t) + ld(2, ld(1, entry)), [
            ("last_seen's sequence cut", ld(1, t) + ld(2, ld(1, vi(1, 7) + b"\x10\xff"))),
            ("last_seen cut by the filter's end", ld(1, t) + b"\x12\x04" + ld(1, b"")),
            ("last_seen's node as bytes", ld(1, t) + ld(2, ld(1, ld(1, b"") + vi(2, 0)))),
        ]),
    ]


def canary(ch, path, good):
    """The valid filter alone is served: its one row comes."""
    r = Responses(ch.unary_stream(path)(ld(1, good), timeout=20))
    x = r.next()
    if path == TOPICS:
        check(x == TOPICS_STARTED, "STARTED first: %r" % x)
        x = r.next()
    check(U in x, "%s's canary got its row: %r" % (path, x))
    r.call.cancel()


def subscribe(ch, path, topic):
    """A Mutate on Subscribe whose add or whose Mutate is malformed: INVALID_ARGUMENT."""
    add_ok = ld(1, topic)

    def request(mutate):
        return ld(1, ld(1, mutate))

    cases = [("truncated id_cursor in an add", ld(1, add_ok + b"\x10\xff") + vi(4, 1)),
             ("truncated mutate_id", ld(1, add_ok) + b"\x20\x81"),
             ("id_cursor beyond 64 bits", ld(1, add_ok + b"\x10" + b"\xff" * 9 + b"\x7f") + vi(4, 1)),
             ("truncated tag in the Mutate", ld(1, add_ok) + vi(4, 1) + b"\x80"),
             ("field number 0 in the Mutate", ld(1, add_ok) + vi(4, 1) + b"\x00\x00"),
             ("field number 0 in a two-byte tag", ld(1, add_ok) + vi(4, 1) + b"\x82\x00\x00"),
             ("truncated remove", ld(1, add_ok) + vi(4, 1) + b"\x12\x09\x00"),
             ("length of an add in 6 bytes", b"\x0a\x80\x80\x80\x80\x80\x00" + vi(4, 1))]
    for what, mutate in cases:
        reqs = Requests()
        r = Responses(ch.stream_stream(path)(reqs, timeout=20))
        r.next()			# Started
        reqs.put(request(mutate))
        err = r.end()
        check(err is not None and err.code() == grpc.StatusCode.INVALID_ARGUMENT,
              "%s on %s: %s" % (what, path, err and (err.code(), err.details())))
        check(err.details().startswith("malformed SubscribeRequest: "), "%s: %r" % (what, err.details()))
        if "6 bytes" in what:
            check("length of field 1 at byte 4 takes more than 5 bytes" in err.details(),
                  "%s: %r" % (what, err.details()))
        reqs.close()
    # and after a valid request that was served, the same bytes cut
    reqs = Requests()
    r = Responses(ch.stream_stream(path)(reqs, timeout=20))
    r.next()
    good = request(ld(1, add_ok) + vi(4, 1))
    reqs.put(good)
    r.next()			# the wave's first frame
    reqs.put(good + b"\x80")
    err = r.end()
    check(err is not None and err.code() == grpc.StatusCode.INVALID_ARGUMENT,
          "a cut request after a served one on %s: %s" % (path, err and err.code()))
    reqs.close()


def test():
    g = gateway("--pool", "2")
    ch = g.channel()
    messages = set()
    for path, good, inside in methods():
        canary(ch, path, good)
        for what, tail in AFTER:
            m = check_refused(ch, path, ld(1, good) + tail, what)
            messages.add(m)
            if what == "length of 0 in 9 bytes":
                at = len(ld(1, good))
                check(m.endswith("the length of field 5 at byte %d takes more than 5 bytes" % at),
                      "%s on %s: %r" % (what, path, m))
        for what, body in inside:
            messages.add(check_refused(ch, path, ld(1, good) + ld(1, body), what))
        canary(ch, path, good)
    check(any("truncated" in m for m in messages), "the messages say what: %s" % sorted(messages)[:3])
    print("server streams: %d distinct messages, e.g. %s" % (len(messages), sorted(messages)[0]))
    subscribe(ch, V3_SUBSCRIBE, b"\x00SG" + U)
    subscribe(ch, D14N_SUBSCRIBE, b"\x01ST" + U)
    canary(ch, GROUP_MESSAGES, ld(1, b"SG" + U))
    check(g.stop() == 0, "exit 0 on SIGTERM")


run(test)
