"""A hot standby of the test's server for gateway tests: built with
pg_basebackup as the server's user (its own data directory and socket under
the run directory, removed by remove_standby whatever happens), what was
written, and clients with a v3 and a d14n stream that check every row
arrived once."""
import os
import re
import shlex
import subprocess
import time

from gatewaytest import GATEWAY, Stream, msg, psql, put_envelope, put_group
from grpctest import Failure, Server, check

U = os.urandom(4).hex().encode()
DB = os.environ.get("PGDATABASE", "xip83_libpq")
PRIMARY = "dbname=%s" % DB
NODE = 100
T = b"S" + U             # the group topic
E = b"\x01SB" + U        # the envelope topic


def as_server(*cmd):
    """Runs a command as the server's user (the owner of the run directory)."""
    if os.getuid() == 0:
        cmd = ("runuser", "-u", SERVER_USER, "--") + cmd
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, **SERVER_ENV))
    if r.returncode != 0:
        raise Failure("%s: %s%s" % (" ".join(cmd[:6]), r.stdout, r.stderr))
    return r.stdout


PGCTL = os.environ.get("XIP83_PGCTL") or ""
RUN = os.path.dirname(PGCTL)
SERVER_USER = "postgres"
BINDIR = ""
SERVER_ENV = {}
if PGCTL:
    with open(PGCTL) as f:
        wrapper = f.read()
    # what the wrapper exports for the server (a sanitizer build's runtime) the standby needs too
    for line in wrapper.splitlines():
        if line.startswith("export "):
            SERVER_ENV.update(kv.split("=", 1) for kv in shlex.split(line[len("export "):]))
    BINDIR = os.path.dirname(re.search(r'"([^"]*)/pg_ctl"', wrapper).group(1) + "/pg_ctl")
    SERVER_USER = re.search(r"SERVER_USER=(\S+)", wrapper).group(1)
SB_DATA = os.path.join(RUN, "gwstandby")
SB_SOCK = os.path.join(RUN, "gwstandby_sock")
SB_PORT = 5499
STANDBY = "host=%s port=%d dbname=%s" % (SB_SOCK, SB_PORT, DB)


def sql(dsn, query):
    r = subprocess.run(["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-d", dsn, "-c", query],
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise Failure("psql on %s: %s\n%s" % (dsn, query[:200], r.stderr))
    return r.stdout.strip()


def sb_ctl(*args):
    return as_server(os.path.join(BINDIR, "pg_ctl"), "-D", SB_DATA, "-l", SB_DATA + ".log",
                     "-w", "-t", "60", *args)


def build_standby():
    remove_standby()
    os.makedirs(SB_SOCK)
    if os.getuid() == 0:
        subprocess.run(["chown", SERVER_USER, SB_SOCK], check=True)
    as_server(os.path.join(BINDIR, "pg_basebackup"), "-h", os.environ["PGHOST"],
              "-p", os.environ.get("PGPORT", "5432"), "-U", "postgres", "-D", SB_DATA,
              "-R", "-X", "stream", "-c", "fast")
    with open(os.path.join(SB_DATA, "postgresql.auto.conf"), "a") as f:
        f.write("port = %d\nunix_socket_directories = '%s'\nhot_standby = on\n"
                "hot_standby_feedback = on\nmax_standby_streaming_delay = -1\n" % (SB_PORT, SB_SOCK))
    sb_ctl("start")


def remove_standby():
    if os.path.exists(os.path.join(SB_DATA, "postmaster.pid")):
        subprocess.run((("runuser", "-u", SERVER_USER, "--") if os.getuid() == 0 else ())
                       + (os.path.join(BINDIR, "pg_ctl"), "-D", SB_DATA, "-m", "immediate", "-w", "stop"),
                       capture_output=True, timeout=120)
    subprocess.run(["rm", "-rf", SB_DATA, SB_SOCK, SB_DATA + ".log"], check=True)


def until(what, cond, timeout=60):
    deadline = time.time() + timeout
    while not cond():
        if time.time() > deadline:
            raise Failure("timed out: " + what)
        time.sleep(0.05)


def caught_up():
    """Waits until the standby received and replayed everything the primary wrote."""
    lsn = sql(PRIMARY, "SELECT pg_current_wal_lsn()")
    until("the standby replays %s" % lsn, lambda: sql(
        STANDBY, "SELECT pg_last_wal_replay_lsn() >= '%s'" % lsn) == "t")


def pause():
    sql(STANDBY, "SELECT pg_wal_replay_pause()")
    until("replay pauses", lambda: sql(STANDBY, "SELECT pg_get_wal_replay_pause_state()") == "paused")


def resume():
    sql(STANDBY, "SELECT pg_wal_replay_resume()")


class Writes:
    """What was written: group ids, envelope sequence ids."""

    def __init__(self):
        self.groups = []
        self.seqs = []
        self.next_seq = 1

    def write(self, label, n=3):
        for i in range(n):
            self.groups.append(put_group(T, b"%s%d" % (label, i) + U))
            put_envelope(NODE, self.next_seq, E)
            self.seqs.append(self.next_seq)
            self.next_seq += 1

    def hole(self):
        """Leaves a group id and a sequence id behind: rows written above pass them."""
        gid = int(psql("SELECT nextval('xip83.group_messages_id_seq');"))
        self.next_seq += 1
        return gid, self.next_seq - 1

    def fill(self, hole):
        """Late writes: rows stored in a hole the horizons passed."""
        gid, seq = hole
        psql("INSERT INTO xip83.group_messages (id, group_id, data, group_id_data_hash)"
             " VALUES (:'a1'::bigint, decode(:'a2', 'hex'), decode(:'a3', 'hex'),"
             " sha256(decode(:'a3', 'hex')));", gid, T.hex(), (b"fill%d" % gid + U).hex())
        put_envelope(NODE, seq, E)
        self.groups.append(gid)
        self.seqs.append(seq)


class Late:
    """A writer that draws a group id and commits it after rows above it."""

    def __init__(self, label):
        self.data = label + U
        self.w = subprocess.Popen(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1"], stdin=subprocess.PIPE,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.w.stdin.write("BEGIN; INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash)"
                           " VALUES (decode('%s', 'hex'), decode('%s', 'hex'),"
                           " sha256(decode('%s', 'hex') || decode('%s', 'hex')));\n"
                           % (T.hex(), self.data.hex(), T.hex(), self.data.hex()))
        self.w.stdin.flush()
        time.sleep(1)

    def commit(self, writes):
        self.w.stdin.write("COMMIT;\n")
        self.w.stdin.close()
        check(self.w.wait(timeout=60) == 0, "the late writer: %s" % self.w.stderr.read())
        lid = int(sql(PRIMARY, "SELECT id FROM xip83.group_messages WHERE data = '\\x%s'" % self.data.hex()))
        check(lid < max(writes.groups), "the late row drew a lower id than rows committed before it")
        writes.groups.append(lid)


class Client:
    """A v3 and a d14n stream on one gateway, every row each received."""

    def __init__(self, g, mid):
        ch = g.channel()
        # the calls outlast the test: a restart and a promotion come before their end
        self.v3 = Stream(ch, timeout=900)
        self.d14n = Stream(ch, d14n=True, timeout=900)
        for s in (self.v3, self.d14n):
            s.next()  # Started
        self.got = {self.v3: [], self.d14n: []}
        self.v3.mutate(mid, adds=[(b"\x00" + T, 0)])
        self.d14n.mutate(mid, adds=[(E, {NODE: 0})])
        self.mid = mid
        self.done = {self.v3: False, self.d14n: False}

    def drain(self, s, seconds):
        """Everything s sends for seconds (rows of waves and live)."""
        deadline = time.time() + seconds
        while time.time() < deadline:
            try:
                r = s.q.get(timeout=max(0.01, deadline - time.time()))
            except Exception:
                return
            check(r is not None, "the stream ended: %s" % (s.error and s.error.details()))
            kind = r.WhichOneof("response")
            if kind == "catchup_complete" and r.catchup_complete.mutate_id == self.mid:
                self.done[s] = True
            elif kind in ("messages", "envelopes"):
                self.got[s] += s.rows(r)
            elif kind == "ping":
                # the test outlasts a keepalive interval
                s.send(pong=msg(s.pkg + "Pong", nonce=r.ping.nonce))

    def want(self, writes, what, timeout=60):
        """Every written row arrived exactly once (checked until timeout, then a moment more)."""
        groups = sorted(("g", i) for i in writes.groups)
        envs = sorted((NODE, q) for q in writes.seqs)
        deadline = time.time() + timeout
        for s, expect in ((self.v3, groups), (self.d14n, envs)):
            while sorted(self.got[s]) != expect and time.time() < deadline:
                if len(self.got[s]) > len(expect):
                    break
                self.drain(s, 0.2)
            self.drain(s, 0.3)
            check(self.done[s], "%s: CatchupComplete" % what)
            check(sorted(self.got[s]) == expect, "%s, %s: every row once: got %s, want %s"
                  % (what, "d14n" if s.d14n else "v3", sorted(self.got[s]), expect))

    def quiet(self, writes, what, seconds=1.5):
        """Nothing beyond writes arrives for seconds."""
        for s in (self.v3, self.d14n):
            self.drain(s, seconds / 2)
        check(len(self.got[self.v3]) <= len(writes.groups) and len(self.got[self.d14n]) <= len(writes.seqs),
              "%s: rows arrived the standby has not replayed" % what)


def gw(*args):
    return Server("--listen", "127.0.0.1:0", "--pool", "2", *args, program=GATEWAY)


def learned(top):
    """The standby's group horizon reached top; until its first full record
    it refuses with 55000 (not replayed yet), which only means not yet."""
    try:
        return sql(STANDBY, "SELECT xip83.group_horizon() >= %d" % top) == "t"
    except Failure as e:
        if "has not replayed the primary's xip83 horizons" in str(e):
            return False
        raise


def on_standby(fn, *args):
    """Runs fn with psql (gatewaytest's writers) pointed at the standby."""
    saved = os.environ["PGHOST"], os.environ.get("PGPORT", "5432")
    os.environ["PGHOST"], os.environ["PGPORT"] = SB_SOCK, str(SB_PORT)
    try:
        return fn(*args)
    finally:
        os.environ["PGHOST"], os.environ["PGPORT"] = saved
