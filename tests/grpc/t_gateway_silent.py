"""xip83-gateway keeps serving while its database accepts connections and
never answers them (a hung server or a black-holed network, not a refusing
one): with the server stopped and a listener in its place that accepts and
stays silent, the feed's reconnects and the pool's reconnect for a new wave
must not hold the event loop. Pings on a stream are answered within
PONG_LIMIT throughout, past the connect timeout (10 s), whose end fails an
attempt and starts the next; the listener must have been reached by both,
or the test proved nothing. Once the real server is back, the same stream
gets its wave and then a live row exactly once."""
import os
import socket
import subprocess
import threading
import time

from gatewaytest import Stream, gateway, put_group
from grpctest import Failure, check, run

U = os.urandom(4).hex().encode()
SILENT_S = 14
PONG_LIMIT = 1.0


class Silent:
    """Accepts connections where the server listens and never answers them."""

    def __init__(self):
        host = os.environ.get("PGHOST", "/tmp")
        port = int(os.environ.get("PGPORT", "5432"))
        if host.startswith("/"):
            self.path = os.path.join(host, ".s.PGSQL.%d" % port)
            if os.path.exists(self.path):
                os.unlink(self.path)
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.bind(self.path)
        else:
            self.path = None
            self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self.sock.bind((host, port))
        self.sock.listen(64)
        self.sock.settimeout(0.2)
        self.held = []
        self.stop = False
        self.thread = threading.Thread(target=self.accept, daemon=True)
        self.thread.start()

    def accept(self):
        while not self.stop:
            try:
                conn, _ = self.sock.accept()
                self.held.append(conn)
            except socket.timeout:
                pass

    def close(self):
        self.stop = True
        self.thread.join()
        for c in self.held:
            c.close()
        self.sock.close()
        if self.path and os.path.exists(self.path):
            os.unlink(self.path)


def pgctl(pg, *args):
    r = subprocess.run([pg, *args], capture_output=True, text=True, timeout=120)
    check(r.returncode == 0, "pg_ctl %s: %s" % (" ".join(args), r.stdout + r.stderr))


def test():
    pg = os.environ.get("XIP83_PGCTL")
    check(pg, "XIP83_PGCTL (a pg_ctl wrapper) is needed")
    g = gateway("--pool", "2")
    silent = None
    try:
        ch = g.channel()
        a = Stream(ch)
        b = Stream(ch)
        for s in (a, b):
            check(s.next().WhichOneof("response") == "started", "Started")
        t = b"S" + U
        first = put_group(t, b"s0" + U)
        a.add_group_topic(1, t, [first])

        pgctl(pg, "stop", "-m", "fast")
        silent = Silent()
        t0 = time.monotonic()
        worst = 0.0
        nonce = 0
        asked = False
        while time.monotonic() - t0 < SILENT_S:
            nonce += 1
            worst = max(worst, a.pong(nonce, PONG_LIMIT, "while the server was silent"))
            if not asked and time.monotonic() - t0 > 1:
                # a wave for B: the pool reconnects to the silent server
                b.mutate(1, adds=[(b"\x00" + t, 0)])
                asked = True
            time.sleep(0.25)
        reached = len(silent.held)
        silent.close()
        silent = None
        pgctl(pg, "start")
        print("server silent %d s: %d pongs, the slowest %.3f s; %d connections reached the silent"
              " listener" % (SILENT_S, nonce, worst, reached))
        # the feed (twice: its first attempt timed out) and the pool's reconnect
        check(reached >= 3, "only %d connections reached the silent listener" % reached)

        # B's wave either waited for the server or ended UNAVAILABLE (the reconnect timed out)
        try:
            rows, _, _ = b.wave(1, timeout=60)
            check(rows == [("g", first)], "B's wave after the silence: %s" % rows)
        except Failure:
            err = b.error
            check(err is not None and err.code().name == "UNAVAILABLE", "B ended with %s" % err)

        # the same stream A: a new topic's wave, then a live row once
        t2 = b"T" + U
        before = put_group(t2, b"t0" + U)
        deadline = time.monotonic() + 60
        while True:
            a.mutate(2, adds=[(b"\x00" + t2, 0)])
            rows, _, _ = a.wave(2)
            if rows == [("g", before)] or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        check(rows == [("g", before)], "the wave after the silence: %s" % rows)
        live = put_group(t2, b"t1" + U)
        check(a.live_rows(1) == [("g", live)], "the live row once")
        a.quiet(1)
        a.close()
        b.close()
    finally:
        if silent:
            silent.close()
        if subprocess.run(["pg_isready", "-q"]).returncode != 0:
            subprocess.run([pg, "start"], capture_output=True, timeout=120)
    check(g.stop() == 0, "exit 0")


run(test)
