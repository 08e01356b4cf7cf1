/*
 * t_session: xip83-session driven through its pipes with real
 * SubscribeRequest bytes against the server, every SubscribeResponse decoded.
 *
 * 1. The seam under fire: 4 writers commit group messages and welcomes out
 *    of id order (each holds its transaction open a random while) while two
 *    waves start mid-traffic. Started comes first; every committed message of
 *    a subscribed topic arrives exactly once (wave or live), no other topic's;
 *    wave frames carry only their wave's topics, ascending per kind; the
 *    live lane is ascending per kind across all live topics and carries no
 *    topic before its wave's CatchupComplete; TopicsLive precedes it; one
 *    CatchupComplete per Mutate; duplicate adds replay once; close is OK.
 * 2. Mutate rules: a waveless Mutate is acked at once; remove stops delivery;
 *    a late write to a live topic arrives once; remove then re-add replays
 *    history; re-adding a live topic at its position is a no-op;
 *    history_only replays and never goes live; two waves in flight at once
 *    keep their tags apart; a topic removed mid-wave stops at once; a half-close finishes the wave in flight, then
 *    closes OK.
 * 3. INVALID_ARGUMENT: adds with mutate_id 0, unknown version arm, no
 *    request arm, unknown topic kind, mutate_id of a wave in flight;
 *    malformed bytes and a truncated request; RESOURCE_EXHAUSTED past
 *    100,000 adds and past 256 waves in flight.
 * 5. Frames: three 900 kB messages come in frames under 2 MiB, none split.
 * 4. Keepalive: a client Ping is answered; frames sent reset the idle timer;
 *    an idle stream is pinged; a Ping left unanswered ends the stream with
 *    DEADLINE_EXCEEDED.
 * 8. Two waves of several pages each in flight at once: every row, right tags.
 * 7. The pending-bytes limit: more than 64 MiB of live rows folded into a
 *    wave still replaying its history end the stream with RESOURCE_EXHAUSTED.
 * 6. Late writes lost (SQLSTATE X83L0): more late writes in one commit than
 *    the server's late ring holds end the stream with ABORTED, never
 *    silently.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sessionproc.h"
#include "testlib.h"

#define MAX_ID (1 << 20)
#define WRITERS 4
#define GROUPS 10
#define XIP83_TEST_MAX_ADDS 100000	/* adds per Mutate the engine accepts */

static const char *argv0;

/* ---------------------------------------------------------------- writers */

typedef struct Writer
{
	pthread_t	thread;
	PGconn	   *conn;
	int			id;
	unsigned	seed;
	long		serial;
} Writer;

static atomic_int stop_writers;

static void
Insert(PGconn *conn, bool welcome, const char *key, const char *data)
{
	const char *params[2] = {key, data};

	PQclear(tl_exec(conn, welcome
					? "INSERT INTO xip83.welcome_messages (installation_key, data, installation_key_data_hash)"
					" VALUES (convert_to($1, 'UTF8'), convert_to($2, 'UTF8'),"
					" sha256(convert_to($1, 'UTF8') || convert_to($2, 'UTF8')))"
					: "INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash)"
					" VALUES (convert_to($1, 'UTF8'), convert_to($2, 'UTF8'),"
					" sha256(convert_to($1, 'UTF8') || convert_to($2, 'UTF8')))",
					2, params));
}

/* One message to a random topic: g0..g9, w0 (subscribed), n0..n4, x0 (noise). */
static void
WriteOne(Writer *w, bool slow)
{
	char		key[8];
	char		data[64];
	int			pick = rand_r(&w->seed) % 13;
	bool		welcome = pick >= 11;

	if (pick < GROUPS)
		snprintf(key, sizeof(key), "g%d", pick);
	else if (pick == 10)
		snprintf(key, sizeof(key), "n%d", rand_r(&w->seed) % 5);
	else
		snprintf(key, sizeof(key), "%s", pick == 11 ? "w0" : "x0");
	snprintf(data, sizeof(data), "writer %d message %ld", w->id, w->serial++);
	PQclear(tl_exec(w->conn, "BEGIN", 0, NULL));
	Insert(w->conn, welcome, key, data);
	/* ids are drawn at insert: holding the commit makes commits out of id order */
	if (slow)
		usleep((useconds_t) (rand_r(&w->seed) % 4000));
	PQclear(tl_exec(w->conn, "COMMIT", 0, NULL));
}

static void *
WriterMain(void *arg)
{
	Writer	   *w = arg;

	while (!atomic_load(&stop_writers))
		WriteOne(w, true);
	return NULL;
}

/* ---------------------------------------------------------------- the log */

/* What the client saw, checked as it arrives. */
typedef struct Seen
{
	int			responses;
	bool		started_first;
	int		   *group_count;	/* deliveries per id */
	int		   *welcome_count;
	int			live_rows;
	int			wave_rows;
	int			noise;			/* rows of topics never subscribed */
	int			wrong_wave;		/* wave frame with a topic of another wave */
	int			gate_breaks;	/* live row of a topic before its CatchupComplete */
	int			order_breaks;
	int64_t		last_live[2];
	int64_t		last_wave[4][2];
	int			topics_live[4]; /* TopicsLive per wave, by its topics */
	int			catchup[32];	/* CatchupComplete per mutate_id */
	bool		topics_live_before_catchup[4];
	int			topic_wave[2][GROUPS + 1];	/* [kind][g index or w0] -> wave (0 none) */
	bool		wave_done[4];
} Seen;

/* The test topics' index: g0..g9 -> 0..9, w0 -> 10, others -1. */
static int
TopicIndex(int kind, const uint8_t *key, size_t len)
{
	if (len == 2 && kind == 0 && key[0] == 'g' && key[1] >= '0' && key[1] <= '9')
		return key[1] - '0';
	if (len == 2 && kind == 1 && key[0] == 'w' && key[1] == '0')
		return GROUPS;
	return -1;
}

static void
SeeRow(Seen *s, uint64_t tag, int kind, uint64_t id, const uint8_t *key, size_t len)
{
	int			ix = TopicIndex(kind, key, len);
	int			wave = ix < 0 ? 0 : s->topic_wave[kind][ix];

	if (id >= MAX_ID)
		tl_fatal("id %llu beyond the test's table", (unsigned long long) id);
	(kind == 0 ? s->group_count : s->welcome_count)[id]++;
	if (wave == 0)
	{
		s->noise++;
		return;
	}
	if (tag == 0)
	{
		s->live_rows++;
		if (!s->wave_done[wave])
			s->gate_breaks++;
		if ((int64_t) id <= s->last_live[kind])
			s->order_breaks++;
		s->last_live[kind] = (int64_t) id;
	}
	else
	{
		s->wave_rows++;
		if (tag >= 4 || (int) tag != wave)
		{
			s->wrong_wave++;
			return;
		}
		if ((int64_t) id <= s->last_wave[tag][kind])
			s->order_breaks++;
		s->last_wave[tag][kind] = (int64_t) id;
	}
}

static void
See(void *arg, SpResponse *r)
{
	Seen	   *s = arg;
	Xmtp__Mls__Api__V1__SubscribeResponse__V1 *v1 = r->v1;

	if (s->responses++ == 0)
		s->started_first = v1 != NULL
			&& v1->response_case == XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__RESPONSE_STARTED;
	if (v1 == NULL)
	{
		sp_free(r);
		return;
	}
	switch (v1->response_case)
	{
		case XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__RESPONSE_MESSAGES:
			for (size_t i = 0; i < v1->messages->n_group_messages; i++)
			{
				Xmtp__Mls__Api__V1__GroupMessage__V1 *g = v1->messages->group_messages[i]->v1;

				SeeRow(s, v1->messages->mutate_id, 0, g->id, g->group_id.data, g->group_id.len);
			}
			for (size_t i = 0; i < v1->messages->n_welcome_messages; i++)
			{
				Xmtp__Mls__Api__V1__WelcomeMessage__V1 *w = v1->messages->welcome_messages[i]->v1;

				SeeRow(s, v1->messages->mutate_id, 1, w->id, w->installation_key.data,
					   w->installation_key.len);
			}
			break;
		case XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__RESPONSE_TOPICS_LIVE:
			{
				Xmtp__Mls__Api__V1__SubscribeResponse__V1__TopicsLive *tl = v1->topics_live;
				int			wave = 0;

				for (size_t i = 0; i < tl->n_topics; i++)
				{
					int			ix = tl->topics[i].len ? TopicIndex(tl->topics[i].data[0],
																 tl->topics[i].data + 1,
																 tl->topics[i].len - 1) : -1;
					int			wv = ix < 0 ? -1 : s->topic_wave[tl->topics[i].data[0]][ix];

					wave = i == 0 ? wv : wave == wv ? wave : -1;
				}
				if (wave > 0 && wave < 4)
				{
					s->topics_live[wave]++;
					s->topics_live_before_catchup[wave] = s->catchup[wave] == 0;
				}
				else
					s->wrong_wave++;
				break;
			}
		case XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__RESPONSE_CATCHUP_COMPLETE:
			if (v1->catchup_complete->mutate_id < 32)
				s->catchup[v1->catchup_complete->mutate_id]++;
			if (v1->catchup_complete->mutate_id < 4)
				s->wave_done[v1->catchup_complete->mutate_id] = true;
			break;
		default:
			break;
	}
	sp_free(r);
}

static void
ReadFor(SessionProc *p, Seen *s, int ms)
{
	struct timespec t0,
				t1;
	SpResponse *r;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;)
	{
		long		spent;

		clock_gettime(CLOCK_MONOTONIC, &t1);
		spent = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
		if (spent >= ms)
			return;
		if ((r = sp_read(p, (int) (ms - spent))) == NULL)
			return;
		See(s, r);
	}
}

static SpAdd
Add(const char *topic, size_t len, uint64_t cursor)
{
	SpAdd		a = {(const unsigned char *) topic, len, cursor};

	return a;
}

/* Counts expected ids delivered other than once; returns the number expected. */
static int
Account(PGconn *conn, Seen *s, int *missing, int *duplicated)
{
	PGresult   *res = tl_exec(conn,
							  "SELECT 0, id FROM xip83.group_messages WHERE group_id IN"
							  " ('g0','g1','g2','g3','g4','g5','g6','g7','g8','g9')"
							  " UNION ALL SELECT 1, id FROM xip83.welcome_messages"
							  " WHERE installation_key = 'w0'", 0, NULL);
	int			n = PQntuples(res);

	*missing = *duplicated = 0;
	for (int r = 0; r < n; r++)
	{
		int			kind = atoi(PQgetvalue(res, r, 0));
		long		id = atol(PQgetvalue(res, r, 1));
		int			c = (kind == 0 ? s->group_count : s->welcome_count)[id];

		*missing += c == 0;
		*duplicated += c > 1;
	}
	PQclear(res);
	return n;
}

static void
TestSeam(PGconn *conn)
{
	Writer		writers[WRITERS];
	Seen		s = {0};
	SessionProc p;
	SpAdd		wave1[7];
	SpAdd		wave2[GROUPS / 2 + 1];
	char		names[GROUPS][3];
	int			expected,
				missing,
				duplicated;
	int			delivered = 0;

	s.group_count = calloc(MAX_ID, sizeof(int));
	s.welcome_count = calloc(MAX_ID, sizeof(int));
	/* history before the session: 300 rows over every topic */
	{
		Writer		w = {.conn = conn, .id = 99, .seed = 7};

		for (int i = 0; i < 300; i++)
			WriteOne(&w, false);
	}
	for (int i = 0; i < WRITERS; i++)
	{
		writers[i] = (Writer) {.conn = tl_connect(), .id = i, .seed = 100 + (unsigned) i};
		pthread_create(&writers[i].thread, NULL, WriterMain, &writers[i]);
	}
	sp_start(&p, argv0, "v3", 30000);
	for (int i = 0; i < GROUPS; i++)
	{
		names[i][0] = 0x00;
		names[i][1] = 'g';
		names[i][2] = (char) ('0' + i);
	}
	/* wave 1: g0..g4, with duplicates that must coalesce into one replay */
	for (int i = 0; i < 5; i++)
	{
		wave1[i] = Add(names[i], 3, 0);
		s.topic_wave[0][i] = 1;
	}
	wave1[5] = Add(names[0], 3, 0);
	wave1[6] = Add(names[2], 3, 200);	/* the lower cursor (0) must win */
	ReadFor(&p, &s, 200);
	sp_mutate(&p, wave1, 7, NULL, NULL, 0, false, 1);
	ReadFor(&p, &s, 300);
	/* wave 2 while wave 1's topics are live and traffic flows */
	for (int i = 5; i < GROUPS; i++)
	{
		wave2[i - 5] = Add(names[i], 3, 0);
		s.topic_wave[0][i] = 2;
	}
	wave2[5] = Add("\x01w0", 3, 0);
	s.topic_wave[1][GROUPS] = 2;
	sp_mutate(&p, wave2, 6, NULL, NULL, 0, false, 2);
	ReadFor(&p, &s, 1500);
	atomic_store(&stop_writers, 1);
	for (int i = 0; i < WRITERS; i++)
	{
		pthread_join(writers[i].thread, NULL);
		PQfinish(writers[i].conn);
	}
	/* everything committed must arrive: wait for the stragglers */
	for (int tries = 0; tries < 100; tries++)
	{
		expected = Account(conn, &s, &missing, &duplicated);
		if (missing == 0)
			break;
		ReadFor(&p, &s, 100);
	}
	sp_close(&p);
	sp_finish(&p, 10000, See, &s);
	expected = Account(conn, &s, &missing, &duplicated);
	for (int i = 0; i < MAX_ID; i++)
		delivered += s.group_count[i] + s.welcome_count[i];
	TL_CHECK(s.started_first, "the first response is not Started");
	TL_CHECK(expected > 1000, "only %d messages written: the test proves little", expected);
	TL_CHECK(missing == 0, "%d of %d committed messages never delivered", missing, expected);
	TL_CHECK(duplicated == 0, "%d messages delivered more than once", duplicated);
	TL_CHECK(s.noise == 0, "%d messages of topics never subscribed", s.noise);
	TL_CHECK(delivered == expected, "%d deliveries for %d messages", delivered, expected);
	TL_CHECK(s.wave_rows > 0 && s.live_rows > 0, "wave rows %d, live rows %d: a lane unused",
			 s.wave_rows, s.live_rows);
	TL_CHECK(s.wrong_wave == 0, "%d frames or TopicsLive with another wave's topics",
			 s.wrong_wave);
	TL_CHECK(s.gate_breaks == 0, "%d live rows before their wave's CatchupComplete",
			 s.gate_breaks);
	TL_CHECK(s.order_breaks == 0, "%d rows out of id order in their lane", s.order_breaks);
	for (int m = 1; m <= 2; m++)
	{
		TL_CHECK(s.catchup[m] == 1, "wave %d: %d CatchupComplete", m, s.catchup[m]);
		TL_CHECK(s.topics_live[m] == 1 && s.topics_live_before_catchup[m],
				 "wave %d: %d TopicsLive, before CatchupComplete: %d", m, s.topics_live[m],
				 s.topics_live_before_catchup[m]);
	}
	TL_CHECK(strcmp(p.status, "OK") == 0 && p.exit_code == 0, "close: STATUS %s, exit %d",
			 p.status, p.exit_code);
	printf("seam: %d messages, %d by waves, %d live\n", expected, s.wave_rows, s.live_rows);
	free(s.group_count);
	free(s.welcome_count);
}

/* ---------------------------------------------------------------- rules */

typedef struct Event
{
	int			type;			/* response_case */
	uint64_t	tag;			/* Messages: mutate_id; CatchupComplete: its id */
	char		key[8];			/* Messages: the row's group_id / installation_key */
	int			n_topics;		/* TopicsLive */
	uint64_t	nonce;
} Event;

typedef struct Log
{
	Event		ev[2000];
	int			n;
} Log;

static void
LogResponse(Log *log, SpResponse *r)
{
	Xmtp__Mls__Api__V1__SubscribeResponse__V1 *v1 = r->v1;
	Event		e = {0};

	if (v1 == NULL)
		tl_fatal("a response without V1");
	e.type = v1->response_case;
	switch (v1->response_case)
	{
		case XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__RESPONSE_MESSAGES:
			for (size_t i = 0; i < v1->messages->n_group_messages && log->n < 2000; i++)
			{
				ProtobufCBinaryData *k = &v1->messages->group_messages[i]->v1->group_id;

				e.tag = v1->messages->mutate_id;
				snprintf(e.key, sizeof(e.key), "%.*s", (int) k->len, (const char *) k->data);
				log->ev[log->n++] = e;
			}
			sp_free(r);
			return;
		case XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__RESPONSE_TOPICS_LIVE:
			e.n_topics = (int) v1->topics_live->n_topics;
			break;
		case XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__RESPONSE_CATCHUP_COMPLETE:
			e.tag = v1->catchup_complete->mutate_id;
			break;
		case XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__RESPONSE_PING:
			e.nonce = v1->ping->nonce;
			break;
		case XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__RESPONSE_PONG:
			e.nonce = v1->pong->nonce;
			break;
		default:
			break;
	}
	if (log->n < 2000)
		log->ev[log->n++] = e;
	sp_free(r);
}

static void
LogIt(void *arg, SpResponse *r)
{
	LogResponse(arg, r);
}

/* Reads into a fresh log until CatchupComplete(mutate_id) (or timeout). */
static bool
UntilCatchup(SessionProc *p, Log *log, uint64_t mutate_id)
{
	SpResponse *r;

	log->n = 0;
	while ((r = sp_read(p, 5000)) != NULL)
	{
		LogResponse(log, r);
		if (log->ev[log->n - 1].type == XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__RESPONSE_CATCHUP_COMPLETE
			&& log->ev[log->n - 1].tag == mutate_id)
			return true;
	}
	return false;
}

static int
Count(const Log *log, int type, uint64_t tag, const char *key)
{
	int			n = 0;

	for (int i = 0; i < log->n; i++)
		n += log->ev[i].type == type && log->ev[i].tag == tag
			&& (key == NULL || strcmp(log->ev[i].key, key) == 0);
	return n;
}

#define MESSAGES XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__RESPONSE_MESSAGES
#define TOPICS_LIVE XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__RESPONSE_TOPICS_LIVE

static void
InsertN(PGconn *conn, const char *key, int n)
{
	static int	serial;
	char		data[32];

	for (int i = 0; i < n; i++)
	{
		snprintf(data, sizeof(data), "rules %d", serial++);
		Insert(conn, false, key, data);
	}
}

static void
TestRules(PGconn *conn)
{
	SessionProc p;
	Log		   *log = calloc(1, sizeof(Log));
	SpAdd		adds[2] = {Add("\0r0", 3, 0), Add("\0r1", 3, 0)};
	const unsigned char *rm[1] = {(const unsigned char *) "\0r0"};
	size_t		rm_len[1] = {3};
	SpResponse *r;

	InsertN(conn, "r0", 5);
	InsertN(conn, "h0", 3);
	sp_start(&p, argv0, "v3", 30000);
	sp_free(sp_read(&p, 5000));	/* Started: checked by the seam test */

	sp_mutate(&p, adds, 2, NULL, NULL, 0, false, 10);
	TL_CHECK(UntilCatchup(&p, log, 10), "no CatchupComplete 10");
	TL_CHECK(Count(log, MESSAGES, 10, "r0") == 5, "wave 10 replayed %d of r0's 5 rows",
			 Count(log, MESSAGES, 10, "r0"));
	TL_CHECK(Count(log, TOPICS_LIVE, 0, NULL) == 1 && log->ev[log->n - 2].type == TOPICS_LIVE
			 && log->ev[log->n - 2].n_topics == 2, "wave 10: TopicsLive of 2 topics right before CatchupComplete");

	/* a waveless Mutate is acked at once; the removed topic goes quiet */
	sp_mutate(&p, NULL, 0, rm, rm_len, 1, false, 0);
	TL_CHECK(UntilCatchup(&p, log, 0) && log->n == 1, "remove-only Mutate: %d responses before its CatchupComplete 0",
			 log->n - 1);
	InsertN(conn, "r0", 1);
	InsertN(conn, "r1", 1);
	log->n = 0;
	while (Count(log, MESSAGES, 0, "r1") == 0 && (r = sp_read(&p, 5000)) != NULL)
		LogResponse(log, r);
	TL_CHECK(Count(log, MESSAGES, 0, "r1") == 1, "the live topic's new row did not arrive live");
	TL_CHECK(Count(log, MESSAGES, 0, "r0") == 0, "a removed topic's row was delivered");

	/*
	 * A late write to a live topic: an id given back by a rolled-back insert,
	 * stored after the horizon passed it, reaches the client once, live.
	 */
	{
		PGresult   *res;
		char		late_id[32];
		const char *params[1] = {late_id};
		int64_t		late_before = tl_scalar(conn, "SELECT late_writes FROM xip83.feed_status()");

		PQclear(tl_exec(conn, "BEGIN", 0, NULL));
		res = tl_exec(conn, "INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash)"
					  " VALUES ('r1', 'rolled back', sha256('r1rolled back')) RETURNING id", 0, NULL);
		snprintf(late_id, sizeof(late_id), "%s", PQgetvalue(res, 0, 0));
		PQclear(res);
		PQclear(tl_exec(conn, "ROLLBACK", 0, NULL));
		InsertN(conn, "r1", 1);
		/* once the session has the newer row, the horizon has passed the gap */
		log->n = 0;
		while (Count(log, MESSAGES, 0, "r1") < 1 && (r = sp_read(&p, 5000)) != NULL)
			LogResponse(log, r);
		PQclear(tl_exec(conn, "INSERT INTO xip83.group_messages (id, group_id, data, group_id_data_hash)"
						" VALUES ($1::bigint, 'r1', 'late', sha256('r1late'))", 1, params));
		while (Count(log, MESSAGES, 0, "r1") < 2 && (r = sp_read(&p, 5000)) != NULL)
			LogResponse(log, r);
		/* anything more would come within a few polls */
		while ((r = sp_read(&p, 300)) != NULL)
			LogResponse(log, r);
		TL_CHECK(tl_scalar(conn, "SELECT late_writes FROM xip83.feed_status()") > late_before,
				 "the explicit id was not a late write: the check below proves nothing");
		TL_CHECK(Count(log, MESSAGES, 0, "r1") == 2, "late write: %d live rows of r1 (expected 2)",
				 Count(log, MESSAGES, 0, "r1"));
	}

	/* remove then re-add replays history again (all 6 rows of r0) */
	adds[0] = Add("\0r0", 3, 0);
	sp_mutate(&p, adds, 1, NULL, NULL, 0, false, 11);
	TL_CHECK(UntilCatchup(&p, log, 11), "no CatchupComplete 11");
	TL_CHECK(Count(log, MESSAGES, 11, "r0") == 6, "re-add replayed %d of r0's 6 rows",
			 Count(log, MESSAGES, 11, "r0"));

	/* re-adding a live topic at its position replays nothing */
	adds[0] = Add("\0r1", 3, UINT64_C(1) << 40);
	sp_mutate(&p, adds, 1, NULL, NULL, 0, false, 12);
	TL_CHECK(UntilCatchup(&p, log, 12) && log->n == 1, "no-op re-add: %d responses before CatchupComplete 12",
			 log->n - 1);

	/* history_only: replays, no TopicsLive, never live */
	adds[0] = Add("\0h0", 3, 0);
	sp_mutate(&p, adds, 1, NULL, NULL, 0, true, 13);
	TL_CHECK(UntilCatchup(&p, log, 13), "no CatchupComplete 13");
	TL_CHECK(Count(log, MESSAGES, 13, "h0") == 3 && Count(log, TOPICS_LIVE, 0, NULL) == 0,
			 "history_only: %d of 3 rows, %d TopicsLive", Count(log, MESSAGES, 13, "h0"),
			 Count(log, TOPICS_LIVE, 0, NULL));
	InsertN(conn, "h0", 1);
	InsertN(conn, "r1", 1);
	log->n = 0;
	while (Count(log, MESSAGES, 0, "r1") == 0 && (r = sp_read(&p, 5000)) != NULL)
		LogResponse(log, r);
	TL_CHECK(Count(log, MESSAGES, 0, "r1") == 1 && Count(log, MESSAGES, 0, "h0") == 0,
			 "after history_only: r1 live %d, h0 live %d", Count(log, MESSAGES, 0, "r1"),
			 Count(log, MESSAGES, 0, "h0"));

	/* two waves in flight at once (one write): each tagged with its own id */
	{
		SpAdd		a20 = Add("\0r0", 3, 0);
		SpAdd		a21 = Add("\0h0", 3, 0);
		int			acked = 0;

		p.hold = true;
		sp_mutate(&p, &a20, 1, NULL, NULL, 0, false, 20);
		sp_mutate(&p, &a21, 1, NULL, NULL, 0, false, 21);
		sp_release(&p);
		log->n = 0;
		while (acked < 2 && (r = sp_read(&p, 5000)) != NULL)
		{
			LogResponse(log, r);
			acked += log->ev[log->n - 1].type == XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__RESPONSE_CATCHUP_COMPLETE;
		}
		TL_CHECK(acked == 2 && Count(log, MESSAGES, 20, "r0") == 6 && Count(log, MESSAGES, 21, "h0") == 4
				 && Count(log, MESSAGES, 20, "h0") == 0 && Count(log, MESSAGES, 21, "r0") == 0
				 && Count(log, TOPICS_LIVE, 0, NULL) == 2,
				 "two waves: %d acks, r0 %d/6 tagged 20, h0 %d/4 tagged 21, %d TopicsLive", acked,
				 Count(log, MESSAGES, 20, "r0"), Count(log, MESSAGES, 21, "h0"),
				 Count(log, TOPICS_LIVE, 0, NULL));
	}

	/* a topic removed while its wave is in flight: no more of its rows, not in TopicsLive */
	{
		SpAdd		both[2] = {Add("\0r0", 3, 0), Add("\0r1", 3, 0)};
		int			first_ack = -1,
					acked = 0;

		p.hold = true;
		sp_mutate(&p, both, 2, NULL, NULL, 0, false, 30);
		sp_mutate(&p, NULL, 0, rm, rm_len, 1, false, 0);
		sp_release(&p);
		log->n = 0;
		while (acked < 2 && (r = sp_read(&p, 5000)) != NULL)
		{
			LogResponse(log, r);
			if (log->ev[log->n - 1].type == XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__RESPONSE_CATCHUP_COMPLETE
				&& acked++ == 0)
				first_ack = (int) log->ev[log->n - 1].tag;
		}
		TL_CHECK(acked == 2 && first_ack == 0, "remove mid-wave: %d acks, the first for %d (expected 0)",
				 acked, first_ack);
		TL_CHECK(Count(log, MESSAGES, 30, "r0") == 0 && Count(log, MESSAGES, 30, "r1") > 0,
				 "remove mid-wave: r0 %d rows (expected 0), r1 %d", Count(log, MESSAGES, 30, "r0"),
				 Count(log, MESSAGES, 30, "r1"));
		for (int i = 0; i < log->n; i++)
			if (log->ev[i].type == TOPICS_LIVE)
				TL_CHECK(log->ev[i].n_topics == 1, "remove mid-wave: TopicsLive of %d topics",
						 log->ev[i].n_topics);
	}

	/* half-close with a wave in flight: it finishes, then OK */
	adds[0] = Add("\0h0", 3, 0);
	sp_mutate(&p, adds, 1, NULL, NULL, 0, true, 14);
	sp_close(&p);
	log->n = 0;
	sp_finish(&p, 10000, LogIt, log);
	TL_CHECK(Count(log, MESSAGES, 14, "h0") == 4 && Count(log, XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__RESPONSE_CATCHUP_COMPLETE, 14, NULL) == 1,
			 "half-close: wave 14 not finished (%d rows)", Count(log, MESSAGES, 14, "h0"));
	TL_CHECK(strcmp(p.status, "OK") == 0 && p.exit_code == 0, "half-close: STATUS %s, exit %d",
			 p.status, p.exit_code);
	free(log);
}

/* ---------------------------------------------------------------- refusals */

static void
TestRefusals(void)
{
	SessionProc p;
	SpAdd		add = Add("\0g0", 3, 0);
	SpAdd		bad_kind = Add("\x07x", 2, 0);
	SpAdd		other = Add("\0g1", 3, 0);
	/* SubscribeRequest with field 2 (no such version arm), and V1 with no request */
	static const unsigned char unknown_version[] = {0x12, 0x00};
	static const unsigned char no_request[] = {0x0a, 0x00};

	sp_start(&p, argv0, "v3", 30000);
	sp_mutate(&p, &add, 1, NULL, NULL, 0, false, 0);
	sp_expect_status(&p, "INVALID_ARGUMENT", "adds with mutate_id 0");

	sp_start(&p, argv0, "v3", 30000);
	sp_send_raw(&p, unknown_version, sizeof(unknown_version));
	sp_expect_status(&p, "INVALID_ARGUMENT", "unknown version arm");

	sp_start(&p, argv0, "v3", 30000);
	sp_send_raw(&p, no_request, sizeof(no_request));
	sp_expect_status(&p, "INVALID_ARGUMENT", "no request arm");

	sp_start(&p, argv0, "v3", 30000);
	sp_mutate(&p, &bad_kind, 1, NULL, NULL, 0, false, 3);
	sp_expect_status(&p, "INVALID_ARGUMENT", "unknown topic kind");

	/* both Mutates in one write: the second meets the first's wave in flight */
	sp_start(&p, argv0, "v3", 30000);
	p.hold = true;
	sp_mutate(&p, &add, 1, NULL, NULL, 0, false, 5);
	sp_mutate(&p, &other, 1, NULL, NULL, 0, false, 5);
	sp_release(&p);
	sp_expect_status(&p, "INVALID_ARGUMENT", "mutate_id of a wave in flight");

	/* the control: a valid stream closes OK (the checks above can tell) */
	sp_start(&p, argv0, "v3", 30000);
	sp_mutate(&p, &add, 1, NULL, NULL, 0, false, 6);
	sp_close(&p);
	sp_finish(&p, 10000, NULL, NULL);
	TL_CHECK(strcmp(p.status, "OK") == 0 && p.exit_code == 0, "valid stream: STATUS %s", p.status);

	/* one add past the limit, before any coalescing */
	{
		SpAdd	   *many = calloc(XIP83_TEST_MAX_ADDS + 1, sizeof(SpAdd));

		for (int i = 0; i <= XIP83_TEST_MAX_ADDS; i++)
			many[i] = add;
		sp_start(&p, argv0, "v3", 30000);
		sp_mutate(&p, many, XIP83_TEST_MAX_ADDS + 1, NULL, NULL, 0, false, 7);
		sp_expect_status(&p, "RESOURCE_EXHAUSTED", "100,001 adds");
		free(many);
	}

	/* bytes that are no SubscribeRequest; a length prefix cut by the half-close */
	{
		static const unsigned char garbage[] = {0xff, 0xff, 0xff};
		static const unsigned char cut[] = {0x05, 0x0a};

		sp_start(&p, argv0, "v3", 30000);
		sp_send_raw(&p, garbage, sizeof(garbage));
		sp_expect_status(&p, "INVALID_ARGUMENT", "malformed request");
		sp_start(&p, argv0, "v3", 30000);
		if (write(p.to_child, cut, sizeof(cut)) != (ssize_t) sizeof(cut))
			tl_fatal("write failed");
		sp_expect_status(&p, "INVALID_ARGUMENT", "truncated request");
	}

	/* 257 waves in one write (under PIPE_BUF, so all start before any finishes) */
	sp_start(&p, argv0, "v3", 30000);
	p.hold = true;
	for (int i = 1; i <= 257; i++)
	{
		char		topic[3] = {0x00, (char) (i & 0xff), (char) (i >> 8)};
		SpAdd		a = Add(topic, 3, 0);

		sp_mutate(&p, &a, 1, NULL, NULL, 0, false, (uint64_t) i);
	}
	TL_CHECK(p.held_len <= 4096, "257 Mutates take %zu bytes: not one atomic write", p.held_len);
	sp_release(&p);
	sp_expect_status(&p, "RESOURCE_EXHAUSTED", "257 waves in flight");
}

/* ---------------------------------------------------------------- keepalive */

static void
TestKeepalive(void)
{
	SessionProc p;
	Log		   *log = calloc(1, sizeof(Log));
	SpResponse *r;
	struct timespec t0,
				t1;
	long		idle_ms;

	sp_start(&p, argv0, "v3", 300);
	r = sp_read(&p, 5000);
	TL_CHECK(r != NULL && r->v1 && r->v1->response_case == XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__RESPONSE_STARTED
			 && r->v1->started->keepalive_interval_ms == 300, "Started does not advertise 300 ms");
	sp_free(r);
	sp_ping(&p, 77);
	LogResponse(log, sp_read(&p, 5000));
	TL_CHECK(log->n == 1 && log->ev[0].type == XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__RESPONSE_PONG
			 && log->ev[0].nonce == 77, "client Ping 77 not answered with Pong 77");
	/* traffic resets the timer: a Pong every 100 ms keeps Pings away */
	{
		int			pings = 0;

		for (int i = 0; i < 8; i++)
		{
			usleep(100 * 1000);
			sp_ping(&p, 100 + (uint64_t) i);
			log->n = 0;
			while (log->n == 0 || log->ev[log->n - 1].type != XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__RESPONSE_PONG)
			{
				if ((r = sp_read(&p, 5000)) == NULL)
					tl_fatal("no Pong for Ping %d", 100 + i);
				LogResponse(log, r);
				pings += log->ev[log->n - 1].type == XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__RESPONSE_PING;
			}
		}
		TL_CHECK(pings == 0, "%d Pings while a frame went out every 100 ms (interval 300)", pings);
	}
	/* idle: the server pings after the interval; answered, the stream lives on */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	r = sp_read(&p, 5000);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	idle_ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
	TL_CHECK(r != NULL && r->v1 && r->v1->response_case == XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__RESPONSE_PING
			 && idle_ms >= 250, "no Ping after 300 ms idle (after %ld ms)", idle_ms);
	if (r != NULL && r->v1 && r->v1->response_case == XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__RESPONSE_PING)
		sp_pong(&p, r->v1->ping->nonce);
	sp_free(r);
	/* the next Ping goes unanswered: reaped */
	r = sp_read(&p, 5000);
	TL_CHECK(r != NULL && r->v1 && r->v1->response_case == XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__RESPONSE_PING,
			 "no second Ping");
	sp_free(r);
	sp_finish(&p, 5000, NULL, NULL);
	TL_CHECK(strncmp(p.status, "DEADLINE_EXCEEDED", 17) == 0 && p.exit_code == 1,
			 "unanswered Ping: STATUS %s, exit %d", p.status, p.exit_code);
	free(log);
}

/* Three 900 kB messages: a frame stays under 2 MiB and never splits one. */
static void
TestFrameLimit(PGconn *conn)
{
	SessionProc p;
	SpAdd		big = Add("\0big", 4, 0);
	SpResponse *r;
	int			frames = 0,
				rows = 0,
				oversized = 0;
	bool		acked = false;

	PQclear(tl_exec(conn, "INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash)"
					" SELECT 'big', d, sha256('big'::bytea || d) FROM"
					" (SELECT convert_to(repeat(i::text, 900000), 'UTF8') d FROM generate_series(1, 3) i) x",
					0, NULL));
	sp_start(&p, argv0, "v3", 30000);
	sp_mutate(&p, &big, 1, NULL, NULL, 0, false, 40);
	while (!acked && (r = sp_read(&p, 10000)) != NULL)
	{
		if (r->v1 && r->v1->response_case == MESSAGES)
		{
			frames++;
			rows += (int) r->v1->messages->n_group_messages;
			oversized += xmtp__mls__api__v1__subscribe_response__get_packed_size(r) > 2 * 1024 * 1024;
		}
		acked = r->v1 && r->v1->response_case == XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__RESPONSE_CATCHUP_COMPLETE;
		sp_free(r);
	}
	TL_CHECK(acked && rows == 3 && frames >= 2 && oversized == 0,
			 "frame limit: %d rows in %d frames, %d over 2 MiB, acked %d", rows, frames, oversized,
			 acked);
	sp_close(&p);
	sp_finish(&p, 10000, NULL, NULL);
}

/* More late writes at once than the late ring holds: the stream ends ABORTED. */
static void
TestLateLost(PGconn *conn)
{
	SessionProc p;
	SpAdd		add = Add("\0ll", 3, 0);
	SpResponse *r;
	bool		acked = false;
	int64_t		ring = tl_scalar(conn, "SELECT late_ring_size FROM xip83.feed_status()");
	int64_t		top = tl_scalar(conn, "SELECT coalesce(max(id), 0) FROM xip83.group_messages");
	char		gap_from[32],
				gap_to[32],
				high[32];
	const char *params[2] = {gap_from, gap_to};

	InsertN(conn, "ll", 2);
	sp_start(&p, argv0, "v3", 30000);
	sp_mutate(&p, &add, 1, NULL, NULL, 0, false, 50);
	while (!acked && (r = sp_read(&p, 5000)) != NULL)
	{
		acked = r->v1 && r->v1->response_case == XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__RESPONSE_CATCHUP_COMPLETE;
		sp_free(r);
	}
	TL_CHECK(acked, "late lost: the wave never finished");
	/* a row far above leaves a gap the horizon passes; filling it is ring + 100 late writes */
	snprintf(high, sizeof(high), "%lld", (long long) (top + ring + 1000));
	snprintf(gap_from, sizeof(gap_from), "%lld", (long long) (top + 100));
	snprintf(gap_to, sizeof(gap_to), "%lld", (long long) (top + ring + 199));
	{
		const char *hp[1] = {high};

		PQclear(tl_exec(conn, "INSERT INTO xip83.group_messages (id, group_id, data, group_id_data_hash)"
						" VALUES ($1::bigint, 'll', 'high', sha256('llhigh'))", 1, hp));
	}
	for (int i = 0; i < 100 && tl_scalar(conn, "SELECT xip83.group_horizon()") < top + ring + 1000; i++)
		usleep(10000);
	PQclear(tl_exec(conn, "INSERT INTO xip83.group_messages (id, group_id, data, group_id_data_hash)"
					" SELECT i, 'll', int8send(i), sha256('ll'::bytea || int8send(i))"
					" FROM generate_series($1::bigint, $2::bigint) i", 2, params));
	sp_finish(&p, 10000, NULL, NULL);
	TL_CHECK(strncmp(p.status, "ABORTED", 7) == 0 && strstr(p.status, "X83L0") != NULL
			 && p.exit_code == 1, "late writes lost: STATUS %s, exit %d (expected ABORTED ... X83L0)",
			 p.status, p.exit_code);
}

/*
 * Two waves of several pages in flight at once (one write): each one's next
 * page is read ahead while the other's runs on the same connection; both
 * deliver every row, tagged with their own mutate_id.
 */
static void
TestLongWaves(PGconn *conn)
{
	SessionProc p;
	SpAdd		a1 = Add("\0b1", 3, 0);
	SpAdd		a2 = Add("\0b2", 3, 0);
	SpResponse *r;
	int			rows[2] = {0, 0},
				acks = 0,
				wrong = 0;

	PQclear(tl_exec(conn, "INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash)"
					" SELECT g, int8send(i), sha256(g || int8send(i))"
					" FROM generate_series(1, 3500) i, (VALUES ('b1'::bytea), ('b2')) t(g)", 0, NULL));
	sp_start(&p, argv0, "v3", 30000);
	p.hold = true;
	sp_mutate(&p, &a1, 1, NULL, NULL, 0, false, 71);
	sp_mutate(&p, &a2, 1, NULL, NULL, 0, false, 72);
	sp_release(&p);
	while (acks < 2 && (r = sp_read(&p, 10000)) != NULL)
	{
		if (r->v1 && r->v1->response_case == MESSAGES)
			for (size_t i = 0; i < r->v1->messages->n_group_messages; i++)
			{
				ProtobufCBinaryData *g = &r->v1->messages->group_messages[i]->v1->group_id;
				int			w = g->len == 2 && g->data[1] == '2';

				rows[w]++;
				wrong += r->v1->messages->mutate_id != (uint64_t) (71 + w);
			}
		acks += r->v1 && r->v1->response_case == XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__RESPONSE_CATCHUP_COMPLETE;
		sp_free(r);
	}
	sp_close(&p);
	sp_finish(&p, 10000, NULL, NULL);
	TL_CHECK(acks == 2 && rows[0] == 3500 && rows[1] == 3500 && wrong == 0
			 && strcmp(p.status, "OK") == 0, "two long waves: %d acks, %d + %d of 3500 rows, %d mistagged, STATUS %s",
			 acks, rows[0], rows[1], wrong, p.status);
}

/*
 * 70 MiB of live rows for a topic whose wave is still replaying 400,000 rows
 * of history: folded, they pass the 64 MiB limit.
 */
static void
TestPendingLimit(PGconn *conn)
{
	SessionProc p;
	SpAdd		add = Add("\0pb", 3, 0);
	SpResponse *r;
	bool		acked = false;

	PQclear(tl_exec(conn, "INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash)"
					" SELECT 'pb', int8send(i), sha256('pb'::bytea || int8send(i))"
					" FROM generate_series(1, 400000) i", 0, NULL));
	sp_start(&p, argv0, "v3", 30000);
	sp_mutate(&p, &add, 1, NULL, NULL, 0, false, 60);
	PQclear(tl_exec(conn, "INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash)"
					" SELECT 'pb', d, sha256('pb'::bytea || d) FROM"
					" (SELECT convert_to(lpad(i::text, 1048576, 'x'), 'UTF8') d"
					"  FROM generate_series(1, 70) i) x", 0, NULL));
	while ((r = sp_read(&p, 20000)) != NULL)
	{
		acked |= r->v1 && r->v1->response_case == XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__RESPONSE_CATCHUP_COMPLETE;
		sp_free(r);
	}
	sp_finish(&p, 10000, NULL, NULL);
	TL_CHECK(!acked && strncmp(p.status, "RESOURCE_EXHAUSTED", 18) == 0 && strstr(p.status, "pending")
			 && p.exit_code == 1, "pending-bytes limit: STATUS %s, exit %d, wave acked %d", p.status,
			 p.exit_code, acked);
}

int
main(int argc, char **argv)
{
	PGconn	   *conn = tl_connect();

	(void) argc;
	argv0 = argv[0];
	TestRefusals();
	TestKeepalive();
	TestRules(conn);
	TestFrameLimit(conn);
	TestLateLost(conn);
	TestPendingLimit(conn);
	TestLongWaves(conn);
	TestSeam(conn);
	PQfinish(conn);
	return tl_done("t_session");
}
