/*
 * feed.c: the xip83 live feed over libpq (see feed.h for the contract).
 *
 * One connection, autocommit only: LISTEN xip83_live, then single-statement
 * live fetches, so the session is never idle in a transaction and never
 * holds the notification queue's tail. The loop: poll() on PQsocket with a
 * timeout, PQconsumeInput, drain PQnotifies, then fetch page by page for
 * every kind: late rows the feed passed, then (cursor, horizon].
 *
 * A notice is only a wake-up: any role can NOTIFY xip83_live, so nothing in
 * a notice moves a cursor, adds an originator or changes a limit. Positions
 * come from the fetches, originators from xip83.envelope_horizons() (kept in
 * a table that grows as needed, so there is no limit to disagree on). Only
 * notices sent by the notifier's own backend (PGnotify.be_pid, set by the
 * server, equal to feed_status.notifier_pid) count for availability; others
 * just trigger a fetch. Offline (no notifier notice heard recently, STOPPING,
 * lost connection) it polls on a timer and reconnects with doubling backoff;
 * the cursors live here, so a restart of the server or of the notifier loses
 * and repeats nothing.
 *
 * With a standby (feed.h), a second connection reads the rows: each round
 * reads a kind's horizons and fence on the primary first, then pages from
 * the standby up to them. A conninfo in recovery is polled, and asked on
 * every poll whether it was promoted; a fenced feed asks its standby the
 * same when the primary cannot be reached, and serves from it alone once it
 * was.
 */
#include "feed_internal.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xip83/live_notice.pb-c.h"

/* Tells the caller about a status change. */
void
FeedStatus(Xip83Feed *f, const char *status, const char *detail)
{
	if (f->opt.on_status)
		f->opt.on_status(f->opt.arg, status, detail);
}

static void CheckNotifierPid(Xip83Feed *f);

/* Becomes offline (reported once per outage). */
static void
GoOffline(Xip83Feed *f, const char *why)
{
	f->live = false;
	if (!f->offline_reported)
	{
		f->offline_reported = true;
		FeedStatus(f, "offline", why);
	}
}

Xip83Feed *
xip83_feed_new(const Xip83FeedOptions *options)
{
	Xip83Feed  *f = calloc(1, sizeof(Xip83Feed));

	if (f == NULL)
		return NULL;
	f->opt = *options;
	if (f->opt.conninfo == NULL)
		f->opt.conninfo = "";
	if (f->opt.kinds == 0)
		f->opt.kinds = XIP83_FEED_ALL;
	if (f->opt.application_name == NULL)
		f->opt.application_name = "xip83-feed";
	if (f->opt.page_rows <= 0)
		f->opt.page_rows = 1000;
	if (f->opt.poll_ms <= 0)
		f->opt.poll_ms = 50;
	if (f->opt.offline_after_ms <= 0)
		f->opt.offline_after_ms = 3000;
	if (f->opt.max_backoff_ms <= 0)
		f->opt.max_backoff_ms = 2000;
	f->backoff_ms = 50;
	f->last_notice_ms = xip83_now_ms();
	return f;
}

void
xip83_feed_free(Xip83Feed *f)
{
	if (f == NULL)
		return;
	if (f->conn)
		PQfinish(f->conn);
	if (f->standby)
		PQfinish(f->standby);
	if (f->pending.conn)
		PQfinish(f->pending.conn);
	if (f->pending_standby.conn)
		PQfinish(f->pending_standby.conn);
	if (f->primary_up)
		PQfinish(f->primary_up);
	free(f->fenced.originators);
	free(f->scratch);
	free(f->originators);
	free(f);
}

/*
 * The cursor slot of an originator, added at -1 when new (nothing seen: a
 * chain originator's first sequence id is 0); NULL when out of memory.
 */
OriginatorCursor *
FeedOriginator(Xip83Feed *f, int32_t node)
{
	for (int i = 0; i < f->n_originators; i++)
		if (f->originators[i].node == node)
			return &f->originators[i];
	if (f->n_originators == f->cap_originators)
	{
		int			cap = f->cap_originators ? f->cap_originators * 2 : 16;
		OriginatorCursor *p = realloc(f->originators, sizeof(OriginatorCursor) * cap);

		if (p == NULL)
			return NULL;
		f->originators = p;
		f->cap_originators = cap;
	}
	f->originators[f->n_originators].node = node;
	f->originators[f->n_originators].after = -1;
	return &f->originators[f->n_originators++];
}

void
xip83_feed_set_cursor(Xip83Feed *f, int kind, int32_t node, int64_t after)
{
	OriginatorCursor *c;

	if (kind == XIP83_FEED_GROUP)
		f->group_after = after;
	else if (kind == XIP83_FEED_WELCOME)
		f->welcome_after = after;
	else if ((c = FeedOriginator(f, node)) != NULL)
		c->after = after;
}

int64_t
xip83_feed_cursor(const Xip83Feed *f, int kind, int32_t node)
{
	if (kind == XIP83_FEED_GROUP)
		return f->group_after;
	if (kind == XIP83_FEED_WELCOME)
		return f->welcome_after;
	for (int i = 0; i < f->n_originators; i++)
		if (f->originators[i].node == node)
			return f->originators[i].after;
	return -1;
}

int
xip83_feed_originators(const Xip83Feed *f, int32_t *nodes, int64_t *afters, int max)
{
	for (int i = 0; i < f->n_originators && i < max; i++)
	{
		nodes[i] = f->originators[i].node;
		afters[i] = f->originators[i].after;
	}
	return f->n_originators;
}

bool
xip83_feed_is_live(const Xip83Feed *f)
{
	return f->live;
}

int
xip83_feed_socket(const Xip83Feed *f)
{
	return f->conn ? PQsocket(f->conn) : -1;
}

int64_t
xip83_feed_rows(const Xip83Feed *f)
{
	return f->rows;
}

/* Drops the connections; the next step reconnects after the backoff. */
static void
Disconnect(Xip83Feed *f, const char *why)
{
	if (f->conn)
		PQfinish(f->conn);
	if (f->standby)
		PQfinish(f->standby);
	if (f->primary_up)
		PQfinish(f->primary_up);
	if (f->pending_standby.conn)
		PQfinish(f->pending_standby.conn);
	f->conn = NULL;
	f->standby = NULL;
	f->primary_up = NULL;
	f->pending_standby.conn = NULL;
	f->next_connect_ms = xip83_now_ms() + f->backoff_ms;
	f->backoff_ms = f->backoff_ms * 2 > f->opt.max_backoff_ms ? f->opt.max_backoff_ms
		: f->backoff_ms * 2;
	GoOffline(f, why);
}

/* Whether a failed result means the connection (or server) went away. */
static bool
ConnectionLost(Xip83Feed *f, const PGresult *res)
{
	const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;

	return PQstatus(f->conn) != CONNECTION_OK ||
		(f->standby != NULL && PQstatus(f->standby) != CONNECTION_OK) || state == NULL ||
		strncmp(state, "08", 2) == 0 || strncmp(state, "57", 2) == 0;
}

/* Server notices (and the FATAL of a shutdown) are not the feed's output. */
static void
IgnoreNotice(void *arg, const char *message)
{
	(void) arg;
	(void) message;
}

/* Handles a failed query: -1 when the connection went (it is dropped), -2 otherwise. */
int
FeedQueryFailed(Xip83Feed *f, PGresult *res)
{
	bool		lost = ConnectionLost(f, res);

	if (!lost)
		fprintf(stderr, "xip83 feed: %s",
				res && *PQresultErrorMessage(res) ? PQresultErrorMessage(res)
				: PQerrorMessage(f->conn));
	PQclear(res);
	if (lost)
		Disconnect(f, "connection lost");
	return lost ? -1 : -2;
}

/*
 * LISTENs (autocommit: committed before any read that follows) and looks up
 * the notifier; false (disconnected) when it fails.
 */
static bool
Listen(Xip83Feed *f)
{
	PGresult   *res = PQexec(f->conn, "LISTEN xip83_live");

	if (PQresultStatus(res) != PGRES_COMMAND_OK)
	{
		PQclear(res);
		Disconnect(f, "cannot listen");
		return false;
	}
	PQclear(res);
	f->pid_checked_ms = 0;
	CheckNotifierPid(f);
	return true;
}

int
FeedServerInRecovery(PGconn *conn)
{
	PGresult   *res = PQexec(conn, "SELECT pg_is_in_recovery()");
	int			rc = -1;

	if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1)
		rc = strcmp(PQgetvalue(res, 0, 0), "t") == 0;
	PQclear(res);
	return rc;
}

/*
 * Whether conninfo's server is in recovery: 1 yes, 0 no, -1 unknown
 * (disconnected).
 */
static int
InRecovery(Xip83Feed *f)
{
	int			rc = FeedServerInRecovery(f->conn);

	if (rc < 0)
		Disconnect(f, "connection lost");
	return rc;
}

/*
 * A fenced feed whose standby was promoted: conn, a connection to it,
 * becomes the feed's only one, and the promoted server its conninfo from now
 * on (a primary that comes back later is the old timeline). The cursors
 * stay, as when a standby polled alone is promoted: every fenced round read
 * on the standby after replay passed its fence, so nothing at or below them
 * is missing there, and the late cursors came from its own replayed ring.
 * Returns false when the LISTEN failed (disconnected: the next connect finds
 * the promoted server as conninfo).
 */
static bool
ServePromoted(Xip83Feed *f, PGconn *conn)
{
	if (f->conn != NULL && f->conn != conn)
		PQfinish(f->conn);
	if (f->standby != NULL && f->standby != conn)
		PQfinish(f->standby);
	f->conn = conn;
	f->standby = NULL;
	f->opt.conninfo = f->opt.standby_conninfo;
	f->opt.standby_conninfo = NULL;
	f->in_recovery = false;
	f->round_missed = false;
	PQsetNoticeProcessor(f->conn, IgnoreNotice, NULL);
	if (!Listen(f))
		return false;
	f->backoff_ms = 50;
	FeedStatus(f, "promoted", "the standby became a primary: serving from it alone");
	return true;
}

/* A session setting in ms, when the option is set (0: the server's). */
static void
SetMs(PGconn *conn, const char *name, int ms)
{
	char		value[16];
	const char *params[2] = {name, value};
	PGresult   *res;

	if (ms <= 0 || PQstatus(conn) != CONNECTION_OK)
		return;
	snprintf(value, sizeof(value), "%d", ms);
	res = PQexecParams(conn, "SELECT set_config($1, $2, false)", 2, NULL, params, NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
		fprintf(stderr, "xip83 feed: %s", PQerrorMessage(conn));
	PQclear(res);
}

/*
 * A fenced feed that cannot reach its primary asks the standby (conn, just
 * connected) whether it was promoted: 1 it was and the feed serves from it
 * now, 0 it was not (or is unreachable too), -1 it was but the LISTEN there
 * failed.
 */
static int
StandbyPromoted(Xip83Feed *f, PGconn *conn)
{
	if (PQstatus(conn) != CONNECTION_OK || FeedServerInRecovery(conn) != 0)
	{
		PQfinish(conn);
		return 0;
	}
	SetMs(conn, "lock_timeout", f->opt.lock_timeout_ms);
	return ServePromoted(f, conn) ? 1 : -1;
}

bool
FeedFollowStandby(Xip83Feed *f)
{
	return ServePromoted(f, f->standby);
}

/*
 * Advances a connect without waiting longer than wait_ms: the connection
 * once it ended (PQstatus says how), NULL while it goes on. A server that
 * accepts and never answers holds no caller longer than it was told.
 */
static PGconn *
ConnectStep(Xip83PgStart *pending, int wait_ms)
{
	PGconn	   *conn = pending->conn;

	if (xip83_pg_step(pending, wait_ms) != PGRES_POLLING_OK &&
		pending->wants != PGRES_POLLING_FAILED)
		return NULL;
	pending->conn = NULL;
	return conn;
}

/*
 * Connects and LISTENs, or, when conninfo is a standby (which cannot
 * LISTEN), only connects: the feed polls it. With a standby, its connect
 * follows the primary's, as one more step. Each connect waits at most
 * wait_ms (-1: until it ends or times out); false while they go on.
 */
static bool
Connect(Xip83Feed *f, int wait_ms)
{
	PGconn	   *conn;

	if (f->pending.conn == NULL && f->pending_standby.conn == NULL)
	{
		if (xip83_now_ms() < f->next_connect_ms)
			return false;
		if (!xip83_pg_start(&f->pending, f->opt.conninfo, f->opt.application_name)
			&& f->pending.conn == NULL)
		{
			Disconnect(f, "out of memory");
			return false;
		}
	}
	if (f->pending.conn != NULL)
	{
		if ((conn = ConnectStep(&f->pending, wait_ms)) == NULL)
			return false;
		if (PQstatus(conn) != CONNECTION_OK)
		{
			PQfinish(conn);
			if (f->opt.standby_conninfo == NULL)
			{
				Disconnect(f, "cannot connect");
				return false;
			}
			/* unreachable: the standby is asked whether it was promoted (primary_up NULL) */
		}
		else
		{
			PQsetNoticeProcessor(conn, IgnoreNotice, NULL);
			SetMs(conn, "lock_timeout", f->opt.lock_timeout_ms);
			*(f->opt.standby_conninfo != NULL ? &f->primary_up : &f->conn) = conn;
		}
		if (f->opt.standby_conninfo != NULL &&
			!xip83_pg_start(&f->pending_standby, f->opt.standby_conninfo, f->opt.application_name)
			&& f->pending_standby.conn == NULL)
		{
			Disconnect(f, "out of memory");
			return false;
		}
	}
	if (f->opt.standby_conninfo != NULL)
	{
		if ((conn = ConnectStep(&f->pending_standby, wait_ms)) == NULL)
			return false;
		if (f->primary_up == NULL)
		{
			int			promoted = StandbyPromoted(f, conn);

			if (promoted == 0)
				Disconnect(f, "cannot connect");
			return promoted == 1;
		}
		f->conn = f->primary_up;
		f->primary_up = NULL;
		f->standby = conn;
		if (PQstatus(conn) != CONNECTION_OK)
		{
			Disconnect(f, "cannot connect to the standby");
			return false;
		}
		PQsetNoticeProcessor(conn, IgnoreNotice, NULL);
		/* the fetch blocks its caller while it waits: the caller bounds that */
		SetMs(conn, "xip83.standby_wait_ms", f->opt.fence_wait_ms);
		SetMs(conn, "lock_timeout", f->opt.lock_timeout_ms);
		f->in_recovery = false;
	}
	else
	{
		int			rc = InRecovery(f);

		if (rc < 0)
			return false;
		f->in_recovery = rc == 1;
	}
	if (!f->in_recovery && !Listen(f))
		return false;
	f->backoff_ms = 50;
	return true;
}

/*
 * Polling a standby: when it has been promoted, LISTENs there from now on.
 * The cursors stay: the promoted server keeps the horizons and the late ring
 * it replayed, and the feed never read past them. The LISTEN is committed
 * before the round that follows, so no commit falls between polls and
 * notices. Returns false when the connection was lost.
 */
static bool
FollowPromotion(Xip83Feed *f)
{
	int			rc = InRecovery(f);

	if (rc != 0)
		return rc == 1;
	if (!Listen(f))
		return false;
	f->in_recovery = false;
	FeedStatus(f, "promoted", "the standby became a primary: listening there");
	return true;
}

/* Decodes a notice payload; NULL if it is not one of ours. */
static Xip83__V1__LiveNotice *
DecodeNotice(const char *payload)
{
	static const char alphabet[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t		len = strlen(payload);
	unsigned char *raw = malloc(len / 4 * 3 + 3);
	size_t		n = 0;
	uint32_t	acc = 0;
	int			bits = 0;
	Xip83__V1__LiveNotice *notice;

	if (raw == NULL)
		return NULL;
	for (size_t i = 0; i < len && payload[i] != '='; i++)
	{
		const char *p = strchr(alphabet, payload[i]);

		if (p == NULL || payload[i] == '\0')
		{
			free(raw);
			return NULL;
		}
		acc = (acc << 6) | (uint32_t) (p - alphabet);
		bits += 6;
		if (bits >= 8)
		{
			bits -= 8;
			raw[n++] = (unsigned char) (acc >> bits);
		}
	}
	notice = xip83__v1__live_notice__unpack(NULL, n, raw);
	free(raw);
	return notice;
}

/*
 * Looks up the notifier's backend pid (0 when none runs), at most every
 * PID_RECHECK_MS once one is known, so that forged notices cannot make the
 * feed query the server for each of them.
 */
static void
CheckNotifierPid(Xip83Feed *f)
{
	PGresult   *res;

	if (xip83_now_ms() - f->pid_checked_ms < PID_RECHECK_MS && f->pid_checked_ms != 0)
		return;
	res = PQexec(f->conn, "SELECT coalesce(notifier_pid, 0) FROM xip83.feed_status()");
	if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1)
		f->notifier_pid = atoi(PQgetvalue(res, 0, 0));
	PQclear(res);
	/* while no notifier is known (it is starting), the next notice checks again */
	f->pid_checked_ms = f->notifier_pid != 0 ? xip83_now_ms() : 0;
}

/*
 * Handles every pending notice; returns whether a fetch is due (always after
 * any notice: a notice is a wake-up, whoever sent it).
 */
static bool
DrainNotices(Xip83Feed *f)
{
	PGnotify   *nt;
	bool		fetch = false;
	char		detail[64];

	while ((nt = PQnotifies(f->conn)) != NULL)
	{
		Xip83__V1__LiveNotice *notice;
		int			sender = nt->be_pid;

		fetch = true;
		if (sender != f->notifier_pid)
			CheckNotifierPid(f);
		notice = sender == f->notifier_pid ? DecodeNotice(nt->extra) : NULL;
		PQfreemem(nt);
		if (notice == NULL)
			continue;
		if (f->epoch != 0 && notice->epoch != f->epoch)
			GoOffline(f, "notifier restarted");
		f->epoch = notice->epoch;
		if (notice->state == XIP83__V1__LIVE_NOTICE__STATE__STATE_STOPPING)
		{
			GoOffline(f, "notifier stopping");
			f->notifier_pid = 0;
		}
		else
		{
			f->last_notice_ms = xip83_now_ms();
			if (!f->live)
			{
				f->live = true;
				snprintf(detail, sizeof(detail), "epoch %llu", (unsigned long long) f->epoch);
				FeedStatus(f, f->ever_live ? "back" : "live", detail);
				f->ever_live = true;
				f->offline_reported = false;
			}
		}
		xip83__v1__live_notice__free_unpacked(notice, NULL);
	}
	return fetch;
}

/* A query of start_at_horizon about a table; NULL (reported, disconnected) when it failed. */
static PGresult *
HorizonQuery(Xip83Feed *f, const char *sql, const char *source)
{
	const char *params[1] = {source};
	/* a standby's own horizons: waves reading there with them as ceilings miss nothing */
	PGconn	   *conn = f->standby != NULL ? f->standby : f->conn;
	PGresult   *res;

	/* late_cursor waits for late writes still running, past a lock_timeout too */
	while (FeedLockTimedOut(res = PQexecParams(conn, sql, 1, NULL, params, NULL, NULL, 0)))
		PQclear(res);
	if (PQresultStatus(res) == PGRES_TUPLES_OK)
		return res;
	fprintf(stderr, "xip83 feed: %s", PQerrorMessage(conn));
	PQclear(res);
	Disconnect(f, "cannot read horizons");
	return NULL;
}

/*
 * Raises the feed's replay position to what the standby conn has replayed
 * now, after the start's horizons were read there. Returns 0, -1 lost, -2
 * error.
 */
static int
NoteReplay(Xip83Feed *f, PGconn *conn)
{
	PGresult   *res = PQexec(conn, "SELECT pg_last_wal_replay_lsn()");

	if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1)
		return FeedQueryFailed(f, res);
	FeedRaiseReplay(f, xip83_pg_lsn(PQgetvalue(res, 0, 0)));
	PQclear(res);
	return 0;
}

bool
xip83_feed_start_at_horizon(Xip83Feed *f)
{
	PGresult   *res;

	if (f->conn == NULL && !Connect(f, -1))
		return false;
	/* the late cursors first: late writes after them are news to this feed */
	for (int k = 0; k < 3; k++)
	{
		if ((res = HorizonQuery(f, "SELECT xip83.late_cursor($1::regclass)",
								FeedSourceOf(f, 1 << k))) == NULL)
			return false;
		f->late[k] = atoll(PQgetvalue(res, 0, 0));
		PQclear(res);
	}
	if ((f->opt.kinds & XIP83_FEED_GROUP) != 0)
	{
		if ((res = HorizonQuery(f, "SELECT xip83.group_horizon("
								"coalesce($1::regclass, 'xip83.group_messages'))",
								f->opt.group_source)) == NULL)
			return false;
		f->group_after = atoll(PQgetvalue(res, 0, 0));
		PQclear(res);
	}
	if ((f->opt.kinds & XIP83_FEED_WELCOME) != 0)
	{
		if ((res = HorizonQuery(f, "SELECT xip83.welcome_horizon("
								"coalesce($1::regclass, 'xip83.welcome_messages'))",
								f->opt.welcome_source)) == NULL)
			return false;
		f->welcome_after = atoll(PQgetvalue(res, 0, 0));
		PQclear(res);
	}
	if ((f->opt.kinds & XIP83_FEED_ENVELOPE) != 0)
	{
		if ((res = HorizonQuery(f, "SELECT originator_node_id, horizon FROM xip83.envelope_horizons("
								"coalesce($1::regclass, 'xip83.envelopes'))",
								f->opt.envelope_source)) == NULL)
			return false;
		for (int r = 0; r < PQntuples(res); r++)
			xip83_feed_set_cursor(f, XIP83_FEED_ENVELOPE, (int32_t) atol(PQgetvalue(res, r, 0)),
								  atoll(PQgetvalue(res, r, 1)));
		PQclear(res);
	}
	/* horizons a standby replayed: waves read up to them there once it has again */
	if (f->standby == NULL && !f->in_recovery)
		return true;
	switch (NoteReplay(f, f->standby != NULL ? f->standby : f->conn))
	{
		case 0:
			return true;
		case -2:
			Disconnect(f, "cannot read the standby's replay position");
			break;
	}
	return false;
}

uint64_t
xip83_feed_replay_lsn(const Xip83Feed *f)
{
	return f->replay_lsn;
}

void
xip83_feed_follow(Xip83Feed *copy, const Xip83Feed *f)
{
	copy->group_after = f->group_after;
	copy->welcome_after = f->welcome_after;
	for (int i = 0; i < f->n_originators; i++)
		xip83_feed_set_cursor(copy, XIP83_FEED_ENVELOPE, f->originators[i].node,
							  f->originators[i].after);
	FeedRaiseReplay(copy, f->replay_lsn);
}

void
xip83_feed_follow_row(Xip83Feed *copy, const Xip83FeedRow *row, uint64_t replay_lsn)
{
	FeedRaiseReplay(copy, replay_lsn);
	/* an originator not followed yet reads -1: its first row is above */
	if (row->position > xip83_feed_cursor(copy, row->kind, row->originator_node_id))
		xip83_feed_set_cursor(copy, row->kind, row->originator_node_id, row->position);
}

bool
xip83_feed_woken(const Xip83Feed *f)
{
	return f->woken;
}

/* The notices libpq read during a fetch wake the next step. */
static void
NoteNoticesRead(Xip83Feed *f)
{
	if (f->conn != NULL && PQconsumeInput(f->conn) && DrainNotices(f))
		f->woken = true;
}

static int
FetchRound(Xip83Feed *f)
{
	int			rc = FeedFetchAll(f, true);

	NoteNoticesRead(f);
	return rc == -2 ? -1 : rc < 0 ? 0 : rc;
}

int
xip83_feed_step(Xip83Feed *f, int timeout_ms)
{
	int64_t		now = xip83_now_ms();
	int64_t		wait;
	bool		fetch;

	if (f->conn == NULL)
	{
		if (!Connect(f, timeout_ms))
		{
			int64_t		nap = f->next_connect_ms - now;

			if (nap > timeout_ms)
				nap = timeout_ms;
			if (nap > 0)
				poll(NULL, 0, (int) nap);
			return 0;
		}
		/* catch up from the cursors; "back" waits for a LIVE notice */
		return FetchRound(f);
	}
	fetch = f->woken;
	f->woken = false;
	if (fetch)
		timeout_ms = 0;

	/* sleep until a notice, the poll timer, or the silence deadline */
	wait = timeout_ms;
	if (f->live && !f->round_missed)
	{
		int64_t		deadline = f->last_notice_ms + f->opt.offline_after_ms - now;

		if (deadline < wait)
			wait = deadline < 0 ? 0 : deadline;
	}
	else
	{
		int64_t		tick = f->last_poll_ms + f->opt.poll_ms - now;

		if (tick < wait)
			wait = tick < 0 ? 0 : tick;
	}
	{
		struct pollfd pfd = {.fd = PQsocket(f->conn), .events = POLLIN};

		if (poll(&pfd, 1, (int) wait) < 0 && errno != EINTR)
			return -1;
	}
	if (!PQconsumeInput(f->conn))
	{
		Disconnect(f, "connection lost");
		return 0;
	}
	if (DrainNotices(f))
		fetch = true;

	now = xip83_now_ms();
	if (now - f->last_notice_ms >= f->opt.offline_after_ms)
		GoOffline(f, "no notices");
	/* a round the standby could not serve yet is retried on the poll timer too */
	if ((!f->live || f->round_missed) && now - f->last_poll_ms >= f->opt.poll_ms)
	{
		f->last_poll_ms = now;
		fetch = true;
	}
	if (!fetch)
		return 0;
	if (f->in_recovery && !FollowPromotion(f))
		return 0;
	/* originators are learned from the server, never from a notice */
	return FetchRound(f);
}

int
xip83_feed_fetch(Xip83Feed *f)
{
	int			rc;

	if (f->conn == NULL && !Connect(f, 0))
		return -1;
	rc = FeedFetchAll(f, true);
	NoteNoticesRead(f);
	return rc >= 0 && f->round_missed ? -1 : rc;
}
