"""xip83-gateway under forged notices: a role with nothing but USAGE on the
schema floods xip83_live with LiveNotices claiming every horizon at its
maximum, and with garbage, while a writer holds a lower id open. A notice is
only a wake-up: the live stream must get no phantom row, must not pass the
open id (it gets it, then the later row, in id order, once each), and the
gateway must keep serving and exit 0."""
import os
import subprocess
import time

from gatewaytest import Stream, gateway, psql, put_group
from grpctest import check, run

U = os.urandom(4).hex().encode()
ROLE = "regress_gw_nobody"


def as_nobody(sql):
    env = dict(os.environ, PGUSER=ROLE)
    r = subprocess.run(["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1"], input=sql,
                       capture_output=True, text=True, timeout=120, env=env)
    check(r.returncode == 0, "psql as %s: %s" % (ROLE, r.stderr))


FORGE = """
SELECT pg_notify('xip83_live', xip83.live_notice_encode(%d, 'live', 1,
    9223372036854775807, 9223372036854775807,
    (SELECT array_agg(g) FROM generate_series(1, 300) g),
    (SELECT array_agg(9223372036854775807::bigint) FROM generate_series(1, 300) g)));
SELECT pg_notify('xip83_live', 'not base64 !!!');
SELECT pg_notify('xip83_live', '');
SELECT pg_notify('xip83_live', repeat('QUFB', 1999));
"""


def test():
    psql("DROP ROLE IF EXISTS %s; CREATE ROLE %s LOGIN;"
         " GRANT USAGE ON SCHEMA xip83 TO %s;" % (ROLE, ROLE, ROLE))
    g = gateway("--pool", "2")
    s = Stream(g.channel())
    s.next()
    t = b"F" + U
    before = put_group(t, b"before" + U)
    s.mutate(1, adds=[(b"\x00" + t, 0)])
    rows, _, _ = s.wave(1)
    check([i for _, i in rows] == [before], "the wave: %s" % rows)

    # a writer draws an id and keeps it open; a later row commits above it
    w = subprocess.Popen(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1"], stdin=subprocess.PIPE,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    w.stdin.write("BEGIN; INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash)"
                  " VALUES (decode('%s', 'hex'), decode('%s', 'hex'),"
                  " sha256(decode('%s', 'hex') || decode('%s', 'hex')));\n"
                  % (t.hex(), (b"open" + U).hex(), t.hex(), (b"open" + U).hex()))
    w.stdin.flush()
    time.sleep(1)
    later = put_group(t, b"later" + U)
    for i in range(20):
        as_nobody(FORGE % (7000 + i))
    # nothing may arrive while the lower id is open, forged horizons or not
    s.quiet(2)
    w.stdin.write("COMMIT;\n")
    w.stdin.close()
    check(w.wait(timeout=60) == 0, "the writer: %s" % w.stderr.read())
    opened = int(psql("SELECT id FROM xip83.group_messages WHERE data = decode(:'a1', 'hex');",
                      (b"open" + U).hex()))
    check(opened < later, "the open row drew the lower id (%d, %d)" % (opened, later))
    got = [i for _, i in s.live_rows(2)]
    check(got == [opened, later], "live rows in id order, once each: %s" % got)
    for i in range(5):
        as_nobody(FORGE % (8000 + i))
    s.quiet(2)
    x = put_group(t, b"x" + U)
    check(s.live_rows(1) == [("g", x)], "live after the flood")
    check(g.stop() == 0, "exit 0")
    psql("DROP OWNED BY %s; DROP ROLE %s;" % (ROLE, ROLE))


run(test)
