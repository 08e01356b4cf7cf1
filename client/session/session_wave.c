/*
 * session_wave.c: the wave lane. A Mutate with adds starts a wave: its
 * topics are gated, the binding pins the ceilings (v3: group_ceiling(),
 * welcome_ceiling(); d14n: originator_ceilings()) and the wave is replayed
 * page by page through the wave scans, one merged pass in position order
 * (v3: id per kind; d14n: (originator, sequence)), every frame tagged with
 * the wave's mutate_id. Waves advance one page at a time in turn, between
 * live fetches, so neither lane waits for a long wave.
 *
 * The seam. While a topic is gated, the live feed's rows for it are folded
 * into the wave instead of going live. When the scans have reached the
 * ceilings, the feed fetches once more: every row committed before that
 * fetch has then passed the feed (a ceiling is a horizon, read after the
 * feed's last fetch, so every position at or below it is committed, will
 * never exist, or comes as a late write). The folded rows not already sent by
 * the scan follow the scan's frames, then TopicsLive, then CatchupComplete,
 * and the topics go live: the feed delivers each row once and the scan's
 * snapshots see every committed row at or below the ceilings, so each
 * message reaches the client exactly once.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session_internal.h"

Xip83Wave *
xip83_wave_find(Xip83Session *s, uint64_t mutate_id)
{
	for (int i = 0; i < s->n_waves; i++)
		if (s->waves[i]->mutate_id == mutate_id)
			return s->waves[i];
	return NULL;
}

void
xip83_wave_free(Xip83Wave *w)
{
	if (w == NULL)
		return;
	for (int p = 0; p < 2; p++)
		for (int i = 0; i < 5; i++)
			free(w->pass[p].params[i]);
	free(w->delivered);
	for (size_t i = 0; i < w->n_topics; i++)
		free(w->topics[i]);
	free(w->topics);
	free(w->topic_lens);
	for (size_t i = 0; i < w->n_folded; i++)
		free(w->folded[i].mem);
	free(w->folded);
	xip83_batch_free(&w->batch);
	PQclear(w->prefetched);
	for (int p = 0; p < 2; p++)
		for (int i = 0; i < 5; i++)
			free(w->lit[p][i].s);
	free(w->nodes);
	free(w);
}

bool
xip83_msg_v3(Xip83Session *s, Xip83Msg *m, const Xip83V3Row *row)
{
	if (s->scratch_len < row->key_len + 1)
	{
		unsigned char *p = realloc(s->scratch, row->key_len + 1);

		if (p == NULL)
			return xip83_session_fail(s, "RESOURCE_EXHAUSTED", "out of memory");
		s->scratch = p;
		s->scratch_len = row->key_len + 1;
	}
	s->scratch[0] = (unsigned char) row->kind;
	memcpy(s->scratch + 1, row->key, row->key_len);
	memset(m, 0, sizeof(*m));
	m->node = row->kind;
	m->position = row->id;
	m->topic = s->scratch;
	m->topic_len = row->key_len + 1;
	m->v3 = row;
	return true;
}

/* Whether a Mutate's add replays: new topics do; known ones only below where they stand. */
static bool
Replays(const Xip83Topic *t, const Xip83Add *a)
{
	if (t == NULL)
		return true;
	/* a live topic replays from below what it was sent; a gated one from below its floor */
	return xip83_topic_below(t, a->cursor, a->n_cursor, !t->live);
}

bool
xip83_wave_open(Xip83Session *s, Xip83Apply *a)
{
	const Xip83Request *req = &a->req;
	Xip83Wave  *w = NULL;

	a->opened = true;
	if (req->n_adds == 0)
		return true;
	if (s->n_waves >= XIP83_MAX_WAVES)
		return xip83_session_fail(s, "RESOURCE_EXHAUSTED", "%d waves in flight",
								  XIP83_MAX_WAVES);
	a->chosen = calloc(req->n_adds, sizeof(*a->chosen));
	if (a->chosen == NULL || (w = calloc(1, sizeof(*w))) == NULL
		|| (w->topics = calloc(req->n_adds, sizeof(*w->topics))) == NULL
		|| (w->topic_lens = calloc(req->n_adds, sizeof(size_t))) == NULL
	/* the set grows once for the whole Mutate, not once per doubling */
		|| (!req->history_only && !xip83_topics_reserve(&s->topics, req->n_adds)))
	{
		xip83_wave_free(w);
		return xip83_session_fail(s, "RESOURCE_EXHAUSTED", "out of memory");
	}
	w->mutate_id = req->mutate_id;
	w->history_only = req->history_only;
	w->batch.mutate_id = req->mutate_id;
	/* found by the rows its gated topics fold; not stepped until it starts */
	s->waves[s->n_waves++] = w;
	a->w = w;
	return true;
}

bool
xip83_wave_add(Xip83Session *s, Xip83Apply *a, const Xip83Add *add)
{
	Xip83Wave  *w = a->w;

	/* history_only replays without touching the topic set */
	if (!w->history_only)
	{
		Xip83Topic *t = xip83_topics_get(&s->topics, add->topic, add->len);

		if (!Replays(t, add))
			return true;
		if (t == NULL && s->topics.count >= XIP83_MAX_TOPICS)
			return xip83_session_fail(s, "RESOURCE_EXHAUSTED", "more than %d active topics",
									  XIP83_MAX_TOPICS);
		if ((t == NULL && (t = xip83_topics_put(&s->topics, add->topic, add->len)) == NULL)
			|| !xip83_topic_reset(&s->topics, t, add->cursor, add->n_cursor))
			return xip83_session_fail(s, "RESOURCE_EXHAUSTED", "out of memory");
		t->live = false;
		t->wave = w->mutate_id;
	}
	if ((w->topics[w->n_topics] = malloc(add->len)) == NULL)
		return xip83_session_fail(s, "RESOURCE_EXHAUSTED", "out of memory");
	memcpy(w->topics[w->n_topics], add->topic, add->len);
	w->held += add->len;
	s->held_by_waves += add->len;
	w->topic_lens[w->n_topics] = add->len;
	a->chosen[w->n_topics++] = add;
	return true;
}

bool
xip83_wave_close(Xip83Session *s, Xip83Apply *a, size_t *budget)
{
	Xip83Wave  *w = a->w;
	size_t		params = 0;

	if (w == NULL)
		return true;
	/* nothing to replay: no wave */
	if (w->n_topics == 0)
	{
		a->w = NULL;
		for (int i = 0; i < s->n_waves; i++)
			if (s->waves[i] == w)
				s->waves[i] = s->waves[--s->n_waves];
		s->held_by_waves -= w->held;
		xip83_wave_free(w);
		return true;
	}
	/* the wave stays in waves when this fails: freed with the session */
	if (!w->pinned && !(w->pinned = s->ops->pin(s, w)))
		return true;
	for (; *budget > 0 && w->n_params < w->n_topics; (*budget)--)
		if (!s->ops->param(s, w, a->chosen[w->n_params++]))
			return true;
	if (w->n_params < w->n_topics)
		return false;
	a->w = NULL;
	if (!s->ops->passes(s, w))
		return true;
	for (int p = 0; p < w->n_passes; p++)
		for (int i = 0; i < 5; i++)
			params += w->pass[p].params[i] ? strlen(w->pass[p].params[i]) : 0;
	w->held += params;
	s->held_by_waves += params;
	return true;
}

/* Orders positions: line, then position on it. */
static int
PosCmp(const Xip83Pos *x, const Xip83Pos *y)
{
	if (x->node != y->node)
		return x->node < y->node ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static bool
Delivered(const Xip83Wave *w, int32_t node, int64_t position)
{
	Xip83Pos	key = {node, position};
	size_t		lo = 0,
				hi = w->n_delivered;

	while (lo < hi)
	{
		size_t		mid = (lo + hi) / 2;

		if (PosCmp(&w->delivered[mid], &key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < w->n_delivered && PosCmp(&w->delivered[lo], &key) == 0;
}

/* Sends a message in the wave's frame and moves its topic's position. */
static bool
Emit(Xip83Session *s, Xip83Wave *w, const Xip83Msg *m)
{
	if (!w->history_only)
	{
		Xip83Topic *t = xip83_topics_get(&s->topics, m->topic, m->topic_len);
		Xip83Line  *l;

		if (t == NULL || t->live || t->wave != w->mutate_id)
			return true;		/* removed or re-added since the wave started */
		if ((l = xip83_topic_line_put(&s->topics, t, m->node)) == NULL)
			return xip83_session_fail(s, "RESOURCE_EXHAUSTED", "out of memory");
		if (m->position > l->position)
			l->position = m->position;
	}
	return xip83_batch_add(&s->out, &w->batch, m)
		|| xip83_session_fail(s, "UNAVAILABLE", "wave %llu: frame not sent",
							  (unsigned long long) w->mutate_id);
}

bool
xip83_wave_scanned(Xip83Session *s, Xip83Wave *w, const Xip83Msg *m)
{
	if (w->n_delivered == w->cap_delivered)
	{
		size_t		cap = w->cap_delivered ? w->cap_delivered * 2 : 1024;
		Xip83Pos   *d = realloc(w->delivered, cap * sizeof(Xip83Pos));

		if (d == NULL)
			return xip83_session_fail(s, "RESOURCE_EXHAUSTED", "wave %llu: out of memory",
									  (unsigned long long) w->mutate_id);
		w->delivered = d;
		w->cap_delivered = cap;
	}
	w->delivered[w->n_delivered].node = m->node;
	w->delivered[w->n_delivered++].seq = m->position;
	return Emit(s, w, m);
}

static int
FoldedOrder(const void *a, const void *b)
{
	const Xip83Msg *x = &((const Xip83Folded *) a)->msg;
	const Xip83Msg *y = &((const Xip83Folded *) b)->msg;
	Xip83Pos	px = {x->node, x->position};
	Xip83Pos	py = {y->node, y->position};

	return PosCmp(&px, &py);
}

/* The seam: folded rows, TopicsLive, CatchupComplete, the gate opens. */
static bool
Finish(Xip83Session *s, Xip83Wave *w)
{
	bool		ok = true;

	if (w->n_folded > 1)
		qsort(w->folded, w->n_folded, sizeof(Xip83Folded), FoldedOrder);
	for (size_t i = 0; ok && i < w->n_folded; i++)
	{
		Xip83Msg	m = w->folded[i].msg;

		/* the array moved since the fold: point at the columns where they are now */
		if (m.v3 != NULL)
			m.v3 = &w->folded[i].v3;
		if (!Delivered(w, m.node, m.position))
			ok = Emit(s, w, &m);
	}
	if (!ok || !xip83_batch_flush(&s->out, &w->batch))
		return false;
	if (!w->history_only)
	{
		const unsigned char **live;
		size_t		n_live = 0;

		if ((live = calloc(w->n_topics + 1, sizeof(*live))) == NULL)
			return xip83_session_fail(s, "RESOURCE_EXHAUSTED", "out of memory");
		for (size_t i = 0; i < w->n_topics; i++)
		{
			Xip83Topic *t = xip83_topics_get(&s->topics, w->topics[i], w->topic_lens[i]);

			if (t == NULL || t->live || t->wave != w->mutate_id)
				continue;
			w->topic_lens[n_live] = w->topic_lens[i];
			live[n_live++] = w->topics[i];
			t->live = true;
		}
		ok = n_live == 0 || xip83_send_topics_live(&s->out, live, w->topic_lens, n_live);
		free(live);
	}
	return ok && xip83_send_catchup_complete(&s->out, w->mutate_id);
}

/* Pages of a wave asked again after lost connections before the stream fails. */
#define MAX_PAGES_LOST 3

/*
 * Whether a failed page lost its connection: gone (its end read now if it
 * has not been), or ended by a shutdown or crash (res, when there is one).
 */
static bool
ConnectionLost(PGconn *conn, const PGresult *res)
{
	const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;

	if (!PQconsumeInput(conn) || PQstatus(conn) != CONNECTION_OK)
		return true;
	return res != NULL && (state == NULL || strncmp(state, "08", 2) == 0 ||
						   strncmp(state, "57P", 3) == 0);
}

/* The name a page statement is prepared under. */
static void
StatementName(int stmt, char *name, size_t len)
{
	snprintf(name, len, "xip83_wave_%d", stmt);
}

/*
 * Prepares statement stmt on the idle wave connection the first time it runs
 * there: a page then skips the parse and plan of the scan, which a catch-up
 * storm of many streams otherwise pays once per page. Blocks once per
 * connection and statement (async_pages defers it: xip83_wave_prepare_send).
 */
static bool
Prepared(Xip83Session *s, int stmt, const char *sql, int n_params, char *name, size_t len)
{
	PGresult   *res;
	bool		ok;

	StatementName(stmt, name, len);
	if (*s->wave_prepared & (1u << stmt))
		return true;
	res = PQprepare(s->wave_conn, name, sql, n_params, NULL);
	ok = PQresultStatus(res) == PGRES_COMMAND_OK;
	PQclear(res);
	if (ok)
		*s->wave_prepared |= 1u << stmt;
	return ok;
}

bool
xip83_wave_send(Xip83Session *s, Xip83Wave *w, int p, int stmt, const char *sql, int n_params,
				const char *const *params)
{
	int			sent;

	/* one query at a time: a page another wave asked for ahead is collected first */
	xip83_wave_conn_idle(s);
	if (s->wave_prepared == NULL ||
		(s->async_pages && !(*s->wave_prepared & (1u << stmt))))
	{
		sent = PQsendQueryParams(s->wave_conn, sql, n_params, NULL, params, NULL, NULL, 1);
		if (s->wave_prepared != NULL)
		{
			s->unprepared_stmt = stmt;
			s->unprepared_sql = sql;
			s->unprepared_n_params = n_params;
		}
	}
	else
	{
		char		name[32];

		sent = Prepared(s, stmt, sql, n_params, name, sizeof(name)) &&
			PQsendQueryPrepared(s->wave_conn, name, n_params, params, NULL, NULL, 1);
	}
	/* a connection the server dropped before the query went out: the same as one lost after */
	if (!sent && s->redo_lost_pages && ConnectionLost(s->wave_conn, NULL) &&
		w->pages_lost++ < MAX_PAGES_LOST)
		return true;
	if (!sent)
		return xip83_session_fail(s, "UNAVAILABLE", "wave %llu: %s",
								  (unsigned long long) w->mutate_id, PQerrorMessage(s->wave_conn));
	s->ahead = w;
	s->ahead_pass = p;
	return true;
}

/*
 * The result of the page query in flight; NULL after failing the stream, or
 * with redo_lost_pages, when the connection was lost (asked again).
 */
static PGresult *
Collect(Xip83Session *s)
{
	PGresult   *res = PQgetResult(s->wave_conn);
	PGresult   *extra;
	Xip83Wave  *w = s->ahead;

	while ((extra = PQgetResult(s->wave_conn)) != NULL)
		PQclear(extra);
	s->ahead = NULL;
	if (PQresultStatus(res) == PGRES_TUPLES_OK)
		return res;
	/* a few times only: a page that takes its server down with it must not do it forever */
	if (s->redo_lost_pages && ConnectionLost(s->wave_conn, res) && w->pages_lost++ < MAX_PAGES_LOST)
	{
		/* the pass's cursor did not move: the next step asks for this page again */
		PQclear(res);
		return NULL;
	}
	xip83_session_fail(s, "UNAVAILABLE", "wave %llu: %s", (unsigned long long) w->mutate_id,
					   PQerrorMessage(s->wave_conn));
	PQclear(res);
	return NULL;
}

int
xip83_wave_prepare_send(Xip83Session *s, PGconn *conn)
{
	char		name[32];
	int			stmt = s->unprepared_stmt;
	const char *sql = s->unprepared_sql;

	s->unprepared_sql = NULL;
	if (sql == NULL)
		return -1;
	StatementName(stmt, name, sizeof(name));
	return PQsendPrepare(conn, name, sql, s->unprepared_n_params, NULL) ? stmt : -1;
}

void
xip83_wave_conn_idle(Xip83Session *s)
{
	Xip83Wave  *w = s->ahead;

	if (w == NULL)
		return;
	w->prefetched_pass = s->ahead_pass;
	w->prefetched = Collect(s);
}

/*
 * One page of pass p; a short page ends the pass. A full page's successor is
 * asked for before this page is encoded and sent, so the server reads it
 * while the engine and the client work on this one.
 */
static bool
ScanPage(Xip83Session *s, Xip83Wave *w, int p)
{
	PGresult   *res;
	int			n;
	bool		ok = true;

	if (w->prefetched != NULL && w->prefetched_pass == p)
	{
		res = w->prefetched;
		w->prefetched = NULL;
	}
	else if (s->ahead == w && s->ahead_pass == p)
		res = Collect(s);
	else if (!s->ops->page(s, w, p))
		return false;
	else if (s->async_pages)
		return true;			/* the caller collects the page once it is in */
	else
		res = Collect(s);
	if (res == NULL)
		return false;
	n = PQntuples(res);
	if (n > 0)
		w->pass[p].scan = s->ops->position(res, n - 1, p);
	w->pass[p].done = n < XIP83_PAGE_ROWS;
	if (!w->pass[p].done)
		ok = s->ops->page(s, w, p);
	for (int r = 0; ok && r < n; r++)
		ok = s->ops->row(s, w, p, res, r);
	PQclear(res);
	return ok && xip83_batch_flush(&s->out, &w->batch);
}

bool
xip83_wave_step(Xip83Session *s)
{
	Xip83Wave  *w;
	int			i;
	int			rc;

	if (s->n_waves == 0 || s->applying != NULL)
		return true;
	i = s->next_wave++ % s->n_waves;
	w = s->waves[i];
	for (int p = 0; p < w->n_passes; p++)
		if (!w->pass[p].done)
			return ScanPage(s, w, p);
	/* every row committed before this fetch has now passed the feed */
	if (s->seam_ticket != NULL)
	{
		if (w->seam == 0)
			w->seam = s->seam_ticket(s->seam_arg);
		if (!s->seam_done(s->seam_arg, w->seam))
			return true;		/* the caller's fetch has not run yet */
	}
	else if ((rc = xip83_feed_fetch(s->feed)) == -1)
		return true;			/* the feed is reconnecting: try again next turn */
	else if (rc < 0)
		return xip83_session_fail(s, "UNAVAILABLE", "live feed failed");
	if (s->failed || !xip83_batch_flush(&s->out, &s->live) || !Finish(s, w))
		return false;
	for (size_t j = 0; j < w->n_folded; j++)
		s->pending_bytes -= w->folded[j].size;
	s->held_by_waves -= w->held;
	s->waves[i] = s->waves[--s->n_waves];
	xip83_wave_free(w);
	return true;
}

/* Copies n bytes to *p and returns where they now are. */
static const unsigned char *
Keep(unsigned char **p, const unsigned char *src, size_t n)
{
	const unsigned char *at = *p;

	if (n)
		memcpy(*p, src, n);
	*p += n;
	return at;
}

bool
xip83_msg_keep(Xip83Session *s, Xip83Folded **arr, size_t *n, size_t *cap, const Xip83Msg *m,
			   bool late)
{
	const Xip83V3Row *r = m->v3;
	size_t		size = m->topic_len + m->envelope_len
		+ (r ? r->key_len + r->data_len + r->aux_len + r->metadata_len : 0);
	Xip83Folded *f;
	unsigned char *p;

	if (s->pending_bytes + size > XIP83_MAX_PENDING_BYTES)
		return xip83_session_fail(s, "RESOURCE_EXHAUSTED", "more than %d bytes of live rows pending",
								  XIP83_MAX_PENDING_BYTES);
	if (*n == *cap)
	{
		size_t		nc = *cap ? *cap * 2 : 64;
		Xip83Folded *nf = realloc(*arr, nc * sizeof(*nf));

		if (nf == NULL)
			return xip83_session_fail(s, "RESOURCE_EXHAUSTED", "out of memory");
		*arr = nf;
		*cap = nc;
	}
	if ((p = malloc(size ? size : 1)) == NULL)
		return xip83_session_fail(s, "RESOURCE_EXHAUSTED", "out of memory");
	f = &(*arr)[(*n)++];
	f->mem = p;
	f->size = size;
	f->late = late;
	f->msg = *m;
	f->msg.packed = NULL;		/* the caller's buffer: packed again from the kept columns */
	f->msg.topic = Keep(&p, m->topic, m->topic_len);
	f->msg.envelope = Keep(&p, m->envelope, m->envelope_len);
	if (r != NULL)
	{
		f->v3 = *r;
		f->v3.key = Keep(&p, r->key, r->key_len);
		f->v3.data = Keep(&p, r->data, r->data_len);
		f->v3.aux = Keep(&p, r->aux, r->aux_len);
		f->v3.metadata = Keep(&p, r->metadata, r->metadata_len);
	}
	s->pending_bytes += size;
	return true;
}

bool
xip83_wave_fold(Xip83Session *s, Xip83Wave *w, const Xip83Msg *m)
{
	return xip83_msg_keep(s, &w->folded, &w->n_folded, &w->cap_folded, m, false);
}
