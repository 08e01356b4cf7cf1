"""The browser tests' page over TLS: a test certificate made now (openssl,
for 127.0.0.1) serves both the page (https) and the gateway (--tls-cert,
ALPN h2 and http/1.1), and Chromium is told to trust that certificate's key
alone (--ignore-certificate-errors-spki-list with its SPKI hash), so the
certificate is still checked: a page served with another certificate of
the same kind does not load. Over TLS, the page's gRPC-Web call
(SubscribeGroupMessages: headers, catch-up, live rows once) goes over
HTTP/2 (ALPN h2), as does a call of an unknown method that ends
UNIMPLEMENTED in its trailer frame; its
WebSocket (wss, XIP-83 Subscribe v3: Started, a wave, a live row) work as
over h2c."""
import os
import tempfile

from browsertest import (V3_SUBSCRIBE, Browser, Failure, StaticServer, build, check, gateway, group_stream,
                         put_group, q, run, spki_hash, take, take_until)
from grpctest import make_cert

U = os.urandom(4).hex().encode()


def test():
    built = build()
    with tempfile.TemporaryDirectory() as d, tempfile.TemporaryDirectory() as other:
        cert, key = make_cert(d)
        page = StaticServer(built, tls=(cert, key))
        stranger = StaticServer(built, tls=make_cert(other))
        g = gateway("--tls-cert", cert, "--tls-key", key, "--cors-origin", page.origin)
        port = g.ports["tls"]
        b = Browser("--ignore-certificate-errors-spki-list=" + spki_hash(cert))
        try:
            b.goto(stranger.origin + "/index.html")
            raise AssertionError("a page with a certificate not trusted loaded")
        except Failure as e:
            check("ERR_CERT" in str(e), "the untrusted certificate is what failed: %s" % e)
        check(b.goto(page.origin + "/index.html") == 200, "the page loads over TLS")
        base = "https://127.0.0.1:%d" % port
        group_stream(b, base, "g")
        b.js("xip83.cancel('g');")
        # ALPN: the browser takes h2, so this was gRPC-Web over HTTP/2; a
        # call that ends (an unknown method) reads its trailer frame there too
        got = b.js("const r = await fetch(%s, {method: 'POST', body: new Uint8Array(5), headers:"
                   " {'content-type': 'application/grpc-web+proto', 'x-grpc-web': '1'}});"
                   " const body = new Uint8Array(await r.arrayBuffer());"
                   " return [r.status, r.headers.get('grpc-status'), new TextDecoder().decode(body.subarray(5))];"
                   % q(base + "/xip83.Nothing/Here"))
        check(got[0] == 200 and (got[1] == "12" or "grpc-status: 12" in got[2]),
              "an unknown method over gRPC-Web on HTTP/2: UNIMPLEMENTED: %s" % got)
        check(b.protocols(base) == ["h2"], "gRPC-Web over HTTP/2 after ALPN: %s" % b.protocols(base))

        a = b"A" + U
        first = put_group(a, b"a0" + U)
        check(b.js("return await xip83.wsOpen('w', %s, false, false);"
                   % q("wss://127.0.0.1:%d%s" % (port, V3_SUBSCRIBE))), "the wss WebSocket opens")
        got = take(b, "w", 2)
        check([e["type"] for e in got] == ["open", "started"], "open, Started: %s" % got)
        b.js("xip83.ws('w').mutate(1, [[%s, 0]], []);" % q("00" + a.hex()))
        got = take_until(b, "w", lambda e: e["type"] == "catchupComplete", what="CatchupComplete")
        rows = [tuple(r) for e in got if "rows" in e for r in e["rows"]]
        check(rows == [("00" + a.hex(), first)], "the wave over wss: %s" % rows)
        live = put_group(a, b"a1" + U)
        got = take_until(b, "w", lambda e: "rows" in e, what="the live row")
        check([tuple(r) for r in got[-1]["rows"]] == [("00" + a.hex(), live)], "the live row over wss: %s" % got)
        b.js("xip83.ws('w').close();")
        b.close()
        page.stop()
        stranger.stop()


if __name__ == "__main__":
    run(test)
