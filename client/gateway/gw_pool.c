/*
 * gw_pool.c: the gateway's waves on a pool of database connections.
 *
 * Streams with wave pages to read wait in a FIFO; a free connection takes
 * the head, sends its next page and goes back to the pool when the result is
 * in, and the stream goes to the back of the queue. A page never blocks the
 * loop: the connection's socket is watched until its result is whole.
 *
 * On a hot standby a page first waits until the server replayed what its
 * stream's wave ceilings need (the session's ceilings_lsn): those are the
 * feed's cursors, read from a standby that may since have restarted, and a
 * restarted standby accepts connections once consistent, which may be short
 * of where it had replayed to; a page read there would miss rows at or below
 * the ceilings. What a connection's server replayed is asked once and kept
 * until it reconnects, so a page pays a round trip only when its ceilings are
 * newer than that.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "gw_internal.h"

static void PoolReady(void *arg, uint32_t events);
static void ResetReady(void *arg, uint32_t events);
static void ResetRetry(void *arg);
static void GateReady(void *arg, uint32_t events);
static void GateRetry(void *arg);
static bool PrepareBegin(GwStream *st, PoolConn *c);
static void PrepareCollect(PoolConn *c);
static void PrepareReady(void *arg, uint32_t events);

void
gw_enqueue(GwStream *st)
{
	Xip83Gateway *gw = st->gw;

	if (st->queued || st->finished || st->conn || st->at_seam || st->s->n_waves == 0
		|| st->s->applying != NULL || gw->draining)
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

/* ------------------------------------------------------------ waves in flight */

void
gw_count_waves(GwStream *st, int n)
{
	Xip83Gateway *gw = st->gw;
	int			delta = n - st->waves;

	if (delta == 0)
		return;
	st->waves = n;
	gw->n_waves = (size_t) ((int64_t) gw->n_waves + delta);
	st->client->waves += delta;
	if (delta < 0 || st->s->failed)
		return;
	if (st->client->waves > XIP83_GATEWAY_CONN_WAVES)
		xip83_session_fail(st->s, "RESOURCE_EXHAUSTED", "more than %d waves in flight on one"
						   " connection", XIP83_GATEWAY_CONN_WAVES);
	else if (gw->n_waves > (size_t) gw->opt.max_waves)
		xip83_session_fail(st->s, "RESOURCE_EXHAUSTED", "more than %d waves in flight in the"
						   " gateway", gw->opt.max_waves);
	else
		return;
	gw->stats.waves_refused++;
}

/* ------------------------------------------------------------ the queue */

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

/* Takes every result of the query in flight on c (waiting for the rest of one begun). */
static void
Discard(PoolConn *c)
{
	PGresult   *res;

	while ((res = PQgetResult(c->conn)) != NULL)
		PQclear(res);
}

/*
 * Readies c for a query that must not block the loop: a wave page's
 * parameters can be megabytes (100,000 topics), which a blocking send
 * would push through the socket while every other stream waits.
 */
static void
NonBlocking(PoolConn *c)
{
	if (!PQisnonblocking(c->conn))
		(void) PQsetnonblocking(c->conn, 1);
}

/*
 * Watches c's socket for fire: readable, and writable while libpq still
 * holds some of the query, which then leaves as the socket takes it
 * (Written), between other clients' work.
 */
static bool
Await(PoolConn *c, Xip83WatchFn fire)
{
	c->writing = PQflush(c->conn) == 1;
	return xip83_h2_watch(c->gw->srv, &c->watch, PQsocket(c->conn),
						  EPOLLIN | (c->writing ? EPOLLOUT : 0), fire, c);
}

/* On a wake: more of the query written; false while some is left. */
static bool
Written(PoolConn *c, Xip83WatchFn fire)
{
	if (!c->writing)
		return true;
	if (PQflush(c->conn) == 1)
		return false;
	c->writing = false;
	/* its result is all that is waited for now (a failed change only wakes it more) */
	(void) xip83_h2_watch(c->gw->srv, &c->watch, PQsocket(c->conn), EPOLLIN, fire, c);
	return true;
}

static bool ResetBegin(PoolConn *c);

/*
 * Back to the pool. Only a connection with nothing in flight and every
 * result taken goes back: a page sent after a result left unread fails
 * ("another command is already in progress"), and so would every page of
 * every stream after it. One that is not idle (a path that left its result,
 * a bug) is reconnected instead, out of the pool until then, and counted.
 */
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
	if (PQstatus(c->conn) == CONNECTION_OK
		&& (PQisBusy(c->conn) || PQtransactionStatus(c->conn) != PQTRANS_IDLE))
	{
		gw->stats.pool_resets++;
		fprintf(stderr, "xip83-gateway: a wave connection came back with a query in flight"
				" or in a transaction: reconnecting it\n");
#ifdef XIP83_DEBUG
		abort();
#endif
		if (c->broken_ms == 0)
			c->broken_ms = xip83_now_ms();
		if (!ResetBegin(c))
			return;				/* back through ResetEnded */
		c->reset_failed = false;
	}
	c->next_free = gw->free_conns;
	gw->free_conns = c;
}

/*
 * How long waves wait for a broken connection to come back (a restart, a
 * crash recovery) before a failed reconnect fails the page of the stream
 * that waited for it, and how soon a failed reconnect is tried again.
 */
#define RECONNECT_GRACE_MS 30000
#define RECONNECT_RETRY_MS 250

/*
 * Advances a reconnect without blocking the loop: its socket is watched for
 * what libpq waits for, and a timer ends it at its connect timeout (a server
 * that accepts and never answers). A failed one is tried again after
 * RECONNECT_RETRY_MS while the connection has been broken for less than
 * RECONNECT_GRACE_MS. True when it ended, c->reset_failed saying how: a
 * failed one leaves the connection as a lost one is, so the next page run on
 * it fails its stream UNAVAILABLE, and the reconnect after that starts again.
 */
static bool
ResetStep(PoolConn *c)
{
	Xip83Gateway *gw = c->gw;
	PostgresPollingStatusType st = xip83_pg_step(&c->reset, 0);
	int			fd = PQsocket(c->conn);

	/* the reset closed the old socket, which left epoll with it */
	if (fd != c->watch.fd)
		c->watch.fd = -1;
	if ((st == PGRES_POLLING_READING || st == PGRES_POLLING_WRITING) &&
		xip83_h2_watch(gw->srv, &c->watch, fd,
					   st == PGRES_POLLING_READING ? EPOLLIN : EPOLLOUT, ResetReady, c))
		return false;
	xip83_h2_timer_stop(gw->srv, &c->reset_timer);
	xip83_h2_unwatch(gw->srv, &c->watch);
	c->reset.conn = NULL;
	if (st == PGRES_POLLING_OK)
		c->broken_ms = 0;
	else if (xip83_now_ms() - c->broken_ms < RECONNECT_GRACE_MS &&
			 xip83_h2_timer_start(gw->srv, &c->reset_timer, RECONNECT_RETRY_MS, ResetRetry, c))
		return false;
	c->reset_failed = st != PGRES_POLLING_OK;
	return true;
}

/* Ended: the connection is back in the pool for the waves that wait. */
static void
ResetEnded(PoolConn *c)
{
	Release(c);
	gw_schedule(c->gw);
	/* a failure fails the page of a stream that waited for it, no later one */
	c->reset_failed = false;
}

/* The socket or the deadline of a reconnect. */
static void
ResetReady(void *arg, uint32_t events)
{
	PoolConn   *c = arg;

	(void) events;
	if (ResetStep(c))
		ResetEnded(c);
}

static void
ResetDeadline(void *arg)
{
	ResetReady(arg, 0);
}

static void
ResetRetry(void *arg)
{
	PoolConn   *c = arg;

	if (ResetBegin(c))
		ResetEnded(c);
}

/* Starts a reconnect of c; true when it ended at once (ResetStep). */
static bool
ResetBegin(PoolConn *c)
{
	Xip83Gateway *gw = c->gw;

	c->prepared = 0;
	c->replayed = 0;
	/* one refused at once is a failed attempt like any other (ResetStep) */
	(void) xip83_pg_start_reset(&c->reset, c->conn);
	(void) xip83_h2_timer_start(gw->srv, &c->reset_timer,
								(uint64_t) (c->reset.deadline_ms - xip83_now_ms()) + 1,
								ResetDeadline, c);
	return ResetStep(c);
}

/*
 * Whether an idle connection is usable now. A server that restarted left it
 * an EOF only reading notices: the first read may take the server's goodbye,
 * the second its EOF. Such a connection is reconnected in the background
 * (false: it is out of the pool until then); a new backend has none of the
 * prepared statements.
 */
static bool
Revive(PoolConn *c)
{
	for (int i = 0; i < 2 && PQstatus(c->conn) == CONNECTION_OK; i++)
		(void) PQconsumeInput(c->conn);
	if (PQstatus(c->conn) == CONNECTION_OK || c->reset_failed)
	{
		c->reset_failed = false;
		return true;
	}
	if (c->broken_ms == 0)
		c->broken_ms = xip83_now_ms();
	if (!ResetBegin(c))
		return false;
	/* ended at once: usable, or the page fails now */
	c->reset_failed = false;
	return true;
}

/* One wave page of st on c: sent, and c watched until its result is in. */
static void
Step(GwStream *st, PoolConn *c)
{
	Xip83Session *s = st->s;

	NonBlocking(c);
	s->wave_conn = c->conn;
	s->wave_prepared = &c->prepared;
	(void) xip83_wave_step(s);
	gw_count_waves(st, s->n_waves);
	/* a wave that ended fetched the feed: other streams got live rows */
	st->gw->up->flush_dirty(st->gw);
	if (s->ahead != NULL)
	{
		c->owner = st;
		c->busy = true;
		st->conn = c;
		if (!Await(c, PoolReady))
		{
			/* the page is waited for here, and dropped with its stream */
			xip83_session_fail(s, "UNAVAILABLE", "cannot watch a database socket");
			s->ahead = NULL;
			st->conn = NULL;
			Discard(c);
			Release(c);
		}
	}
	else
		Release(c);
	st->gw->up->check(st);
}

/* ---------------------------------------------------------------- replay gate */

/* How often a page waiting for replay asks again. */
#define GATE_RETRY_MS 10

static void GateEnd(PoolConn *c, const char *failure);

/* Asks c's server how far it replayed, for st. */
static void
GateAsk(GwStream *st, PoolConn *c)
{
	c->owner = st;
	c->busy = true;
	st->conn = c;
	if (c->gate_since == 0)
		c->gate_since = xip83_now_ms();
	NonBlocking(c);
	if (PQsendQuery(c->conn, "SELECT pg_is_in_recovery(), pg_last_wal_replay_lsn()"))
	{
		if (Await(c, GateReady))
			return;
		Discard(c);
	}
	/* a connection lost meanwhile is reconnected; any other failure would repeat */
	GateEnd(c, PQstatus(c->conn) == CONNECTION_OK ? "cannot ask the hot standby how far it replayed"
			: NULL);
}

/*
 * The wait ends without a page: c goes back to the pool, and its stream
 * (failed with failure, when set) to the queue. A lost connection is
 * reconnected when it is next taken (Revive).
 */
static void
GateEnd(PoolConn *c, const char *failure)
{
	GwStream   *st = c->owner;

	xip83_h2_timer_stop(c->gw->srv, &c->gate_timer);
	c->gate_since = 0;
	Release(c);
	if (st == NULL)
		return;
	st->conn = NULL;
	if (failure)
		xip83_session_fail(st->s, "UNAVAILABLE", "%s", failure);
	st->gw->up->check(st);
	gw_enqueue(st);
}

/* The answer: the page runs, or asks again in a moment. */
static void
GateReady(void *arg, uint32_t events)
{
	PoolConn   *c = arg;
	GwStream   *st = c->owner;
	PGresult   *res;
	bool		asked;

	(void) events;
	if (!Written(c, GateReady))
		return;
	if (PQconsumeInput(c->conn) && PQisBusy(c->conn))
		return;
	res = PQgetResult(c->conn);
	asked = PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1;
	if (asked)
		c->replayed = strcmp(PQgetvalue(res, 0, 0), "t") != 0 ? UINT64_MAX
			: xip83_pg_lsn(PQgetvalue(res, 0, 1));
	PQclear(res);
	while ((res = PQgetResult(c->conn)) != NULL)
		PQclear(res);
	if (PQsocket(c->conn) != c->watch.fd)
		c->watch.fd = -1;
	xip83_h2_unwatch(c->gw->srv, &c->watch);
	if (st != NULL && (st->finished || st->s->n_waves == 0))
		GateEnd(c, NULL);		/* nothing to read any more */
	else if (st != NULL && asked && c->replayed >= st->s->ceilings_lsn)
	{
		c->gate_since = 0;
		c->owner = NULL;
		c->busy = false;
		st->conn = NULL;
		Step(st, c);
		gw_enqueue(st);
	}
	else if (st == NULL || !asked)
		GateEnd(c, st != NULL && PQstatus(c->conn) == CONNECTION_OK
				? "cannot ask the hot standby how far it replayed" : NULL);
	else if (xip83_now_ms() - c->gate_since > RECONNECT_GRACE_MS)
		GateEnd(c, "the hot standby has not replayed up to the wave's ceilings");
	else if (!xip83_h2_timer_start(c->gw->srv, &c->gate_timer, GATE_RETRY_MS, GateRetry, c))
		GateEnd(c, "cannot start a timer");
	gw_schedule(c->gw);
}

static void
GateRetry(void *arg)
{
	PoolConn   *c = arg;

	if (c->owner == NULL)
		GateEnd(c, NULL);
	else
		GateAsk(c->owner, c);
	gw_schedule(c->gw);
}

/*
 * A wave connection's socket is readable: its page may be in. The result is
 * taken whatever became of its stream (closed, ended, failed, paused): into
 * its wave, or dropped.
 */
static void
PoolReady(void *arg, uint32_t events)
{
	PoolConn   *c = arg;
	GwStream   *st = c->owner;

	(void) events;
	if (!Written(c, PoolReady))
		return;
	/* a lost connection's page is asked again (redo_lost_pages) once it is back */
	if (PQconsumeInput(c->conn) && PQisBusy(c->conn))
		return;
	if (st != NULL)
	{
		st->conn = NULL;
		st->s->wave_conn = c->conn;
		if (st->s->ahead != NULL && !st->s->failed && !st->finished)
			xip83_wave_conn_idle(st->s);
		/* a stream that ended reads no more pages: its page goes */
		st->s->ahead = NULL;
	}
	Discard(c);
	if (!PrepareBegin(st, c))
		Release(c);
	if (st)
	{
		st->gw->up->check(st);
		gw_enqueue(st);
	}
	gw_schedule(c->gw);
}

/*
 * The page that just came in went out unnamed, its statement not prepared
 * here yet: c prepares it now, without blocking, and comes back to the pool
 * when that is done (PrepareReady). True when c is doing that.
 */
static bool
PrepareBegin(GwStream *st, PoolConn *c)
{
	int			stmt;

	if (st == NULL || st->s->unprepared_sql == NULL)
		return false;
	if (st->finished || st->s->failed)
	{
		st->s->unprepared_sql = NULL;
		return false;
	}
	if (PQstatus(c->conn) != CONNECTION_OK || (c->prepared & (1u << st->s->unprepared_stmt)))
	{
		st->s->unprepared_sql = NULL;
		return false;
	}
	NonBlocking(c);
	if ((stmt = xip83_wave_prepare_send(st->s, c->conn)) < 0)
		return false;
	c->owner = NULL;
	c->busy = true;
	c->preparing = stmt;
	if (Await(c, PrepareReady))
		return true;
	/* epoll refused the socket: the prepare's result is waited for here */
	PrepareCollect(c);
	return false;
}

/* Takes the prepare's result (waiting for it if it is not whole). */
static void
PrepareCollect(PoolConn *c)
{
	PGresult   *res;
	bool		ok = false;

	while ((res = PQgetResult(c->conn)) != NULL)
	{
		ok = ok || PQresultStatus(res) == PGRES_COMMAND_OK;
		PQclear(res);
	}
	if (ok)
		c->prepared |= 1u << c->preparing;
	c->busy = false;
}

static void
PrepareReady(void *arg, uint32_t events)
{
	PoolConn   *c = arg;

	(void) events;
	if (!Written(c, PrepareReady))
		return;
	if (PQconsumeInput(c->conn) && PQisBusy(c->conn))
		return;
	PrepareCollect(c);
	Release(c);
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
		if (!Revive(c))
		{
			/* the stream waits for a connection that works */
			gw_enqueue(st);
			continue;
		}
		/* a connection Revive left broken fails or redoes the page (Step) */
		if (st->s->ceilings_lsn > c->replayed && PQstatus(c->conn) == CONNECTION_OK)
		{
			GateAsk(st, c);
			continue;
		}
		Step(st, c);
		gw_enqueue(st);
	}
}

static PGconn *
Connect(const char *conninfo, char *err, size_t errlen)
{
	PGconn	   *conn = xip83_pg_connect(conninfo, "xip83-gateway");

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
