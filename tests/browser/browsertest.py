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
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "grpc"))

from gatewaytest import GROUP_MESSAGES, TOPICS, V3_SUBSCRIBE, D14N_SUBSCRIBE, gateway  # noqa: E402
from grpctest import TOP, Failure, check  # noqa: E402

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
    return sorted(out) + [os.path.join(HERE, "package-lock.json")]


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
        f.write('<!DOCTYPE html>\n<meta charset="utf-8"><title>xip83</title>\n'
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
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True)
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
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class Browser(_JsonLines):
    """Headless Chromium driven by puppeteer-core (tests/browser/js/browser.cjs)."""

    def __init__(self, *args):
        check(os.access(CHROMIUM, os.X_OK), "no Chromium at %s (Debian's chromium; tests/driver.sh installs it)" % CHROMIUM)
        _JsonLines.__init__(self, [NODE, os.path.join(HERE, "js/browser.cjs"),
                                   json.dumps({"chromium": CHROMIUM, "args": list(args)})], "Chromium")

    def goto(self, url):
        """Loads url: its HTTP status; a Failure if it cannot be loaded."""
        return self.ask({"goto": url})


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


def cleanup():
    for p in _procs:
        if p.poll() is None:
            p.kill()
            p.wait()
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


__all__ = ["GROUP_MESSAGES", "TOPICS", "V3_SUBSCRIBE", "D14N_SUBSCRIBE", "gateway", "Failure", "check",
           "build", "StaticServer", "Browser", "NodeClient", "q", "take", "take_until", "metrics",
           "open_streams", "wait_for", "spki_hash", "run"]
