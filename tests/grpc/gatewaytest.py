"""Shared by tests/grpc/t_gateway_*.py: runs build/xip83-gateway against the
test database (PG* environment, a fresh database per test from
tests/libpq/run.sh), builds the message classes from proto/ (protoc
--descriptor_set_out and python3-protobuf, no generated code), writes rows
with psql, and reads streams with grpcio."""
import os
import subprocess
import tempfile
import threading
import time
import queue
import urllib.request

import grpc
import h2.settings
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from grpctest import Failure, RawH2, Requests, Server, TOP, check

GATEWAY = os.environ.get("XIP83_GATEWAY") or os.path.join(TOP, "build/xip83-gateway")
V3_SUBSCRIBE = "/xmtp.mls.api.v1.MlsApi/Subscribe"
D14N_SUBSCRIBE = "/xmtp.xmtpv4.message_api.QueryApi/Subscribe"
GROUP_MESSAGES = "/xmtp.mls.api.v1.MlsApi/SubscribeGroupMessages"
WELCOME_MESSAGES = "/xmtp.mls.api.v1.MlsApi/SubscribeWelcomeMessages"
TOPICS = "/xmtp.xmtpv4.message_api.QueryApi/SubscribeTopics"


def _pool():
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "set.pb")
        subprocess.run(["protoc", "--proto_path=" + os.path.join(TOP, "proto"), "--include_imports",
                        "--descriptor_set_out=" + out, "xip83/mls_api.proto",
                        "xip83/d14n_message_api.proto"], check=True, timeout=60)
        fds = descriptor_pb2.FileDescriptorSet()
        with open(out, "rb") as f:
            fds.ParseFromString(f.read())
    pool = descriptor_pool.DescriptorPool()
    for f in fds.file:
        pool.Add(f)
    return pool


POOL = _pool()
_FACTORY = message_factory.MessageFactory(POOL)
V3 = "xmtp.mls.api.v1."
D14N = "xmtp.xmtpv4.message_api."
ENV = "xmtp.xmtpv4.envelopes."


def cls(name):
    """A message class by full name, nested ones included ("pkg.Outer.Inner")."""
    d = POOL.FindMessageTypeByName(name)
    if hasattr(message_factory, "GetMessageClass"):
        return message_factory.GetMessageClass(d)
    return _FACTORY.GetPrototype(d)


class _Classes:
    def __getitem__(self, name):
        return cls(name)


M = _Classes()


def msg(name, **fields):
    return cls(name)(**fields)


# ------------------------------------------------------------------ database

def psql(sql, *args):
    """Runs sql (psql variables :'a1'... for args) in the test database; its rows as text."""
    cmd = ["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1"]
    for i, a in enumerate(args, 1):
        cmd += ["-v", "a%d=%s" % (i, a)]
    r = subprocess.run(cmd, input=sql, capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise Failure("psql: %s\n%s" % (sql[:200], r.stderr))
    return r.stdout.strip()


def put_group(group_id, data):
    """Stores a group message (group_id, data: bytes); its id."""
    return int(psql("INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash)"
                    " VALUES (decode(:'a1', 'hex'), decode(:'a2', 'hex'),"
                    " sha256(decode(:'a1', 'hex') || decode(:'a2', 'hex'))) RETURNING id;",
                    group_id.hex(), data.hex()).splitlines()[-1])


def put_welcome(key, data):
    return int(psql("INSERT INTO xip83.welcome_messages (installation_key, data, installation_key_data_hash)"
                    " VALUES (decode(:'a1', 'hex'), decode(:'a2', 'hex'),"
                    " sha256(decode(:'a1', 'hex') || decode(:'a2', 'hex'))) RETURNING id;",
                    key.hex(), data.hex()).splitlines()[-1])


def envelope(node, seq, topic):
    aad = msg(ENV + "AuthenticatedData", target_topic=topic)
    ce = msg(ENV + "ClientEnvelope", aad=aad)
    pe = msg(ENV + "PayerEnvelope", unsigned_client_envelope=ce.SerializeToString(), target_originator=node)
    u = msg(ENV + "UnsignedOriginatorEnvelope", originator_node_id=node, originator_sequence_id=seq,
            payer_envelope_bytes=pe.SerializeToString())
    return msg(ENV + "OriginatorEnvelope", unsigned_originator_envelope=u.SerializeToString())


def put_envelope(node, seq, topic):
    psql("INSERT INTO xip83.envelopes (originator_node_id, originator_sequence_id, topic,"
         " originator_envelope) VALUES (:'a1'::int, :'a2'::bigint, decode(:'a3', 'hex'),"
         " decode(:'a4', 'hex'));", node, seq, topic.hex(), envelope(node, seq, topic).SerializeToString().hex())


def envelope_position(env):
    """(originator, sequence) of an OriginatorEnvelope message."""
    u = M[ENV + "UnsignedOriginatorEnvelope"].FromString(env.unsigned_originator_envelope)
    return u.originator_node_id, u.originator_sequence_id


def db_connections():
    """Client backends on the test database, this query's own excluded."""
    return int(psql("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                    " AND backend_type = 'client backend' AND pid <> pg_backend_pid();"))


# ------------------------------------------------------------------ the gateway

def metrics(g):
    """The gateway's --metrics page as {"name{labels}": value}."""
    text = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % g.ports["metrics"], timeout=10).read().decode()
    return {k: float(v) for k, _, v in (line.rpartition(" ") for line in text.splitlines()
                                        if line and not line.startswith("#"))}


def grpc_message(m):
    """m as one gRPC length-prefixed message."""
    body = m.SerializeToString()
    return b"\x00" + len(body).to_bytes(4, "big") + body


def mutate(mutate_id, topics):
    """A v3 Subscribe request (gRPC-framed) adding each topic (group ids, kind 0) from the start."""
    sub = V3 + "SubscribeRequest.V1.Mutate.Subscription"
    m = msg(V3 + "SubscribeRequest.V1.Mutate", mutate_id=mutate_id,
            adds=[msg(sub, topic=b"\x00" + t, id_cursor=0) for t in topics])
    return grpc_message(msg(V3 + "SubscribeRequest", v1=msg(V3 + "SubscribeRequest.V1", mutate=m)))


class Stalled(RawH2):
    """A client that grants no stream any window: nothing it is sent leaves."""

    def __init__(self, port):
        RawH2.__init__(self, port)
        self.conn.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 0})
        self.flush()

    def stream(self, data):
        """A Subscribe stream whose requests (bytes of gRPC messages) go in one DATA frame."""
        sid = self.request(V3_SUBSCRIBE)
        # python3-h2 honours the server's window: the frame goes out as it is
        self.conn.send_data(sid, data)
        self.flush()
        return sid


def gateway(*args):
    """A gateway on a free port of 127.0.0.1 against the test database."""
    dsn = "dbname=" + os.environ.get("PGDATABASE", "xip83_libpq")
    return Server("--dsn", dsn, "--listen", "127.0.0.1:0", *args, program=GATEWAY)


class Responses:
    """A call's responses, read on a thread into a queue (None: the end)."""

    def __init__(self, call, unwrap=lambda r: r):
        self.call = call
        self.q = queue.Queue()
        self.error = None
        # time.monotonic() of each response as it came, and of the last one
        # next() returned (in step while every response is read by next())
        self.arrivals = queue.Queue()
        self.arrived = None

        def read():
            try:
                for r in call:
                    self.arrivals.put(time.monotonic())
                    self.q.put(unwrap(r))
            except grpc.RpcError as e:
                self.error = e
            self.q.put(None)
        threading.Thread(target=read, daemon=True).start()

    def next(self, timeout=30):
        try:
            r = self.q.get(timeout=timeout)
        except queue.Empty:
            raise Failure("no response within %ss" % timeout)
        check(r is not None, "the call ended: %s" % (self.error and "%s %s" % (self.error.code(), self.error.details()),))
        self.arrived = self.arrivals.get()
        return r

    def end(self, timeout=30):
        """The call's end: None for OK, else the RpcError."""
        while True:
            try:
                r = self.q.get(timeout=timeout)
            except queue.Empty:
                raise Failure("the call did not end within %ss" % timeout)
            if r is None:
                return self.error


class Reader(Responses):
    """A server-streaming call."""

    def __init__(self, ch, path, request, response, timeout=120):
        Responses.__init__(self, ch.unary_stream(path, request_serializer=lambda m: m.SerializeToString(),
                                                 response_deserializer=M[response].FromString)(
            request, timeout=timeout))

    def take(self, n):
        return [self.next() for _ in range(n)]

    def quiet(self, seconds):
        try:
            r = self.q.get(timeout=seconds)
            raise Failure("expected nothing, got %s" % r)
        except queue.Empty:
            pass


class Stream(Responses):
    """A bidirectional Subscribe call of either binding."""

    def __init__(self, channel, d14n=False, timeout=120):
        self.d14n = d14n
        self.pkg = D14N if d14n else V3
        self.reqs = Requests()
        path = D14N_SUBSCRIBE if d14n else V3_SUBSCRIBE
        Responses.__init__(self, channel.stream_stream(
            path, request_serializer=lambda m: m.SerializeToString(),
            response_deserializer=M[self.pkg + "SubscribeResponse"].FromString)(self.reqs, timeout=timeout),
            lambda r: r.v1)

    def quiet(self, seconds):
        """Nothing arrives for seconds (Pings aside)."""
        try:
            while True:
                r = self.q.get(timeout=seconds)
                if r is None or r.WhichOneof("response") != "ping":
                    raise Failure("expected nothing, got %s" % r)
        except queue.Empty:
            return

    def mutate(self, mutate_id=0, adds=(), removes=(), history_only=False):
        """adds: (topic, cursor): cursor is an id (v3) or {originator: sequence} (d14n)."""
        sub = self.pkg + "SubscribeRequest.V1.Mutate.Subscription"
        subs = []
        for topic, cursor in adds:
            if self.d14n:
                subs.append(msg(sub, topic=topic, last_seen=msg(ENV + "Cursor", node_id_to_sequence_id=cursor or {})))
            else:
                subs.append(msg(sub, topic=topic, id_cursor=cursor or 0))
        m = msg(self.pkg + "SubscribeRequest.V1.Mutate", adds=subs, removes=list(removes),
                history_only=history_only, mutate_id=mutate_id)
        self.reqs.put(msg(self.pkg + "SubscribeRequest", v1=msg(self.pkg + "SubscribeRequest.V1", mutate=m)))

    def add_group_topic(self, mutate_id, topic, owed):
        """Adds a v3 group topic from cursor 0; its wave must hold exactly the ids owed."""
        self.mutate(mutate_id, adds=[(b"\x00" + topic, 0)])
        rows, _, _ = self.wave(mutate_id)
        check(rows == [("g", i) for i in owed], "the wave of %s: %s" % (topic, rows))

    def send(self, **v1):
        self.reqs.put(msg(self.pkg + "SubscribeRequest", v1=msg(self.pkg + "SubscribeRequest.V1", **v1)))

    def pong(self, nonce, limit, while_what):
        """Sends a Ping and waits for its Pong, skipping other responses: the round
        trip in seconds; a Failure if it takes longer than limit."""
        t0 = time.monotonic()
        self.send(ping=msg(self.pkg + "Ping", nonce=nonce))
        while True:
            left = limit - (time.monotonic() - t0)
            if left <= 0:
                raise Failure("no Pong within %.1f s %s (nonce %d)" % (limit, while_what, nonce))
            try:
                r = self.q.get(timeout=left)
            except queue.Empty:
                continue
            check(r is not None, "the stream ended %s: %s" % (while_what, self.error))
            if r.WhichOneof("response") == "pong":
                check(r.pong.nonce == nonce, "the pong's nonce")
                return time.monotonic() - t0

    def pongs(self, seconds, limit, while_what, every=0.25):
        """Pings every `every` s for seconds, each Pong within limit (other
        responses skipped): (Pings sent, the slowest round trip)."""
        t0 = time.monotonic()
        worst = 0.0
        n = 0
        while time.monotonic() - t0 < seconds:
            n += 1
            worst = max(worst, self.pong(n, limit, while_what))
            time.sleep(every)
        return n, worst

    def wave(self, mutate_id, timeout=30):
        """Reads up to the wave's CatchupComplete: (rows tagged mutate_id, TopicsLive topics, other rows)."""
        rows, live, other = [], [], []
        while True:
            r = self.next(timeout)
            kind = r.WhichOneof("response")
            if kind == "catchup_complete" and r.catchup_complete.mutate_id == mutate_id:
                return rows, live, other
            if kind == "topics_live":
                live += list(r.topics_live.topics)
            elif kind in ("messages", "envelopes"):
                (rows if getattr(r, kind).mutate_id == mutate_id else other).extend(self.rows(r))

    def rows(self, r):
        """The rows of a delivery frame: d14n (originator, sequence), v3 ("g"/"w", id)."""
        if self.d14n:
            return [envelope_position(e) for e in r.envelopes.envelopes]
        return [("g", m.v1.id) for m in r.messages.group_messages] + \
            [("w", m.v1.id) for m in r.messages.welcome_messages]

    def live_rows(self, n, timeout=30):
        """The next n live rows (mutate_id 0), in order."""
        out = []
        while len(out) < n:
            r = self.next(timeout)
            kind = r.WhichOneof("response")
            if kind in ("messages", "envelopes"):
                check(getattr(r, kind).mutate_id == 0, "a live row tagged %d" % getattr(r, kind).mutate_id)
                out += self.rows(r)
        check(len(out) == n, "%d live rows, not %d" % (len(out), n))
        return out

    def close(self):
        self.reqs.close()
