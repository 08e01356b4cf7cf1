/*
 * t_notify_wakeup: the notifier speaks when a writing transaction ends, not
 * at its next heartbeat. With the heartbeat at 5 s, a LISTENing connection
 * must hear a notice soon after each commit of a group message, a welcome,
 * an envelope (first write of a fresh backend each time), and a late write.
 * A reload reaches a notifier pausing a long notify interval: after a notice
 * at a 60 s interval, the interval set back to its default is followed within
 * the same two seconds.
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
	Reload(c, "ALTER SYSTEM RESET xip83.notify_heartbeat_ms");
	PQfinish(l);
	PQfinish(c);
	return tl_done("t_notify_wakeup");
}
