/*
 * gw_live.c: a live row to the streams holding its topic: the engine's
 * rules per stream, the row's frame built once per method and queued on
 * each stream that takes it by reference.
 */
#include <stdlib.h>
#include <string.h>

#include "gw_frames.h"
#include "gw_internal.h"

/*
 * A v3 row packed once for all the streams it goes to; NULL when out of
 * memory: it is packed where it is needed then.
 */
static const unsigned char *
PackOnce(Xip83Gateway *gw, const Xip83V3Row *row, size_t *len)
{
	*len = xip83_v3_pack(row, NULL);
	if (gw->cap_packed < *len)
	{
		unsigned char *p = realloc(gw->packed, *len);

		if (p == NULL)
			return NULL;
		gw->packed = p;
		gw->cap_packed = *len;
	}
	xip83_v3_pack(row, gw->packed);
	return gw->packed;
}

/*
 * A live row's frames, by method: Subscribe's frame of the row's binding, or
 * a server stream's translation of it. Each is built once, when the first
 * stream of its method takes the row, and queued on every stream that takes
 * it by reference: what differs per stream (the gRPC prefix, the DATA
 * frame's header) the transport writes as it sends.
 */
typedef struct RowFrames
{
	const Xip83FeedRow *row;
	const unsigned char *packed;
	size_t		packed_len;
	Xip83H2Shared *frame[XIP83_GATEWAY_METHODS];	/* NULL: nothing to send */
	bool		built[XIP83_GATEWAY_METHODS];
	bool		failed[XIP83_GATEWAY_METHODS];
} RowFrames;

/* A writer that keeps the one message it is given, shared. */
static bool
KeepShared(void *arg, const unsigned char *msg, size_t len)
{
	Xip83H2Shared **keep = arg;

	/* a row is one message of each method: a second is not the row's */
	if (*keep != NULL)
		return false;
	return (*keep = xip83_h2_shared_new(msg, len)) != NULL;
}

static Xip83H2Shared *
RowFrame(RowFrames *rf, int method)
{
	const Xip83GatewayMethod *m = &xip83_gateway_methods[method];
	bool		ok = true;

	if (rf->built[method])
		return rf->frame[method];
	rf->built[method] = true;
	if (m->kind == GW_SUBSCRIBE)
	{
		Xip83Out	out = {.fd = -1, .write = KeepShared, .write_arg = &rf->frame[method],
		.d14n = m->d14n};

		ok = xip83_live_frame(&out, rf->row, rf->packed, rf->packed_len);
	}
	else
	{
		int			sub = 0;

		/* translated from the Subscribe frame of the same binding */
		while (xip83_gateway_methods[sub].kind != GW_SUBSCRIBE
			   || xip83_gateway_methods[sub].d14n != m->d14n)
			sub++;
		if (RowFrame(rf, sub) == NULL)
			ok = false;
		else
		{
			size_t		len;
			const unsigned char *bytes = xip83_h2_shared_bytes(rf->frame[sub], &len);

			ok = gw_frame_translate(m->kind, bytes, len, KeepShared, &rf->frame[method]);
		}
	}
	if (!ok)
	{
		xip83_h2_shared_release(rf->frame[method]);
		rf->frame[method] = NULL;
		rf->failed[method] = true;
	}
	return rf->frame[method];
}

/* The row to one stream that takes it: its method's frame, by reference. */
static void
SendRow(GwStream *st, RowFrames *rf, int64_t now)
{
	Xip83Session *s = st->s;
	Xip83H2Shared *f = RowFrame(rf, st->method);
	bool		ok;

	if (rf->failed[st->method])
	{
		xip83_session_fail(s, "UNAVAILABLE", "live frame not sent");
		return;
	}
	/* what the live batch holds (rows a Mutate deferred) goes first */
	if (!xip83_batch_flush(&s->out, &s->live))
		return;
	st->gw->stats.rows_sent++;
	st->gw->stats.frames_sent++;
	ok = f == NULL || (st->h2 != NULL && xip83_h2_send_shared(st->h2, f));
	xip83_out_sent(&s->out, ok, now);
}

size_t
gw_route_row(Xip83Gateway *gw, const Xip83FeedRow *row)
{
	const GwSubs *subs = gw_router_get(&gw->routers[row->kind == XIP83_FEED_ENVELOPE],
									   row->topic, row->topic_len);
	RowFrames	rf = {.row = row};
	int64_t		now;

	if (subs == NULL)
		return 0;
	if (row->v3 != NULL)
		rf.packed = PackOnce(gw, row->v3, &rf.packed_len);
	now = xip83_now_ms();
	for (size_t i = 0; i < subs->n; i++)
	{
		GwStream   *st = subs->subs[i].sub;

		/* its topics leave the index a slice at a time */
		if (st->finished)
			continue;
		/* the stream's own entry of the topic: no lookup in its table */
		if (xip83_session_take_row(st->s, subs->subs[i].topic, row, rf.packed, rf.packed_len))
			SendRow(st, &rf, now);
		if (st->dirty)
			continue;
		if (gw->n_dirty == gw->cap_dirty)
		{
			size_t		cap = gw->cap_dirty ? gw->cap_dirty * 2 : 256;
			GwStream  **d = realloc(gw->dirty, cap * sizeof(*d));

			if (d == NULL)
			{
				xip83_session_fail(st->s, "RESOURCE_EXHAUSTED", "out of memory");
				gw->up->check(st);
				continue;
			}
			gw->dirty = d;
			gw->cap_dirty = cap;
		}
		st->dirty = true;
		gw->dirty[gw->n_dirty++] = st;
	}
	for (int m = 0; m < XIP83_GATEWAY_METHODS; m++)
		xip83_h2_shared_release(rf.frame[m]);
	return subs->n;
}
