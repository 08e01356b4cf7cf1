/*
 * session_scan_v3.c: the v3 binding's waves (see session_internal.h): one
 * pass per kind (group messages, welcomes), each with the topics of its
 * kind, their id floors and the kind's ceiling pinned when the wave starts,
 * read in pages of group_wave_scan / welcome_wave_scan.
 */
#include <stdio.h>
#include <stdlib.h>

#include "session_internal.h"
#include "session_params.h"

static const char *const scan_sql[2] = {
	"SELECT * FROM xip83.group_wave_scan($1::bytea[], $2::bigint[], $3::bigint, $4::bigint, $5::int)",
	"SELECT * FROM xip83.welcome_wave_scan($1::bytea[], $2::bigint[], $3::bigint, $4::bigint, $5::int)",
};

static bool
Pin(Xip83Session *s, Xip83Wave *w)
{
	PGresult   *res;
	bool		ok = true;

	if (s->ceilings_from_feed)
	{
		xip83_ceilings_from_feed(s);
		w->pass[0].ceiling = xip83_feed_cursor(s->feed, XIP83_FEED_GROUP, 0);
		w->pass[1].ceiling = xip83_feed_cursor(s->feed, XIP83_FEED_WELCOME, 0);
		return true;
	}
	xip83_wave_conn_idle(s);
	res = PQexec(s->wave_conn, "SELECT xip83.group_ceiling(), xip83.welcome_ceiling()");
	if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1)
		ok = xip83_session_fail(s, "UNAVAILABLE", "wave ceiling: %s",
								PQerrorMessage(s->wave_conn));
	else
		for (int k = 0; k < 2; k++)
			w->pass[k].ceiling = atoll(PQgetvalue(res, 0, k));
	PQclear(res);
	return ok;
}

/* The topic's identifier and floor, in its kind's pass. */
static bool
Param(Xip83Session *s, Xip83Wave *w, const Xip83Add *add)
{
	int			k = add->topic[0];

	/* the scans take the identifier without the kind byte */
	return (xip83_lit_bytes(&w->lit[k][0], add->topic + 1, add->len - 1)
			&& xip83_lit_int(&w->lit[k][1], add->cursor[0].seq))
		|| xip83_session_fail(s, "RESOURCE_EXHAUSTED", "out of memory");
}

static bool
Passes(Xip83Session *s, Xip83Wave *w)
{
	bool		ok = true;

	w->n_passes = 2;
	for (int k = 0; k < 2; k++)
	{
		w->pass[k].done = w->lit[k][0].n == 0;
		w->pass[k].params[0] = xip83_lit_finish(&w->lit[k][0]);
		w->pass[k].params[1] = xip83_lit_finish(&w->lit[k][1]);
		ok = ok && w->pass[k].params[0] && w->pass[k].params[1];
	}
	return ok || xip83_session_fail(s, "RESOURCE_EXHAUSTED", "out of memory");
}

static bool
Page(Xip83Session *s, Xip83Wave *w, int k)
{
	Xip83Pass  *pass = &w->pass[k];
	char		cursor[32],
				ceiling[32],
				limit[16];
	const char *params[5] = {pass->params[0], pass->params[1], cursor, ceiling, limit};

	snprintf(cursor, sizeof(cursor), "%lld", (long long) pass->scan.seq);
	snprintf(ceiling, sizeof(ceiling), "%lld", (long long) pass->ceiling);
	snprintf(limit, sizeof(limit), "%d", XIP83_PAGE_ROWS);
	return xip83_wave_send(s, w, k, k, scan_sql[k], 5, params);
}

static Xip83Pos
Position(const PGresult *res, int r, int k)
{
	Xip83Pos	pos = {k, xip83_result_int(res, r, 0)};

	return pos;
}

static bool
Row(Xip83Session *s, Xip83Wave *w, int k, const PGresult *res, int r)
{
	Xip83V3Row	row;
	Xip83Msg	m;

	xip83_v3row_read(res, r, k, &xip83_v3_scan_cols, &row);
	return xip83_msg_v3(s, &m, &row) && xip83_wave_scanned(s, w, &m);
}

const Xip83WaveOps xip83_wave_v3 = {Pin, Param, Passes, Page, Position, Row};
