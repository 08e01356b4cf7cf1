/*
 * feed_fetch.c: one round of the live feed (see feed.h for the contract and
 * feed.c for the loop around it): per kind the late rows the feed passed,
 * then (cursor, horizon] page by page, each row handed to the caller as it
 * comes; with a standby, the horizons and their fence read on the primary
 * first and the pages from the standby once it replayed past the fence.
 */
#include "feed_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xip83/errcodes.h"

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
const char *
FeedSourceOf(const Xip83Feed *f, int kind)
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
	const char *params[1] = {FeedSourceOf(f, kind)};

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

	if (state == NULL || strcmp(state, XIP83_SQLSTATE_LATE_WRITES_LOST) != 0)
		return false;
	PQclear(res);
	cur = LateCursorQuery(f, kind);
	if (FeedLockTimedOut(cur))
	{
		/* it waits for late writes still running: the next round asks again */
		PQclear(cur);
		f->round_missed = true;
		return true;
	}
	if (PQresultStatus(cur) == PGRES_TUPLES_OK && PQntuples(cur) == 1)
		f->late[kind == XIP83_FEED_GROUP ? 0 : kind == XIP83_FEED_WELCOME ? 1 : 2] =
			atoll(PQgetvalue(cur, 0, 0));
	PQclear(cur);
	FeedStatus(f, "late-lost", "late writes before this point may be missing: resynchronize");
	return true;
}

/* Index of a kind in the late cursors. */
static int
KindIndex(int kind)
{
	return kind == XIP83_FEED_GROUP ? 0 : kind == XIP83_FEED_WELCOME ? 1 : 2;
}

/* lock_not_available: a lock not granted within the feed's lock_timeout */
#define SQLSTATE_LOCK_NOT_AVAILABLE "55P03"

bool
FeedLockTimedOut(const PGresult *res)
{
	const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);

	return state != NULL && strcmp(state, SQLSTATE_LOCK_NOT_AVAILABLE) == 0;
}

/*
 * The server could not serve the round; nothing was read. SQLSTATE X83F0:
 * the standby did not replay the fence in time; 55P03: a lock on the table
 * was not granted within the feed's lock_timeout. The next notice or poll
 * tries again. X83F1: the standby was promoted before it replayed the fence
 * (or, out of recovery, never wrote it: a split),
 * and the feed serves from it alone from now on (FeedFetchAll).
 */
static bool
RoundRefused(Xip83Feed *f, PGresult *res)
{
	const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);

	if (state == NULL)
		return false;
	if (strcmp(state, XIP83_SQLSTATE_FENCE_TIMEOUT) == 0
		|| strcmp(state, SQLSTATE_LOCK_NOT_AVAILABLE) == 0)
		f->round_missed = true;
	else if (strcmp(state, XIP83_SQLSTATE_FENCE_UNREACHABLE) == 0)
		f->fence_unreachable = true;
	else
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
	const char *params[2] = {FeedSourceOf(f, kind), own[KindIndex(kind)]};
	PGresult   *res = PQexecParams(f->conn,
								   "SELECT coalesce(horizon, 0), fence, array_length(originator_node_ids, 1),"
								   " array_to_string(originator_node_ids, ' '),"
								   " array_to_string(originator_horizons, ' ')"
								   " FROM xip83.horizon_fence(coalesce($1::regclass, $2::regclass))",
								   2, NULL, params, NULL, NULL, 0);
	FencedHorizons *h = &f->fenced;

	if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1)
		return FeedQueryFailed(f, res);
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
			" late_cursor, pg_last_wal_replay_lsn() FROM xip83.live_envelopes($1::int[], $2::bigint[], $3::int, $4::bigint,"
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
		params[3] = FeedSourceOf(f, kind);
		snprintf(up_to, sizeof(up_to), "%lld", (long long) f->fenced.horizon);
		params[4] = fence != NULL ? up_to : NULL;
		params[5] = fence;
		sql = kind == XIP83_FEED_GROUP
			? "SELECT 0, id, group_id, data, late_cursor, created_at, is_commit, sender_hmac,"
			"  should_push, pg_last_wal_replay_lsn() FROM xip83.live_group_messages($1::bigint, $2::int, $3::bigint,"
			"  coalesce($4::regclass, 'xip83.group_messages'), $5::bigint, $6::pg_lsn)"
			: "SELECT 0, id, installation_key, data, late_cursor, created_at, hpke_public_key,"
			"  wrapper_algorithm, welcome_metadata, message_type, pg_last_wal_replay_lsn()"
			"  FROM xip83.live_welcome_messages($1::bigint, $2::int, $3::bigint,"
			"  coalesce($4::regclass, 'xip83.welcome_messages'), $5::bigint, $6::pg_lsn)";
		res = PQexecParams(RowsConn(f), sql, 6, NULL, params, NULL, NULL, 1);
	}
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
		return LateLost(f, res, kind) || RoundRefused(f, res) ? 0 : FeedQueryFailed(f, res);
	n = PQntuples(res);
	/*
	 * Before the rows move the cursors: a standby replayed the fence before it
	 * read them, or (polled alone) had replayed its last column's position
	 * once it read its horizon.
	 */
	if (n > 0 && fence != NULL)
		FeedRaiseReplay(f, xip83_pg_lsn(fence));
	else if (n > 0 && f->in_recovery && !PQgetisnull(res, 0, PQnfields(res) - 1))
		FeedRaiseReplay(f, (uint64_t) BinInt(res, 0, PQnfields(res) - 1));
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
			OriginatorCursor *c = FeedOriginator(f, row.originator_node_id);

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
		return FeedQueryFailed(f, res);
	for (int r = 0; r < PQntuples(res); r++)
		(void) FeedOriginator(f, (int32_t) atol(PQgetvalue(res, r, 0)));
	PQclear(res);
	return 0;
}

/*
 * The fenced feed's standby was promoted: the round again there, alone, with
 * no fence to wait for (total: rows the round read before). As FeedFetchAll.
 */
static int
FollowPromoted(Xip83Feed *f, bool discover, int total)
{
	int			n;

	f->fence_unreachable = false;
	if (!FeedFollowStandby(f))
		return -1;
	n = FeedFetchAll(f, discover);
	return n < 0 ? n : total + n;
}

/* Reads every kind up to its horizon. Returns rows, -1 lost, -2 error. */
int
FeedFetchAll(Xip83Feed *f, bool discover)
{
	static const int kinds[] = {XIP83_FEED_GROUP, XIP83_FEED_WELCOME, XIP83_FEED_ENVELOPE};
	int			total = 0;

	f->round_missed = false;
	/*
	 * A standby promoted while its primary goes on (a split) passes any fence
	 * its own WAL outgrew, and would be read up to the primary's horizons:
	 * asked first, every round. Unknown: the fetch finds the connection lost.
	 */
	if (f->standby != NULL && FeedServerInRecovery(f->standby) == 0)
		return FollowPromoted(f, discover, 0);
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
		if (f->fence_unreachable)
			return FollowPromoted(f, discover, total);
		/* replay behind or a lock not granted: the other kinds would wait too */
		if (f->round_missed)
			break;
	}
	return total;
}

