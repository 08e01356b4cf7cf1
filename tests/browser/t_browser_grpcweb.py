"""xip83-gateway's gRPC-Web in headless Chromium: a page served from
another origin (a static server on another loopback port) calls
SubscribeGroupMessages and SubscribeTopics with
connect-web's gRPC-Web transport, the browser's fetch, cross-origin as
--cors-origin allows: the headers (subscribed: true) first, the catch-up
above the cursors, live rows written by the test, each exactly once. An
AbortController cancel frees the stream on the gateway (its open-streams
gauge drops) and the page sees CANCELED; the other stream goes on. A page
of an origin that --cors-origin does not list is refused: its call fails in
the browser and opens no stream on the gateway."""
from browsertest import (GROUP_MESSAGES, TOPICS, Browser, StaticServer, build, check, gateway, group_stream,
                         open_streams, run, take, take_until, topics_stream, wait_for)

CANCELED = 1


def test():
    built = build()
    allowed, refused = StaticServer(built), StaticServer(built)
    g = gateway("--metrics", "127.0.0.1:0", "--cors-origin", allowed.origin)
    base = "http://127.0.0.1:%d" % g.ports["h2c"]
    b = Browser()
    check(b.goto(allowed.origin + "/index.html") == 200, "the page loads")
    group = group_stream(b, base, "g")
    topics_stream(b, base, "t")
    wait_for(lambda: open_streams(g, GROUP_MESSAGES) == 1 and open_streams(g, TOPICS) == 1, 10,
             "one open stream of each method")
    check(b.protocols(base) == ["http/1.1"], "the browser calls h2c's port over HTTP/1.1: %s" % b.protocols(base))

    # the AbortController: the group stream ends in the page and on the gateway
    b.js("xip83.cancel('g');")
    got = take_until(b, "g", lambda e: e["type"] == "end", what="the cancelled call's end")
    check(got[-1]["code"] == CANCELED, "the page sees CANCELED: %s" % got)
    wait_for(lambda: open_streams(g, GROUP_MESSAGES) == 0, 10, "the cancelled stream freed on the gateway")
    check(open_streams(g, TOPICS) == 1, "the other stream is still open")
    b.js("xip83.cancel('t');")
    wait_for(lambda: open_streams(g, TOPICS) == 0, 10, "the second cancelled stream freed")
    check(take_until(b, "t", lambda e: e["type"] == "end", what="its end")[-1]["code"] == CANCELED, "CANCELED")

    # an origin not allowed: the browser refuses the call, no stream opens
    check(b.goto(refused.origin + "/index.html") == 200, "the other page loads")
    b.js("xip83.grpcWeb(xip83.transport(%r), 'r', 'group', [[%r, 0]]);" % (base, group.hex()))
    got = take(b, "r", 1, 20)
    check(got and got[0]["type"] == "end" and got[0]["code"] not in (0, CANCELED),
          "a call from an origin not allowed fails in the browser: %s" % got)
    check(open_streams(g, GROUP_MESSAGES) == 0, "and opens no stream on the gateway")
    b.close()


if __name__ == "__main__":
    run(test)
