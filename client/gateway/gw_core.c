/*
 * gw_core.c: the gateway's multiplexed session core (see gateway.h).
 *
 * Threading: everything here runs on the transport's loop; the live feed
 * runs on a thread of its own and hands its rows over (gw_feed.c). A
 * wave's ceilings are the cursors of the rows routed so far when it starts
 * (no query). Wave pages never block the loop (gw_pool.c), nor do their
 * statements' prepares.
 */
#include "gateway.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "gw_frames.h"
#include "gw_internal.h"

/* A live batch's buffer larger than this is freed once flushed. */
#define LIVE_KEEP 4096
/* Messages up to this size are offered for sharing with the next stream of the method. */
#define SHARE_MAX 4096
/* A Ping may go up to this fraction of the keepalive interval early (1/8). */
#define KEEPALIVE_SLACK 8
/* connections' keepalive grids are phased in ticks of this many ms */
#define KEEPALIVE_TICK_MS 50

static void gw_check(GwStream *st);
static void gw_flush_dirty(Xip83Gateway *gw);
static void gw_feed_status(Xip83Gateway *gw, const char *status, const char *detail);
static void gw_seam_done(Xip83Gateway *gw, uint64_t ticket, int rc);
static void gw_feed_started(Xip83Gateway *gw);
static void gw_request(GwStream *st, const unsigned char *msg, size_t len);
static void gw_stream_free(GwStream *st);
static void Publish(void *arg, uint32_t events);

/* What the feed's thread and the pool call back (GwCoreHooks). */
static const GwCoreHooks core_hooks = {
	.check = gw_check,
	.flush_dirty = gw_flush_dirty,
	.route_row = gw_route_row,	/* gw_live.c */
	.feed_status = gw_feed_status,
	.seam_done = gw_seam_done,
	.feed_started = gw_feed_started,
	.request = gw_request,
	.stream_free = gw_stream_free,
};


/* ------------------------------------------------------------ statuses */

/* The status code a session's "CODE message" status starts with. */
static int
StatusCode(const char *status, const char **message)
{
	for (int c = 0; c < XIP83_GRPC_NCODES; c++)
	{
		size_t		n = strlen(xip83_grpc_codes[c]);

		if (strncmp(status, xip83_grpc_codes[c], n) == 0 && (status[n] == ' ' || status[n] == '\0'))
		{
			*message = status[n] ? status + n + 1 : NULL;
			return c;
		}
	}
	*message = status;
	return XIP83_GRPC_INTERNAL;
}

/* Ends a stream: its topics leave the index, its waves stop. */
static void
Finish(GwStream *st, int code, const char *message)
{
	Xip83Gateway *gw = st->gw;

	if (st->finished)
		return;
	st->finished = true;
	/* a bound of the transport ended it first: count what the client saw */
	if (st->h2 && xip83_h2_status(st->h2) != XIP83_GRPC_OK)
		code = xip83_h2_status(st->h2);
	st->code = code < XIP83_GRPC_NCODES ? code : XIP83_GRPC_INTERNAL;
	gw->stats.errors[st->code]++;
	gw_unqueue(st);
	gw_apply_unqueue(st);
	xip83_h2_timer_stop(gw->srv, &st->keepalive);
	gw_release_topics(st);
	gw_count_topics(st);
	if (st->h2)
		xip83_h2_finish(st->h2, code, message);
}

/* ------------------------------------------------------------ output */

/* Drops the messages kept for sharing (their bytes live on in the queues that hold them). */
static void
ForgetShared(Xip83Gateway *gw)
{
	for (int m = 0; m < XIP83_GATEWAY_METHODS; m++)
	{
		xip83_h2_shared_release(gw->last[m]);
		gw->last[m] = NULL;
	}
}

/*
 * Sends one message. Streams of one method often send the same bytes one
 * after the other (Started, a server stream's status, a catch-up's
 * frames of the same rows): a message equal to the last one of the
 * stream's method is queued as a reference to it, not a copy. Live rows
 * do not come this way (SendRow).
 */
static bool
SendRaw(void *arg, const unsigned char *msg, size_t len)
{
	GwStream   *st = arg;
	Xip83H2Shared **last = &st->gw->last[st->method];
	size_t		last_len = 0;
	const unsigned char *bytes;

	if (st->h2 == NULL)
		return false;
	if (len > SHARE_MAX)
		return xip83_h2_send(st->h2, msg, len);
	bytes = *last ? xip83_h2_shared_bytes(*last, &last_len) : NULL;
	if (bytes == NULL || last_len != len || memcmp(bytes, msg, len) != 0)
	{
		xip83_h2_shared_release(*last);
		if ((*last = xip83_h2_shared_new(msg, len)) == NULL)
			return xip83_h2_send(st->h2, msg, len);
	}
	return xip83_h2_send_shared(st->h2, *last);
}

/* The engine's frame writer: Subscribe frames as they are, or translated. */
static bool
WriteFrame(void *arg, const unsigned char *frame, size_t len)
{
	GwStream   *st = arg;

	st->gw->stats.rows_sent += gw_frame_rows(frame, len);
	st->gw->stats.frames_sent++;
	if (st->kind == GW_SUBSCRIBE)
		return SendRaw(st, frame, len);
	return gw_frame_translate(st->kind, frame, len, SendRaw, st);
}

/* ------------------------------------------------------------ after the engine */

static void
gw_check(GwStream *st)
{
	Xip83Session *s = st->s;
	const char *message;

	if (st->finished)
		return;
	/* rows a Mutate deferred wait in the live batch: they go now */
	if (!s->failed && !xip83_batch_flush(&s->out, &s->live))
		xip83_session_fail(s, "CANCELLED", "the client went away");
	/* a burst grew it: 100,000 idle streams do not each keep a large buffer */
	if (s->live.cap > LIVE_KEEP)
		xip83_batch_free(&s->live);
	st->dirty = false;
	if (!s->failed && s->out.failed)
		xip83_session_fail(s, "CANCELLED", "the client went away");
	if (!s->failed && st->h2
		&& xip83_h2_pending(st->h2) + s->pending_bytes > XIP83_MAX_PENDING_BYTES)
		xip83_session_fail(s, "RESOURCE_EXHAUSTED", "more than %d bytes pending: the client"
						   " reads too slowly", XIP83_MAX_PENDING_BYTES);
	gw_count_topics(st);
	if (s->failed)
	{
		int			code = StatusCode(s->status, &message);

		Finish(st, code, message);
	}
	else if (st->kind == GW_SUBSCRIBE && st->half_closed && s->n_waves == 0
			 && s->applying == NULL && !gw_holding(st) && st->waiting == NULL)
		Finish(st, XIP83_GRPC_OK, NULL);
}

static void
gw_flush_dirty(Xip83Gateway *gw)
{
	for (size_t i = 0; i < gw->n_dirty; i++)
		gw_check(gw->dirty[i]);
	gw->n_dirty = 0;
	ForgetShared(gw);
}

/* ------------------------------------------------------------ the feed */

static void
gw_feed_status(Xip83Gateway *gw, const char *status, const char *detail)
{
	/* one feed for every loop: said once */
	if (gw->opt.loop == 0)
		fprintf(stderr, "xip83-gateway: feed %s%s%s\n", status, detail ? ": " : "", detail ? detail : "");
	for (GwStream *st = gw->streams; st; st = st->next)
		if (!st->finished)
		{
			xip83_session_on_status(st->s, status, detail);
			gw_check(st);
		}
}

/* ------------------------------------------------------------ the seam */

/*
 * A wave's seam needs a feed round that starts after its scans reached the
 * ceilings (gw_feed.c hands out the tickets and runs the rounds). A stream
 * at its seam waits in seam_waiters, which are in ticket order (tickets only
 * grow, and a stream keeps its place while it waits); when a round ends, the
 * waiters it served (a prefix) step again, the others wait on untouched.
 */
static void
SeamWait(GwStream *st, uint64_t ticket)
{
	Xip83Gateway *gw = st->gw;

	if (st->at_seam)
	{
		if (ticket < st->seam_wait)
			st->seam_wait = ticket;
		return;
	}
	if (gw->n_seam_waiters == gw->cap_seam_waiters)
	{
		size_t		cap = gw->cap_seam_waiters ? gw->cap_seam_waiters * 2 : 64;
		GwStream  **w = realloc(gw->seam_waiters, cap * sizeof(*w));

		if (w == NULL)
		{
			xip83_session_fail(st->s, "RESOURCE_EXHAUSTED", "out of memory");
			return;
		}
		gw->seam_waiters = w;
		gw->cap_seam_waiters = cap;
	}
	gw->seam_waiters[gw->n_seam_waiters++] = st;
	st->at_seam = true;
	st->seam_wait = ticket;
}

static void
gw_seam_done(Xip83Gateway *gw, uint64_t ticket, int rc)
{
	size_t		n = 0;

	if (ticket > gw->seam_done)
		gw->seam_done = ticket;
	/* a failed round fails every wave waiting; a served waiter steps again */
	while (n < gw->n_seam_waiters && (rc < -1 || gw->seam_waiters[n]->seam_wait <= gw->seam_done))
	{
		GwStream   *st = gw->seam_waiters[n++];

		st->at_seam = false;
		if (rc < -1)
			xip83_session_fail(st->s, "UNAVAILABLE", "live feed failed");
		gw_check(st);
		gw_enqueue(st);
	}
	if (n > 0)
	{
		memmove(gw->seam_waiters, gw->seam_waiters + n, (gw->n_seam_waiters - n) * sizeof(GwStream *));
		gw->n_seam_waiters -= n;
	}
	gw_schedule(gw);
}

static uint64_t
SeamTicket(void *arg)
{
	GwStream   *st = arg;
	uint64_t	ticket = gw_feed_ask_round(st->gw);

	SeamWait(st, ticket);
	return ticket;
}

static bool
SeamDone(void *arg, uint64_t ticket)
{
	GwStream   *st = arg;

	if (st->gw->seam_done >= ticket)
		return true;
	/* stepped again before its round ended (another wave's turn): wait on */
	SeamWait(st, ticket);
	return false;
}

/* ------------------------------------------------------------ streams */

static void
TopicWatch(void *arg, Xip83Topic *t, bool added)
{
	GwStream   *st = arg;
	GwRouter   *r = &st->gw->routers[st->s->opt.d14n];

	if (!added)
		gw_router_del(r, t->bytes, t->len, st);
	else if (!gw_router_add(r, t->bytes, t->len, st, t))
		xip83_session_fail(st->s, "RESOURCE_EXHAUSTED", "out of memory");
}

static void KeepaliveFire(void *arg);

/*
 * A stream's Ping is due an interval after its last frame, its reaping an
 * interval after the Ping. Each connection's keepalive timers fire on a grid
 * of step slack_ms, at a phase of its own: the Pings of its idle streams go
 * together in one write (and their Pongs come back in one read), no more
 * than slack_ms early, while the connections' grids stay spread over time so
 * that no turn of the loop takes all of them. The phases are whole ticks, so
 * that the loop wakes for the keepalives of several connections at once
 * rather than once per connection. A reaping goes at the grid point after
 * its deadline.
 */
static void
KeepaliveArm(GwStream *st)
{
	Xip83Session *s = st->s;
	int64_t		step = s->ka.slack_ms > 0 ? s->ka.slack_ms : 1;
	int64_t		tick = step >= 2 * KEEPALIVE_TICK_MS ? KEEPALIVE_TICK_MS : 1;
	int64_t		phase = (int64_t) ((xip83_h2_conn_serial(st->h2) * 2654435761u)
								   % (uint64_t) (step / tick)) * tick;
	int64_t		due = (s->ka.outstanding ? s->ka.sent_ms : s->out.last_send_ms) + s->ka.interval_ms;
	int64_t		at = due - phase;

	/* the grid point at or before the Ping's due time, at or after the reaping's */
	at -= at % step;
	if (s->ka.outstanding && at + phase < due)
		at += step;
	at += phase;
	/* an absolute time (both clocks are monotonic ms): one grid point, one group of timers */
	(void) xip83_h2_timer_start_at(st->gw->srv, &st->keepalive, at > 0 ? (uint64_t) at : 1,
								   KeepaliveFire, st);
}

static void
KeepaliveFire(void *arg)
{
	GwStream   *st = arg;

	(void) xip83_session_keepalive(st->s, st->half_closed);
	gw_check(st);
	if (!st->finished && !st->half_closed)
		KeepaliveArm(st);
}

static int
Open(Xip83H2Stream *h2, const Xip83H2Header *headers, size_t n_headers)
{
	const Xip83GrpcMethod *m = xip83_h2_method(h2);
	Xip83Gateway *gw = m->arg;
	int			method = (int) (m - gw->methods);
	GwMethodKind kind = xip83_gateway_methods[method].kind;
	Xip83SessionOptions so = {0};
	GwStream   *st;

	if (gw->draining)
		return XIP83_GRPC_UNAVAILABLE;
	if ((st = calloc(1, sizeof(*st))) == NULL)
		return XIP83_GRPC_RESOURCE_EXHAUSTED;
	so.conninfo = gw->opt.conninfo;
	so.d14n = xip83_gateway_methods[method].d14n;
	so.keepalive_ms = gw->opt.keepalive_ms;
	so.in_fd = so.out_fd = -1;
	if ((st->client = gw_conn_get(gw, xip83_h2_conn_serial(h2))) == NULL)
	{
		free(st);
		return XIP83_GRPC_RESOURCE_EXHAUSTED;
	}
	if ((st->s = xip83_session_new(&so)) == NULL)
	{
		gw_conn_release(gw, st->client);
		free(st);
		return XIP83_GRPC_RESOURCE_EXHAUSTED;
	}
	st->gw = gw;
	st->h2 = h2;
	st->kind = kind;
	st->method = method;
	st->s->mutate_slice = GW_MUTATE_SLICE;
	st->s->async_pages = true;
	st->s->redo_lost_pages = true;
	st->s->ceilings_from_feed = true;
	st->s->ka.slack_ms = st->s->ka.interval_ms / KEEPALIVE_SLACK;
	st->s->seam_ticket = SeamTicket;
	st->s->seam_done = SeamDone;
	st->s->seam_arg = st;
	st->s->feed = gw->view;
	st->s->out.write = WriteFrame;
	st->s->out.write_arg = st;
	st->s->topics.watch = TopicWatch;
	st->s->topics.watch_arg = st;
	st->next = gw->streams;
	if (gw->streams)
		gw->streams->prev = st;
	gw->streams = st;
	gw->stats.streams[method]++;
	xip83_h2_set_data(h2, st);

	/*
	 * Headers at once, as XMTP's nodes send them: clients (tonic, grpc-go's
	 * Header(), grpc-js's metadata event) wait for them before any message,
	 * and a server stream's first message may be far off.
	 */
	xip83_h2_send_headers(h2, "subscribed", "true");
	/* Started before anything else the stream carries */
	if (!xip83_send_started(&st->s->out, (uint32_t) st->s->ka.interval_ms))
		xip83_session_fail(st->s, "RESOURCE_EXHAUSTED", "out of memory");
	else if (kind == GW_SUBSCRIBE)
		KeepaliveArm(st);
	gw_check(st);
	return XIP83_GRPC_OK;
}

/*
 * Runs one request (msg) or the next slice of the Mutate being applied (msg
 * NULL). A wave's start needs no connection (its ceilings are the feed's
 * cursors); a page in flight on a wave connection stays there, untouched.
 */
static void
gw_request(GwStream *st, const unsigned char *msg, size_t len)
{
	Xip83Session *s = st->s;
	PGconn	   *conn = s->wave_conn;
	Xip83Wave  *ahead = s->ahead;
	int			ahead_pass = s->ahead_pass;

	s->wave_conn = NULL;
	s->ahead = NULL;
	if (msg != NULL)
		(void) xip83_session_request(s, msg, len);
	else
		(void) xip83_session_apply(s);
	s->wave_conn = conn;
	s->ahead = ahead;
	s->ahead_pass = ahead_pass;
	/* a Mutate made whole handed the rows it deferred to the live batch */
	if (s->applying == NULL && !s->failed && !xip83_batch_flush(&s->out, &s->live))
		xip83_session_fail(s, "CANCELLED", "the client went away");
	if (s->applying != NULL || gw_holding(st))
		gw_apply_queue(st);
}

/*
 * Whether a request waits for the feed's start: a wave's ceilings are the
 * feed's start horizons, which a hot standby may not have yet. Mutates wait
 * in order (a remove after an add); a Ping or a Pong needs no feed and runs,
 * so the stream's keepalive goes on meanwhile.
 */
static bool
Wait(GwStream *st, const unsigned char *msg, size_t len)
{
	GwWaiting  *w;

	if (st->gw->feed_started)
		return false;
	if (st->kind == GW_SUBSCRIBE)
	{
		Xip83Request req;
		char		err[128];
		bool		now = xip83_request_parse(st->s->opt.d14n ? XIP83_BINDING_D14N
											  : XIP83_BINDING_V3, msg, len, &req,
											  err, sizeof(err)) != NULL
			|| req.kind != XIP83_REQ_MUTATE;

		xip83_request_free(&req);
		/* a malformed one fails the stream now, as it would then */
		if (now)
			return false;
	}
	if (st->n_waiting >= XIP83_MAX_WAVES || st->waiting_bytes + len > XIP83_MAX_REQUEST
		|| (w = malloc(sizeof(GwWaiting) + len)) == NULL)
	{
		xip83_session_fail(st->s, "RESOURCE_EXHAUSTED", "more than %d requests or %d bytes"
						   " waiting for the live feed's start", XIP83_MAX_WAVES, XIP83_MAX_REQUEST);
		return true;
	}
	w->next = NULL;
	w->len = len;
	memcpy(w->msg, msg, len);
	*(st->waiting_tail ? &st->waiting_tail->next : &st->waiting) = w;
	st->waiting_tail = w;
	st->n_waiting++;
	st->waiting_bytes += len;
	return true;
}

/* Runs a request now, or after the Mutate being applied, in their order. */
static void
Dispatch(GwStream *st, const unsigned char *msg, size_t len)
{
	if (st->s->applying != NULL || gw_holding(st))
	{
		if (gw_hold(st, msg, len))
			gw_apply_queue(st);
	}
	else
		gw_request(st, msg, len);
	gw_count_waves(st, st->s->n_waves);
}

/* Runs a request, or keeps it for the feed's start. */
static void
Run(GwStream *st, const unsigned char *msg, size_t len)
{
	if (!Wait(st, msg, len))
		Dispatch(st, msg, len);
}

static void
FreeWaiting(GwStream *st)
{
	while (st->waiting != NULL)
	{
		GwWaiting  *w = st->waiting;

		st->waiting = w->next;
		free(w);
	}
	st->waiting_tail = NULL;
	st->n_waiting = 0;
	st->waiting_bytes = 0;
}

static void
gw_feed_started(Xip83Gateway *gw)
{
	for (GwStream *st = gw->streams; st; st = st->next)
	{
		while (st->waiting != NULL && !st->finished)
		{
			GwWaiting  *w = st->waiting;

			st->waiting = w->next;
			st->n_waiting--;
			st->waiting_bytes -= w->len;
			Dispatch(st, w->msg, w->len);
			free(w);
			gw_check(st);
		}
		FreeWaiting(st);
		gw_check(st);
		gw_enqueue(st);
	}
	gw_schedule(gw);
}

static void
Message(Xip83H2Stream *h2, const unsigned char *msg, size_t len)
{
	GwStream   *st = xip83_h2_data(h2);

	if (st->finished)
		return;
	if (st->kind == GW_SUBSCRIBE)
		Run(st, msg, len);
	else if (st->requested)
		xip83_session_fail(st->s, "INVALID_ARGUMENT", "a server-streaming call takes one request");
	else
	{
		unsigned char *req;
		size_t		req_len;
		char		err[256];
		const char *code;

		st->requested = true;
		if ((code = gw_filters_request(st->kind, msg, len, &req, &req_len, err, sizeof(err))) != NULL)
			xip83_session_fail(st->s, code, "%s", err);
		else
		{
			Run(st, req, req_len);
			free(req);
		}
	}
	gw_check(st);
	gw_enqueue(st);
	gw_schedule(st->gw);
}

static void
HalfClose(Xip83H2Stream *h2)
{
	GwStream   *st = xip83_h2_data(h2);

	st->half_closed = true;
	if (st->kind != GW_SUBSCRIBE && !st->requested)
		xip83_session_fail(st->s, "INVALID_ARGUMENT", "no request");
	gw_check(st);
}

static void
Writable(Xip83H2Stream *h2)
{
	GwStream   *st = xip83_h2_data(h2);

	if (!st->paused)
		return;
	st->paused = false;
	gw_enqueue(st);
	gw_schedule(st->gw);
}

static void
Closed(Xip83H2Stream *h2, bool cancelled)
{
	GwStream   *st = xip83_h2_data(h2);
	Xip83Gateway *gw = st->gw;

	if (!st->finished)
		Finish(st, XIP83_GRPC_CANCELLED, NULL);
	else if (cancelled && st->code == XIP83_GRPC_OK)
	{
		/*
		 * Its OK never left: the client cancelled first (grpc-js sends its
		 * END_STREAM and RST_STREAM together, and the half-close ended it).
		 */
		gw->stats.errors[XIP83_GRPC_OK]--;
		gw->stats.errors[XIP83_GRPC_CANCELLED]++;
		st->code = XIP83_GRPC_CANCELLED;
	}
	st->h2 = NULL;
	if (st->conn)
		st->conn->owner = NULL; /* its page is dropped when it comes */
	for (size_t i = 0; st->dirty && i < gw->n_dirty; i++)
		if (gw->dirty[i] == st)
			gw->dirty[i] = gw->dirty[--gw->n_dirty];
	for (size_t i = 0; st->at_seam && i < gw->n_seam_waiters; i++)
		if (gw->seam_waiters[i] == st)
			gw->seam_waiters[i] = gw->seam_waiters[--gw->n_seam_waiters];
	*(st->prev ? &st->prev->next : &gw->streams) = st->next;
	if (st->next)
		st->next->prev = st->prev;
	gw->stats.streams[st->method]--;
	gw_count_waves(st, 0);
	gw_conn_release(gw, st->client);
	free(st->held);
	FreeWaiting(st);
	st->s->ahead = NULL;
	st->closed = true;
	if (!st->reaping)
		gw_stream_free(st);
}

static void
gw_stream_free(GwStream *st)
{
	xip83_session_free(st->s);
	free(st);
}

/* ------------------------------------------------------------ the gateway */

/* The methods served, in the order of Xip83GatewayStats.streams. */
const Xip83GatewayMethod xip83_gateway_methods[XIP83_GATEWAY_METHODS] = {
	{"/xmtp.mls.api.v1.MlsApi/Subscribe", GW_SUBSCRIBE, false},
	{"/xmtp.xmtpv4.message_api.QueryApi/Subscribe", GW_SUBSCRIBE, true},
	{"/xmtp.mls.api.v1.MlsApi/SubscribeGroupMessages", GW_GROUP_MESSAGES, false},
	{"/xmtp.mls.api.v1.MlsApi/SubscribeWelcomeMessages", GW_WELCOME_MESSAGES, false},
	{"/xmtp.xmtpv4.message_api.QueryApi/SubscribeTopics", GW_TOPICS, true},
};

/* This loop's share of a bound of the process's: the shares add up to it. */
static size_t
Share(size_t total, int loop, int loops)
{
	return total / (size_t) loops + ((size_t) loop < total % (size_t) loops);
}

Xip83Gateway *
xip83_gateway_new(Xip83H2Server *srv, const Xip83GatewayOptions *opt, Xip83GatewayFeed *feed,
				  char *err, size_t errlen)
{
	Xip83Gateway *gw = calloc(1, sizeof(*gw));
	int			loops;

	if (gw == NULL)
	{
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&gw->publish_lock, NULL);
	gw->ask_watch.fd = -1;
	atomic_init(&gw->answer_fd, -1);
	if ((gw->ask_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0
		|| !xip83_h2_watch(srv, &gw->ask_watch, gw->ask_fd, EPOLLIN, Publish, gw))
	{
		snprintf(err, errlen, "cannot watch for figures: %s", strerror(errno));
		if (gw->ask_fd >= 0)
			close(gw->ask_fd);
		pthread_mutex_destroy(&gw->publish_lock);
		free(gw);
		return NULL;
	}
	gw->opt = *opt;
	gw->up = &core_hooks;
	if (gw->opt.pool <= 0)
		gw->opt.pool = 4;
	if (gw->opt.keepalive_ms <= 0)
		gw->opt.keepalive_ms = 30000;
	if (gw->opt.max_waves <= 0)
		gw->opt.max_waves = XIP83_GATEWAY_MAX_WAVES;
	gw_apply_defaults(&gw->opt);
	loops = gw->opt.loops > 0 ? gw->opt.loops : 1;
	gw->opt.loops = loops;
	if (loops > 1)
	{
		/* a loop with no wave connection of its own could serve no wave */
		gw->opt.pool = (int) Share((size_t) gw->opt.pool, gw->opt.loop, loops);
		if (gw->opt.pool < 1)
			gw->opt.pool = 1;
		gw->opt.max_waves = (int) Share((size_t) gw->opt.max_waves, gw->opt.loop, loops);
		if (gw->opt.max_waves < 1)
			gw->opt.max_waves = 1;
		gw->opt.max_topic_bytes = Share(gw->opt.max_topic_bytes, gw->opt.loop, loops);
	}
	gw->srv = srv;
	if (!gw_pool_open(gw, err, errlen))
		goto fail;
	if (!gw_feed_attach(gw, feed, err, errlen))
		goto fail;
	for (int i = 0; i < XIP83_GATEWAY_METHODS; i++)
	{
		Xip83GrpcMethod *m = &gw->methods[i];

		m->path = xip83_gateway_methods[i].path;
		m->max_message = XIP83_MAX_REQUEST;
		m->open = Open;
		m->message = Message;
		m->half_close = HalfClose;
		m->writable = Writable;
		m->closed = Closed;
		m->arg = gw;
		if (!xip83_h2_register(srv, m))
		{
			snprintf(err, errlen, "cannot register %s", m->path);
			goto fail;
		}
	}
	return gw;
fail:
	xip83_gateway_free(gw);
	return NULL;
}

void
xip83_gateway_drain(void *arg)
{
	Xip83Gateway *gw = arg;

	gw->draining = true;
	/* clients resume from their cursors elsewhere or later */
	for (GwStream *st = gw->streams; st; st = st->next)
		Finish(st, XIP83_GRPC_UNAVAILABLE, "the gateway is shutting down: resubscribe");
}

Xip83H2Server *
xip83_gateway_server(Xip83Gateway *gw)
{
	return gw->srv;
}

void
xip83_gateway_stats(Xip83Gateway *gw, Xip83GatewayStats *out)
{
	Xip83H2Stats hs;

	*out = gw->stats;
	xip83_h2_stats(gw->srv, &hs);
	out->pending = hs.pending;
	for (int b = 0; b < 2; b++)
		out->topics[b] = gw->routers[b].topics.count;
	out->subscriptions = gw->routers[0].subscriptions + gw->routers[1].subscriptions;
	out->topic_bytes = gw->topic_bytes;
	out->max_connection_topic_bytes = gw->opt.max_connection_topic_bytes;
	out->max_topic_bytes = gw->opt.max_topic_bytes;
	for (GwStream *st = gw->a_head; st; st = st->a_next)
		out->applying++;
	for (GwStream *st = gw->streams; st; st = st->next)
	{
		out->waves += (size_t) st->s->n_waves;
		out->pending += st->s->pending_bytes;
		out->wave_queue += st->queued;
	}
	out->pool = (size_t) gw->opt.pool;
	out->max_waves = (size_t) gw->opt.max_waves;
	out->db_connections = 0;
	for (int i = 0; i < gw->opt.pool; i++)
	{
		out->pool_busy += gw->pool[i].busy;
		out->db_connections += PQstatus(gw->pool[i].conn) == CONNECTION_OK;
	}
	gw_feed_stats(gw, out);
}

bool
xip83_gateway_figures(Xip83Gateway *gw, bool own_loop, uint64_t ask, Xip83GatewayFigures *out)
{
	bool		answered = true;

	if (!own_loop)
	{
		pthread_mutex_lock(&gw->publish_lock);
		*out = gw->published;
		answered = gw->published_for >= ask;
		pthread_mutex_unlock(&gw->publish_lock);
	}
	else
	{
		xip83_gateway_stats(gw, &out->gw);
		xip83_h2_stats(gw->srv, &out->h2);
		out->limits = *out->h2.cfg;
	}
	out->h2.cfg = &out->limits;
	return answered;
}

/* Figures asked: computed here, on this loop, then the asker is told. */
static void
Publish(void *arg, uint32_t events)
{
	Xip83Gateway *gw = arg;
	Xip83GatewayFigures f;
	uint64_t	n,
				ask;
	int			fd;

	(void) events;
	if (read(gw->ask_fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		fprintf(stderr, "xip83-gateway: figures asked: %s\n", strerror(errno));
	ask = atomic_load(&gw->asked);
	fd = atomic_load(&gw->answer_fd);
	xip83_gateway_figures(gw, true, 0, &f);
	pthread_mutex_lock(&gw->publish_lock);
	gw->published = f;
	gw->published_for = ask;
	pthread_mutex_unlock(&gw->publish_lock);
	n = 1;
	if (fd >= 0 && write(fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		fprintf(stderr, "xip83-gateway: figures answered: %s\n", strerror(errno));
}

void
xip83_gateway_ask_figures(Xip83Gateway *gw, uint64_t ask, int answer_fd)
{
	uint64_t	one = 1;

	atomic_store(&gw->answer_fd, answer_fd);
	atomic_store(&gw->asked, ask);
	if (write(gw->ask_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		fprintf(stderr, "xip83-gateway: figures asked: %s\n", strerror(errno));
}

void
xip83_gateway_free(Xip83Gateway *gw)
{
	if (gw == NULL)
		return;
	gw_feed_detach(gw);
	if (gw->ask_fd >= 0)
		close(gw->ask_fd);
	gw_pool_close(gw);
	for (int b = 0; b < 2; b++)
		gw_router_free(&gw->routers[b]);
	ForgetShared(gw);
	free(gw->dirty);
	free(gw->packed);
	free(gw->seam_waiters);
	pthread_mutex_destroy(&gw->publish_lock);
	free(gw);
}
