/*
 * t_session_d14n: xip83-session --binding d14n driven through its pipes
 * with real d14n SubscribeRequest bytes, every SubscribeResponse decoded
 * (envelopes down to their originator, sequence id and target topic).
 *
 * 1. Cursors: a vector cursor replays each originator above its own entry
 *    and every originator it omits from the start; duplicate adds coalesce
 *    line by line to the lowest (one replay, one TopicsLive, one
 *    CatchupComplete); a wave's envelopes come in (originator, sequence)
 *    order; topics of every d14n kind (0x00 to 0x05) are served.
 * 2. Mutate rules: the live lane in sequence order per originator, tagged 0,
 *    with an originator that appears only after the session started; a
 *    waveless Mutate acked at once; remove stops delivery; remove then
 *    re-add replays; re-adding a live topic at its position is a no-op, and
 *    below it on one originator replays from the new cursor; history_only
 *    replays and never goes live; a late write to a live topic arrives once;
 *    half-close finishes the wave in flight, then OK.
 * 3. Refusals: adds with mutate_id 0, a mutate_id in flight, an unknown
 *    version arm, a topic kind past 0x05.
 * 4. Keepalive: Started advertises the interval, a client Ping is answered,
 *    frames sent reset the idle timer, an idle stream is pinged, an
 *    unanswered Ping ends the stream with DEADLINE_EXCEEDED.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sessionproc.h"
#include "testlib.h"

static const char *argv0;

/* Stores envelope (node, seq) of a topic, committed at once. */
static void
Put(PGconn *conn, int32_t node, int64_t seq, const char *topic, size_t topic_len)
{
	size_t		len;
	unsigned char *env = sp_envelope(node, seq, (const unsigned char *) topic, topic_len, &len);
	char		n[16],
				s[24];
	const char *params[4] = {n, s, topic, (const char *) env};
	int			lens[4] = {0, 0, (int) topic_len, (int) len};
	int			formats[4] = {0, 0, 1, 1};
	PGresult   *res;

	snprintf(n, sizeof(n), "%d", node);
	snprintf(s, sizeof(s), "%lld", (long long) seq);
	res = PQexecParams(conn, "INSERT INTO xip83.envelopes (originator_node_id, originator_sequence_id,"
					   " topic, originator_envelope) VALUES ($1::int, $2::bigint, $3, $4)",
					   4, NULL, params, lens, formats, 0);
	if (PQresultStatus(res) != PGRES_COMMAND_OK)
		tl_fatal("insert: %s", PQerrorMessage(conn));
	PQclear(res);
	free(env);
}

/* What a stretch of the stream carried. */
typedef struct Log
{
	SpEvent		ev[256];
	int			n;
} Log;

static void
LogFree(Log *log)
{
	for (int i = 0; i < log->n; i++)
		sp_event_free(&log->ev[i]);
	log->n = 0;
}

static void
LogAdd(void *arg, SpEvent *e)
{
	Log		   *log = arg;

	if (log->n < 256)
	{
		log->ev[log->n++] = *e;
		memset(e, 0, sizeof(*e));
	}
}

/* Reads into a fresh log until CatchupComplete(mutate_id); false on timeout. */
static bool
Until(SessionProc *p, Log *log, uint64_t mutate_id)
{
	SpEvent		e;

	LogFree(log);
	while (sp_next(p, 5000, &e))
	{
		bool		done = e.type == SP_CATCHUP && e.tag == mutate_id;

		LogAdd(log, &e);
		sp_event_free(&e);
		if (done)
			return true;
	}
	return false;
}

/* Reads into a fresh log for ms milliseconds. */
static void
ReadFor(SessionProc *p, Log *log, int ms)
{
	SpEvent		e;

	LogFree(log);
	while (sp_next(p, ms, &e))
	{
		LogAdd(log, &e);
		sp_event_free(&e);
	}
}

/*
 * Envelopes of a topic (NULL: any) and originator (ANY_NODE: any) tagged tag,
 * as "node:seq node:seq ..." in arrival order.
 */
#define ANY_NODE INT32_MIN

static const char *
RowsOf(const Log *log, uint64_t tag, const char *topic, size_t topic_len, int32_t node)
{
	static char out[4096];
	size_t		n = 0;

	out[0] = '\0';
	for (int i = 0; i < log->n; i++)
		if (log->ev[i].type == SP_DELIVERY && log->ev[i].tag == tag)
			for (size_t j = 0; j < log->ev[i].n_rows; j++)
			{
				const SpRow *r = &log->ev[i].rows[j];

				if ((topic != NULL && (r->topic_len != topic_len || memcmp(r->topic, topic, topic_len)))
					|| (node != ANY_NODE && r->node != node))
					continue;
				n += (size_t) snprintf(out + n, sizeof(out) - n, "%s%d:%lld", n ? " " : "",
									   r->node, (long long) r->pos);
			}
	return out;
}

static const char *
Rows(const Log *log, uint64_t tag, const char *topic, size_t topic_len)
{
	return RowsOf(log, tag, topic, topic_len, ANY_NODE);
}

static int
Count(const Log *log, int type)
{
	int			n = 0;

	for (int i = 0; i < log->n; i++)
		n += log->ev[i].type == type;
	return n;
}

#define ROWS_EQ(log, tag, topic, want, what) \
	do { const char *got_ = Rows(log, tag, topic, sizeof(topic) - 1); \
		TL_CHECK(strcmp(got_, want) == 0, "%s: got [%s], expected [%s]", what, got_, want); } while (0)

static void
TestCursorsAndRules(PGconn *conn)
{
	static const char ta[] = "\x00" "a";	/* group messages */
	static const char tk[] = "\x03" "k";	/* key packages */
	static const char ti[] = "\x02" "i";	/* identity updates */
	static const char th[] = "\x05" "h";	/* attestations, for history_only */
	SessionProc p;
	Log		   *log = calloc(1, sizeof(Log));
	SpRow		c100_2[1] = {{.node = 100, .pos = 2}};
	SpRow		c100_1_200_1[2] = {{.node = 100, .pos = 1}, {.node = 200, .pos = 1}};
	SpRow		c200_3[1] = {{.node = 200, .pos = 3}};
	SpEvent		e;

	for (int s = 1; s <= 3; s++)
	{
		Put(conn, 100, s, ta, 2);
		Put(conn, 200, s, ta, 2);
		Put(conn, 200, s + 10, tk, 2);
	}
	Put(conn, 100, 4, ti, 2);
	Put(conn, 100, 5, th, 2);
	Put(conn, 200, 20, th, 2);
	sp_start(&p, argv0, "d14n", 30000);
	TL_CHECK(sp_next(&p, 5000, &e) && e.type == SP_STARTED && e.keepalive_ms == 30000,
			 "d14n: the first response is not Started(30000)");
	sp_event_free(&e);

	/*
	 * ta with {100: 2} and again with {100: 1, 200: 1}: coalesced line by line
	 * to {100: 1} (200 is omitted by the first, so nothing seen); tk from the
	 * start. One merged pass in (originator, sequence) order.
	 */
	{
		SpCurAdd	adds[3] = {{(const unsigned char *) ta, 2, c100_2, 1},
		{(const unsigned char *) tk, 2, NULL, 0},
		{(const unsigned char *) ta, 2, c100_1_200_1, 2}};

		sp_mutate_cur(&p, adds, 3, NULL, NULL, 0, false, 1);
		TL_CHECK(Until(&p, log, 1), "no CatchupComplete 1");
		ROWS_EQ(log, 1, ta, "100:2 100:3 200:1 200:2 200:3", "coalesced vector cursor");
		ROWS_EQ(log, 1, tk, "200:11 200:12 200:13", "topic from the start");
		TL_CHECK(strcmp(Rows(log, 1, NULL, 0), "100:2 100:3 200:1 200:2 200:3 200:11 200:12 200:13") == 0,
				 "wave 1 not in (originator, sequence) order: [%s]", Rows(log, 1, NULL, 0));
		TL_CHECK(Count(log, SP_TOPICS_LIVE) == 1 && log->ev[log->n - 2].type == SP_TOPICS_LIVE
				 && log->ev[log->n - 2].n_rows == 2 && Count(log, SP_CATCHUP) == 1,
				 "wave 1: one TopicsLive of 2 topics right before its one CatchupComplete");
	}

	/* live: per originator in order, tagged 0; a new originator 300 is followed too */
	Put(conn, 300, 1, ta, 2);
	Put(conn, 100, 6, ta, 2);
	Put(conn, 100, 7, ta, 2);
	Put(conn, 200, 30, tk, 2);
	Put(conn, 200, 31, ti, 2);	/* not subscribed */
	ReadFor(&p, log, 500);
	/* the live lane orders each originator, not originators among themselves */
	TL_CHECK(strcmp(RowsOf(log, 0, ta, 2, 100), "100:6 100:7") == 0
			 && strcmp(RowsOf(log, 0, ta, 2, 300), "300:1") == 0
			 && strlen(Rows(log, 0, ta, 2)) == strlen("100:6 100:7 300:1"),
			 "live lane of ta: [%s]", Rows(log, 0, ta, 2));
	ROWS_EQ(log, 0, tk, "200:30", "live lane of tk");
	TL_CHECK(strstr(Rows(log, 0, NULL, 0), "200:31") == NULL, "an unsubscribed topic went live");

	/* a waveless remove is acked at once and stops delivery */
	{
		const unsigned char *rm[1] = {(const unsigned char *) tk};
		size_t		rm_len[1] = {2};

		sp_mutate_cur(&p, NULL, 0, rm, rm_len, 1, false, 0);
		TL_CHECK(Until(&p, log, 0) && log->n == 1, "remove-only Mutate: %d responses before its CatchupComplete",
				 log->n - 1);
		Put(conn, 200, 32, tk, 2);
		Put(conn, 100, 8, ta, 2);
		ReadFor(&p, log, 500);
		ROWS_EQ(log, 0, tk, "", "removed topic");
		ROWS_EQ(log, 0, ta, "100:8", "live topic after another's remove");

		/* remove then re-add (one Mutate): history again, past {200: 3} */
		{
			SpCurAdd	add = {(const unsigned char *) tk, 2, c200_3, 1};

			sp_mutate_cur(&p, &add, 1, rm, rm_len, 1, false, 2);
			TL_CHECK(Until(&p, log, 2), "no CatchupComplete 2");
			ROWS_EQ(log, 2, tk, "200:11 200:12 200:13 200:30 200:32", "remove + re-add replays");
		}
	}

	/* re-adding a live topic at its position: no-op; below it on one originator: replays from there */
	{
		SpRow		at[3] = {{.node = 100, .pos = 8}, {.node = 200, .pos = 3}, {.node = 300, .pos = 1}};
		SpCurAdd	add = {(const unsigned char *) ta, 2, at, 3};

		sp_mutate_cur(&p, &add, 1, NULL, NULL, 0, false, 3);
		TL_CHECK(Until(&p, log, 3) && log->n == 1, "no-op re-add: %d responses before CatchupComplete 3",
				 log->n - 1);
		at[0].pos = 6;
		sp_mutate_cur(&p, &add, 1, NULL, NULL, 0, false, 4);
		TL_CHECK(Until(&p, log, 4), "no CatchupComplete 4");
		ROWS_EQ(log, 4, ta, "100:7 100:8", "re-add below one originator's position");
	}

	/* a late write to a live topic (below the horizon the feed passed) arrives once */
	{
		int64_t		late_before = tl_scalar(conn, "SELECT late_writes FROM xip83.feed_status()");

		Put(conn, 100, 50, ta, 2);
		ReadFor(&p, log, 400);
		ROWS_EQ(log, 0, ta, "100:50", "live before the late write");
		Put(conn, 100, 40, ta, 2);
		ReadFor(&p, log, 500);
		TL_CHECK(tl_scalar(conn, "SELECT late_writes FROM xip83.feed_status()") > late_before,
				 "sequence 40 after 50 was not a late write: the check proves nothing");
		ROWS_EQ(log, 0, ta, "100:40", "late write");
	}

	/* history_only: replays, no TopicsLive, never live */
	{
		SpCurAdd	add = {(const unsigned char *) th, 2, NULL, 0};

		sp_mutate_cur(&p, &add, 1, NULL, NULL, 0, true, 5);
		TL_CHECK(Until(&p, log, 5), "no CatchupComplete 5");
		ROWS_EQ(log, 5, th, "100:5 200:20", "history_only replay");
		TL_CHECK(Count(log, SP_TOPICS_LIVE) == 0, "history_only sent TopicsLive");
		Put(conn, 100, 60, th, 2);
		Put(conn, 100, 61, ta, 2);
		ReadFor(&p, log, 500);
		ROWS_EQ(log, 0, th, "", "history_only topic went live");
		ROWS_EQ(log, 0, ta, "100:61", "live topic beside history_only");
	}

	/* half-close with a wave in flight: it finishes, then OK */
	{
		SpCurAdd	add = {(const unsigned char *) ti, 2, NULL, 0};

		sp_mutate_cur(&p, &add, 1, NULL, NULL, 0, false, 6);
		sp_close(&p);
		LogFree(log);
		sp_finish_events(&p, 10000, LogAdd, log);
		ROWS_EQ(log, 6, ti, "100:4 200:31", "wave finished after the half-close");
		TL_CHECK(Count(log, SP_CATCHUP) == 1, "half-close: wave 6 not acked");
		TL_CHECK(strcmp(p.status, "OK") == 0 && p.exit_code == 0, "half-close: STATUS %s, exit %d",
				 p.status, p.exit_code);
	}
	LogFree(log);
	free(log);
}

static void
TestRefusals(void)
{
	SessionProc p;
	SpCurAdd	add = {(const unsigned char *) "\x00" "a", 2, NULL, 0};
	SpCurAdd	kind6 = {(const unsigned char *) "\x06" "a", 2, NULL, 0};
	SpCurAdd	kind5 = {(const unsigned char *) "\x05" "a", 2, NULL, 0};
	static const unsigned char unknown_version[] = {0x12, 0x00};

	sp_start(&p, argv0, "d14n", 30000);
	sp_mutate_cur(&p, &add, 1, NULL, NULL, 0, false, 0);
	sp_expect_status(&p, "INVALID_ARGUMENT", "adds with mutate_id 0");

	sp_start(&p, argv0, "d14n", 30000);
	sp_send_raw(&p, unknown_version, sizeof(unknown_version));
	sp_expect_status(&p, "INVALID_ARGUMENT", "unknown version arm");

	sp_start(&p, argv0, "d14n", 30000);
	sp_mutate_cur(&p, &kind6, 1, NULL, NULL, 0, false, 3);
	sp_expect_status(&p, "INVALID_ARGUMENT", "topic kind 0x06");

	sp_start(&p, argv0, "d14n", 30000);
	p.hold = true;
	sp_mutate_cur(&p, &add, 1, NULL, NULL, 0, false, 5);
	sp_mutate_cur(&p, &kind5, 1, NULL, NULL, 0, false, 5);
	sp_release(&p);
	sp_expect_status(&p, "INVALID_ARGUMENT", "mutate_id of a wave in flight");

	/* the control: kind 0x05 is served and the stream closes OK */
	sp_start(&p, argv0, "d14n", 30000);
	sp_mutate_cur(&p, &kind5, 1, NULL, NULL, 0, false, 6);
	sp_close(&p);
	sp_finish_events(&p, 10000, NULL, NULL);
	TL_CHECK(strcmp(p.status, "OK") == 0 && p.exit_code == 0, "d14n valid stream: STATUS %s",
			 p.status);
}

static void
TestKeepalive(void)
{
	SessionProc p;
	SpEvent		e;

	sp_start(&p, argv0, "d14n", 300);
	TL_CHECK(sp_next(&p, 5000, &e) && e.type == SP_STARTED && e.keepalive_ms == 300,
			 "d14n: Started does not advertise 300 ms");
	sp_event_free(&e);
	sp_ping(&p, 77);
	TL_CHECK(sp_next(&p, 5000, &e) && e.type == SP_PONG && e.nonce == 77,
			 "d14n: client Ping 77 not answered with Pong 77");
	sp_event_free(&e);
	/* traffic resets the idle timer: a Pong every 100 ms keeps Pings away */
	{
		int			pings = 0;

		for (int i = 0; i < 8; i++)
		{
			usleep(100 * 1000);
			sp_ping(&p, 100 + (uint64_t) i);
			while (sp_next(&p, 5000, &e) && e.type != SP_PONG)
			{
				pings += e.type == SP_PING;
				sp_event_free(&e);
			}
			sp_event_free(&e);
		}
		TL_CHECK(pings == 0, "d14n: %d Pings while a frame went out every 100 ms (interval 300)",
				 pings);
	}
	TL_CHECK(sp_next(&p, 5000, &e) && e.type == SP_PING, "d14n: no Ping when idle");
	sp_event_free(&e);
	sp_finish_events(&p, 5000, NULL, NULL);
	TL_CHECK(strncmp(p.status, "DEADLINE_EXCEEDED", 17) == 0 && p.exit_code == 1,
			 "d14n: unanswered Ping: STATUS %s", p.status);
}

int
main(int argc, char **argv)
{
	PGconn	   *conn = tl_connect();

	(void) argc;
	argv0 = argv[0];
	TestRefusals();
	TestKeepalive();
	TestCursorsAndRules(conn);
	PQfinish(conn);
	return tl_done("t_session_d14n");
}
