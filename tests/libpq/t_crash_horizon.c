/*
 * t_crash_horizon: horizons never go back across restarts, crash restarts
 * included, and nothing at or below a horizon handed out is lost or handed
 * out again unseen.
 *
 *  1. An aborted draw after the sequence's log_cnt ran out: its id must not
 *     become the horizon (its sequence WAL was never flushed, so a crash
 *     would hand the id out again below a horizon consumers passed).
 *  2. Asynchronous commits: rows at or below a horizon read before an
 *     immediate stop are all there after it (the horizon flushed them).
 *  3. d14n: an aborted batch does not move its originator's horizon, its
 *     retry is delivered in order, not late; a clean restart keeps the
 *     horizon even after the top envelope is deleted.
 *  4. Late writes survive restarts: a late cursor taken before a clean
 *     restart or a crash still delivers the late row (the ring is saved at
 *     shutdown, copied to WAL after every checkpoint and replayed); a cursor
 *     older than the ring remembers (it overflowed) gets SQLSTATE X83L0,
 *     never a silent gap.
 *  5. The notifier killed with SIGKILL (a crash restart of the cluster):
 *     horizons hold, a new notifier starts on the next use with a new epoch.
 */
#include "testlib.h"

#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

static void
Exec(PGconn *c, const char *sql)
{
	PQclear(tl_exec(c, sql, 0, NULL));
}

static PGconn *
Restart(PGconn *c, const char *mode)
{
	char		args[64];

	PQfinish(c);
	snprintf(args, sizeof(args), "stop -m %s", mode);
	tl_pgctl(args);
	tl_pgctl("start");
	return tl_reconnect();
}

#define INSERT_GROUP \
	"INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash)" \
	" SELECT '\\x0c', int8send(i) || int4send(%d), sha256(int8send(i) || int4send(%d))" \
	"   FROM generate_series(1, %d) i"

static void
InsertGroups(PGconn *c, int n, int tag)
{
	char		sql[512];

	snprintf(sql, sizeof(sql), INSERT_GROUP, tag, tag, n);
	Exec(c, sql);
}

/* 1: an aborted draw never becomes the horizon; a crash never re-issues an id below it. */
static PGconn *
AbortedDraw(PGconn *c)
{
	int64_t		h;
	int64_t		drawn;
	int64_t		next;
	int			tries = 0;

	/* commit single rows until the sequence has no logged-ahead values left */
	do
		InsertGroups(c, 1, tries);
	while (tl_scalar(c, "SELECT log_cnt FROM xip83.group_messages_id_seq") != 0 && ++tries < 100);
	TL_CHECK(tries < 100, "the sequence's log_cnt reached 0");
	Exec(c, "BEGIN");
	drawn = tl_scalar(c, "INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash)"
					  " VALUES ('\\x0c', '\\xdead', sha256('\\x0cdead')) RETURNING id");
	Exec(c, "ROLLBACK");
	h = tl_scalar(c, "SELECT xip83.group_horizon()");
	TL_CHECK(h < drawn, "the aborted id %lld is not the horizon (%lld)", (long long) drawn,
			 (long long) h);
	c = Restart(c, "immediate");
	TL_CHECK(tl_scalar(c, "SELECT xip83.group_horizon()") >= h, "the horizon did not go back");
	next = tl_scalar(c, "INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash)"
					 " VALUES ('\\x0c', '\\xbeef', sha256('\\x0cbeef')) RETURNING id");
	TL_CHECK(next > h, "the next id %lld lies above the horizon %lld handed out before the crash",
			 (long long) next, (long long) h);
	return c;
}

/* 2: rows at or below a horizon read before an immediate stop survive it, async commits too. */
static PGconn *
AsyncCommits(PGconn *c)
{
	int64_t		base = tl_scalar(c, "SELECT xip83.group_horizon()");
	int64_t		h;
	int64_t		count;
	char		sql[256];

	Exec(c, "SET synchronous_commit = off");
	for (int i = 0; i < 200; i++)
		InsertGroups(c, 1, 1000 + i);
	h = tl_scalar(c, "SELECT xip83.group_horizon()");
	TL_CHECK(h >= base + 200, "the horizon covers the async commits (%lld)", (long long) (h - base));
	c = Restart(c, "immediate");
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM xip83.group_messages WHERE id > %lld AND id <= %lld",
			 (long long) base, (long long) h);
	count = tl_scalar(c, sql);
	TL_CHECK(count == h - base, "every row at or below the horizon survived the crash (%lld of %lld)",
			 (long long) count, (long long) (h - base));
	TL_CHECK(tl_scalar(c, "SELECT xip83.group_horizon()") >= h, "the horizon did not go back");
	return c;
}

#define INSERT_ENVELOPES \
	"INSERT INTO xip83.envelopes (originator_node_id, originator_sequence_id, topic, originator_envelope)" \
	" SELECT 7, s, '\\x03aa', int8send(s) FROM generate_series(%d, %d) s"

/* 3: an aborted batch leaves its originator's horizon; the retry is in order; deletes do not lower it. */
static PGconn *
AbortedBatch(PGconn *c)
{
	char		sql[512];
	PGresult   *r;
	int			late = 0;

	snprintf(sql, sizeof(sql), INSERT_ENVELOPES, 1, 10);
	Exec(c, sql);
	Exec(c, "BEGIN");
	snprintf(sql, sizeof(sql), INSERT_ENVELOPES, 11, 20);
	Exec(c, sql);
	Exec(c, "ROLLBACK");
	TL_CHECK(tl_scalar(c, "SELECT horizon FROM xip83.envelope_horizons() WHERE originator_node_id = 7") == 10,
			 "the aborted batch did not move the horizon");
	c = Restart(c, "fast");
	TL_CHECK(tl_scalar(c, "SELECT horizon FROM xip83.envelope_horizons() WHERE originator_node_id = 7") == 10,
			 "a clean restart keeps the horizon at 10");
	Exec(c, sql);				/* the retry */
	r = tl_exec(c, "SELECT originator_sequence_id, late_cursor"
				"  FROM xip83.live_envelopes('{7}', '{10}', 100, xip83.late_cursor())", 0, NULL);
	TL_CHECK(PQntuples(r) == 10, "the retried batch is delivered (%d rows)", PQntuples(r));
	for (int i = 0; i < PQntuples(r); i++)
		late += tl_int(r, i, 0) != 11 + i;
	TL_CHECK(late == 0, "in order");
	PQclear(r);
	TL_CHECK(tl_scalar(c, "SELECT late_writes FROM xip83.feed_status") == 0, "and none of it is late");
	Exec(c, "DELETE FROM xip83.envelopes WHERE originator_node_id = 7 AND originator_sequence_id > 18");
	c = Restart(c, "fast");
	TL_CHECK(tl_scalar(c, "SELECT horizon FROM xip83.envelope_horizons() WHERE originator_node_id = 7") == 20,
			 "deleting the top envelopes and restarting does not lower the horizon");
	return c;
}

/* A late envelope of originator 8 at sequence seq, below one committed at seq + 2. */
static void
LateEnvelope(PGconn *c, int seq)
{
	char		sql[512];

	snprintf(sql, sizeof(sql),
			 "INSERT INTO xip83.envelopes (originator_node_id, originator_sequence_id, topic,"
			 " originator_envelope) VALUES (8, %d, '\\x03bb', '\\x01')", seq + 2);
	Exec(c, sql);
	(void) tl_scalar(c, "SELECT count(*) FROM xip83.envelope_horizons()");
	snprintf(sql, sizeof(sql),
			 "INSERT INTO xip83.envelopes (originator_node_id, originator_sequence_id, topic,"
			 " originator_envelope) VALUES (8, %d, '\\x03bb', '\\x02')", seq);
	Exec(c, sql);
}

/* The late envelopes a consumer at sequence `after` of originator 8 gets with a late cursor. */
static int
LateDelivered(PGconn *c, int after, int64_t cursor)
{
	char		sql[256];
	PGresult   *r;
	int			n;

	snprintf(sql, sizeof(sql), "SELECT 1 FROM xip83.live_envelopes('{8}', '{%d}', 100, %lld)",
			 after, (long long) cursor);
	r = tl_exec(c, sql, 0, NULL);
	n = PQntuples(r);
	PQclear(r);
	return n;
}

/* 4: late writes across restarts: kept by a clean one, replayed after a crash. */
static PGconn *
LateAcrossRestarts(PGconn *c)
{
	int64_t		cursor = tl_scalar(c, "SELECT xip83.late_cursor()");
	char		sql[256];

	LateEnvelope(c, 3);
	c = Restart(c, "immediate");
	TL_CHECK(LateDelivered(c, 5, cursor) == 1, "a late envelope is delivered after a crash (replayed from WAL)");
	c = Restart(c, "fast");
	TL_CHECK(LateDelivered(c, 5, cursor) == 1, "and after a clean restart (saved at shutdown)");

	/* a checkpoint, after which the notifier copies the ring to WAL, then a crash */
	LateEnvelope(c, 10);
	Exec(c, "CHECKPOINT");
	for (int i = 0; i < 30; i++)
	{
		(void) tl_scalar(c, "SELECT count(*) FROM xip83.envelope_horizons()");
		usleep(100000);
	}
	c = Restart(c, "immediate");
	TL_CHECK(LateDelivered(c, 12, cursor) == 2,
			 "late envelopes from before the checkpoint are delivered after the crash");

	/* more late writes than the ring holds: an older cursor is told, a current one is not */
	cursor = tl_scalar(c, "SELECT xip83.late_cursor()");
	Exec(c, "INSERT INTO xip83.envelopes (originator_node_id, originator_sequence_id, topic,"
		 " originator_envelope) VALUES (8, 100000, '\\x03bb', '\\x01')");
	(void) tl_scalar(c, "SELECT count(*) FROM xip83.envelope_horizons()");
	Exec(c, "INSERT INTO xip83.envelopes (originator_node_id, originator_sequence_id, topic,"
		 " originator_envelope) SELECT 8, s, '\\x03bb', '\\x02' FROM generate_series(20000, 24200) s");
	snprintf(sql, sizeof(sql), "SELECT 1 FROM xip83.live_envelopes('{8}', '{100000}', 100, %lld)",
			 (long long) cursor);
	TL_CHECK(tl_exec_fails(c, sql, "X83L0"), "after the ring overflowed an older late cursor gets X83L0");
	TL_CHECK(LateDelivered(c, 100000, tl_scalar(c, "SELECT xip83.late_cursor()")) == 0,
			 "a current one does not");
	return c;
}

/* 5: SIGKILL of the notifier. */
static PGconn *
NotifierKilled(PGconn *c)
{
	int64_t		h = tl_scalar(c, "SELECT xip83.group_horizon()");
	int64_t		epoch;
	int64_t		pid = 0;

	for (int i = 0; i < 100 && pid == 0; i++)
	{
		pid = tl_scalar(c, "SELECT coalesce(notifier_pid, 0) FROM xip83.feed_status");
		usleep(50000);
	}
	epoch = tl_scalar(c, "SELECT epoch FROM xip83.feed_status");
	TL_CHECK(pid > 0 && kill((pid_t) pid, SIGKILL) == 0, "SIGKILL the notifier (%lld)", (long long) pid);
	PQfinish(c);
	usleep(500000);
	c = tl_reconnect();
	TL_CHECK(tl_scalar(c, "SELECT xip83.group_horizon()") >= h, "the horizon held");
	pid = 0;
	for (int i = 0; i < 100 && pid == 0; i++)
	{
		pid = tl_scalar(c, "SELECT coalesce(notifier_pid, 0) FROM xip83.feed_status");
		usleep(50000);
	}
	TL_CHECK(pid > 0 && tl_scalar(c, "SELECT epoch FROM xip83.feed_status") > epoch,
			 "a new notifier runs, with a new epoch");
	return c;
}

int
main(void)
{
	PGconn	   *c = tl_reconnect();

	c = AbortedDraw(c);
	c = AsyncCommits(c);
	c = AbortedBatch(c);
	c = LateAcrossRestarts(c);
	c = NotifierKilled(c);
	PQfinish(c);
	return tl_done("t_crash_horizon");
}
