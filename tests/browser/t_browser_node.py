"""xip83-gateway's gRPC-Web from Node: connect-node's gRPC-Web transport
over HTTP/1.1 (the client generated from proto/ by protoc-gen-es) calls
SubscribeGroupMessages (binary) and SubscribeTopics (grpc-web-text): the
headers (subscribed: true) before the first message, the catch-up above
the cursors, then live rows written by the test, each exactly once; both
streams at once on one client; a cancel ends each stream on the gateway
(its open-streams gauge drops to 0)."""
from browsertest import (GROUP_MESSAGES, TOPICS, NodeClient, build, gateway, group_stream, open_streams,
                         run, topics_stream, wait_for)


def test():
    built = build()
    g = gateway("--metrics", "127.0.0.1:0")
    base = "http://127.0.0.1:%d" % g.ports["h2c"]
    n = NodeClient(built)
    group_stream(n, base, "g")
    topics_stream(n, base, "t", text=True)
    check_open = (lambda: open_streams(g, GROUP_MESSAGES) == 1 and open_streams(g, TOPICS) == 1)
    wait_for(check_open, 10, "one open stream of each method")
    n.js("xip83.cancel('g'); xip83.cancel('t');")
    wait_for(lambda: open_streams(g, GROUP_MESSAGES) == 0 and open_streams(g, TOPICS) == 0, 10,
             "the cancelled streams freed on the gateway")
    n.close()


if __name__ == "__main__":
    run(test)
