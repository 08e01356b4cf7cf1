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
 * the standby up to them.
 */
#include "feed.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "xip83/live_notice.pb-c.h"

/* How often the notifier's pid may be looked up after a notice from another pid. */
#define PID_RECHECK_MS 100

typedef struct OriginatorCursor
{
	int32_t		node;
	int64_t		after;
} OriginatorCursor;

/* The horizons a round reads up to on a standby, and their fence. */
typedef struct FencedHorizons
{
	int64_t		horizon;		/* group or welcome */
	int			n;				/* envelopes: originators with a horizon */
	OriginatorCursor *originators;	/* (node, horizon) */
	char		fence[32];
} FencedHorizons;

struct Xip83Feed
{
	Xip83FeedOptions opt;
	PGconn	   *conn;
	PGconn	   *standby;		/* rows come from here when set */
	FencedHorizons fenced;		/* of the kind being read from the standby */
	int64_t		group_after;
	int64_t		welcome_after;
	int64_t		late[3];		/* late cursor per kind: group, welcome, envelope */
	int			n_originators;
	int			cap_originators;
	OriginatorCursor *originators;
	int			notifier_pid;	/* the real notifier's backend, 0 when unknown */
	int64_t		pid_checked_ms; /* when notifier_pid was last looked up */
	bool		live;			/* hearing LIVE notices */
	bool		ever_live;		/* reported "live" once */
	bool		offline_reported;
	uint64_t	epoch;			/* of the last notice, 0 before any */
	int64_t		last_notice_ms; /* monotonic time of the last LIVE notice */
	int64_t		last_poll_ms;	/* monotonic time of the last offline poll */
	int64_t		next_connect_ms;	/* earliest reconnect attempt */
	int			backoff_ms;
	int64_t		rows;
	unsigned char *scratch;		/* kind-prefixed topic */
	size_t		scratch_len;
};

/* Monotonic milliseconds. */
static int64_t
NowMs(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Tells the caller about a status change. */
static void
Status(Xip83Feed *f, const char *status, const char *detail)
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
		Status(f, "offline", why);
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
	if (f->opt.page_rows <= 0)
		f->opt.page_rows = 1000;
	if (f->opt.poll_ms <= 0)
		f->opt.poll_ms = 50;
	if (f->opt.offline_after_ms <= 0)
		f->opt.offline_after_ms = 3000;
	if (f->opt.max_backoff_ms <= 0)
		f->opt.max_backoff_ms = 2000;
	f->backoff_ms = 50;
	f->last_notice_ms = NowMs();
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
	free(f->fenced.originators);
	free(f->scratch);
	free(f->originators);
	free(f);
}

/*
 * The cursor slot of an originator, added at -1 when new (nothing seen: a
 * chain originator's first sequence id is 0); NULL when out of memory.
 */
static OriginatorCursor *
Originator(Xip83Feed *f, int32_t node)
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
	else if ((c = Originator(f, node)) != NULL)
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

/* Drops the connection; the next step reconnects after the backoff. */
static void
Disconnect(Xip83Feed *f, const char *why)
{
	if (f->conn)
		PQfinish(f->conn);
	if (f->standby)
		PQfinish(f->standby);
	f->conn = NULL;
	f->standby = NULL;
	f->next_connect_ms = NowMs() + f->backoff_ms;
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
static int
QueryFailed(Xip83Feed *f, PGresult *res)
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

/* Connects and LISTENs (autocommit: the LISTEN is committed before any read). */
static bool
Connect(Xip83Feed *f)
{
	PGresult   *res;

	if (NowMs() < f->next_connect_ms)
		return false;
	f->conn = PQconnectdb(f->opt.conninfo);
	if (PQstatus(f->conn) != CONNECTION_OK)
	{
		Disconnect(f, "cannot connect");
		return false;
	}
	PQsetNoticeProcessor(f->conn, IgnoreNotice, NULL);
	if (f->opt.standby_conninfo != NULL)
	{
		f->standby = PQconnectdb(f->opt.standby_conninfo);
		if (PQstatus(f->standby) != CONNECTION_OK)
		{
			Disconnect(f, "cannot connect to the standby");
			return false;
		}
		PQsetNoticeProcessor(f->standby, IgnoreNotice, NULL);
	}
	/* a standby cannot LISTEN: the feed polls it */
	if (f->opt.standby_only)
	{
		f->backoff_ms = 50;
		return true;
	}
	res = PQexec(f->conn, "LISTEN xip83_live");
	if (PQresultStatus(res) != PGRES_COMMAND_OK)
	{
		PQclear(res);
		Disconnect(f, "cannot listen");
		return false;
	}
	PQclear(res);
	f->backoff_ms = 50;
	f->pid_checked_ms = 0;
	CheckNotifierPid(f);
	return true;
}

/* A big-endian integer field of a binary result. */
static int64_t
BinInt(const PGresult *res, int row, int col)
{
	const unsigned char *p = (const unsigned char *) PQgetvalue(res, row, col);
	int			len = PQgetlength(res, row, col);
	uint64_t	v = 0;

	for (int i = 0; i < len; i++)
		v = (v << 8) | p[i];
	if (len == 4)
		return (int32_t) (uint32_t) v;
	return (int64_t) v;
}

/* Builds the kind-prefixed topic of a v3 row in the scratch buffer. */
static const unsigned char *
PrefixedTopic(Xip83Feed *f, unsigned char kind_byte, const char *id, size_t len)
{
	if (f->scratch_len < len + 1)
	{
		unsigned char *p = realloc(f->scratch, len + 1);

		if (p == NULL)
			return NULL;
		f->scratch = p;
		f->scratch_len = len + 1;
	}
	f->scratch[0] = kind_byte;
	memcpy(f->scratch + 1, id, len);
	return f->scratch;
}

/* The table a kind is read from, or NULL for xip83's own. */
static const char *
SourceOf(const Xip83Feed *f, int kind)
{
	return kind == XIP83_FEED_GROUP ? f->opt.group_source
		: kind == XIP83_FEED_WELCOME ? f->opt.welcome_source : f->opt.envelope_source;
}

/* The connection rows are read on: the standby's, or the only one. */
static PGconn *
RowsConn(const Xip83Feed *f)
{
	return f->standby != NULL ? f->standby : f->conn;
}

/* The late cursor of the feed (table) a kind is read from. */
static PGresult *
LateCursorQuery(Xip83Feed *f, int kind)
{
	const char *params[1] = {SourceOf(f, kind)};

	return PQexecParams(RowsConn(f), "SELECT xip83.late_cursor($1::regclass)", 1, NULL, params,
						NULL, NULL, 0);
}

/*
 * SQLSTATE X83L0: late writes owed to this feed were dropped (late ring
 * overflow, or a server restart). Reported through the status callback as
 * "late-lost"; the feed goes on from the server's current late cursor. A
 * caller that must not miss them resynchronizes (replays its topics as a
 * wave) when it sees that status.
 */
static bool
LateLost(Xip83Feed *f, PGresult *res, int kind)
{
	const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
	PGresult   *cur;

	if (state == NULL || strcmp(state, "X83L0") != 0)
		return false;
	PQclear(res);
	cur = LateCursorQuery(f, kind);
	if (PQresultStatus(cur) == PGRES_TUPLES_OK && PQntuples(cur) == 1)
		f->late[kind == XIP83_FEED_GROUP ? 0 : kind == XIP83_FEED_WELCOME ? 1 : 2] =
			atoll(PQgetvalue(cur, 0, 0));
	PQclear(cur);
	Status(f, "late-lost", "late writes before this point may be missing: resynchronize");
	return true;
}

/* Index of a kind in the late cursors. */
static int
KindIndex(int kind)
{
	return kind == XIP83_FEED_GROUP ? 0 : kind == XIP83_FEED_WELCOME ? 1 : 2;
}

/*
 * SQLSTATE X83F0: the standby did not replay the fence in time. Nothing was
 * read; the next notice or poll tries again.
 */
static bool
FenceNotReached(PGresult *res)
{
	const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);

	if (state == NULL || strcmp(state, "X83F0") != 0)
		return false;
	PQclear(res);
	return true;
}

/*
 * Reads a kind's horizons and their fence on the primary, for the round of
 * pages read from the standby. Returns 0, -1 lost, -2 error.
 */
static int
ReadFence(Xip83Feed *f, int kind)
{
	static const char *const own[] = {"xip83.group_messages", "xip83.welcome_messages",
	"xip83.envelopes"};
	const char *params[2] = {SourceOf(f, kind), own[KindIndex(kind)]};
	PGresult   *res = PQexecParams(f->conn,
								   "SELECT coalesce(horizon, 0), fence, array_length(originator_node_ids, 1),"
								   " array_to_string(originator_node_ids, ' '),"
								   " array_to_string(originator_horizons, ' ')"
								   " FROM xip83.horizon_fence(coalesce($1::regclass, $2::regclass))",
								   2, NULL, params, NULL, NULL, 0);
	FencedHorizons *h = &f->fenced;

	if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1)
		return QueryFailed(f, res);
	h->horizon = atoll(PQgetvalue(res, 0, 0));
	snprintf(h->fence, sizeof(h->fence), "%s", PQgetvalue(res, 0, 1));
	h->n = 0;
	if (!PQgetisnull(res, 0, 2))
	{
		int			n = atoi(PQgetvalue(res, 0, 2));
		OriginatorCursor *p = realloc(h->originators, sizeof(OriginatorCursor) * (n + 1));
		char	   *nodes = PQgetvalue(res, 0, 3);
		char	   *horizons = PQgetvalue(res, 0, 4);

		if (p == NULL)
		{
			PQclear(res);
			fprintf(stderr, "xip83 feed: out of memory\n");
			return -2;
		}
		h->originators = p;
		for (; h->n < n; h->n++)
		{
			p[h->n].node = (int32_t) strtol(nodes, &nodes, 10);
			p[h->n].after = strtoll(horizons, &horizons, 10);
		}
	}
	PQclear(res);
	return 0;
}

/* The fenced horizon of an originator (0 when the primary has none). */
static int64_t
FencedOriginator(const Xip83Feed *f, int32_t node)
{
	for (int i = 0; i < f->fenced.n; i++)
		if (f->fenced.originators[i].node == node)
			return f->fenced.originators[i].after;
	return 0;
}

/* Where FetchPage's group and welcome queries put the columns of a v3 row. */
static const Xip83V3Cols live_v3_cols = {{1, 5, 2, 3, 6, 7, 8, 9}};

/*
 * One page of one kind; delivers it and moves the cursors: a position cursor
 * to the highest position received (late rows lie below it), the late
 * cursor to what the rows carry. Returns the rows fetched, or -1 when the
 * connection was lost, -2 on another error.
 */
static int
FetchPage(Xip83Feed *f, int kind)
{
	char		after[32];
	char		limit[16];
	char		late[32];
	char	   *nodes = NULL;
	char	   *afters = NULL;
	char	   *up_tos = NULL;
	const char *params[8];
	const char *fence = f->standby != NULL ? f->fenced.fence : NULL;
	const char *sql;
	PGresult   *res;
	int			n;

	snprintf(limit, sizeof(limit), "%d", f->opt.page_rows);
	snprintf(late, sizeof(late), "%lld", (long long) f->late[KindIndex(kind)]);
	if (kind == XIP83_FEED_ENVELOPE)
	{
		size_t		cap = 24 * (size_t) (f->n_originators + 1);
		size_t		pn = 1;
		size_t		pa = 1;
		size_t		pu = 1;

		if (f->n_originators == 0)
			return 0;
		nodes = malloc(cap);
		afters = malloc(cap);
		up_tos = malloc(cap);
		if (nodes == NULL || afters == NULL || up_tos == NULL)
		{
			free(nodes);
			free(afters);
			free(up_tos);
			fprintf(stderr, "xip83 feed: out of memory\n");
			return -2;
		}
		nodes[0] = afters[0] = up_tos[0] = '{';
		for (int i = 0; i < f->n_originators; i++)
		{
			pu += sprintf(up_tos + pu, "%s%lld", i ? "," : "",
						  (long long) FencedOriginator(f, f->originators[i].node));
			pn += sprintf(nodes + pn, "%s%d", i ? "," : "", f->originators[i].node);
			pa += sprintf(afters + pa, "%s%lld", i ? "," : "",
						  (long long) f->originators[i].after);
		}
		strcpy(nodes + pn, "}");
		strcpy(afters + pa, "}");
		strcpy(up_tos + pu, "}");
		params[0] = nodes;
		params[1] = afters;
		params[2] = limit;
		params[3] = late;
		params[4] = f->opt.envelope_source;
		params[5] = f->opt.blob_source;
		params[6] = fence != NULL ? up_tos : NULL;
		params[7] = fence;
		sql = "SELECT originator_node_id, originator_sequence_id, topic, originator_envelope,"
			" late_cursor FROM xip83.live_envelopes($1::int[], $2::bigint[], $3::int, $4::bigint,"
			" coalesce($5::regclass, 'xip83.envelopes'), $6::regclass, $7::bigint[], $8::pg_lsn)";
		res = PQexecParams(RowsConn(f), sql, 8, NULL, params, NULL, NULL, 1);
		free(nodes);
		free(afters);
		free(up_tos);
	}
	else
	{
		char		up_to[32];

		snprintf(after, sizeof(after), "%lld",
				 (long long) (kind == XIP83_FEED_GROUP ? f->group_after : f->welcome_after));
		params[0] = after;
		params[1] = limit;
		params[2] = late;
		params[3] = SourceOf(f, kind);
		snprintf(up_to, sizeof(up_to), "%lld", (long long) f->fenced.horizon);
		params[4] = fence != NULL ? up_to : NULL;
		params[5] = fence;
		sql = kind == XIP83_FEED_GROUP
			? "SELECT 0, id, group_id, data, late_cursor, created_at, is_commit, sender_hmac,"
			"  should_push FROM xip83.live_group_messages($1::bigint, $2::int, $3::bigint,"
			"  coalesce($4::regclass, 'xip83.group_messages'), $5::bigint, $6::pg_lsn)"
			: "SELECT 0, id, installation_key, data, late_cursor, created_at, hpke_public_key,"
			"  wrapper_algorithm, welcome_metadata, message_type"
			"  FROM xip83.live_welcome_messages($1::bigint, $2::int, $3::bigint,"
			"  coalesce($4::regclass, 'xip83.welcome_messages'), $5::bigint, $6::pg_lsn)";
		res = PQexecParams(RowsConn(f), sql, 6, NULL, params, NULL, NULL, 1);
	}
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
		return LateLost(f, res, kind) || FenceNotReached(res) ? 0 : QueryFailed(f, res);
	n = PQntuples(res);
	for (int r = 0; r < n; r++)
	{
		Xip83FeedRow row;
		Xip83V3Row	v3;
		const char *topic = PQgetvalue(res, r, 2);
		size_t		topic_len = PQgetlength(res, r, 2);
		int64_t    *cursor;

		row.kind = kind;
		row.originator_node_id = kind == XIP83_FEED_ENVELOPE ? (int32_t) BinInt(res, r, 0) : 0;
		row.position = BinInt(res, r, 1);
		if (kind == XIP83_FEED_ENVELOPE)
		{
			row.topic = (const unsigned char *) topic;
			row.topic_len = topic_len;
		}
		else
		{
			row.topic = PrefixedTopic(f, kind == XIP83_FEED_GROUP ? 0x00 : 0x01, topic, topic_len);
			row.topic_len = topic_len + 1;
		}
		row.data = (const unsigned char *) PQgetvalue(res, r, 3);
		row.data_len = PQgetlength(res, r, 3);
		row.v3 = NULL;
		if (kind != XIP83_FEED_ENVELOPE)
		{
			xip83_v3row_read(res, r, kind == XIP83_FEED_GROUP ? XIP83_V3_GROUP : XIP83_V3_WELCOME,
							 &live_v3_cols, &v3);
			row.v3 = &v3;
		}
		if (kind == XIP83_FEED_GROUP)
			cursor = &f->group_after;
		else if (kind == XIP83_FEED_WELCOME)
			cursor = &f->welcome_after;
		else
		{
			OriginatorCursor *c = Originator(f, row.originator_node_id);

			if (c == NULL)
			{
				PQclear(res);
				fprintf(stderr, "xip83 feed: out of memory\n");
				return -2;
			}
			cursor = &c->after;
		}
		row.late = row.position <= *cursor;
		f->opt.on_row(f->opt.arg, &row);
		f->rows++;
		if (row.position > *cursor)
			*cursor = row.position;
		f->late[KindIndex(kind)] = BinInt(res, r, 4);
	}
	PQclear(res);
	return n;
}

/* Learns originators the feed has not seen yet (each starts before sequence 0). */
static int
DiscoverOriginators(Xip83Feed *f)
{
	const char *params[1] = {f->opt.envelope_source};
	PGresult   *res = PQexecParams(f->conn,
								   "SELECT originator_node_id FROM xip83.envelope_horizons("
								   "coalesce($1::regclass, 'xip83.envelopes'))",
								   1, NULL, params, NULL, NULL, 0);

	if (PQresultStatus(res) != PGRES_TUPLES_OK)
		return QueryFailed(f, res);
	for (int r = 0; r < PQntuples(res); r++)
		(void) Originator(f, (int32_t) atol(PQgetvalue(res, r, 0)));
	PQclear(res);
	return 0;
}

/* Reads every kind up to its horizon. Returns rows, -1 lost, -2 error. */
static int
FetchAll(Xip83Feed *f, bool discover)
{
	static const int kinds[] = {XIP83_FEED_GROUP, XIP83_FEED_WELCOME, XIP83_FEED_ENVELOPE};
	int			total = 0;

	if ((f->opt.kinds & XIP83_FEED_ENVELOPE) && discover)
	{
		int			rc = DiscoverOriginators(f);

		if (rc < 0)
			return rc;
	}
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
	{
		int			n;

		if (!(f->opt.kinds & kinds[k]))
			continue;
		if (f->standby != NULL && (n = ReadFence(f, kinds[k])) < 0)
			return n;
		do
		{
			n = FetchPage(f, kinds[k]);
			if (n < 0)
				return n;
			total += n;
		} while (n == f->opt.page_rows);
	}
	return total;
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

	if (NowMs() - f->pid_checked_ms < PID_RECHECK_MS && f->pid_checked_ms != 0)
		return;
	res = PQexec(f->conn, "SELECT coalesce(notifier_pid, 0) FROM xip83.feed_status()");
	if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1)
		f->notifier_pid = atoi(PQgetvalue(res, 0, 0));
	PQclear(res);
	/* while no notifier is known (it is starting), the next notice checks again */
	f->pid_checked_ms = f->notifier_pid != 0 ? NowMs() : 0;
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
			f->last_notice_ms = NowMs();
			if (!f->live)
			{
				f->live = true;
				snprintf(detail, sizeof(detail), "epoch %llu", (unsigned long long) f->epoch);
				Status(f, f->ever_live ? "back" : "live", detail);
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
	PGresult   *res = PQexecParams(f->conn, sql, 1, NULL, params, NULL, NULL, 0);

	if (PQresultStatus(res) == PGRES_TUPLES_OK)
		return res;
	fprintf(stderr, "xip83 feed: %s", PQerrorMessage(f->conn));
	PQclear(res);
	Disconnect(f, "cannot read horizons");
	return NULL;
}

bool
xip83_feed_start_at_horizon(Xip83Feed *f)
{
	PGresult   *res;

	if (f->conn == NULL && !Connect(f))
		return false;
	/* the late cursors first: late writes after them are news to this feed */
	for (int k = 0; k < 3; k++)
	{
		if ((res = HorizonQuery(f, "SELECT xip83.late_cursor($1::regclass)",
								SourceOf(f, 1 << k))) == NULL)
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
	if ((f->opt.kinds & XIP83_FEED_ENVELOPE) == 0)
		return true;
	if ((res = HorizonQuery(f, "SELECT originator_node_id, horizon FROM xip83.envelope_horizons("
							"coalesce($1::regclass, 'xip83.envelopes'))",
							f->opt.envelope_source)) == NULL)
		return false;
	for (int r = 0; r < PQntuples(res); r++)
		xip83_feed_set_cursor(f, XIP83_FEED_ENVELOPE, (int32_t) atol(PQgetvalue(res, r, 0)),
							  atoll(PQgetvalue(res, r, 1)));
	PQclear(res);
	return true;
}

int
xip83_feed_step(Xip83Feed *f, int timeout_ms)
{
	int64_t		now = NowMs();
	int64_t		wait;
	bool		fetch = false;
	int			rc;

	if (f->conn == NULL)
	{
		if (!Connect(f))
		{
			int64_t		nap = f->next_connect_ms - now;

			if (nap > timeout_ms)
				nap = timeout_ms;
			if (nap > 0)
				poll(NULL, 0, (int) nap);
			return 0;
		}
		/* catch up from the cursors; "back" waits for a LIVE notice */
		rc = FetchAll(f, true);
		return rc == -2 ? -1 : rc < 0 ? 0 : rc;
	}

	/* sleep until a notice, the poll timer, or the silence deadline */
	wait = timeout_ms;
	if (f->live)
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

	now = NowMs();
	if (now - f->last_notice_ms >= f->opt.offline_after_ms)
		GoOffline(f, "no notices");
	if (!f->live && now - f->last_poll_ms >= f->opt.poll_ms)
	{
		f->last_poll_ms = now;
		fetch = true;
	}
	if (!fetch)
		return 0;
	/* originators are learned from the server, never from a notice */
	rc = FetchAll(f, true);
	return rc == -2 ? -1 : rc < 0 ? 0 : rc;
}

int
xip83_feed_fetch(Xip83Feed *f)
{
	int			rc;

	if (f->conn == NULL && !Connect(f))
		return -1;
	rc = FetchAll(f, true);
	return rc;
}
