/*
 * t_notify_wakeup: the notifier speaks when a writing transaction ends, not
 * at its next heartbeat. With the heartbeat at 5 s, a LISTENing connection
 * must hear a notice soon after each commit of a group message, a welcome,
 * an envelope (first write of a fresh backend each time), and a late write.
 * A reload reaches a notifier pausing a long notify interval: after a notice
 * at a 60 s interval, the interval set back to its default is followed within
 * the same two seconds. A busy feed pauses longer: under a stream of
 * single-row commits a busy interval of 20 ms allows at most about one notice
 * per 20 ms, less than half of what the fixed 1 ms pause sends; and after a
 * quiet spell the pause is short again (a busy interval of 1 s would
 * otherwise hold back the second of two writes 100 ms apart).
 */
#include "testlib.h"

#include <poll.h>
#include <stdio.h>
#include <time.h>

static double
NowS(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Drops the notices received so far. */
static void
Drain(PGconn *l)
{
	PGnotify   *n;

	PQconsumeInput(l);
	while ((n = PQnotifies(l)) != NULL)
		PQfreemem(n);
}

/* Waits for the next notice: seconds since `since`, or -1 after the timeout. */
static double
NextNotice(PGconn *l, double since, double timeout)
{
	for (;;)
	{
		struct pollfd pfd = {.fd = PQsocket(l), .events = POLLIN};
		PGnotify   *n;

		PQconsumeInput(l);
		if ((n = PQnotifies(l)) != NULL)
		{
			PQfreemem(n);
			return NowS() - since;
		}
		if (NowS() - since > timeout)
			return -1;
		(void) poll(&pfd, 1, 50);
	}
}

static void
WriteAndHear(PGconn *l, const char *what, const char *sql)
{
	PGconn	   *w = tl_connect();	/* a fresh backend: its first write */
	double		t0;
	double		waited;

	Drain(l);
	t0 = NowS();
	PQclear(tl_exec(w, sql, 0, NULL));
	waited = NextNotice(l, t0, 4.0);
	TL_CHECK(waited >= 0 && waited < 2.0, "a notice follows the commit of %s (%.3f s)", what, waited);
	PQfinish(w);
}

/* A setting changed, the configuration reloaded, and a moment for the notifier to see it. */
static void
Reload(PGconn *c, const char *alter)
{
	PQclear(tl_exec(c, alter, 0, NULL));
	PQclear(tl_exec(c, "SELECT pg_reload_conf()", 0, NULL));
	tl_sleep_us(300000);
}

#define BURST_INSERT \
	"INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash)" \
	" SELECT '\\x02', d, sha256(d) FROM decode(md5(random()::text), 'hex') d"

/* The notices heard while one connection commits single-row writes for `seconds`. */
static int
NoticesDuringBurst(PGconn *l, double seconds)
{
	PGconn	   *w = tl_connect();
	int			heard = 0;
	double		t0;

	PQclear(tl_exec(w, "SET synchronous_commit = off", 0, NULL));
	Drain(l);
	t0 = NowS();
	while (NowS() - t0 < seconds)
	{
		PGnotify   *n;

		PQclear(tl_exec(w, BURST_INSERT, 0, NULL));
		PQconsumeInput(l);
		while ((n = PQnotifies(l)) != NULL)
		{
			heard++;
			PQfreemem(n);
		}
	}
	PQfinish(w);
	return heard;
}

/* A busy feed's pause grows to the busy interval, and is short again after a quiet spell. */
static void
BusyPauses(PGconn *c, PGconn *l)
{
	int			busy,
				fixed;
	double		t0,
				waited;
	PGconn	   *w;

	Reload(c, "ALTER SYSTEM SET xip83.notify_busy_interval_ms = 20");
	busy = NoticesDuringBurst(l, 1.5);
	Reload(c, "ALTER SYSTEM SET xip83.notify_busy_interval_ms = 1");
	fixed = NoticesDuringBurst(l, 1.5);
	printf("1.5 s of single-row commits: %d notices at a 20 ms busy interval, %d at 1 ms\n",
		   busy, fixed);
	TL_CHECK(busy >= 1 && busy <= 1.5 / 0.020 * 1.25 + 10,
			 "a busy feed at a 20 ms busy interval: %d notices in 1.5 s", busy);
	TL_CHECK(fixed > 2 * busy, "the fixed 1 ms pause sends more than twice as many: %d", fixed);

	Reload(c, "ALTER SYSTEM SET xip83.notify_busy_interval_ms = 1000");
	(void) NoticesDuringBurst(l, 1.0);
	tl_sleep_us(2500000);		/* the last long pause ends, a tick finds nothing */
	WriteAndHear(l, "a group message after a quiet spell", BURST_INSERT);
	w = tl_connect();
	tl_sleep_us(100000);
	Drain(l);
	t0 = NowS();
	PQclear(tl_exec(w, BURST_INSERT, 0, NULL));
	waited = NextNotice(l, t0, 4.0);
	TL_CHECK(waited >= 0 && waited < 0.5,
			 "the next write 100 ms later is heard at the short pause (%.3f s)", waited);
	PQfinish(w);
	Reload(c, "ALTER SYSTEM RESET xip83.notify_busy_interval_ms");
}

int
main(void)
{
	PGconn	   *c = tl_connect();
	PGconn	   *l = tl_connect();

	PQclear(tl_exec(c, "ALTER SYSTEM SET xip83.notify_heartbeat_ms = 5000", 0, NULL));
	PQclear(tl_exec(c, "SELECT pg_reload_conf()", 0, NULL));
	PQclear(tl_exec(l, "LISTEN xip83_live", 0, NULL));
	(void) tl_scalar(c, "SELECT xip83.group_horizon()");	/* the notifier starts */
	(void) NextNotice(l, NowS(), 6.0);
	WriteAndHear(l, "a group message",
				 "INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash)"
				 " VALUES ('\\x01', '\\x01', sha256('\\x0101'))");
	WriteAndHear(l, "a welcome",
				 "INSERT INTO xip83.welcome_messages (installation_key, data, installation_key_data_hash)"
				 " VALUES ('\\x01', '\\x01', sha256('\\x0101'))");
	WriteAndHear(l, "an envelope",
				 "INSERT INTO xip83.envelopes (originator_node_id, originator_sequence_id, topic,"
				 " originator_envelope) VALUES (1, 5, '\\x03aa', '\\x05')");
	(void) tl_scalar(c, "SELECT count(*) FROM xip83.envelope_horizons()");
	WriteAndHear(l, "a late envelope",
				 "INSERT INTO xip83.envelopes (originator_node_id, originator_sequence_id, topic,"
				 " originator_envelope) VALUES (1, 3, '\\x03aa', '\\x03')");
	Reload(c, "ALTER SYSTEM SET xip83.notify_interval_ms = 60000");
	WriteAndHear(l, "a group message before a 60 s pause",
				 "INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash)"
				 " VALUES ('\\x01', '\\x02', sha256('\\x0102'))");
	Reload(c, "ALTER SYSTEM RESET xip83.notify_interval_ms");
	WriteAndHear(l, "a group message after the interval is reset",
				 "INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash)"
				 " VALUES ('\\x01', '\\x03', sha256('\\x0103'))");
	BusyPauses(c, l);
	Reload(c, "ALTER SYSTEM RESET xip83.notify_heartbeat_ms");
	PQfinish(l);
	PQfinish(c);
	return tl_done("t_notify_wakeup");
}
