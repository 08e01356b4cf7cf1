/*
 * gw_pool.c: the gateway's waves on a pool of database connections.
 *
 * Streams with wave pages to read wait in a FIFO; a free connection takes
 * the head, sends its next page and goes back to the pool when the result is
 * in, and the stream goes to the back of the queue. A page never blocks the
 * loop: the connection's socket is watched until its result is whole.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>

#include "gw_internal.h"

static void PoolReady(void *arg, uint32_t events);

void
gw_enqueue(GwStream *st)
{
	Xip83Gateway *gw = st->gw;

	if (st->queued || st->finished || st->conn || st->at_seam || st->s->n_waves == 0
		|| gw->draining)
		return;
	st->queued = true;
	st->q_next = NULL;
	st->q_prev = gw->q_tail;
	*(gw->q_tail ? &gw->q_tail->q_next : &gw->q_head) = st;
	gw->q_tail = st;
}

void
gw_unqueue(GwStream *st)
{
	Xip83Gateway *gw = st->gw;

	if (!st->queued)
		return;
	*(st->q_prev ? &st->q_prev->q_next : &gw->q_head) = st->q_next;
	*(st->q_next ? &st->q_next->q_prev : &gw->q_tail) = st->q_prev;
	st->queued = false;
}

static GwStream *
Dequeue(Xip83Gateway *gw)
{
	GwStream   *st = gw->q_head;

	if (st == NULL)
		return NULL;
	gw->q_head = st->q_next;
	*(gw->q_head ? &gw->q_head->q_prev : &gw->q_tail) = NULL;
	st->queued = false;
	return st;
}

static void
Release(PoolConn *c)
{
	Xip83Gateway *gw = c->gw;

	/* a socket libpq closed (lost connection) left epoll by itself */
	if (PQsocket(c->conn) != c->watch.fd)
		c->watch.fd = -1;
	xip83_h2_unwatch(gw->srv, &c->watch);
	c->owner = NULL;
	c->busy = false;
	c->next_free = gw->free_conns;
	gw->free_conns = c;
}

/*
 * Makes an idle connection usable: a server that restarted left it an EOF
 * only reading notices, so it is reset here (waiting, as the feed's
 * reconnects do) rather than failing the next query. The first read may
 * take the server's goodbye, the second its EOF. A new backend has none of
 * the prepared statements.
 */
static void
Revive(PoolConn *c)
{
	for (int i = 0; i < 2 && PQstatus(c->conn) == CONNECTION_OK; i++)
		(void) PQconsumeInput(c->conn);
	if (PQstatus(c->conn) != CONNECTION_OK)
	{
		PQreset(c->conn);
		c->prepared = 0;
	}
}

/* One wave page of st on c: sent, and c watched until its result is in. */
static void
Step(GwStream *st, PoolConn *c)
{
	Xip83Session *s = st->s;

	s->wave_conn = c->conn;
	s->wave_prepared = &c->prepared;
	(void) xip83_wave_step(s);
	/* a wave that ended fetched the feed: other streams got live rows */
	gw_flush_dirty(st->gw);
	if (s->ahead != NULL)
	{
		c->owner = st;
		c->busy = true;
		st->conn = c;
		if (!xip83_h2_watch(st->gw->srv, &c->watch, PQsocket(c->conn), EPOLLIN, PoolReady, c))
			xip83_session_fail(s, "UNAVAILABLE", "cannot watch a database socket");
	}
	else
		Release(c);
	gw_check(st);
}

/* A wave connection's socket is readable: its page may be in. */
static void
PoolReady(void *arg, uint32_t events)
{
	PoolConn   *c = arg;
	GwStream   *st = c->owner;

	if (!PQconsumeInput(c->conn))
	{
		if (st)
			xip83_session_fail(st->s, "UNAVAILABLE", "wave connection: %s",
							   PQerrorMessage(c->conn));
	}
	else if (PQisBusy(c->conn))
		return;
	if (st == NULL)
	{
		/* its stream went away: the result is dropped */
		PGresult   *res;

		while ((res = PQgetResult(c->conn)) != NULL)
			PQclear(res);
	}
	else
	{
		st->s->wave_conn = c->conn;
		if (st->s->ahead != NULL && !st->s->failed)
			xip83_wave_conn_idle(st->s);
		st->conn = NULL;
	}
	Release(c);
	if (st)
	{
		gw_check(st);
		gw_enqueue(st);
	}
	gw_schedule(c->gw);
}

void
gw_schedule(Xip83Gateway *gw)
{
	while (gw->free_conns && gw->q_head)
	{
		GwStream   *st = Dequeue(gw);
		PoolConn   *c;

		if (st->finished || st->s->n_waves == 0)
			continue;
		if (st->h2 && xip83_h2_pending(st->h2) > WAVE_PAUSE)
		{
			st->paused = true;	/* back in the queue when it drains (Writable) */
			continue;
		}
		c = gw->free_conns;
		gw->free_conns = c->next_free;
		Revive(c);
		Step(st, c);
		gw_enqueue(st);
	}
}

static PGconn *
Connect(const char *conninfo, char *err, size_t errlen)
{
	const char *const keys[] = {"dbname", "fallback_application_name", NULL};
	const char *const values[] = {conninfo, "xip83-gateway", NULL};
	PGconn	   *conn = PQconnectdbParams(keys, values, 1);

	if (PQstatus(conn) != CONNECTION_OK)
	{
		snprintf(err, errlen, "cannot connect: %s", PQerrorMessage(conn));
		PQfinish(conn);
		return NULL;
	}
	return conn;
}


bool
gw_pool_open(Xip83Gateway *gw, char *err, size_t errlen)
{
	if ((gw->pool = calloc((size_t) gw->opt.pool, sizeof(PoolConn))) == NULL)
	{
		snprintf(err, errlen, "out of memory");
		return false;
	}
	for (int i = 0; i < gw->opt.pool; i++)
	{
		PoolConn   *c = &gw->pool[i];

		c->gw = gw;
		c->watch.fd = -1;
		if ((c->conn = Connect(gw->opt.standby_conninfo ? gw->opt.standby_conninfo
							   : gw->opt.conninfo, err, errlen)) == NULL)
			return false;
		c->next_free = gw->free_conns;
		gw->free_conns = c;
	}
	return true;
}

void
gw_pool_close(Xip83Gateway *gw)
{
	for (int i = 0; gw->pool && i < gw->opt.pool; i++)
		PQfinish(gw->pool[i].conn);
	free(gw->pool);
	gw->pool = NULL;
}
