/*
 * session.c: the session engine's loop (see session.h): requests in,
 * Started first, the live lane, keepalive, and the close. The wave lane and
 * the seam are in session_wave.c.
 *
 * The live lane follows every row of the binding (v3: group messages and
 * welcomes; d14n: envelopes) from the horizons read when the session starts
 * (feed.h: notices only wake it; positions come from the horizons) and
 * passes on the rows of live topics in feed order, tagged 0: v3 ascending id
 * per kind across all of them, d14n ascending sequence id per originator.
 * Late writes (rows stored at or below a horizon the feed already passed)
 * are the exception: they come after the higher positions, once. Rows of a
 * topic gated in a wave are folded into that wave; rows of other topics are
 * dropped.
 */
#include "session.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frame_reader.h"
#include "session_internal.h"

/* Longest wait for the feed while idle: how late a request may be noticed. */
#define IDLE_STEP_MS 5

bool
xip83_session_fail(Xip83Session *s, const char *code, const char *fmt,...)
{
	va_list		ap;
	int			n;

	if (s->failed)
		return false;
	s->failed = true;
	n = snprintf(s->status, sizeof(s->status), "%s ", code);
	va_start(ap, fmt);
	vsnprintf(s->status + n, sizeof(s->status) - (size_t) n, fmt, ap);
	va_end(ap);
	/* libpq messages end in a newline: one status line */
	for (char *p = s->status; *p; p++)
		if (*p == '\n')
			*p = ' ';
	return false;
}

void
xip83_session_on_row(void *arg, const Xip83FeedRow *row)
{
	Xip83Session *s = arg;
	Xip83Topic *t = xip83_topics_get(&s->topics, row->topic, row->topic_len);

	if (t != NULL)
		xip83_session_on_topic_row(s, t, row, NULL, 0);
}

/* A feed row as a message; packed: the v3 message already packed, or NULL. */
static void
RowMsg(Xip83Msg *m, const Xip83FeedRow *row, const unsigned char *packed, size_t packed_len)
{
	memset(m, 0, sizeof(*m));
	m->node = row->v3 ? row->v3->kind : row->originator_node_id;
	m->position = row->position;
	m->topic = row->topic;
	m->topic_len = row->topic_len;
	m->v3 = row->v3;
	m->packed = row->v3 ? packed : NULL;
	m->packed_len = packed_len;
	if (row->v3 == NULL)
	{
		m->envelope = row->data;
		m->envelope_len = row->data_len;
	}
}

/*
 * The live lane's rules for a row of topic t: true when the row goes out
 * live now (its position taken); false when the client has seen it, a wave
 * holds it, a Mutate being applied defers it, or the session failed.
 */
static bool
LiveMsg(Xip83Session *s, Xip83Topic *t, const Xip83Msg *m, bool late)
{
	Xip83Wave  *w;
	Xip83Line  *l;

	if (s->failed)
		return false;
	/* a Mutate being applied may still remove or re-add it: after the Mutate */
	if (t->live && s->applying != NULL)
	{
		(void) xip83_msg_keep(s, &s->deferred, &s->n_deferred, &s->cap_deferred, m, late);
		return false;
	}
	/*
	 * Rows at or below the floor the client gave are ones it has seen, unless
	 * they are late writes (stored after the horizon passed them): those it
	 * cannot have seen, and it gets them once.
	 */
	l = xip83_topic_line(t, m->node);
	if (!late && m->position <= (l ? l->floor : XIP83_NOTHING_SEEN))
		return false;
	if (t->live)
	{
		if ((l = xip83_topic_line_put(&s->topics, t, m->node)) == NULL)
			return xip83_session_fail(s, "RESOURCE_EXHAUSTED", "out of memory");
		if (m->position > l->position)
			l->position = m->position;
		return true;
	}
	/* gated: held for the wave, which replays above the floors up to its ceilings itself */
	if ((w = xip83_wave_find(s, t->wave)) != NULL)
		(void) xip83_wave_fold(s, w, m);
	return false;
}

/* A row of topic t: delivered live, folded into t's wave, or deferred. */
static void
TopicMsg(Xip83Session *s, Xip83Topic *t, const Xip83Msg *m, bool late)
{
	if (LiveMsg(s, t, m, late) && !xip83_batch_add(&s->out, &s->live, m))
		xip83_session_fail(s, "UNAVAILABLE", "live frame not sent");
}

void
xip83_session_on_topic_row(Xip83Session *s, Xip83Topic *t, const Xip83FeedRow *row,
						   const unsigned char *packed, size_t packed_len)
{
	Xip83Msg	m;

	RowMsg(&m, row, packed, packed_len);
	TopicMsg(s, t, &m, row->late);
}

bool
xip83_session_take_row(Xip83Session *s, Xip83Topic *t, const Xip83FeedRow *row,
					   const unsigned char *packed, size_t packed_len)
{
	Xip83Msg	m;

	RowMsg(&m, row, packed, packed_len);
	return LiveMsg(s, t, &m, row->late);
}

size_t
xip83_session_wave_topics(const Xip83Session *s)
{
	size_t		n = 0;

	for (int i = 0; i < s->n_waves; i++)
		n += s->waves[i]->n_topics;
	return n;
}

bool
xip83_live_frame(Xip83Out *out, const Xip83FeedRow *row, const unsigned char *packed,
				 size_t packed_len)
{
	Xip83Batch	b = {0};
	Xip83Msg	m;
	bool		ok;

	RowMsg(&m, row, packed, packed_len);
	ok = xip83_batch_add(out, &b, &m) && xip83_batch_flush(out, &b);
	xip83_batch_free(&b);
	return ok;
}

/*
 * X83L0: late writes owed to this stream were dropped by the server (its
 * late ring overflowed while the feed lagged, or a crash lost its tail). They
 * lie below positions already sent, so no replay from the topics' current
 * positions finds them, and a replay from their first floors would repeat
 * everything else: the engine cannot resynchronize exactly once by itself.
 * It ends the stream with ABORTED ("retry at a higher level") rather than
 * UNAVAILABLE, which clients retry from their current cursors, skipping the
 * lost rows. Rows sent before are valid; nothing is sent after.
 */
void
xip83_session_on_status(void *arg, const char *status, const char *detail)
{
	Xip83Session *s = arg;

	(void) detail;
	if (strcmp(status, "late-lost") == 0)
		xip83_session_fail(s, "ABORTED", "late writes owed to this stream were dropped by the"
						   " server (SQLSTATE X83L0): resubscribe with cursors from before the"
						   " loss; the current ones would skip them");
}

/* The Mutate is whole: its request goes, the rows deferred meanwhile come now. */
static void
ApplyEnd(Xip83Session *s)
{
	Xip83Apply *a = s->applying;

	xip83_request_free(&a->req);
	free(a->chosen);
	free(a);
	s->applying = NULL;
	for (size_t i = 0; i < s->n_deferred; i++)
	{
		Xip83Folded *f = &s->deferred[i];
		Xip83Msg	m = f->msg;
		Xip83Topic *t;

		/* the array moved since the row was kept: point at the columns where they are now */
		if (m.v3 != NULL)
			m.v3 = &f->v3;
		s->pending_bytes -= f->size;
		if (!s->failed && (t = xip83_topics_get(&s->topics, m.topic, m.topic_len)) != NULL)
			TopicMsg(s, t, &m, f->late);
		free(f->mem);
	}
	free(s->deferred);
	s->deferred = NULL;
	s->n_deferred = s->cap_deferred = 0;
}

bool
xip83_session_apply(Xip83Session *s)
{
	Xip83Apply *a = s->applying;
	const Xip83Request *req;
	size_t		budget = s->mutate_slice > 0 ? (size_t) s->mutate_slice : SIZE_MAX;
	bool		ok = true;

	if (a == NULL)
		return true;
	req = &a->req;
	/* removes first: a topic removed and added in one Mutate replays from its new cursor */
	for (; ok && budget > 0 && a->removed < req->n_removes; budget--, a->removed++)
		xip83_topics_del(&s->topics, req->removes[a->removed], req->remove_lens[a->removed]);
	if (ok && !a->opened && a->removed == req->n_removes)
		ok = xip83_wave_open(s, a);
	for (; ok && a->w != NULL && budget > 0 && a->added < req->n_adds; budget--, a->added++)
		ok = xip83_wave_add(s, a, &req->adds[a->added]);
	/* checked as it grows: it can pass the limit by one slice at most */
	if (ok && s->topics.bytes + s->held_by_waves > XIP83_MAX_TOPIC_BYTES)
		ok = xip83_session_fail(s, "RESOURCE_EXHAUSTED", "the stream's topics take more than"
								" %d bytes (identifiers, cursors and waves)",
								XIP83_MAX_TOPIC_BYTES);
	if (!ok)
		return false;
	if (a->removed < req->n_removes || (a->w != NULL && a->added < req->n_adds)
		|| !xip83_wave_close(s, a, &budget))
		return true;
	/* acked now unless it started a wave: that one's CatchupComplete comes at its seam */
	if (!s->failed && xip83_wave_find(s, req->mutate_id) == NULL)
		(void) xip83_send_catchup_complete(&s->out, req->mutate_id);
	ApplyEnd(s);
	return !s->failed;
}

bool
xip83_session_mutate(Xip83Session *s, Xip83Request *req)
{
	if (req->mutate_id != 0 && xip83_wave_find(s, req->mutate_id) != NULL)
		return xip83_session_fail(s, "INVALID_ARGUMENT", "mutate_id %llu is a wave in flight",
								  (unsigned long long) req->mutate_id);
	if ((s->applying = calloc(1, sizeof(*s->applying))) == NULL)
		return xip83_session_fail(s, "RESOURCE_EXHAUSTED", "out of memory");
	/* the request's bytes go with it */
	s->applying->req = *req;
	memset(req, 0, sizeof(*req));
	do
	{
		if (!xip83_session_apply(s))
			return false;
	} while (s->mutate_slice == 0 && s->applying != NULL);
	return true;
}

bool
xip83_session_request(Xip83Session *s, const unsigned char *msg, size_t len)
{
	Xip83Keepalive *ka = &s->ka;
	Xip83Request req;
	char		err[256];
	const char *code = xip83_request_parse(s->opt.d14n ? XIP83_BINDING_D14N : XIP83_BINDING_V3,
										   msg, len, &req, err, sizeof(err));
	bool		ok;

	if (code != NULL)
		ok = xip83_session_fail(s, code, "%s", err);
	else if (req.kind == XIP83_REQ_PING)
		ok = xip83_send_pong(&s->out, req.nonce);
	else if (req.kind == XIP83_REQ_PONG)
	{
		if (ka->outstanding && req.nonce == ka->nonce)
			ka->outstanding = false;
		ok = true;
	}
	else
		ok = xip83_session_mutate(s, &req);
	xip83_request_free(&req);
	return ok;
}

bool
xip83_session_keepalive(Xip83Session *s, bool half_closed)
{
	Xip83Keepalive *ka = &s->ka;
	int64_t		now = xip83_now_ms();

	if (half_closed)
		return true;			/* the client sends nothing more: no Pong will come */
	if (ka->outstanding)
		return now - ka->sent_ms < ka->interval_ms
			|| xip83_session_fail(s, "DEADLINE_EXCEEDED", "no Pong for Ping %llu within %d ms",
								  (unsigned long long) ka->nonce, ka->interval_ms);
	if (now - s->out.last_send_ms < ka->interval_ms - ka->slack_ms)
		return true;
	ka->nonce++;
	ka->outstanding = true;
	ka->sent_ms = now;
	return xip83_send_ping(&s->out, ka->nonce);
}

/*
 * Handles the requests the client has sent so far, each one before the next
 * is read: a request not handled yet stays in the client's pipe, never in
 * memory here. Sets *eof at the client's half-close; false on a stream error.
 */
static bool
TakeRequests(Xip83Session *s, Xip83FrameReader *in, bool *eof)
{
	for (;;)
	{
		const unsigned char *msg;
		size_t		len;

		switch (xip83_frame_read_fd(in, s->opt.in_fd, &msg, &len))
		{
			case XIP83_FRAME_READY:
				if (!xip83_session_request(s, msg, len))
					return false;
				break;
			case XIP83_FRAME_MORE:
				return true;
			case XIP83_FRAME_END:
				*eof = true;
				return true;
			case XIP83_FRAME_TRUNCATED:
				return xip83_session_fail(s, "INVALID_ARGUMENT", "truncated request at end of stream");
			case XIP83_FRAME_MALFORMED:
				return xip83_session_fail(s, "INVALID_ARGUMENT", "malformed length prefix");
			case XIP83_FRAME_TOO_LARGE:
				return xip83_session_fail(s, "RESOURCE_EXHAUSTED",
										  "request of %llu bytes (at most %d)",
										  (unsigned long long) in->size, XIP83_MAX_REQUEST);
			case XIP83_FRAME_NO_MEMORY:
				return xip83_session_fail(s, "RESOURCE_EXHAUSTED", "out of memory");
			case XIP83_FRAME_READ_ERROR:
				return xip83_session_fail(s, "INTERNAL", "reading requests failed: %s",
										  strerror(errno));
		}
	}
}

static bool
Run(Xip83Session *s)
{
	Xip83FrameReader in;
	bool		eof = false;
	bool		ok = true;

	xip83_frame_init(&in, XIP83_MAX_REQUEST);
	while (ok && !s->failed)
	{
		if (!eof && !TakeRequests(s, &in, &eof))
			break;
		if (eof && s->n_waves == 0)
			break;				/* half-closed and every wave finished */
		if (!xip83_session_keepalive(s, eof))
			break;
		ok = xip83_wave_step(s);
		if (ok && xip83_feed_step(s->feed, s->n_waves ? 0 : IDLE_STEP_MS) < 0)
			ok = xip83_session_fail(s, "UNAVAILABLE", "live feed failed");
		if (ok && !xip83_batch_flush(&s->out, &s->live))
			ok = xip83_session_fail(s, "UNAVAILABLE", "live frame not sent");
		if (ok && s->out.failed)
			ok = xip83_session_fail(s, "CANCELLED", "the client stopped reading");
	}
	xip83_frame_free(&in);
	return ok && !s->failed;
}

Xip83Session *
xip83_session_new(const Xip83SessionOptions *options)
{
	Xip83Session *s = calloc(1, sizeof(*s));

	if (s == NULL)
		return NULL;
	s->opt = *options;
	s->ka.interval_ms = s->opt.keepalive_ms > 0 ? s->opt.keepalive_ms : 30000;
	s->out.fd = s->opt.out_fd;
	s->out.d14n = s->opt.d14n;
	s->ops = s->opt.d14n ? &xip83_wave_d14n : &xip83_wave_v3;
	return s;
}

void
xip83_session_free(Xip83Session *s)
{
	if (s == NULL)
		return;
	if (s->applying != NULL)
	{
		xip83_request_free(&s->applying->req);
		free(s->applying->chosen);
		free(s->applying);
	}
	for (size_t i = 0; i < s->n_deferred; i++)
		free(s->deferred[i].mem);
	free(s->deferred);
	for (int i = 0; i < s->n_waves; i++)
		xip83_wave_free(s->waves[i]);
	xip83_batch_free(&s->live);
	xip83_topics_free(&s->topics);
	free(s->scratch);
	free(s);
}

int
xip83_session_run(const Xip83SessionOptions *options, char *status, size_t status_len)
{
	Xip83Session *s = xip83_session_new(options);
	Xip83FeedOptions fo = {0};
	bool		ok = false;

	if (s == NULL)
	{
		snprintf(status, status_len, "RESOURCE_EXHAUSTED out of memory");
		return 1;
	}
	fcntl(s->opt.in_fd, F_SETFL, fcntl(s->opt.in_fd, F_GETFL) | O_NONBLOCK);
	fo.conninfo = s->opt.conninfo;
	fo.application_name = "xip83-session";
	fo.kinds = s->opt.d14n ? XIP83_FEED_ENVELOPE : XIP83_FEED_GROUP | XIP83_FEED_WELCOME;
	fo.on_row = xip83_session_on_row;
	fo.on_status = xip83_session_on_status;
	fo.arg = s;
	s->wave_conn = xip83_pg_connect(s->opt.conninfo, "xip83-session");
	if (PQstatus(s->wave_conn) != CONNECTION_OK)
		xip83_session_fail(s, "UNAVAILABLE", "%s", PQerrorMessage(s->wave_conn));
	else if ((s->feed = xip83_feed_new(&fo)) == NULL || !xip83_feed_start_at_horizon(s->feed))
		xip83_session_fail(s, "UNAVAILABLE", "live feed: cannot read the horizons");
	/* Started before anything else the stream carries */
	else if (!xip83_send_started(&s->out, (uint32_t) s->ka.interval_ms))
		xip83_session_fail(s, "CANCELLED", "the client stopped reading");
	else
		ok = Run(s);
	snprintf(status, status_len, "%s", ok ? "OK" : s->status);
	if (s->feed)
		xip83_feed_free(s->feed);
	PQfinish(s->wave_conn);
	xip83_session_free(s);
	return ok ? 0 : 1;
}
