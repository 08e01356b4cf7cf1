"""Shared by tests/browser/t_browser_*.py: the gateway's browser side tried
with real clients. Builds the client (tests/browser/js) at test time: the
message and service classes generated from proto/xip83 and
tests/browser/proto by protoc-gen-es, bundled by esbuild for the page and
for Node; serves the page from a static server on another loopback port (a
cross-origin call, as a web app makes); drives Debian's Chromium through
puppeteer-core and Node's connect-node through small JSON-line programs.
The npm packages come from the cache that tests/driver.sh fills from
tests/browser/package-lock.json (XIP83_NPM_CACHE, /var/cache/xip83/npm)."""
import base64
import hashlib
import http.server
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "grpc"))

from gatewaytest import (D14N_SUBSCRIBE, GROUP_MESSAGES, TOPICS, V3_SUBSCRIBE, gateway,  # noqa: E402
                         put_envelope, put_group, psql)
from gatewaytest import GATEWAY  # noqa: E402
from grpctest import TOP, Failure, Server, check  # noqa: E402

NPM = os.environ.get("XIP83_NPM_CACHE") or "/var/cache/xip83/npm"
CHROMIUM = os.environ.get("XIP83_CHROMIUM") or "/usr/bin/chromium"
NODE = os.environ.get("XIP83_NODE") or "node"
_dirs = []
_procs = []


def _npm_ready():
    lock = os.path.join(HERE, "package-lock.json")
    have = os.path.join(NPM, ".xip83-lock")    # written by tests/driver.sh once npm ci succeeded
    ok = os.path.isdir(os.path.join(NPM, "node_modules")) and os.path.exists(have)
    if ok:
        with open(lock, "rb") as a, open(have, "rb") as b:
            ok = a.read() == b.read()
    check(ok, "the npm packages of tests/browser are not in %s as package-lock.json pins them:"
          " tests/driver.sh installs them (or XIP83_NPM_CACHE names another cache)" % NPM)


def _sources():
    """The files the client is built from, with the lock file."""
    out = [os.path.join(TOP, "proto/xip83", f) for f in os.listdir(os.path.join(TOP, "proto/xip83"))]
    out += [os.path.join(HERE, sub, f) for sub in ("proto", "js") for f in os.listdir(os.path.join(HERE, sub))]
    return sorted(out) + [os.path.join(HERE, f) for f in ("package-lock.json", "browsertest.py")]


def build():
    """The client built from the sources (index.html, page.bundle.js for the
    browser, node.cjs for Node): its directory, kept in the temporary
    directory under the sources' hash, so the tests after the first reuse it."""
    _npm_ready()
    h = hashlib.sha256()
    for f in _sources():
        with open(f, "rb") as src:
            h.update(f.encode() + b"\0" + src.read())
    built = os.path.join(tempfile.gettempdir(), "xip83-browser-" + h.hexdigest()[:16])
    if os.path.exists(os.path.join(built, "index.html")):
        return built
    d = tempfile.mkdtemp(prefix="xip83-browser-build-")
    _dirs.append(d)
    env = dict(os.environ, NODE_PATH=os.path.join(NPM, "node_modules"))
    protos = [os.path.join("xip83", f) for f in sorted(os.listdir(os.path.join(TOP, "proto/xip83")))
              if f.endswith(".proto")] + sorted(f for f in os.listdir(os.path.join(HERE, "proto")))
    subprocess.run(["protoc", "--proto_path=" + os.path.join(TOP, "proto"), "--proto_path=" + os.path.join(HERE, "proto"),
                    "--plugin=protoc-gen-es=" + os.path.join(NPM, "node_modules/.bin/protoc-gen-es"),
                    "--es_out=" + d, "--es_opt=target=js,import_extension=js", *protos],
                   check=True, env=env, timeout=60)
    for f in os.listdir(os.path.join(HERE, "js")):
        shutil.copy(os.path.join(HERE, "js", f), d)
    esbuild = os.path.join(NPM, "node_modules/.bin/esbuild")
    subprocess.run([esbuild, "--bundle", "--log-level=warning", "--format=iife", "--platform=browser",
                    "--target=es2022", "--outfile=" + os.path.join(d, "page.bundle.js"), os.path.join(d, "page.js")],
                   check=True, env=env, timeout=60)
    subprocess.run([esbuild, "--bundle", "--log-level=warning", "--format=cjs", "--platform=node",
                    "--target=node18", "--outfile=" + os.path.join(d, "node.cjs"), os.path.join(d, "node.js")],
                   check=True, env=env, timeout=60)
    with open(os.path.join(d, "index.html"), "w") as f:
        f.write('<!DOCTYPE html>\n<meta charset="utf-8"><title>xip83</title><link rel="icon" href="data:,">\n'
                '<script src="page.bundle.js"></script>\n')
    try:
        os.rename(d, built)    # a test building at the same time may have won
    except OSError:
        pass
    return built


class StaticServer:
    """The page's origin: a static file server on 127.0.0.1 (TLS with a
    certificate and key), on a thread."""

    def __init__(self, root, tls=None):
        class Quiet(http.server.SimpleHTTPRequestHandler):
            def __init__(self, *a, **kw):
                super().__init__(*a, directory=root, **kw)

            def log_message(self, *a):
                pass
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
        self.httpd.daemon_threads = True
        scheme = "http"
        if tls:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(*tls)
            self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True)
            scheme = "https"
        self.origin = "%s://127.0.0.1:%d" % (scheme, self.httpd.server_address[1])
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


class _JsonLines:
    """A program answering one JSON line per JSON line."""

    def __init__(self, argv, what):
        self.what = what
        env = dict(os.environ, NODE_PATH=os.path.join(NPM, "node_modules"))
        # a session of its own: Chromium's processes are killed with it
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True,
                                     start_new_session=True)
        _procs.append(self.proc)

    def ask(self, cmd, timeout=60):
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        # the test's alarm bounds the read; the timeout guards a dead program
        line = self.proc.stdout.readline()
        if not line:
            raise Failure("%s exited (%s)" % (self.what, self.proc.wait(timeout)))
        r = json.loads(line)
        if r and "error" in r:
            raise Failure("%s: %s" % (self.what, r["error"]))
        return r.get("ok") if r else None

    def js(self, body, timeout=60):
        """Runs body (an async function's body) there: what it returns."""
        return self.ask({"js": body}, timeout)

    def close(self, timeout=30):
        """Closes its input (the program ends, Chromium closed) or, after
        timeout, kills its process group."""
        _stop(self.proc, timeout)


class Browser(_JsonLines):
    """Headless Chromium driven by puppeteer-core (tests/browser/js/browser.cjs)."""

    def __init__(self, *args):
        check(os.access(CHROMIUM, os.X_OK), "no Chromium at %s (Debian's chromium; tests/driver.sh installs it)" % CHROMIUM)
        profile = tempfile.mkdtemp(prefix="xip83-chromium-")
        _dirs.append(profile)
        _JsonLines.__init__(self, [NODE, os.path.join(HERE, "js/browser.cjs"),
                                   json.dumps({"chromium": CHROMIUM, "profile": profile, "args": list(args)})],
                            "Chromium")

    def goto(self, url):
        """Loads url: its HTTP status; a Failure if it cannot be loaded."""
        return self.ask({"goto": url})


    def protocols(self, prefix):
        """The protocols of the responses since the last call whose URL starts with prefix."""
        return sorted({p for url, p, _ in self.ask({"net": True}) if url.startswith(prefix)})


class NodeClient(_JsonLines):
    """connect-node's gRPC-Web transport over HTTP/1.1 (the node.cjs bundle)."""

    def __init__(self, built):
        _JsonLines.__init__(self, [NODE, os.path.join(built, "node.cjs")], "node")


def q(v):
    """v as a JavaScript literal."""
    return json.dumps(v)


def take(client, stream, n, seconds=20):
    """The next n events of a stream (fewer if the time runs out)."""
    return client.js("return xip83.take(%s, %d, %d);" % (q(stream), n, int(seconds * 1000)), seconds + 30)


def take_until(client, stream, pred, seconds=20, what="an event"):
    """Events up to and with the first that pred accepts."""
    out = []
    t0 = time.monotonic()
    while True:
        left = seconds - (time.monotonic() - t0)
        check(left > 0, "no %s within %ss: %s" % (what, seconds, out[-10:]))
        got = take(client, stream, 1, left)
        check(got, "no %s within %ss: %s" % (what, seconds, out[-10:]))
        out += got
        if pred(got[0]):
            return out


def free_port():
    """A loopback port free now (for a gateway started again on the same one)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def gateway_at(port, *args):
    """A gateway on 127.0.0.1:port against the test database."""
    dsn = "dbname=" + os.environ.get("PGDATABASE", "xip83_libpq")
    return Server("--dsn", dsn, "--listen", "127.0.0.1:%d" % port, *args, program=GATEWAY)


def metrics(g):
    """The gateway's --metrics page as {name{labels}: value}."""
    text = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % g.ports["metrics"], timeout=10).read().decode()
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            k, v = line.rsplit(" ", 1)
            out[k] = float(v)
    return out


def open_streams(g, path):
    return metrics(g).get('xip83_gateway_streams{method="%s"}' % path, 0)


def wait_for(cond, seconds, what):
    t0 = time.monotonic()
    while not cond():
        check(time.monotonic() - t0 < seconds, "%s: not within %ss" % (what, seconds))
        time.sleep(0.05)


def spki_hash(cert):
    """The base64 SHA-256 of a certificate's public key (Chromium's
    --ignore-certificate-errors-spki-list form)."""
    pub = subprocess.run(["openssl", "x509", "-in", cert, "-noout", "-pubkey"], check=True,
                         capture_output=True, timeout=30).stdout
    der = subprocess.run(["openssl", "pkey", "-pubin", "-outform", "der"], input=pub, check=True,
                         capture_output=True, timeout=30).stdout
    dig = subprocess.run(["openssl", "dgst", "-sha256", "-binary"], input=der, check=True,
                         capture_output=True, timeout=30).stdout
    return base64.b64encode(dig).decode()


def _stop(proc, timeout):
    if proc.poll() is None:
        try:
            proc.stdin.close()
            proc.wait(timeout)
        except (OSError, subprocess.TimeoutExpired):
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)    # what is left of it, Chromium's processes too
    except ProcessLookupError:
        pass
    proc.wait()


def cleanup():
    for p in _procs:
        _stop(p, 5)
    for d in _dirs:
        shutil.rmtree(d, ignore_errors=True)


def run(test):
    """grpctest.run, the browser and the built client cleaned up after."""
    import grpctest

    def both():
        try:
            test()
        finally:
            cleanup()
    grpctest.run(both)



# ------------------------------------------------------------------ scenarios
# Shared by the Node and the browser tests: the same calls, one client.

def group_stream(client, base, sid):
    """SubscribeGroupMessages on client: headers (subscribed: true) before
    the first message, the rows above the cursor, then live rows written
    now, each exactly once; the stream is left open (its id sid)."""
    u = os.urandom(4).hex().encode()
    group = b"G" + u
    ids = [put_group(group, b"g%d" % i + u) for i in range(3)]
    other = b"O" + u
    client.js("xip83.grpcWeb(xip83.transport(%s), %s, 'group', [[%s, %d]]);"
              % (q(base), q(sid), q(group.hex()), ids[0]))
    got = take_until(client, sid, lambda e: e["type"] != "headers" and e["type"] != "trailers", what="a message")
    check(got[0]["type"] == "headers", "the headers before the first message: %s" % got)
    check(got[0]["subscribed"] == "true", "subscribed: true in the headers: %s" % got[0])
    got = got[1:] + take(client, sid, 1)
    check([(e["type"], e.get("id")) for e in got] == [("message", ids[1]), ("message", ids[2])],
          "the rows above the cursor, in order: %s" % got)
    check(all(e["group"] == group.hex() for e in got), "the group's rows only: %s" % got)
    live = []
    for i in range(3):
        put_group(other, b"o%d" % i + u)
        live.append(put_group(group, b"live%d" % i + u))
    got = take(client, sid, 3)
    check([e.get("id") for e in got] == live, "the live rows once, in order: %s (written %s)" % (got, live))
    check(take(client, sid, 1, 0.5) == [], "nothing more")
    return group


def topics_stream(client, base, sid):
    """SubscribeTopics on client: headers, STARTED, the envelopes above the
    cursor, CATCHUP_COMPLETE, then live envelopes written now, each exactly
    once; the stream is left open."""
    u = os.urandom(4).hex().encode()
    topic = b"\x01T" + u
    node = 1000 + int.from_bytes(os.urandom(2), "big")    # positions unique to this run
    for seq in range(1, 4):
        put_envelope(node, seq, topic)
    put_envelope(node + 1, 1, b"\x01X" + u)
    client.js("xip83.grpcWeb(xip83.transport(%s), %s, 'topics', [[%s, {%d: 1}]]);"
              % (q(base), q(sid), q(topic.hex()), node))
    got = take_until(client, sid, lambda e: e["type"] == "status" and e["status"] == 2, what="CATCHUP_COMPLETE")
    check(got[0]["type"] == "headers" and got[0]["subscribed"] == "true", "headers first: %s" % got)
    check(got[1] == dict(got[1], type="status", status=1), "STARTED after the headers: %s" % got)
    rows = [tuple(r) for e in got[2:-1] for r in e.get("rows", [])]
    check(all(e["type"] == "envelopes" for e in got[2:-1]), "envelopes only in the catch-up: %s" % got)
    check(rows == [(node, 2, topic.hex()), (node, 3, topic.hex())], "the catch-up above the cursor: %s" % rows)
    put_envelope(node + 1, 2, b"\x01X" + u)
    for seq in range(4, 7):
        put_envelope(node, seq, topic)
    rows = []
    while len(rows) < 3:
        got = take(client, sid, 1)
        check(got and got[0]["type"] == "envelopes", "live envelopes: %s (so far %s)" % (got, rows))
        rows += [tuple(r) for r in got[0]["rows"]]
    check(rows == [(node, s, topic.hex()) for s in (4, 5, 6)], "the live envelopes once, in order: %s" % rows)
    check(take(client, sid, 1, 0.5) == [], "nothing more")
    return topic
