/*
 * session_wave.c: the wave lane. A Mutate with adds starts a wave: its
 * topics are gated, the ceilings are pinned (group_ceiling(),
 * welcome_ceiling()), and the wave is replayed page by page through the
 * wave scans, one merged pass in id order per kind, every frame tagged with
 * the wave's mutate_id. Waves advance one page at a time in turn, between
 * live fetches, so neither lane waits for a long wave.
 *
 * The seam. While a topic is gated, the live feed's rows for it are folded
 * into the wave instead of going live. When the scan has reached the
 * ceilings, the feed fetches once more: every row committed before that
 * fetch has then passed the feed (the ceiling is a horizon, so every id at
 * or below it is committed, will never exist, or comes as a late write).
 * The folded rows not already sent by the scan follow the scan's frames,
 * then TopicsLive, then CatchupComplete, and the topics go live: the feed
 * delivers each row once and the scan's snapshots see every committed row at
 * or below the ceiling, so each message reaches the client exactly once.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session_internal.h"

#define PAGE_ROWS 1000

static const char *const scan_sql[2] = {
	"SELECT * FROM xip83.group_wave_scan($1::bytea[], $2::bigint[], $3::bigint, $4::bigint, $5::int)",
	"SELECT * FROM xip83.welcome_wave_scan($1::bytea[], $2::bigint[], $3::bigint, $4::bigint, $5::int)",
};

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
	for (int k = 0; k < 2; k++)
	{
		free(w->kind[k].topics_param);
		free(w->kind[k].floors_param);
		free(w->kind[k].delivered);
	}
	for (size_t i = 0; i < w->n_topics; i++)
		free(w->topics[i]);
	free(w->topics);
	free(w->topic_lens);
	for (size_t i = 0; i < w->n_folded; i++)
		free(w->folded[i].mem);
	free(w->folded);
	xip83_batch_free(&w->batch);
	free(w);
}

/* A growing string for the array parameters. */
typedef struct Str
{
	char	   *s;
	size_t		len;
	size_t		cap;
} Str;

static bool
StrAdd(Str *b, const char *p, size_t n)
{
	if (b->cap - b->len < n + 1)
	{
		size_t		cap = b->cap ? b->cap : 256;
		char	   *ns;

		while (cap - b->len < n + 1)
			cap *= 2;
		if ((ns = realloc(b->s, cap)) == NULL)
			return false;
		b->s = ns;
		b->cap = cap;
	}
	memcpy(b->s + b->len, p, n);
	b->len += n;
	b->s[b->len] = '\0';
	return true;
}

/* Appends a topic key as a bytea[] element: "\\x..." (the array parser eats one backslash). */
static bool
AddKey(Str *b, const unsigned char *key, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	char		pair[2];
	bool		ok = StrAdd(b, b->len > 1 ? ",\"\\\\x" : "\"\\\\x", b->len > 1 ? 5 : 4);

	for (size_t i = 0; ok && i < len; i++)
	{
		pair[0] = hex[key[i] >> 4];
		pair[1] = hex[key[i] & 15];
		ok = StrAdd(b, pair, 2);
	}
	return ok && StrAdd(b, "\"", 1);
}

static bool
AddFloor(Str *b, int64_t floor)
{
	char		num[32];
	int			n = snprintf(num, sizeof(num), "%s%lld", b->len > 1 ? "," : "", (long long) floor);

	return StrAdd(b, num, (size_t) n);
}

/* Records the topic in the wave and its kind's scan parameters. */
static bool
WaveAddTopic(Xip83Wave *w, const unsigned char *topic, size_t len, int64_t floor, Str *keys,
			 Str *floors)
{
	int			k = topic[0];

	if ((w->topics[w->n_topics] = malloc(len)) == NULL)
		return false;
	memcpy(w->topics[w->n_topics], topic, len);
	w->topic_lens[w->n_topics++] = len;
	w->kind[k].n_topics++;
	return AddKey(&keys[k], topic + 1, len - 1) && AddFloor(&floors[k], floor);
}

/* Pins the ceilings of the kinds the wave scans. */
static bool
PinCeilings(Xip83Session *s, Xip83Wave *w)
{
	PGresult   *res = PQexec(s->wave_conn,
							 "SELECT xip83.group_ceiling(), xip83.welcome_ceiling()");

	if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1)
	{
		xip83_session_fail(s, "UNAVAILABLE", "wave ceiling: %s",
						   PQerrorMessage(s->wave_conn));
		PQclear(res);
		return false;
	}
	for (int k = 0; k < 2; k++)
	{
		w->kind[k].ceiling = atoll(PQgetvalue(res, 0, k));
		w->kind[k].done = w->kind[k].n_topics == 0;
	}
	PQclear(res);
	return true;
}

bool
xip83_wave_start(Xip83Session *s, const Xip83Request *req)
{
	Xip83Wave  *w;
	Str			keys[2] = {{0}};
	Str			floors[2] = {{0}};
	bool		ok = true;

	if (req->n_adds == 0)
		return xip83_send_catchup_complete(&s->out, req->mutate_id);
	if (s->n_waves >= XIP83_MAX_WAVES)
		return xip83_session_fail(s, "RESOURCE_EXHAUSTED", "%d waves in flight",
								  XIP83_MAX_WAVES);
	if ((w = calloc(1, sizeof(*w))) == NULL
		|| (w->topics = calloc(req->n_adds, sizeof(*w->topics))) == NULL
		|| (w->topic_lens = calloc(req->n_adds, sizeof(size_t))) == NULL)
	{
		xip83_wave_free(w);
		return xip83_session_fail(s, "RESOURCE_EXHAUSTED", "out of memory");
	}
	w->mutate_id = req->mutate_id;
	w->history_only = req->history_only;
	w->batch.mutate_id = req->mutate_id;
	for (int k = 0; k < 2; k++)
		ok = ok && StrAdd(&keys[k], "{", 1) && StrAdd(&floors[k], "{", 1);
	for (size_t i = 0; ok && i < req->n_adds; i++)
	{
		const Xip83Add *a = &req->adds[i];
		Xip83Topic *t;

		/* history_only replays without touching the topic set */
		if (w->history_only)
		{
			ok = WaveAddTopic(w, a->topic, a->len, a->cursor, keys, floors);
			continue;
		}
		t = xip83_topics_get(&s->topics, a->topic, a->len);
		/* re-adding a live topic replays only from below what it was sent */
		if (t != NULL && t->live && a->cursor >= t->position)
			continue;
		/* re-adding a gated topic replays only from below its wave's floor */
		if (t != NULL && !t->live && a->cursor >= t->floor)
			continue;
		if (t == NULL && s->topics.count >= XIP83_MAX_TOPICS)
		{
			ok = xip83_session_fail(s, "RESOURCE_EXHAUSTED", "more than %d active topics",
									XIP83_MAX_TOPICS);
			break;
		}
		if (t == NULL && (t = xip83_topics_put(&s->topics, a->topic, a->len)) == NULL)
		{
			ok = xip83_session_fail(s, "RESOURCE_EXHAUSTED", "out of memory");
			break;
		}
		t->live = false;
		t->wave = w->mutate_id;
		t->floor = a->cursor;
		t->position = a->cursor;
		ok = WaveAddTopic(w, a->topic, a->len, a->cursor, keys, floors);
	}
	for (int k = 0; k < 2; k++)
	{
		ok = ok && StrAdd(&keys[k], "}", 1) && StrAdd(&floors[k], "}", 1);
		w->kind[k].topics_param = keys[k].s;
		w->kind[k].floors_param = floors[k].s;
	}
	if (!ok)
	{
		xip83_wave_free(w);
		return xip83_session_fail(s, "RESOURCE_EXHAUSTED", "out of memory");
	}
	/* nothing to replay: acked at once, like a Mutate without adds */
	if (w->n_topics == 0)
	{
		xip83_wave_free(w);
		return xip83_send_catchup_complete(&s->out, req->mutate_id);
	}
	if (!PinCeilings(s, w))
	{
		xip83_wave_free(w);
		return false;
	}
	s->waves[s->n_waves++] = w;
	return true;
}

/* The topic entry gating rows of this kind and key in wave w, or NULL. */
static Xip83Topic *
GatedIn(Xip83Session *s, const Xip83Wave *w, const Xip83V3Row *row)
{
	unsigned char stack[256];
	unsigned char *topic = row->key_len < sizeof(stack) ? stack : malloc(row->key_len + 1);
	Xip83Topic *t;

	if (topic == NULL)
		return NULL;
	topic[0] = (unsigned char) row->kind;
	memcpy(topic + 1, row->key, row->key_len);
	t = xip83_topics_get(&s->topics, topic, row->key_len + 1);
	if (topic != stack)
		free(topic);
	return t != NULL && !t->live && t->wave == w->mutate_id ? t : NULL;
}

static bool
Delivered(Xip83WaveKind *k, int64_t id)
{
	size_t		lo = 0,
				hi = k->n_delivered;

	while (lo < hi)
	{
		size_t		mid = (lo + hi) / 2;

		if (k->delivered[mid] < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < k->n_delivered && k->delivered[lo] == id;
}

static bool
Remember(Xip83WaveKind *k, int64_t id)
{
	if (k->n_delivered == k->cap_delivered)
	{
		size_t		cap = k->cap_delivered ? k->cap_delivered * 2 : 1024;
		int64_t    *d = realloc(k->delivered, cap * sizeof(int64_t));

		if (d == NULL)
			return false;
		k->delivered = d;
		k->cap_delivered = cap;
	}
	k->delivered[k->n_delivered++] = id;
	return true;
}

/* Sends a row in the wave's frame and moves its topic's position. */
static bool
Emit(Xip83Session *s, Xip83Wave *w, const Xip83V3Row *row)
{
	Xip83Topic *t = NULL;

	if (!w->history_only && (t = GatedIn(s, w, row)) == NULL)
		return true;			/* removed or re-added since the wave started */
	if (t != NULL && row->id > t->position)
		t->position = row->id;
	return xip83_batch_add(&s->out, &w->batch, row);
}

static bool
ScanPage(Xip83Session *s, Xip83Wave *w, int k)
{
	Xip83WaveKind *wk = &w->kind[k];
	char		cursor[32],
				ceiling[32],
				limit[16];
	const char *params[5] = {wk->topics_param, wk->floors_param, cursor, ceiling, limit};
	PGresult   *res;
	int			n;

	snprintf(cursor, sizeof(cursor), "%lld", (long long) wk->scan_cursor);
	snprintf(ceiling, sizeof(ceiling), "%lld", (long long) wk->ceiling);
	snprintf(limit, sizeof(limit), "%d", PAGE_ROWS);
	res = PQexecParams(s->wave_conn, scan_sql[k], 5, NULL, params, NULL, NULL, 1);
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
	{
		xip83_session_fail(s, "UNAVAILABLE", "wave %llu: %s",
						   (unsigned long long) w->mutate_id, PQerrorMessage(s->wave_conn));
		PQclear(res);
		return false;
	}
	n = PQntuples(res);
	for (int r = 0; r < n; r++)
	{
		Xip83V3Row	row;

		xip83_v3row_read(res, r, k, &xip83_v3_scan_cols, &row);
		wk->scan_cursor = row.id;
		if (!Remember(wk, row.id) || !Emit(s, w, &row))
		{
			PQclear(res);
			return xip83_session_fail(s, "RESOURCE_EXHAUSTED", "wave %llu: out of memory",
									  (unsigned long long) w->mutate_id);
		}
	}
	PQclear(res);
	if (n < PAGE_ROWS)
		wk->done = true;
	return xip83_batch_flush(&s->out, &w->batch);
}

static int
FoldedOrder(const void *a, const void *b)
{
	const Xip83V3Row *x = &((const Xip83Folded *) a)->row;
	const Xip83V3Row *y = &((const Xip83Folded *) b)->row;

	if (x->kind != y->kind)
		return x->kind - y->kind;
	return x->id < y->id ? -1 : x->id > y->id;
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
		const Xip83V3Row *row = &w->folded[i].row;

		if (!Delivered(&w->kind[row->kind], row->id))
			ok = Emit(s, w, row);
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

bool
xip83_wave_step(Xip83Session *s)
{
	Xip83Wave  *w;
	int			i;
	int			rc;

	if (s->n_waves == 0)
		return true;
	i = s->next_wave++ % s->n_waves;
	w = s->waves[i];
	for (int k = 0; k < 2; k++)
		if (!w->kind[k].done)
			return ScanPage(s, w, k);
	/* every row committed before this fetch has now passed the feed */
	rc = xip83_feed_fetch(s->feed);
	if (rc == -1)
		return true;			/* the feed is reconnecting: try again next turn */
	if (rc < 0)
		return xip83_session_fail(s, "UNAVAILABLE", "live feed failed");
	if (!xip83_batch_flush(&s->out, &s->live) || !Finish(s, w))
		return false;
	for (size_t j = 0; j < w->n_folded; j++)
		s->pending_bytes -= w->folded[j].row.key_len + w->folded[j].row.data_len
			+ w->folded[j].row.aux_len + w->folded[j].row.metadata_len;
	s->waves[i] = s->waves[--s->n_waves];
	xip83_wave_free(w);
	return true;
}

bool
xip83_wave_fold(Xip83Session *s, Xip83Wave *w, const Xip83V3Row *row)
{
	size_t		size = row->key_len + row->data_len + row->aux_len + row->metadata_len;
	Xip83Folded *f;
	unsigned char *p;

	if (s->pending_bytes + size > XIP83_MAX_PENDING_BYTES)
		return xip83_session_fail(s, "RESOURCE_EXHAUSTED", "more than %d bytes of live rows pending",
								  XIP83_MAX_PENDING_BYTES);
	if (w->n_folded == w->cap_folded)
	{
		size_t		cap = w->cap_folded ? w->cap_folded * 2 : 64;
		Xip83Folded *nf = realloc(w->folded, cap * sizeof(*nf));

		if (nf == NULL)
			return xip83_session_fail(s, "RESOURCE_EXHAUSTED", "out of memory");
		w->folded = nf;
		w->cap_folded = cap;
	}
	if ((p = malloc(size ? size : 1)) == NULL)
		return xip83_session_fail(s, "RESOURCE_EXHAUSTED", "out of memory");
	f = &w->folded[w->n_folded++];
	f->row = *row;
	f->mem = p;
	memcpy(p, row->key, row->key_len);
	f->row.key = p;
	p += row->key_len;
	memcpy(p, row->data, row->data_len);
	f->row.data = p;
	p += row->data_len;
	memcpy(p, row->aux, row->aux_len);
	f->row.aux = p;
	p += row->aux_len;
	if (row->metadata_len)
		memcpy(p, row->metadata, row->metadata_len);
	f->row.metadata = p;
	s->pending_bytes += size;
	return true;
}
