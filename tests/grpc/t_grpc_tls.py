"""TLS in the gateway's gRPC transport: a self-signed certificate made here
with the openssl CLI; a gRPC client over TLS (echo and a server stream); ALPN
"h2" is what the server picks, and a client that offers only http/1.1 (or no
ALPN at all) is refused."""
import ssl
import socket
import tempfile

import grpc

from grpctest import ECHO_PATH, STREAM_PATH, Server, check, check_stream_message, make_cert, run, stream_request


def tls_connect(port, cafile, alpn):
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
        first = tls.recv(9)
    except (ssl.SSLError, ConnectionError, socket.timeout) as e:
        first = b""
    tls.close()
    return proto, None if first else "closed after the handshake"


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
        proto, err = tls_connect(port, cert, ["http/1.1"])
        check(err is not None and "NO APPLICATION PROTOCOL" in err.upper().replace("_", " "),
              "a client without h2 was not refused: %r %r" % (proto, err))
        proto, err = tls_connect(port, cert, None)
        check(err == "closed after the handshake", "a client without ALPN: %r %r" % (proto, err))
        # the refused handshakes hurt nothing: the server still serves
        ch = grpc.secure_channel("127.0.0.1:%d" % port, creds)
        check(list(ch.stream_stream(ECHO_PATH)(iter([b"again"]), timeout=10)) == [b"again"], "echo after refusals")
        ch.close()
        check(srv.stop() == 0, "the server exited %s" % srv.proc.returncode)


run(test)
