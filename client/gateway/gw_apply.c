/*
 * gw_apply.c: a stream's large Mutates applied a slice at a time between the
 * loop's other work (the session's mutate_slice), the requests that wait for
 * them, and what the streams' topics take in memory against the bounds per
 * connection and per process.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gw_internal.h"

/*
 * How long the slices of one turn of the loop (GW_MUTATE_SLICE topics each)
 * may take together: a Mutate of 100,000 adds takes about 100 slices (its
 * adds, then its wave's parameters), each short enough that other streams'
 * requests and rows go between them.
 */
#define APPLY_TURN_US 2000
/* Requests held while a Mutate is applied: beyond this the stream ends. */
#define HELD_MAX (2 * XIP83_MAX_REQUEST)
/*
 * The bounds of the topics' memory: per connection, and per process (that
 * fraction of the machine's memory; 1 GiB when it cannot be read).
 */
#define CONNECTION_TOPIC_BYTES ((size_t) 256 * 1024 * 1024)
/* the topics of every stream: a quarter of the machine (the transport's own bound is half) */
#define PROCESS_TOPIC_SHARE 4
#define PROCESS_TOPIC_BYTES ((size_t) 1024 * 1024 * 1024)
/*
 * What a topic of a stream costs beyond its identifier and lines (counted in
 * its set's bytes): its entry and the allocator's header, its hash slot, and
 * its subscription in the router's index; and a wave's copy of one.
 */
#define TOPIC_COST (sizeof(Xip83Topic) + 16 + 2 * sizeof(void *) + sizeof(GwSub))
#define WAVE_TOPIC_COST (16 + 3 * sizeof(void *))

void
gw_apply_defaults(Xip83GatewayOptions *opt)
{
	if (opt->max_connection_topic_bytes == 0)
		opt->max_connection_topic_bytes = CONNECTION_TOPIC_BYTES;
	if (opt->max_topic_bytes == 0)
	{
		size_t		machine = xip83_machine_memory();

		opt->max_topic_bytes = machine ? machine / PROCESS_TOPIC_SHARE : PROCESS_TOPIC_BYTES;
	}
}

/* ------------------------------------------------------------ topics' memory */

/* What a stream's topics take: its set, its index entries, its waves' copies and parameters. */
static size_t
TopicBytes(const Xip83Session *s)
{
	return s->topics.bytes + s->topics.count * TOPIC_COST
		+ s->topics.n_slots * sizeof(void *) + s->held_by_waves
		+ xip83_session_wave_topics(s) * WAVE_TOPIC_COST;
}

/*
 * Counts the stream's topics again: a stream that grew past its connection's
 * bound or the process's ends RESOURCE_EXHAUSTED, alone (a stream that
 * shrank never does).
 */
void
gw_count_topics(GwStream *st)
{
	Xip83Gateway *gw = st->gw;
	size_t		now = st->finished ? 0 : TopicBytes(st->s);
	size_t		was = st->topic_bytes;

	st->topic_bytes = now;
	gw->topic_bytes += now - was;
	st->client->topic_bytes += now - was;
	if (now <= was || st->s->failed)
		return;
	if (st->client->topic_bytes > gw->opt.max_connection_topic_bytes)
		xip83_session_fail(st->s, "RESOURCE_EXHAUSTED", "the topics of this connection's"
						   " streams take more than %zu bytes", gw->opt.max_connection_topic_bytes);
	else if (gw->topic_bytes > gw->opt.max_topic_bytes)
		xip83_session_fail(st->s, "RESOURCE_EXHAUSTED", "the gateway's streams' topics take"
						   " more than %zu bytes", gw->opt.max_topic_bytes);
	else
		return;
	gw->stats.topic_bound_ends++;
}

/* The record of a client connection, made with its first stream; NULL when out of memory. */
GwConn *
gw_conn_get(Xip83Gateway *gw, uint64_t serial)
{
	GwConn	  **slot = &gw->conns[serial % GW_CONN_SLOTS];
	GwConn	   *c;

	for (c = *slot; c != NULL; c = c->next)
		if (c->serial == serial)
			break;
	if (c == NULL && (c = calloc(1, sizeof(*c))) != NULL)
	{
		c->serial = serial;
		c->next = *slot;
		*slot = c;
	}
	if (c != NULL)
		c->streams++;
	return c;
}

void
gw_conn_release(Xip83Gateway *gw, GwConn *c)
{
	GwConn	  **p = &gw->conns[c->serial % GW_CONN_SLOTS];

	if (--c->streams > 0)
		return;
	while (*p != c)
		p = &(*p)->next;
	*p = c->next;
	free(c);
}

/* ------------------------------------------------------------ applying Mutates */

static void ApplyTurn(void *arg);

/* The stream has a Mutate to apply or requests held: a turn of its own soon. */
void
gw_apply_queue(GwStream *st)
{
	Xip83Gateway *gw = st->gw;

	if (st->applying || (st->finished && !st->reaping))
		return;
	st->applying = true;
	st->a_next = NULL;
	*(gw->a_tail ? &gw->a_tail->a_next : &gw->a_head) = st;
	gw->a_tail = st;
	if (!xip83_timer_running(&gw->apply_timer))
		(void) xip83_h2_timer_start(gw->srv, &gw->apply_timer, 0, ApplyTurn, gw);
}

void
gw_apply_unqueue(GwStream *st)
{
	Xip83Gateway *gw = st->gw;
	GwStream  **p = &gw->a_head;
	GwStream   *prev = NULL;

	if (!st->applying)
		return;
	while (*p != st)
	{
		prev = *p;
		p = &(*p)->a_next;
	}
	*p = st->a_next;
	if (gw->a_tail == st)
		gw->a_tail = prev;
	st->applying = false;
}

/* Keeps a request that came while a Mutate is applied; false when too much waits. */
bool
gw_hold(GwStream *st, const unsigned char *msg, size_t len)
{
	unsigned char *p;

	if (st->held_len - st->held_off + sizeof(len) + len > HELD_MAX)
		return xip83_session_fail(st->s, "RESOURCE_EXHAUSTED", "more than %d bytes of requests"
								  " wait for a Mutate to be applied", HELD_MAX);
	if ((p = realloc(st->held, st->held_len + sizeof(len) + len)) == NULL)
		return xip83_session_fail(st->s, "RESOURCE_EXHAUSTED", "out of memory");
	st->held = p;
	memcpy(p + st->held_len, &len, sizeof(len));
	memcpy(p + st->held_len + sizeof(len), msg, len);
	st->held_len += sizeof(len) + len;
	return true;
}

bool
gw_holding(const GwStream *st)
{
	return st->held_off < st->held_len;
}

void
gw_release_topics(GwStream *st)
{
	if (!xip83_topics_free_some(&st->s->topics, GW_MUTATE_SLICE))
	{
		st->reaping = true;
		gw_apply_queue(st);
	}
}

/*
 * A turn of the loop for the streams applying a Mutate: a slice each, or
 * their next request held, or a slice of a finished one's topics, in turn,
 * for APPLY_TURN_US at most; the others wait for the next turn.
 */
static void
ApplyTurn(void *arg)
{
	Xip83Gateway *gw = arg;
	struct timespec t0,
				t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;)
	{
		GwStream   *st = gw->a_head;

		if (st == NULL)
			break;
		gw->a_head = st->a_next;
		if (gw->a_head == NULL)
			gw->a_tail = NULL;
		st->applying = false;
		if (st->reaping)
		{
			if (!xip83_topics_free_some(&st->s->topics, GW_MUTATE_SLICE))
				gw_apply_queue(st);
			else
			{
				st->reaping = false;
				if (st->closed)
					gw->up->stream_free(st);
			}
		}
		else
		{
			if (st->s->applying != NULL)
				gw->up->request(st, NULL, 0);
			else if (gw_holding(st))
			{
				size_t		len;

				memcpy(&len, st->held + st->held_off, sizeof(len));
				st->held_off += sizeof(len) + len;
				gw->up->request(st, st->held + st->held_off - len, len);
				if (!gw_holding(st))
				{
					free(st->held);
					st->held = NULL;
					st->held_len = st->held_off = 0;
				}
			}
			gw_count_waves(st, st->s->n_waves);
			gw->up->check(st);
			gw_enqueue(st);
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000000 + (t.tv_nsec - t0.tv_nsec) / 1000 >= APPLY_TURN_US)
			break;
	}
	if (gw->a_head != NULL)
		(void) xip83_h2_timer_start(gw->srv, &gw->apply_timer, 0, ApplyTurn, gw);
	gw_schedule(gw);
}

