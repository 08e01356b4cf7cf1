"""TLS in the gateway's gRPC transport: a self-signed certificate made here
with the openssl CLI; a gRPC client over TLS (echo and a server stream); ALPN
"h2" is what the server picks, "http/1.1" when a client offers only that
(browsers' gRPC-Web), a client whose list has neither is refused, and one
that sends no ALPN is told by its first bytes."""
import ssl
import socket
import tempfile

import grpc

from grpctest import ECHO_PATH, STREAM_PATH, Server, check, check_stream_message, make_cert, run, stream_request


def tls_connect(port, cafile, alpn, send=b""):
    ctx = ssl.create_default_context(cafile=cafile)
    if alpn is not None:
        ctx.set_alpn_protocols(alpn)
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        tls = ctx.wrap_socket(sock, server_hostname="localhost")
    except (ssl.SSLError, ConnectionError) as e:
        sock.close()
        return None, str(e)
    proto = tls.selected_alpn_protocol()
    # an HTTP/2 server speaks first (SETTINGS); a refused client sees EOF
    try:
        tls.sendall(send)
        first = tls.recv(9)
    except (ssl.SSLError, ConnectionError, socket.timeout) as e:
        first = b""
    tls.close()
    return proto, first.decode("latin-1") if first else "closed after the handshake"


def test():
    with tempfile.TemporaryDirectory() as d:
        cert, key = make_cert(d)
        srv = Server("--tls", "127.0.0.1:0", "--cert", cert, "--key", key)
        port = srv.ports["tls"]
        with open(cert, "rb") as f:
            creds = grpc.ssl_channel_credentials(root_certificates=f.read())
        ch = grpc.secure_channel("127.0.0.1:%d" % port, creds)
        msgs = [b"tls-%d" % i * (i % 50) for i in range(500)]
        got = list(ch.stream_stream(ECHO_PATH)(iter(msgs), timeout=30))
        check(got == msgs, "TLS echo: %d of %d messages back" % (len(got), len(msgs)))
        n = 0
        for m in ch.unary_stream(STREAM_PATH)(stream_request(300, 40000), timeout=30):
            check_stream_message(m, n, 40000)
            n += 1
        check(n == 300, "TLS server stream: %d of 300" % n)
        ch.close()

        proto, err = tls_connect(port, cert, ["h2", "http/1.1"])
        check(proto == "h2", "ALPN chose %r (%s)" % (proto, err))
        get = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
        proto, first = tls_connect(port, cert, ["http/1.1"], get)
        check(proto == "http/1.1" and first == "HTTP/1.1 ", "ALPN http/1.1: %r %r" % (proto, first))
        proto, err = tls_connect(port, cert, ["spdy/3.1"])
        check(err is not None and "NO APPLICATION PROTOCOL" in err.upper().replace("_", " "),
              "a client without h2 or http/1.1 was not refused: %r %r" % (proto, err))
        proto, first = tls_connect(port, cert, None, get)
        check(proto is None and first == "HTTP/1.1 ", "a client without ALPN: %r %r" % (proto, first))
        # the refused handshakes hurt nothing: the server still serves
        ch = grpc.secure_channel("127.0.0.1:%d" % port, creds)
        check(list(ch.stream_stream(ECHO_PATH)(iter([b"again"]), timeout=10)) == [b"again"], "echo after refusals")
        ch.close()
        check(srv.stop() == 0, "the server exited %s" % srv.proc.returncode)


run(test)
