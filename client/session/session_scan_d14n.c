/*
 * session_scan_d14n.c: the d14n binding's waves (see session_internal.h):
 * one pass over every originator in (originator, sequence) order, read in
 * pages of envelope_wave_scan. When the wave starts it pins the ceilings of
 * every originator present (originator_ceilings(): over xip83.envelopes, the
 * originators' horizons) and gives the scan one cursor entry per (topic,
 * originator): the client's last-seen sequence for that originator, or -1
 * (nothing seen, so a chain originator's sequence 0 is replayed) when its
 * cursor does not name it. An originator without rows when the wave starts
 * has nothing to replay; its rows come through the live lane and are folded.
 */
#include <stdio.h>
#include <stdlib.h>

#include "session_internal.h"
#include "session_params.h"

/* The scan's first position lies before every (originator, sequence). */
#define SCAN_START_NODE INT32_MIN
#define SCAN_START_SEQ	INT64_MIN

/* The originators' ceilings: the feed's cursors, or originator_ceilings() (malloc'd arrays). */
static bool
Ceilings(Xip83Session *s, int32_t **nodes, int64_t **ceilings, int *n)
{
	PGresult   *res = NULL;

	if (s->ceilings_from_feed)
	{
		xip83_ceilings_from_feed(s);
		*n = xip83_feed_originators(s->feed, NULL, NULL, 0);
	}
	else
	{
		xip83_wave_conn_idle(s);
		res = PQexec(s->wave_conn,
					 "SELECT originator_node_id, max_sequence_id FROM xip83.originator_ceilings()");
		if (PQresultStatus(res) != PGRES_TUPLES_OK)
		{
			PQclear(res);
			return xip83_session_fail(s, "UNAVAILABLE", "wave ceilings: %s",
									  PQerrorMessage(s->wave_conn));
		}
		*n = PQntuples(res);
	}
	*nodes = malloc(sizeof(int32_t) * (size_t) (*n + 1));
	*ceilings = malloc(sizeof(int64_t) * (size_t) (*n + 1));
	if (*nodes == NULL || *ceilings == NULL)
	{
		PQclear(res);
		return xip83_session_fail(s, "RESOURCE_EXHAUSTED", "out of memory");
	}
	if (res == NULL)
		(void) xip83_feed_originators(s->feed, *nodes, *ceilings, *n);
	for (int o = 0; res && o < *n; o++)
	{
		(*nodes)[o] = (int32_t) atol(PQgetvalue(res, o, 0));
		(*ceilings)[o] = atoll(PQgetvalue(res, o, 1));
	}
	PQclear(res);
	return true;
}

/* Pins the ceilings: the originators' go in the parameters, their nodes stay for the topics. */
static bool
Pin(Xip83Session *s, Xip83Wave *w)
{
	int64_t    *ceilings = NULL;
	bool		ok;

	ok = Ceilings(s, &w->nodes, &ceilings, &w->n_nodes);
	for (int o = 0; ok && o < w->n_nodes; o++)
		ok = (xip83_lit_int(&w->lit[0][3], w->nodes[o]) && xip83_lit_int(&w->lit[0][4], ceilings[o]))
			|| xip83_session_fail(s, "RESOURCE_EXHAUSTED", "out of memory");
	free(ceilings);
	return ok;
}

/* One cursor entry per (topic, originator). */
static bool
Param(Xip83Session *s, Xip83Wave *w, const Xip83Add *add)
{
	Xip83ArrayLit *lit = w->lit[0];
	bool		ok = true;

	for (int o = 0; ok && o < w->n_nodes; o++)
		ok = xip83_lit_bytes(&lit[0], add->topic, add->len)
			&& xip83_lit_int(&lit[1], w->nodes[o])
			&& xip83_lit_int(&lit[2], xip83_cursor_at(add->cursor, add->n_cursor, w->nodes[o]));
	return ok || xip83_session_fail(s, "RESOURCE_EXHAUSTED", "out of memory");
}

static bool
Passes(Xip83Session *s, Xip83Wave *w)
{
	Xip83Pass  *pass = &w->pass[0];
	bool		ok = true;

	w->n_passes = 1;
	pass->done = w->n_nodes == 0;
	pass->scan.node = SCAN_START_NODE;
	pass->scan.seq = SCAN_START_SEQ;
	for (int i = 0; i < 5; i++)
		ok = (pass->params[i] = xip83_lit_finish(&w->lit[0][i])) != NULL && ok;
	return ok || xip83_session_fail(s, "RESOURCE_EXHAUSTED", "out of memory");
}

static bool
Page(Xip83Session *s, Xip83Wave *w, int p)
{
	Xip83Pass  *pass = &w->pass[p];
	char		node[16],
				seq[32],
				limit[16];
	const char *params[8] = {pass->params[0], pass->params[1], pass->params[2],
	pass->params[3], pass->params[4], node, seq, limit};

	snprintf(node, sizeof(node), "%d", pass->scan.node);
	snprintf(seq, sizeof(seq), "%lld", (long long) pass->scan.seq);
	snprintf(limit, sizeof(limit), "%d", XIP83_PAGE_ROWS);
	return xip83_wave_send(s, w, p, 2,
						   "SELECT originator_node_id, originator_sequence_id, topic, originator_envelope"
						   " FROM xip83.envelope_wave_scan($1::bytea[], $2::int[], $3::bigint[],"
						   " $4::int[], $5::bigint[], $6::int, $7::bigint, $8::int)", 8, params);
}

static Xip83Pos
Position(const PGresult *res, int r, int p)
{
	Xip83Pos	pos = {(int32_t) xip83_result_int(res, r, 0), xip83_result_int(res, r, 1)};

	(void) p;
	return pos;
}

static bool
Row(Xip83Session *s, Xip83Wave *w, int p, const PGresult *res, int r)
{
	Xip83Msg	m = {0};

	m.node = (int32_t) xip83_result_int(res, r, 0);
	m.position = xip83_result_int(res, r, 1);
	m.topic = (const unsigned char *) PQgetvalue(res, r, 2);
	m.topic_len = (size_t) PQgetlength(res, r, 2);
	m.envelope = (const unsigned char *) PQgetvalue(res, r, 3);
	m.envelope_len = (size_t) PQgetlength(res, r, 3);
	(void) p;
	return xip83_wave_scanned(s, w, &m);
}

const Xip83WaveOps xip83_wave_d14n = {Pin, Param, Passes, Page, Position, Row};
