/*
 * gw_feed.c: the gateway's live feed on a thread of its own, shared by
 * every loop.
 *
 * Every query of the feed (its notices, its rounds, its reconnects, a
 * standby's fence waits) blocks the thread that runs it, so the feed runs on
 * this thread and no loop ever waits on the database for it. The thread
 * owns the feed once it runs; what it delivers (rows, copied; statuses; the
 * end of a round the seam asked for) goes to the loops through one log, in
 * order, and each loop (its tap) routes the rows to its own streams, follows
 * them with gw->view (the cursors and replay position a wave takes as its
 * ceilings: those of the rows routed so far, never ahead of them) and ends
 * its waves at their seam.
 *
 * The log: the thread appends events (a release store of the last one's
 * next) and every tap reads on from the last event it handled, so a row
 * reaches N loops with no lock and no per-row write a loop shares: a tap
 * publishes how far it got once per turn, and the thread frees what every
 * tap has passed (each tap keeps the event it stands on).
 *
 * The seam: a wave whose scans reached their ceilings needs a round that
 * starts after that. The loops take tickets (gw_feed_ask_round: one more
 * than any before, across loops); the thread starts a round when a ticket
 * is outstanding, and the round serves every ticket handed out before it
 * started (the thread reads the last one when it starts), which it reports
 * to every loop after the round's rows.
 *
 * The start: the feed needs its start horizons (the cursors it follows from,
 * which waves take as ceilings). A hot standby that has not replayed a
 * horizon record of its primary yet refuses them, and a quiet primary writes
 * one only once its feed is used again: the loops serve meanwhile (requests
 * wait for the start, gw_core.c), and the thread tries again, backing off up
 * to START_BACKOFF_MAX_MS and saying so now and then, until it has them.
 */
/* pthread_timedjoin_np */
#define _GNU_SOURCE

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "gw_internal.h"

/* The feed is stepped at least this often (its offline polls, its silence deadline). */
#define FEED_TICK_MS 50
/* How long the end waits for the thread, which may be in a query that never ends. */
#define STOP_WAIT_S 2
/*
 * Deliveries a turn of the loop routes before it writes: ~4 ms of routing
 * here, so a burst's writes start while the rest of it is routed. A turn
 * that leaves rows for the next doubles the next one's budget (up to
 * ROUTE_BUDGET_MAX), and a turn that routes all resets it: a backlog is
 * routed in larger turns, so each connection's write carries more of it.
 */
#define ROUTE_BUDGET 4096
#define ROUTE_BUDGET_MAX (1024 * 1024)
/* The feed's start is tried again after this, doubling up to the max. */
#define START_BACKOFF_MS 100
#define START_BACKOFF_MAX_MS 5000
/* A feed not started yet says so this often. */
#define START_LOG_MS 60000

typedef enum
{
	EV_NONE,					/* the log's first: where every tap starts */
	EV_ROW,
	EV_STATUS,
	EV_ROUND,
	EV_STARTED
} EventType;

typedef struct Event
{
	_Atomic(struct Event *) next;	/* written once, by the thread (release) */
	uint64_t	seq;			/* its place in the log */
	EventType	type;
	Xip83FeedRow row;			/* EV_ROW: pointers into bytes */
	Xip83V3Row	v3;
	uint64_t	replay_lsn;		/* the feed's when it delivered the row */
	char	   *status;			/* EV_STATUS: into bytes; detail NULL or into bytes */
	char	   *detail;
	uint64_t	ticket;			/* EV_ROUND: the last ticket the round served */
	int			rc;				/* and how it ended: rows, or < -1 failed */
	Xip83Feed  *start;			/* EV_STARTED: a copy of the feed at its start horizons */
	unsigned char bytes[];
} Event;

/* A loop's place in the log. */
struct GwFeedTap
{
	Xip83GatewayFeed *hub;
	Xip83Gateway *gw;
	int			ready_fd;		/* thread -> loop: events appended */
	Xip83Watch	ready_watch;
	Event	   *at;				/* the loop's: the last event it handled */
	_Atomic uint64_t done;		/* at->seq, published once a turn for the thread */
	size_t		budget;			/* the loop's: deliveries the next turn routes (ROUTE_BUDGET) */
};

struct Xip83GatewayFeed
{
	Xip83Feed  *feed;			/* the thread's once it runs */
	int			kinds;
	int64_t		start_at;		/* the thread's: the next try of the start (not started) */
	int			start_backoff;
	int64_t		start_logged;
	int			start_tries;
	pthread_t	thread;
	bool		running;
	bool		stuck;			/* it did not stop: left behind, with all it uses */
	int			wake_fd;		/* loops -> thread: a ticket, or stop */
	pthread_mutex_t lock;
	uint64_t	asked;			/* under lock: the last ticket handed out */
	bool		stop;			/* under lock */
	uint64_t	served;			/* the thread's: the last ticket a round served */
	bool		pushed;			/* the thread's: events appended since it last signalled */
	Event	   *oldest;			/* the thread's: the log, oldest kept first */
	Event	   *newest;
	uint64_t	seq;
	int			n_taps;			/* the loops, fixed at the start */
	GwFeedTap **taps;
	/* for the metrics, written by the thread */
	_Atomic bool started;		/* the feed has its start horizons */
	_Atomic bool live;
	_Atomic bool connected;
	_Atomic int64_t rows;
	_Atomic int64_t lag_us;
};

/* ------------------------------------------------------------ the thread */

static void
Signal(int fd)
{
	uint64_t	one = 1;

	while (write(fd, &one, sizeof(one)) < 0 && errno == EINTR)
		;
}

/* Appends ev to the log: every tap sees it whole from here on. */
static void
Push(Xip83GatewayFeed *t, Event *ev)
{
	atomic_init(&ev->next, NULL);
	ev->seq = ++t->seq;
	atomic_store_explicit(&t->newest->next, ev, memory_order_release);
	t->newest = ev;
	t->pushed = true;
}

static void
FreeEvent(Event *ev)
{
	if (ev->type == EV_STARTED)
		xip83_feed_free(ev->start);
	free(ev);
}

/* Frees the events every tap has passed (each keeps the one it stands on). */
static void
Reclaim(Xip83GatewayFeed *t)
{
	uint64_t	passed = UINT64_MAX;

	for (int i = 0; i < t->n_taps; i++)
	{
		uint64_t	d = atomic_load_explicit(&t->taps[i]->done, memory_order_acquire);

		if (d < passed)
			passed = d;
	}
	while (t->oldest != t->newest && t->oldest->seq < passed)
	{
		Event	   *ev = t->oldest;

		t->oldest = atomic_load_explicit(&ev->next, memory_order_relaxed);
		FreeEvent(ev);
	}
}

/* Tells the loops about the events appended since the last time. */
static void
Flush(Xip83GatewayFeed *t)
{
	if (t->pushed)
		for (int i = 0; i < t->n_taps; i++)
			Signal(t->taps[i]->ready_fd);
	t->pushed = false;
	Reclaim(t);
}

/* Copies n bytes to *p and returns where they now are (NULL stays NULL). */
static const unsigned char *
Keep(unsigned char **p, const unsigned char *src, size_t n)
{
	const unsigned char *at = *p;

	if (src == NULL)
		return NULL;
	memcpy(*p, src, n);
	*p += n;
	return at;
}

/* A delivered row, copied with every byte it points to. */
static void
OnRow(void *arg, const Xip83FeedRow *row)
{
	Xip83GatewayFeed *t = arg;
	const Xip83V3Row *v = row->v3;
	size_t		n = row->topic_len + row->data_len;
	Event	   *ev;
	unsigned char *p;

	if (v != NULL)
		n += v->key_len + v->data_len + v->aux_len + v->metadata_len;
	if ((ev = malloc(sizeof(Event) + n)) == NULL)
	{
		/* a row lost here would be lost for good: no stream may go on as if it came */
		fprintf(stderr, "xip83-gateway: out of memory for a live row\n");
		abort();
	}
	ev->type = EV_ROW;
	ev->row = *row;
	ev->replay_lsn = xip83_feed_replay_lsn(t->feed);
	p = ev->bytes;
	ev->row.topic = Keep(&p, row->topic, row->topic_len);
	ev->row.data = Keep(&p, row->data, row->data_len);
	if (v != NULL)
	{
		ev->v3 = *v;
		ev->v3.key = Keep(&p, v->key, v->key_len);
		ev->v3.data = Keep(&p, v->data, v->data_len);
		ev->v3.aux = Keep(&p, v->aux, v->aux_len);
		ev->v3.metadata = Keep(&p, v->metadata, v->metadata_len);
		ev->row.v3 = &ev->v3;
	}
	Push(t, ev);
}

static void
OnStatus(void *arg, const char *status, const char *detail)
{
	Xip83GatewayFeed *t = arg;
	size_t		ns = strlen(status) + 1;
	size_t		nd = detail ? strlen(detail) + 1 : 0;
	Event	   *ev = malloc(sizeof(Event) + ns + nd);

	if (ev == NULL)
	{
		fprintf(stderr, "xip83-gateway: feed %s (out of memory for its streams)\n", status);
		return;
	}
	ev->type = EV_STATUS;
	ev->status = memcpy(ev->bytes, status, ns);
	ev->detail = detail ? memcpy(ev->bytes + ns, detail, nd) : NULL;
	Push(t, ev);
}

/* A round for the seam; false while the feed reconnects (the ticket waits). */
static bool
SeamRound(Xip83GatewayFeed *t, uint64_t ticket)
{
	int			rc = xip83_feed_fetch(t->feed);
	Event	   *ev;

	if (rc == -1)
		return false;
	if (rc < 0)
		fprintf(stderr, "xip83-gateway: the live feed failed a fetch\n");
	t->served = ticket;
	if ((ev = malloc(sizeof(Event))) == NULL)
	{
		fprintf(stderr, "xip83-gateway: out of memory for the end of a round\n");
		abort();
	}
	ev->type = EV_ROUND;
	ev->ticket = ticket;
	ev->rc = rc;
	Push(t, ev);
	return true;
}

static void
Metrics(Xip83GatewayFeed *t)
{
	atomic_store(&t->live, xip83_feed_is_live(t->feed));
	atomic_store(&t->connected, xip83_feed_socket(t->feed) >= 0);
	atomic_store(&t->rows, xip83_feed_rows(t->feed));
}

/*
 * Tries the feed's start when its next try is due; true once started: the
 * loops get a copy of the feed at its start horizons (gw->view follows it).
 */
static bool
TryStart(Xip83GatewayFeed *t)
{
	Xip83FeedOptions copy_opt = {0};
	int64_t		now = xip83_now_ms();
	Event	   *ev;

	if (now < t->start_at)
		return false;
	t->start_tries++;
	if (!xip83_feed_start_at_horizon(t->feed))
	{
		now = xip83_now_ms();
		if (t->start_logged == 0 || now - t->start_logged >= START_LOG_MS)
		{
			fprintf(stderr, "xip83-gateway: live feed: no start horizons yet (%d tries):"
					" requests wait, tried again every %d ms at most\n",
					t->start_tries, START_BACKOFF_MAX_MS);
			t->start_logged = now;
		}
		t->start_at = now + t->start_backoff;
		t->start_backoff = t->start_backoff * 2 > START_BACKOFF_MAX_MS ? START_BACKOFF_MAX_MS
			: t->start_backoff * 2;
		return false;
	}
	copy_opt.kinds = t->kinds;
	if ((ev = malloc(sizeof(Event))) == NULL || (ev->start = xip83_feed_new(&copy_opt)) == NULL)
	{
		fprintf(stderr, "xip83-gateway: out of memory for the feed's start\n");
		abort();
	}
	xip83_feed_follow(ev->start, t->feed);
	ev->type = EV_STARTED;
	Push(t, ev);
	if (t->start_tries > 1)
		fprintf(stderr, "xip83-gateway: live feed: started after %d tries\n", t->start_tries);
	atomic_store(&t->started, true);
	return true;
}

/* Not started: tries the start, or waits for its next try (or the end). */
static void
WaitStart(Xip83GatewayFeed *t)
{
	struct pollfd pfd = {.fd = t->wake_fd, .events = POLLIN};
	int64_t		now;

	if (TryStart(t))
	{
		Metrics(t);
		Flush(t);
		return;
	}
	Metrics(t);
	Flush(t);
	now = xip83_now_ms();
	if (poll(&pfd, 1, (int) (t->start_at > now ? t->start_at - now : 0)) > 0)
	{
		uint64_t	n;

		(void) !read(t->wake_fd, &n, sizeof(n));
	}
}

static void *
FeedMain(void *arg)
{
	Xip83GatewayFeed *t = arg;
	int64_t		tick = xip83_now_ms() + FEED_TICK_MS;
	bool		woken = false;

	for (;;)
	{
		struct pollfd pfd[2] = {{.fd = t->wake_fd, .events = POLLIN}, {.events = POLLIN}};
		uint64_t	asked;
		bool		stop;
		bool		reconnecting = false;
		int64_t		now;
		int64_t		t0;

		pthread_mutex_lock(&t->lock);
		asked = t->asked;
		stop = t->stop;
		pthread_mutex_unlock(&t->lock);
		if (stop)
			break;
		if (!atomic_load(&t->started))
		{
			WaitStart(t);
			tick = xip83_now_ms() + FEED_TICK_MS;
			continue;
		}
		if (asked > t->served)
		{
			reconnecting = !SeamRound(t, asked);
			woken = xip83_feed_woken(t->feed);
			Metrics(t);
			Flush(t);
		}
		now = xip83_now_ms();
		/* after the round: a reconnect may have changed it */
		pfd[1].fd = xip83_feed_socket(t->feed);
		/* a ticket the reconnecting feed could not serve is tried on the tick */
		if (poll(pfd, pfd[1].fd >= 0 ? 2 : 1,
				 woken || (asked > t->served && !reconnecting) ? 0
				 : (int) (tick > now ? tick - now : 0)) < 0 && errno != EINTR)
		{
			fprintf(stderr, "xip83-gateway: the feed's thread: poll: %s\n", strerror(errno));
			abort();
		}
		if (pfd[0].revents & POLLIN)
		{
			uint64_t	n;

			/* the counter only wakes the thread: what it asks is under the lock */
			(void) !read(t->wake_fd, &n, sizeof(n));
		}
		now = xip83_now_ms();
		if (!woken && !(pfd[1].revents & POLLIN) && now < tick)
			continue;
		if (now >= tick)
			tick = now + FEED_TICK_MS;
		t0 = xip83_now_ms();
		if (xip83_feed_step(t->feed, 0) > 0)
			atomic_store(&t->lag_us, (xip83_now_ms() - t0) * 1000);
		woken = xip83_feed_woken(t->feed);
		Metrics(t);
		Flush(t);
	}
	return NULL;
}

/* ------------------------------------------------------------ the loops */

/*
 * The events appended: rows routed, statuses passed on, seam rounds ended.
 * A turn routes rows until they went to its budget of streams, then lets the
 * loop write what they queued before it routes the rest (the next turn,
 * at once): a burst's first rows leave while its later ones are routed,
 * and each connection still writes a turn's frames together.
 */
static void
Ready(void *arg, uint32_t events)
{
	GwFeedTap  *tap = arg;
	Xip83Gateway *gw = tap->gw;
	uint64_t	n;
	size_t		routed = 0;
	Event	   *ev;

	(void) events;
	if (read(tap->ready_fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		fprintf(stderr, "xip83-gateway: the feed's signal: %s\n", strerror(errno));
	if (tap->budget < ROUTE_BUDGET)
		tap->budget = ROUTE_BUDGET;
	while (routed < tap->budget
		   && (ev = atomic_load_explicit(&tap->at->next, memory_order_acquire)) != NULL)
	{
		switch (ev->type)
		{
			case EV_NONE:
				break;
			case EV_ROW:
				xip83_feed_follow_row(gw->view, &ev->row, ev->replay_lsn);
				routed += gw->up->route_row(gw, &ev->row);
				break;
			case EV_STATUS:
				gw->up->feed_status(gw, ev->status, ev->detail);
				break;
			case EV_ROUND:
				gw->up->flush_dirty(gw);
				gw->up->seam_done(gw, ev->ticket, ev->rc);
				break;
			case EV_STARTED:
				xip83_feed_follow(gw->view, ev->start);
				gw->feed_started = true;
				gw->up->feed_started(gw);
				break;
		}
		tap->at = ev;
	}
	atomic_store_explicit(&tap->done, tap->at->seq, memory_order_release);
	/* the rest next turn: the signal makes the loop come back without sleeping */
	if (atomic_load_explicit(&tap->at->next, memory_order_acquire) != NULL)
	{
		if (tap->budget < ROUTE_BUDGET_MAX)
			tap->budget *= 2;
		Signal(tap->ready_fd);
	}
	else
		tap->budget = ROUTE_BUDGET;
	gw->up->flush_dirty(gw);
}

Xip83GatewayFeed *
xip83_gateway_feed_new(const Xip83GatewayOptions *opt, int loops, char *err, size_t errlen)
{
	Xip83GatewayFeed *t = calloc(1, sizeof(*t));
	Xip83FeedOptions fo = {0};

	if (t == NULL)
	{
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	t->wake_fd = -1;
	pthread_mutex_init(&t->lock, NULL);
	t->n_taps = loops > 0 ? loops : 1;
	if ((t->taps = calloc((size_t) t->n_taps, sizeof(GwFeedTap *))) == NULL
		|| (t->oldest = calloc(1, sizeof(Event))) == NULL)
	{
		snprintf(err, errlen, "out of memory");
		xip83_gateway_feed_free(t);
		return NULL;
	}
	t->newest = t->oldest;
	t->oldest->type = EV_NONE;
	/* every kind of both bindings, from now on */
	fo.conninfo = opt->conninfo;
	fo.application_name = "xip83-gateway";
	fo.standby_conninfo = opt->standby_conninfo;
	fo.poll_ms = opt->poll_ms;
	fo.fence_wait_ms = opt->fence_wait_ms > 0 ? opt->fence_wait_ms : 100;
	/* a round waiting for DDL's lock holds the seam: that long at most, then the next tick */
	fo.lock_timeout_ms = 100;
	fo.kinds = XIP83_FEED_ALL;
	fo.on_row = OnRow;
	fo.on_status = OnStatus;
	fo.arg = t;
	if ((t->feed = xip83_feed_new(&fo)) == NULL)
	{
		snprintf(err, errlen, "out of memory");
		xip83_gateway_feed_free(t);
		return NULL;
	}
	t->kinds = fo.kinds;
	t->start_backoff = START_BACKOFF_MS;
	/* one try here: started at once, the loops serve as they always did */
	t->start_tries = 1;
	if (xip83_feed_start_at_horizon(t->feed))
		atomic_store(&t->started, true);
	else
	{
		fprintf(stderr, "xip83-gateway: live feed: no start horizons yet: serving, requests wait"
				" for them\n");
		t->start_logged = xip83_now_ms();
		t->start_at = t->start_logged + t->start_backoff;
	}
	Metrics(t);
	if ((t->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0)
	{
		snprintf(err, errlen, "live feed: %s", strerror(errno));
		xip83_gateway_feed_free(t);
		return NULL;
	}
	return t;
}

bool
gw_feed_attach(Xip83Gateway *gw, Xip83GatewayFeed *hub, char *err, size_t errlen)
{
	GwFeedTap  *tap;
	Xip83FeedOptions copy_opt = {0};
	int			i = gw->opt.loop;

	if (hub->running || i < 0 || i >= hub->n_taps || hub->taps[i] != NULL)
	{
		snprintf(err, errlen, "loop %d cannot take the live feed", i);
		return false;
	}
	if ((tap = calloc(1, sizeof(*tap))) == NULL)
	{
		snprintf(err, errlen, "out of memory");
		return false;
	}
	tap->hub = hub;
	tap->gw = gw;
	tap->ready_fd = tap->ready_watch.fd = -1;
	tap->at = hub->newest;
	atomic_init(&tap->done, tap->at->seq);
	gw->tap = tap;
	copy_opt.kinds = hub->kinds;
	if ((gw->view = xip83_feed_new(&copy_opt)) == NULL)
	{
		snprintf(err, errlen, "out of memory");
		return false;
	}
	if (atomic_load(&hub->started))
	{
		/* the thread does not run yet: the feed is still the loops' to read */
		xip83_feed_follow(gw->view, hub->feed);
		gw->feed_started = true;
	}
	if ((tap->ready_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0 ||
		!xip83_h2_watch(gw->srv, &tap->ready_watch, tap->ready_fd, EPOLLIN, Ready, tap))
	{
		snprintf(err, errlen, "live feed: %s", strerror(errno));
		return false;
	}
	hub->taps[i] = tap;
	return true;
}

bool
xip83_gateway_feed_run(Xip83GatewayFeed *t, char *err, size_t errlen)
{
	for (int i = 0; i < t->n_taps; i++)
		if (t->taps[i] == NULL)
		{
			snprintf(err, errlen, "live feed: loop %d has no gateway", i);
			return false;
		}
	if (pthread_create(&t->thread, NULL, FeedMain, t) != 0)
	{
		snprintf(err, errlen, "live feed: cannot start its thread");
		return false;
	}
	/* seen in top -H and /proc/PID/task/TID/comm: the feed's CPU apart */
	pthread_setname_np(t->thread, "xip83-feed");
	t->running = true;
	return true;
}

uint64_t
gw_feed_ask_round(Xip83Gateway *gw)
{
	Xip83GatewayFeed *t = gw->tap->hub;
	uint64_t	ticket;

	pthread_mutex_lock(&t->lock);
	ticket = ++t->asked;
	pthread_mutex_unlock(&t->lock);
	Signal(t->wake_fd);
	return ticket;
}

void
gw_feed_stats(Xip83Gateway *gw, Xip83GatewayStats *out)
{
	Xip83GatewayFeed *t = gw->tap->hub;

	out->feed_live = atomic_load(&t->live);
	out->feed_started = atomic_load(&t->started);
	out->feed_rows = atomic_load(&t->rows);
	out->live_lag_s = (double) atomic_load(&t->lag_us) / 1e6;
	/* one connection for every loop: counted by the first */
	if (gw->opt.loop == 0)
		out->db_connections += atomic_load(&t->connected);
}

void
gw_feed_detach(Xip83Gateway *gw)
{
	GwFeedTap  *tap = gw->tap;

	/* the server may be gone (it is freed first): closing ready_fd leaves its epoll */
	if (tap != NULL)
	{
		if (tap->ready_fd >= 0)
			close(tap->ready_fd);
		if (tap->hub->taps[gw->opt.loop] == tap)
			tap->hub->taps[gw->opt.loop] = NULL;
		free(tap);
	}
	xip83_feed_free(gw->view);
	gw->view = NULL;
	gw->tap = NULL;
}

bool
xip83_gateway_feed_stop(Xip83GatewayFeed *t)
{
	if (t != NULL && t->stuck)
		return false;
	if (t != NULL && t->running)
	{
		struct timespec until;

		pthread_mutex_lock(&t->lock);
		t->stop = true;
		pthread_mutex_unlock(&t->lock);
		Signal(t->wake_fd);
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += STOP_WAIT_S;
		if (pthread_timedjoin_np(t->thread, NULL, &until) != 0)
		{
			/* a backend that hangs must not hold the exit: what the thread uses stays */
			fprintf(stderr, "xip83-gateway: the live feed's thread is still in a query: left behind\n");
			t->stuck = true;
			return false;
		}
		t->running = false;
	}
	return true;
}

void
xip83_gateway_feed_free(Xip83GatewayFeed *t)
{
	if (t == NULL || !xip83_gateway_feed_stop(t))
		return;
	while (t->oldest != NULL)
	{
		Event	   *ev = t->oldest;

		t->oldest = atomic_load_explicit(&ev->next, memory_order_relaxed);
		FreeEvent(ev);
	}
	if (t->wake_fd >= 0)
		close(t->wake_fd);
	xip83_feed_free(t->feed);
	pthread_mutex_destroy(&t->lock);
	free(t->taps);
	free(t);
}
