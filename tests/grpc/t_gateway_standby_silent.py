"""A fenced xip83-gateway keeps serving while its standby accepts
connections and never answers them. The "standby" is the test's server
behind a TCP proxy (a primary serves fenced reads too: a fence there waits
for nothing). The proxy then drops every connection through it and only
accepts from then on: the feed's next round finds its standby connection
gone and reconnects, the primary first, then the standby, whose connect
must not hold the event loop, nor must the pool's reconnects. Pings on a
stream are answered within PONG_LIMIT throughout, past the connect timeout
(10 s); the silent proxy must have been reached, or the test proved
nothing. Once the proxy forwards again, a live row written during the
silence and one written after it arrive exactly once."""
import os
import socket
import threading

from gatewaytest import GATEWAY, Stream, put_group
from grpctest import Server, check, run

U = os.urandom(4).hex().encode()
SILENT_S = 14
PONG_LIMIT = 1.0


class Proxy:
    """Forwards TCP connections on 127.0.0.1 to the server, or, silent,
    drops those it forwards and holds every new one unanswered."""

    def __init__(self):
        host = os.environ.get("PGHOST", "/tmp")
        port = int(os.environ.get("PGPORT", "5432"))
        self.target = ((socket.AF_UNIX, os.path.join(host, ".s.PGSQL.%d" % port)) if host.startswith("/")
                       else (socket.AF_INET, (host, port)))
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.silent = False
        self.held = []
        self.pairs = []
        self.lock = threading.Lock()
        self.stop = False
        self.thread = threading.Thread(target=self.accept, daemon=True)
        self.thread.start()

    def accept(self):
        while not self.stop:
            try:
                conn, _ = self.sock.accept()
            except socket.timeout:
                continue
            with self.lock:
                if self.silent:
                    self.held.append(conn)
                    continue
                up = socket.socket(self.target[0], socket.SOCK_STREAM)
                up.connect(self.target[1])
                self.pairs.append((conn, up))
            for a, b in ((conn, up), (up, conn)):
                threading.Thread(target=self.pump, args=(a, b), daemon=True).start()

    @staticmethod
    def pump(a, b):
        try:
            while True:
                data = a.recv(65536)
                if not data:
                    break
                b.sendall(data)
        except OSError:
            pass
        for s in (a, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def go_silent(self):
        with self.lock:
            self.silent = True
            for a, b in self.pairs:
                for s in (a, b):
                    try:
                        s.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass
            self.pairs = []

    def forward(self):
        with self.lock:
            self.silent = False
            reached = len(self.held)
            for c in self.held:
                c.close()
            self.held = []
        return reached

    def close(self):
        self.stop = True
        self.thread.join()
        self.go_silent()
        self.forward()
        self.sock.close()


def test():
    db = os.environ.get("PGDATABASE", "xip83_libpq")
    proxy = Proxy()
    g = None
    try:
        standby = "host=127.0.0.1 port=%d dbname=%s" % (proxy.port, db)
        g = Server("--dsn", "dbname=" + db, "--standby-dsn", standby, "--listen", "127.0.0.1:0",
                   "--pool", "2", program=GATEWAY)
        a = Stream(g.channel())
        check(a.next().WhichOneof("response") == "started", "Started")
        t = b"S" + U
        first = put_group(t, b"s0" + U)
        a.add_group_topic(1, t, [first])

        proxy.go_silent()
        # a notice: the feed's round finds its standby connection gone and reconnects
        during = put_group(t, b"s1" + U)
        nonce, worst = a.pongs(SILENT_S, PONG_LIMIT, "while the standby was silent")
        reached = proxy.forward()
        print("standby silent %d s: %d pongs, the slowest %.3f s; %d connections reached it"
              % (SILENT_S, nonce, worst, reached))
        check(reached >= 1, "no connection reached the silent standby")

        check(a.live_rows(1, timeout=60) == [("g", during)], "the row written during the silence, once")
        after = put_group(t, b"s2" + U)
        check(a.live_rows(1) == [("g", after)], "a row written after it, once")
        a.quiet(1)
        a.close()
    finally:
        proxy.close()
    check(g.stop() == 0, "exit 0")


run(test)
