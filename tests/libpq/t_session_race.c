/*
 * t_session_race: exactly-once accounting over 100,000 messages, for both
 * bindings, with waves, removes and re-adds racing live traffic.
 *
 * 8 writers commit out of position order (each holds its transaction open a
 * random while after its insert: v3 ids are drawn at insert; d14n sequence ids
 * are drawn and inserted in order per originator, then committed late), and a
 * late writer stores rows below the horizon the feed already passed (v3: an
 * id given back by a rolled-back insert; d14n: sequence ids the other writers
 * skip), so the live lane also carries late writes. Meanwhile the client
 * changes its topic set at random: adds (with floors, d14n: cursor vectors
 * naming some originators), removes, remove and re-add in one Mutate, and
 * re-adds of live topics below their position.
 *
 * The client tracks subscription epochs: an epoch of a topic begins with the
 * Mutate that adds it, takes the wave's frames tagged with its mutate_id,
 * takes the live lane's rows from its wave's CatchupComplete on, and ends
 * when the topic's removal is acked or a newer epoch goes live. Checked as the
 * responses arrive: Started first; every row belongs to an open epoch of its
 * topic (no noise, no wave frame of another wave's topic, no live row before
 * its wave's CatchupComplete or after its removal was acked); no row at or
 * below its epoch's cursor; each lane ascending per line (v3: id per kind;
 * d14n: sequence per originator) but for late writes; TopicsLive of exactly
 * the wave's remaining topics right before its CatchupComplete; one
 * CatchupComplete per Mutate. At the end: no epoch got a message twice, and
 * every topic subscribed at the end got every stored message above its
 * cursor exactly once in its last epoch.
 *
 * XIP83_RACE_MESSAGES sets the messages written per binding (default 100000).
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

#define WRITERS		8
#define TOPICS		40			/* the client's topics; writers also write NOISE others */
#define NOISE		8
#define ROWS_PER_TX 4
#define NODES		3
#define MAX_EPOCHS	20000
#define MAX_WAVES	20000

static const char *argv0;
static bool d14n;
static const int32_t node_ids[NODES] = {0, 100, 200};

/* ---------------------------------------------------------------- topics */

static uint8_t topic_bytes[TOPICS + NOISE][8];
static size_t topic_lens[TOPICS + NOISE];

static void
MakeTopics(void)
{
	for (int i = 0; i < TOPICS + NOISE; i++)
	{
		/* v3: mostly group messages, every fifth a welcome; d14n: kinds 0 to 5 */
		int			kind = d14n ? i % 6 : i % 5 == 4;

		topic_bytes[i][0] = (uint8_t) kind;
		topic_lens[i] = 1 + (size_t) snprintf((char *) topic_bytes[i] + 1, 7, "%c%02d",
											  i < TOPICS ? 't' : 'n', i);
	}
}

static int
TopicIndex(const uint8_t *t, size_t len)
{
	for (int i = 0; i < TOPICS + NOISE; i++)
		if (topic_lens[i] == len && memcmp(topic_bytes[i], t, len) == 0)
			return i;
	return -1;
}

static int
LineIndex(int32_t node)
{
	for (int i = 0; i < NODES; i++)
		if (node_ids[i] == node)
			return i;
	return -1;
}

/* ---------------------------------------------------------------- writers */

static atomic_long written;
static long target;
static atomic_int stop_writers;
static pthread_mutex_t node_lock[NODES] = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER,
PTHREAD_MUTEX_INITIALIZER};
static int64_t next_seq[NODES];

/* d14n: sequence ids the writers skip, for the late writer (node 200, every 97th) */
static bool
Reserved(int n, int64_t seq)
{
	return n == 2 && seq % 97 == 0;
}

/* Late rows: (line, position), recorded before they are written. */
static pthread_mutex_t late_lock = PTHREAD_MUTEX_INITIALIZER;
typedef struct LatePos
{
	int			line;
	int64_t		pos;
} LatePos;
static LatePos *late;
static int	n_late;

static bool
IsLate(int line, int64_t pos)
{
	bool		found = false;

	pthread_mutex_lock(&late_lock);
	for (int i = 0; i < n_late && !found; i++)
		found = late[i].line == line && late[i].pos == pos;
	pthread_mutex_unlock(&late_lock);
	return found;
}

static void
NoteLate(int line, int64_t pos)
{
	pthread_mutex_lock(&late_lock);
	late = realloc(late, sizeof(*late) * (size_t) (n_late + 1));
	late[n_late].line = line;
	late[n_late++].pos = pos;
	pthread_mutex_unlock(&late_lock);
}

/* Writes one d14n envelope row per (node, seq, topic) in the open transaction. */
static void
InsertEnvelopes(PGconn *conn, int n, const int64_t *seqs, const int *topics, int count)
{
	TlBuf		t = {0},
				e = {0},
				s = {0};
	char		node[16];
	const char *params[4];

	tl_buf_add(&t, "{");
	tl_buf_add(&e, "{");
	tl_buf_add(&s, "{");
	for (int i = 0; i < count; i++)
	{
		size_t		len;
		unsigned char *env = sp_envelope(node_ids[n], seqs[i], topic_bytes[topics[i]],
										 topic_lens[topics[i]], &len);

		sp_bytea_elem(&t, topic_bytes[topics[i]], topic_lens[topics[i]]);
		sp_bytea_elem(&e, env, len);
		tl_buf_add(&s, "%s%lld", i ? "," : "", (long long) seqs[i]);
		free(env);
	}
	tl_buf_add(&t, "}");
	tl_buf_add(&e, "}");
	tl_buf_add(&s, "}");
	snprintf(node, sizeof(node), "%d", node_ids[n]);
	params[0] = node;
	params[1] = s.s;
	params[2] = t.s;
	params[3] = e.s;
	PQclear(tl_exec(conn, "INSERT INTO xip83.envelopes (originator_node_id, originator_sequence_id,"
					" topic, originator_envelope) SELECT $1::int, s, t, e"
					" FROM unnest($2::bigint[], $3::bytea[], $4::bytea[]) AS u(s, t, e)", 4, params));
	free(t.s);
	free(e.s);
	free(s.s);
}

/* Writes v3 rows of one kind (the topics' kinds must agree) in the open transaction. */
static void
InsertV3(PGconn *conn, const int *topics, int count, long serial)
{
	TlBuf		t = {0},
				d = {0};
	const char *params[2];
	bool		welcome = topic_bytes[topics[0]][0] == 1;

	tl_buf_add(&t, "{");
	tl_buf_add(&d, "{");
	for (int i = 0; i < count; i++)
	{
		char		data[48];
		int			n = snprintf(data, sizeof(data), "race %ld.%d", serial, i);

		sp_bytea_elem(&t, topic_bytes[topics[i]] + 1, topic_lens[topics[i]] - 1);
		sp_bytea_elem(&d, (const uint8_t *) data, (size_t) n);
	}
	tl_buf_add(&t, "}");
	tl_buf_add(&d, "}");
	params[0] = t.s;
	params[1] = d.s;
	PQclear(tl_exec(conn, welcome
					? "INSERT INTO xip83.welcome_messages (installation_key, data, installation_key_data_hash)"
					" SELECT k, d, sha256(k || d) FROM unnest($1::bytea[], $2::bytea[]) AS u(k, d)"
					: "INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash)"
					" SELECT k, d, sha256(k || d) FROM unnest($1::bytea[], $2::bytea[]) AS u(k, d)",
					2, params));
	free(t.s);
	free(d.s);
}

typedef struct Writer
{
	pthread_t	thread;
	PGconn	   *conn;
	unsigned	seed;
	long		serial;
	bool		slow;			/* commit a random while after the insert */
} Writer;

/* One transaction of ROWS_PER_TX rows to random topics (noise among them). */
static void
WriteOne(Writer *w)
{
	int			topics[ROWS_PER_TX];
	bool		welcome = rand_r(&w->seed) % 5 == 0;

	for (int i = 0; i < ROWS_PER_TX; i++)
	{
		int			t;

		/* v3 rows of one statement share a kind */
		do
			t = rand_r(&w->seed) % (TOPICS + NOISE);
		while (!d14n && (topic_bytes[t][0] == 1) != welcome);
		topics[i] = t;
	}
	PQclear(tl_exec(w->conn, "BEGIN", 0, NULL));
	if (d14n)
	{
		int			n = rand_r(&w->seed) % NODES;
		int64_t		seqs[ROWS_PER_TX];

		/* drawn and inserted in order per originator; committed in any order */
		pthread_mutex_lock(&node_lock[n]);
		for (int i = 0; i < ROWS_PER_TX; i++)
		{
			do
				seqs[i] = ++next_seq[n];
			while (Reserved(n, seqs[i]));
		}
		InsertEnvelopes(w->conn, n, seqs, topics, ROWS_PER_TX);
		pthread_mutex_unlock(&node_lock[n]);
	}
	else
		InsertV3(w->conn, topics, ROWS_PER_TX, w->serial++);
	if (w->slow)
		usleep((useconds_t) (rand_r(&w->seed) % 3000));
	PQclear(tl_exec(w->conn, "COMMIT", 0, NULL));
	atomic_fetch_add(&written, ROWS_PER_TX);
	/* about 3,000 rows/s from 8 writers: long enough for many changes of the topic set */
	if (w->slow)
		usleep((useconds_t) (rand_r(&w->seed) % 16000));
}

static void *
WriterMain(void *arg)
{
	Writer	   *w = arg;

	while (!atomic_load(&stop_writers) && atomic_load(&written) < target)
		WriteOne(w);
	return NULL;
}

/* Late writes, one every ~20 ms, each below a horizon the feed has passed. */
static void *
LateMain(void *arg)
{
	Writer	   *w = arg;
	int64_t		next_reserved = 97;

	while (!atomic_load(&stop_writers) && atomic_load(&written) < target)
	{
		int			t = rand_r(&w->seed) % TOPICS;

		usleep(20000);
		if (d14n)
		{
			int64_t		high;

			pthread_mutex_lock(&node_lock[2]);
			high = next_seq[2];
			pthread_mutex_unlock(&node_lock[2]);
			/* well below what the writers of node 200 committed since */
			if (next_reserved + 200 > high)
				continue;
			NoteLate(2, next_reserved);
			PQclear(tl_exec(w->conn, "BEGIN", 0, NULL));
			InsertEnvelopes(w->conn, 2, &next_reserved, &t, 1);
			PQclear(tl_exec(w->conn, "COMMIT", 0, NULL));
			next_reserved += 97;
		}
		else
		{
			PGresult   *res;
			char		id[32],
						data[48];
			const char *params[3] = {id, (const char *) topic_bytes[t] + 1, data};
			bool		welcome = topic_bytes[t][0] == 1;

			/* a rolled-back insert gives its id back; written again once the horizon passed it */
			PQclear(tl_exec(w->conn, "BEGIN", 0, NULL));
			res = tl_exec(w->conn, welcome
						  ? "INSERT INTO xip83.welcome_messages (installation_key, data, installation_key_data_hash)"
						  " VALUES ('x', 'x', 'x') RETURNING id"
						  : "INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash)"
						  " VALUES ('x', 'x', 'x') RETURNING id", 0, NULL);
			snprintf(id, sizeof(id), "%s", PQgetvalue(res, 0, 0));
			PQclear(res);
			PQclear(tl_exec(w->conn, "ROLLBACK", 0, NULL));
			usleep(20000);
			snprintf(data, sizeof(data), "late %s", id);
			NoteLate(welcome, atoll(id));
			PQclear(tl_exec(w->conn, welcome
							? "INSERT INTO xip83.welcome_messages (id, installation_key, data, installation_key_data_hash)"
							" VALUES ($1::bigint, convert_to($2, 'UTF8'), convert_to($3, 'UTF8'),"
							" sha256(convert_to($2 || $3, 'UTF8')))"
							: "INSERT INTO xip83.group_messages (id, group_id, data, group_id_data_hash)"
							" VALUES ($1::bigint, convert_to($2, 'UTF8'), convert_to($3, 'UTF8'),"
							" sha256(convert_to($2 || $3, 'UTF8')))", 3, params));
		}
		atomic_fetch_add(&written, 1);
	}
	return NULL;
}

/* ---------------------------------------------------------------- the client */

typedef struct Epoch
{
	int			topic;
	uint64_t	wave;
	int			mseq;			/* the Mutate that opened it, in sending order */
	SpRow		cursor[NODES];	/* node and floor per entry */
	size_t		n_cursor;
	bool		live;			/* its wave's CatchupComplete came */
	bool		closed;
	int64_t    *got;			/* (line << 56) | position, as delivered */
	size_t		n_got;
	size_t		cap_got;
} Epoch;

typedef struct Wave
{
	uint64_t	id;
	int			mseq;
	int			topics[TOPICS];
	int			n_topics;
	bool		done;
	int64_t		last[NODES];	/* per line, the last position sent */
} Wave;

typedef struct Client
{
	SessionProc p;
	Epoch	   *epochs;
	int			n_epochs;
	Wave	   *waves;
	int			n_waves;
	int			live_ep[TOPICS];	/* the topic's live epoch, -1 none */
	bool		subscribed[TOPICS]; /* as far as the client has asked */
	bool		gated[TOPICS];	/* in a wave whose CatchupComplete has not come */
	int			removes_pending[256][TOPICS];	/* waveless Mutates not yet acked */
	int			n_removes[256];
	int			remove_mseq[256];
	int			sent;			/* Mutates sent */
	int			last_touch[TOPICS]; /* the last Mutate naming the topic */
	int			tl_topics[TOPICS];	/* the last TopicsLive */
	int			rm_head,
				rm_tail;
	int64_t		last_live[NODES];
	uint64_t	next_mutate;
	bool		started_first;
	int			responses;
	bool		topics_live_pending;	/* a TopicsLive waits for its CatchupComplete */
	int			topics_live_count;
	/* violations */
	int			noise,
				stray,
				gate_breaks,
				below_cursor,
				order_breaks,
				topics_live_bad,
				acks_bad;
	long		wave_rows,
				live_rows,
				late_rows;
} Client;

static int64_t
Key(int line, int64_t pos)
{
	return ((int64_t) line << 56) | pos;
}

static Epoch *
OpenEpoch(Client *c, int topic, uint64_t wave, const SpRow *cursor, size_t n)
{
	Epoch	   *e;

	if (c->n_epochs == MAX_EPOCHS)
		tl_fatal("too many epochs");
	e = &c->epochs[c->n_epochs++];
	memset(e, 0, sizeof(*e));
	e->topic = topic;
	e->wave = wave;
	e->mseq = c->sent;
	c->last_touch[topic] = c->sent;
	if (n > 0)
		memcpy(e->cursor, cursor, n * sizeof(SpRow));
	e->n_cursor = n;
	return e;
}

/* The open epoch of topic t fed by wave w (0: the live lane), or NULL. */
static Epoch *
EpochOf(Client *c, int t, uint64_t w)
{
	if (w == 0)
		return c->live_ep[t] >= 0 ? &c->epochs[c->live_ep[t]] : NULL;
	for (int i = c->n_epochs - 1; i >= 0; i--)
		if (c->epochs[i].topic == t && c->epochs[i].wave == w && !c->epochs[i].closed)
			return &c->epochs[i];
	return NULL;
}

/* Ends the topic's epochs opened by Mutates sent before mseq. */
static void
CloseTopic(Client *c, int t, int mseq)
{
	for (int i = 0; i < c->n_epochs; i++)
		if (c->epochs[i].topic == t && c->epochs[i].mseq < mseq)
			c->epochs[i].closed = true;
	if (c->live_ep[t] >= 0 && c->epochs[c->live_ep[t]].closed)
		c->live_ep[t] = -1;
}

static Wave *
WaveOf(Client *c, uint64_t id)
{
	for (int i = c->n_waves - 1; i >= 0; i--)
		if (c->waves[i].id == id)
			return &c->waves[i];
	return NULL;
}

static int64_t
CursorAt(const Epoch *e, int32_t node)
{
	for (size_t i = 0; i < e->n_cursor; i++)
		if (e->cursor[i].node == node)
			return e->cursor[i].pos;
	return d14n ? -1 : 0;
}

static void
SeeRow(Client *c, uint64_t tag, const SpRow *r)
{
	int			t = TopicIndex(r->topic, r->topic_len);
	int			line = d14n ? LineIndex(r->node) : r->node;
	Epoch	   *e;
	int64_t    *last;

	if (t < 0 || t >= TOPICS || line < 0)
	{
		c->noise++;
		return;
	}
	if ((e = EpochOf(c, t, tag)) == NULL)
	{
		if (tag == 0)
			c->gate_breaks++;
		else
			c->stray++;
		return;
	}
	if (e->n_got == e->cap_got)
	{
		e->cap_got = e->cap_got ? e->cap_got * 2 : 64;
		e->got = realloc(e->got, e->cap_got * sizeof(int64_t));
	}
	e->got[e->n_got++] = Key(line, r->pos);
	/* a late write may lie below a cursor: the client never saw it, so it comes once */
	if (IsLate(line, r->pos))
	{
		c->late_rows++;
		return;
	}
	if (r->pos <= CursorAt(e, r->node) && c->below_cursor++ < 5)
		printf("below: tag %llu topic %d line %d pos %lld cursor %lld epoch wave %llu live %d\n",
			   (unsigned long long) tag, t, line, (long long) r->pos,
			   (long long) CursorAt(e, r->node), (unsigned long long) e->wave, e->live);
	last = tag == 0 ? &c->last_live[line] : &WaveOf(c, tag)->last[line];
	if (r->pos <= *last)
		c->order_breaks++;
	*last = r->pos;
}

static void
See(Client *c, const SpEvent *ev)
{
	if (c->responses++ == 0)
		c->started_first = ev->type == SP_STARTED;
	switch (ev->type)
	{
		case SP_DELIVERY:
			for (size_t i = 0; i < ev->n_rows; i++)
				SeeRow(c, ev->tag, &ev->rows[i]);
			if (ev->tag)
				c->wave_rows += (long) ev->n_rows;
			else
				c->live_rows += (long) ev->n_rows;
			break;
		case SP_TOPICS_LIVE:
			c->topics_live_pending = true;
			c->topics_live_count = (int) ev->n_rows;
			for (size_t i = 0; i < ev->n_rows && i < TOPICS; i++)
				c->tl_topics[i] = TopicIndex(ev->rows[i].topic, ev->rows[i].topic_len);
			break;
		case SP_CATCHUP:
			if (ev->tag == 0)
			{
				/* the oldest waveless Mutate (a remove): its topics' earlier epochs end */
				int			slot = c->rm_head % 256;

				if (c->rm_head == c->rm_tail)
				{
					c->acks_bad++;
					break;
				}
				for (int i = 0; i < c->n_removes[slot]; i++)
					CloseTopic(c, c->removes_pending[slot][i], c->remove_mseq[slot]);
				c->rm_head++;
			}
			else
			{
				Wave	   *w = WaveOf(c, ev->tag);
				int			n_tl = c->topics_live_pending ? c->topics_live_count : 0;

				if (w == NULL || w->done)
				{
					c->acks_bad++;
					break;
				}
				w->done = true;
				/* TopicsLive names the topics going live: each has an open epoch of this wave */
				for (int i = 0; i < n_tl; i++)
				{
					Epoch	   *e = c->tl_topics[i] >= 0 && c->tl_topics[i] < TOPICS
						? EpochOf(c, c->tl_topics[i], w->id) : NULL;

					if (e == NULL)
					{
						c->topics_live_bad++;
						continue;
					}
					e->live = true;
					CloseTopic(c, e->topic, e->mseq);
					c->live_ep[e->topic] = (int) (e - c->epochs);
				}
				/* the wave's other topics were removed or re-added since it began */
				for (int i = 0; i < w->n_topics; i++)
				{
					Epoch	   *e = EpochOf(c, w->topics[i], w->id);

					if (e == NULL || e->live)
						continue;
					if (c->last_touch[e->topic] <= e->mseq)
						c->topics_live_bad++;
					e->closed = true;
				}
				for (int i = 0; i < w->n_topics; i++)
					if (c->last_touch[w->topics[i]] <= w->mseq)
						c->gated[w->topics[i]] = false;
			}
			c->topics_live_pending = false;
			break;
		default:
			break;
	}
}

/* Reads responses for ms milliseconds. */
static void
Pump(Client *c, int ms)
{
	struct timespec t0,
				t1;
	SpEvent		ev;
	long		spent = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (spent < ms && sp_next(&c->p, (int) (ms - spent), &ev))
	{
		See(c, &ev);
		sp_event_free(&ev);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		spent = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
	}
}

/* A random cursor: v3 an id floor; d14n a vector naming some originators. */
static size_t
RandomCursor(unsigned *seed, SpRow *cur, int64_t high)
{
	size_t		n = 0;

	if (!d14n)
	{
		cur[0].node = 0;
		cur[0].pos = rand_r(seed) % 2 ? 0 : rand_r(seed) % (high + 1);
		return 1;
	}
	for (int i = 0; i < NODES; i++)
		if (rand_r(seed) % 2)
		{
			cur[n].node = node_ids[i];
			cur[n++].pos = rand_r(seed) % (high / NODES + 1);
		}
	return n;
}

/* The next wave Mutate's record. */
static Wave *
NewWave(Client *c)
{
	Wave	   *w = &c->waves[c->n_waves++];

	memset(w, 0, sizeof(*w));
	w->id = ++c->next_mutate;
	w->mseq = ++c->sent;
	for (int l = 0; l < NODES; l++)
		w->last[l] = INT64_MIN;
	return w;
}

/* Sends a wave Mutate: removes (all re-added) then adds of topics ts. */
static void
WaveMutate(Client *c, const int *ts, int n, bool remove_first, unsigned *seed, int64_t high)
{
	SpCurAdd	adds[TOPICS];
	SpRow		curs[TOPICS][NODES];
	const unsigned char *rm[TOPICS];
	size_t		rm_len[TOPICS];
	Wave	   *w = NewWave(c);

	for (int i = 0; i < n; i++)
	{
		int			t = ts[i];

		adds[i].topic = topic_bytes[t];
		adds[i].len = topic_lens[t];
		adds[i].cursor = curs[i];
		adds[i].n_cursor = RandomCursor(seed, curs[i], high);
		if (!d14n)
			curs[i][0].node = topic_bytes[t][0];
		rm[i] = topic_bytes[t];
		rm_len[i] = topic_lens[t];
		OpenEpoch(c, t, w->id, curs[i], adds[i].n_cursor);
		w->topics[w->n_topics++] = t;
		c->subscribed[t] = true;
		c->gated[t] = true;
	}
	sp_mutate_cur(&c->p, adds, (size_t) n, rm, rm_len, remove_first ? (size_t) n : 0, false, w->id);
}

static void
RemoveMutate(Client *c, const int *ts, int n)
{
	const unsigned char *rm[TOPICS];
	size_t		rm_len[TOPICS];
	int			slot = c->rm_tail++ % 256;

	c->remove_mseq[slot] = ++c->sent;
	for (int i = 0; i < n; i++)
	{
		rm[i] = topic_bytes[ts[i]];
		rm_len[i] = topic_lens[ts[i]];
		c->removes_pending[slot][i] = ts[i];
		c->subscribed[ts[i]] = false;
		c->last_touch[ts[i]] = c->sent;
	}
	c->n_removes[slot] = n;
	sp_mutate_cur(&c->p, NULL, 0, rm, rm_len, (size_t) n, false, 0);
}

/* One random change of the topic set. */
static void
Change(Client *c, unsigned *seed, int64_t high)
{
	int			ts[TOPICS];
	int			n = 0;
	int			what = rand_r(seed) % 5 % 4;	/* adds twice as often */

	for (int t = 0; t < TOPICS && n < 4; t++)
	{
		int			pick = (t + (int) (rand_r(seed) % TOPICS)) % TOPICS;
		bool		ok;

		switch (what)
		{
			case 0:				/* add new topics */
				ok = !c->subscribed[pick];
				break;
			case 1:				/* remove (gated or live) */
				ok = c->subscribed[pick];
				break;
			case 2:				/* remove and re-add in one Mutate */
				ok = c->subscribed[pick];
				break;
			default:			/* re-add live topics below their position */
				ok = c->subscribed[pick] && !c->gated[pick] && c->live_ep[pick] >= 0
					&& c->epochs[c->live_ep[pick]].n_got > 0;
				break;
		}
		for (int i = 0; i < n && ok; i++)
			ok = ts[i] != pick;
		if (ok)
			ts[n++] = pick;
	}
	if (n == 0)
		return;
	if (what == 1)
		RemoveMutate(c, ts, n);
	else if (what == 3)
	{
		/* from nothing seen: always below a position that got rows */
		SpCurAdd	adds[4];
		SpRow		zero[4];
		Wave	   *w = NewWave(c);

		for (int i = 0; i < n; i++)
		{
			zero[i].node = topic_bytes[ts[i]][0];
			zero[i].pos = 0;
			adds[i] = (SpCurAdd) {topic_bytes[ts[i]], topic_lens[ts[i]], zero + i, d14n ? 0 : 1};
			OpenEpoch(c, ts[i], w->id, zero + i, adds[i].n_cursor);
			w->topics[w->n_topics++] = ts[i];
			c->gated[ts[i]] = true;
		}
		sp_mutate_cur(&c->p, adds, (size_t) n, NULL, NULL, 0, false, w->id);
	}
	else
		WaveMutate(c, ts, n, what == 2, seed, high);
}

static int
CmpKey(const void *a, const void *b)
{
	int64_t		x = *(const int64_t *) a,
				y = *(const int64_t *) b;

	return x < y ? -1 : x > y;
}

/* Messages of the final epochs delivered other than once; all epochs' repeats. */
static void
Account(PGconn *conn, Client *c, long *expected, int *missing, int *repeats)
{
	*expected = 0;
	*missing = *repeats = 0;
	for (int i = 0; i < c->n_epochs; i++)
	{
		Epoch	   *e = &c->epochs[i];

		if (e->n_got > 1)		/* an epoch that got nothing has no array */
			qsort(e->got, e->n_got, sizeof(int64_t), CmpKey);
		for (size_t j = 1; j < e->n_got; j++)
			*repeats += e->got[j] == e->got[j - 1];
	}
	for (int t = 0; t < TOPICS; t++)
	{
		Epoch	   *e;
		PGresult   *res;
		char		hex[32];
		const char *params[1] = {hex};

		if (!c->subscribed[t] || c->live_ep[t] < 0)
			continue;
		e = &c->epochs[c->live_ep[t]];
		for (size_t i = 0; i < topic_lens[t]; i++)
			snprintf(hex + 2 * i, 3, "%02x", topic_bytes[t][i]);
		res = tl_exec(conn, d14n
					  ? "SELECT originator_node_id, originator_sequence_id FROM xip83.envelopes"
					  " WHERE topic = decode($1, 'hex')"
					  : "SELECT get_byte(decode($1, 'hex'), 0), id FROM xip83.group_messages"
					  " WHERE get_byte(decode($1, 'hex'), 0) = 0 AND group_id = substr(decode($1, 'hex'), 2)"
					  " UNION ALL SELECT 1, id FROM xip83.welcome_messages"
					  " WHERE get_byte(decode($1, 'hex'), 0) = 1 AND installation_key = substr(decode($1, 'hex'), 2)",
					  1, params);
		for (int r = 0; r < PQntuples(res); r++)
		{
			int32_t		node = (int32_t) atol(PQgetvalue(res, r, 0));
			int64_t		pos = atoll(PQgetvalue(res, r, 1));
			int64_t		key = Key(d14n ? LineIndex(node) : node, pos);

			if (pos <= CursorAt(e, node))
				continue;
			(*expected)++;
			*missing += bsearch(&key, e->got, e->n_got, sizeof(int64_t), CmpKey) == NULL;
		}
		PQclear(res);
	}
}

static void
Race(PGconn *conn, const char *binding)
{
	Writer		writers[WRITERS];
	Writer		late_writer;
	pthread_t	late_thread;
	Client	   *c = calloc(1, sizeof(Client));
	unsigned	seed = 83;
	long		expected;
	int			missing,
				repeats,
				outstanding;
	int64_t		late_before = tl_scalar(conn, "SELECT late_writes FROM xip83.feed_status()");
	struct timespec t0,
				t1;

	d14n = strcmp(binding, "d14n") == 0;
	MakeTopics();
	atomic_store(&written, 0);
	atomic_store(&stop_writers, 0);
	n_late = 0;
	for (int n = 0; n < NODES; n++)
		next_seq[n] = 0;
	c->epochs = calloc(MAX_EPOCHS, sizeof(Epoch));
	c->waves = calloc(MAX_WAVES, sizeof(Wave));
	for (int t = 0; t < TOPICS; t++)
		c->live_ep[t] = -1;
	for (int l = 0; l < NODES; l++)
		c->last_live[l] = INT64_MIN;
	/* history: every topic has rows before the session starts */
	{
		Writer		w = {.conn = conn, .seed = 1};

		for (int i = 0; i < 200; i++)
			WriteOne(&w);
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < WRITERS; i++)
	{
		writers[i] = (Writer) {.conn = tl_connect(), .seed = 100 + (unsigned) i, .slow = true,
		.serial = 1000000L * (i + 1)};
		pthread_create(&writers[i].thread, NULL, WriterMain, &writers[i]);
	}
	late_writer = (Writer) {.conn = tl_connect(), .seed = 7};
	pthread_create(&late_thread, NULL, LateMain, &late_writer);
	sp_start(&c->p, argv0, binding, 30000);
	while (atomic_load(&written) < target)
	{
		int64_t		high = d14n ? next_seq[0] + next_seq[1] + next_seq[2]
			: atomic_load(&written);

		/* a change of the topic set every 100-300 ms */
		Pump(c, 100 + (int) (rand_r(&seed) % 200));
		if (c->n_waves < MAX_WAVES - 1 && c->rm_tail - c->rm_head < 200)
			Change(c, &seed, high);
	}
	atomic_store(&stop_writers, 1);
	for (int i = 0; i < WRITERS; i++)
	{
		pthread_join(writers[i].thread, NULL);
		PQfinish(writers[i].conn);
	}
	pthread_join(late_thread, NULL);
	PQfinish(late_writer.conn);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	/* every topic ends subscribed, so the final accounting covers them all */
	{
		int			ts[TOPICS],
					n = 0;

		for (int t = 0; t < TOPICS; t++)
			if (!c->subscribed[t])
				ts[n++] = t;
		if (n > 0)
			WaveMutate(c, ts, n, false, &seed, d14n ? next_seq[0] + next_seq[1] + next_seq[2]
					   : atomic_load(&written));
	}
	/* every wave acked, then every committed message of the final epochs */
	for (int tries = 0; tries < 300; tries++)
	{
		outstanding = c->rm_tail - c->rm_head;
		for (int i = 0; i < c->n_waves; i++)
			outstanding += !c->waves[i].done;
		if (outstanding == 0)
			break;
		Pump(c, 100);
	}
	for (int tries = 0; tries < 100; tries++)
	{
		Account(conn, c, &expected, &missing, &repeats);
		if (missing == 0)
			break;
		Pump(c, 100);
	}
	sp_close(&c->p);
	sp_finish_events(&c->p, 20000, (void (*) (void *, SpEvent *)) See, c);
	Account(conn, c, &expected, &missing, &repeats);
	printf("%s race: %ld messages written in %.1f s, %d epochs, %d waves, %ld wave rows,"
		   " %ld live rows, %ld late rows delivered; final epochs expect %ld\n",
		   binding, atomic_load(&written), (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9,
		   c->n_epochs, c->n_waves, c->wave_rows, c->live_rows, c->late_rows, expected);
	TL_CHECK(c->started_first, "%s: the first response is not Started", binding);
	TL_CHECK(outstanding == 0, "%s: %d Mutates never acked", binding, outstanding);
	TL_CHECK(expected > target / 4, "%s: final epochs expect only %ld messages", binding, expected);
	TL_CHECK(missing == 0, "%s: %d of %ld messages of the final epochs never delivered", binding,
			 missing, expected);
	TL_CHECK(repeats == 0, "%s: %d messages delivered twice within one epoch", binding, repeats);
	TL_CHECK(c->noise == 0, "%s: %d rows of topics never subscribed", binding, c->noise);
	TL_CHECK(c->stray == 0, "%s: %d wave rows outside an open epoch of that wave", binding,
			 c->stray);
	TL_CHECK(c->gate_breaks == 0, "%s: %d live rows outside a live epoch (before CatchupComplete"
			 " or after the removal was acked)", binding, c->gate_breaks);
	TL_CHECK(c->below_cursor == 0, "%s: %d rows at or below their epoch's cursor", binding,
			 c->below_cursor);
	TL_CHECK(c->order_breaks == 0, "%s: %d rows out of order in their lane", binding,
			 c->order_breaks);
	TL_CHECK(c->topics_live_bad == 0, "%s: %d waves without the right TopicsLive right before"
			 " CatchupComplete", binding, c->topics_live_bad);
	TL_CHECK(c->acks_bad == 0, "%s: %d CatchupComplete for no Mutate", binding, c->acks_bad);
	TL_CHECK(c->wave_rows > 0 && c->live_rows > 0, "%s: a lane unused", binding);
	TL_CHECK(c->late_rows > 0 && tl_scalar(conn, "SELECT late_writes FROM xip83.feed_status()") > late_before,
			 "%s: no late write reached the client: the late lane went untested", binding);
	TL_CHECK(strcmp(c->p.status, "OK") == 0 && c->p.exit_code == 0, "%s: close: STATUS %s",
			 binding, c->p.status);
	for (int i = 0; i < c->n_epochs; i++)
		free(c->epochs[i].got);
	free(c->epochs);
	free(c->waves);
	free(c);
}

int
main(int argc, char **argv)
{
	PGconn	   *conn = tl_connect();
	const char *env = getenv("XIP83_RACE_MESSAGES");

	(void) argc;
	argv0 = argv[0];
	target = env ? atol(env) : 100000;
	Race(conn, "v3");
	Race(conn, "d14n");
	PQfinish(conn);
	return tl_done("t_session_race");
}
