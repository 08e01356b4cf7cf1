"""xip83-gateway sends a stream's response headers as soon as it takes the
stream, with the metadata `subscribed: true`, as XMTP's nodes do: clients
(libxmtp's tonic, grpc-go's Header(), grpc-js's metadata event) wait for
them, and a server stream's first message may be far off.

- grpcio, on all five methods: initial_metadata() returns with
  subscribed=true while no row exists (SubscribeGroupMessages and
  SubscribeWelcomeMessages have sent no message then), and the row written
  afterwards still comes;
- grpc-go (Debian's, tests/grpc/goclient) on SubscribeGroupMessages and
  SubscribeWelcomeMessages: Header() returns with subscribed=true before any
  message, then the row written after it comes."""
import os
import subprocess
import threading

from gatewaytest import (D14N, D14N_SUBSCRIBE, GROUP_MESSAGES, TOP, TOPICS, V3, V3_SUBSCRIBE,
                         WELCOME_MESSAGES, Responses, gateway, msg, put_group, put_welcome)
from grpctest import Requests, check, run

U = os.urandom(4).hex().encode()
GO_CLIENT = os.environ.get("XIP83_GO_GRPC_CLIENT") or os.path.join(TOP, "build/xip83-go-grpc-client")
# generous for a loaded machine: without the headers sent at once they never come
WITHIN = 5


def metadata_at_once(call, what):
    """call's initial metadata, which must come within WITHIN s."""
    out = []
    t = threading.Thread(target=lambda: out.append(call.initial_metadata()), daemon=True)
    t.start()
    t.join(WITHIN)
    check(out, "%s: no response headers within %d s" % (what, WITHIN))
    md = dict(out[0])
    check(md.get("subscribed") == "true", "%s: subscribed=true in %s" % (what, out[0]))


def grpcio(ch):
    g, k = b"HG" + U, b"HK" + U
    F = V3 + "SubscribeGroupMessagesRequest.Filter"
    W = V3 + "SubscribeWelcomeMessagesRequest.Filter"
    server_streams = [
        (GROUP_MESSAGES, msg(V3 + "SubscribeGroupMessagesRequest", filters=[msg(F, group_id=g)]),
         lambda: put_group(g, b"g" + U)),
        (WELCOME_MESSAGES, msg(V3 + "SubscribeWelcomeMessagesRequest", filters=[msg(W, installation_key=k)]),
         lambda: put_welcome(k, b"w" + U)),
    ]
    for path, req, write in server_streams:
        r = Responses(ch.unary_stream(path)(req.SerializeToString(), timeout=30))
        metadata_at_once(r.call, path)
        check(r.q.empty(), "%s: a message before any row: %r" % (path, r.q.queue))
        write()
        check(U in r.next(), "%s: the row written after the headers came" % path)
        r.call.cancel()
    t = msg(D14N + "SubscribeTopicsRequest",
            filters=[msg(D14N + "SubscribeTopicsRequest.TopicFilter", topic=b"\x01HT" + U)])
    r = Responses(ch.unary_stream(TOPICS)(t.SerializeToString(), timeout=30))
    metadata_at_once(r.call, TOPICS)
    r.call.cancel()
    for path in (V3_SUBSCRIBE, D14N_SUBSCRIBE):
        reqs = Requests()
        r = Responses(ch.stream_stream(path)(reqs, timeout=30))
        metadata_at_once(r.call, path)
        reqs.close()
        r.call.cancel()


def grpc_go(g):
    check(os.path.exists(GO_CLIENT), "%s is missing: make go-example (golang-google-grpc-dev)" % GO_CLIENT)
    for path, key, write in ((GROUP_MESSAGES, b"GG" + U, put_group), (WELCOME_MESSAGES, b"GW" + U, put_welcome)):
        # {filters {group_id | installation_key = key}}
        req = b"\x0a" + bytes([len(key) + 2]) + b"\x0a" + bytes([len(key)]) + key
        p = subprocess.Popen([GO_CLIENT, "-target", g.target, "-method", path, "-request", req.hex(),
                              "-within", "%ds" % WITHIN], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
        line = p.stdout.readline()
        check(line.startswith("headers ") and "subscribed=true" in line.split(),
              "grpc-go on %s: %r %s" % (path, line, line or p.stderr.read()))
        print("grpc-go %s: %s" % (path.rsplit("/", 1)[1], line.strip()))
        data = b"go" + U
        write(key, data)
        line = p.stdout.readline()
        check(line.startswith("message ") and data.hex() in line,
              "grpc-go on %s: the row after the headers: %r %s" % (path, line, p.stderr.read() if not line else ""))
        check(p.wait(30) == 0, "the Go client's exit: %s" % p.stderr.read())


def test():
    g = gateway("--pool", "2")
    grpcio(g.channel())
    grpc_go(g)
    check(g.stop() == 0, "exit 0 on SIGTERM")


run(test)
