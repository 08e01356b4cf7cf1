/*
 * gw_metrics.c: Prometheus text metrics over HTTP (see gateway.h).
 *
 * A scrape is served on the loop without ever waiting on its socket: the
 * request is read as it arrives (until its blank line, REQUEST_MAX bytes at
 * most), the page is made in one go and written as the socket takes it,
 * and the connection is closed. A connection not done within
 * SCRAPE_TIMEOUT_MS is closed, and at most SCRAPE_CONNS are open at once: a
 * new one closes the oldest still waiting for its request (or is closed
 * itself when all are writing). A silent or slow scraper costs a
 * descriptor and a small buffer, never the loop's time, and cannot keep a
 * real scraper out. The loop, not a thread of its
 * own, because the page reads the core's counters, which only the loop may.
 * With several loops, a whole request asks every other loop for its
 * figures, computed on that loop, and is answered once they all came (or
 * after ANSWER_WAIT_MS, with the latest each published): the page is as of
 * the request, and the loops compute nothing while nobody scrapes.
 */
#include "gateway.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#define SCRAPE_TIMEOUT_MS 2000
#define SCRAPE_CONNS 8
#define REQUEST_MAX 4096
#define ACCEPT_BUDGET 16
#define ANSWER_WAIT_MS 500

/* Limits of the metrics listener, counted beside the transport's. */
enum
{
	SCRAPE_LIMIT_CONNS,
	SCRAPE_LIMIT_TIMEOUT,
	SCRAPE_LIMIT_REQUEST,
	SCRAPE_LIMITS
};

static const char *const scrape_limit_names[SCRAPE_LIMITS] = {
	"metrics_connections", "metrics_timeout", "metrics_request"
};

typedef struct Scrape Scrape;

struct GwMetrics
{
	Xip83H2Server *srv;
	Xip83Gateway *const *gws;	/* the loops: gws[0] is srv's */
	int			n;
	Xip83Watch	watch;
	int			fd;
	int			answer_fd;		/* eventfd: the other loops' figures came */
	Xip83Watch	answer_watch;
	uint64_t	asked;			/* the latest request of the other loops' figures */
	Scrape	   *scrapes;
	int			n_scrapes;
	uint64_t	reached[SCRAPE_LIMITS];
};

static void ScrapeEvent(void *arg, uint32_t events);

/* One scraper's connection. */
struct Scrape
{
	GwMetrics  *m;
	Xip83Watch	watch;
	Xip83Timer	timer;
	int			fd;
	size_t		req_len;
	uint64_t	asked;			/* its request whole: the figures it waits for (0: none) */
	char	   *out;			/* the response, once the request came */
	size_t		out_len;
	size_t		out_off;
	Scrape	   *prev;
	Scrape	   *next;
	char		req[REQUEST_MAX];
};

typedef struct Page
{
	char	   *p;
	size_t		len;
	size_t		cap;
	bool		failed;
} Page;

static void
Add(Page *pg, const char *fmt,...)
{
	va_list		ap;

	for (;;)
	{
		int			n;

		if (pg->failed)
			return;
		va_start(ap, fmt);
		n = vsnprintf(pg->p ? pg->p + pg->len : NULL, pg->cap - pg->len, fmt, ap);
		va_end(ap);
		if (n >= 0 && (size_t) n < pg->cap - pg->len)
		{
			pg->len += (size_t) n;
			return;
		}
		{
			size_t		cap = pg->cap ? pg->cap * 2 : 4096;
			char	   *np = realloc(pg->p, cap);

			if (n < 0 || np == NULL)
			{
				pg->failed = true;
				return;
			}
			pg->p = np;
			pg->cap = cap;
		}
	}
}

/* A metric without labels: HELP, TYPE and its value. */
static void
One(Page *pg, const char *name, const char *type, const char *help, double v)
{
	Add(pg, "# HELP xip83_gateway_%s %s\n# TYPE xip83_gateway_%s %s\nxip83_gateway_%s %.17g\n",
		name, help, name, type, name, v);
}

/* Adds loop f's figures to all's: counts and bounds add up, the feed's are the first's. */
static void
AddLoop(Xip83GatewayFigures *all, const Xip83GatewayFigures *f)
{
	Xip83GatewayStats *a = &all->gw;
	const Xip83GatewayStats *b = &f->gw;

	for (int i = 0; i < XIP83_GATEWAY_METHODS; i++)
		a->streams[i] += b->streams[i];
	for (int i = 0; i < 2; i++)
		a->topics[i] += b->topics[i];
	a->subscriptions += b->subscriptions;
	a->waves += b->waves;
	a->wave_queue += b->wave_queue;
	a->pool_busy += b->pool_busy;
	a->pool_resets += b->pool_resets;
	a->waves_refused += b->waves_refused;
	a->max_waves += b->max_waves;
	a->pool += b->pool;
	a->db_connections += b->db_connections;
	a->pending += b->pending;
	a->topic_bytes += b->topic_bytes;
	a->max_topic_bytes += b->max_topic_bytes;
	a->applying += b->applying;
	a->topic_bound_ends += b->topic_bound_ends;
	a->rows_sent += b->rows_sent;
	a->frames_sent += b->frames_sent;
	for (int c = 0; c < XIP83_GRPC_NCODES; c++)
		a->errors[c] += b->errors[c];
	all->h2.connections += f->h2.connections;
	all->h2.streams += f->h2.streams;
	all->h2.pending += f->h2.pending;
	all->h2.memory += f->h2.memory;
	all->h2.input += f->h2.input;
	for (int i = 0; i < XIP83_H2_LIMITS; i++)
		all->h2.reached[i] += f->h2.reached[i];
	all->limits.max_memory += f->limits.max_memory;
	all->limits.max_connections += f->limits.max_connections;
}

static char *
MakePage(GwMetrics *m, Xip83Gateway *const *gws, int n, uint64_t ask, size_t *len)
{
	Xip83GatewayFigures all;
	Xip83GatewayFigures *loops = calloc((size_t) n, sizeof(*loops));
	Xip83GatewayStats st;
	Xip83H2Stats hs;
	Page		pg = {0};

	if (loops == NULL)
		return NULL;
	xip83_gateway_figures(gws[0], true, 0, &loops[0]);
	all = loops[0];
	for (int i = 1; i < n; i++)
	{
		xip83_gateway_figures(gws[i], false, ask, &loops[i]);
		AddLoop(&all, &loops[i]);
	}
	st = all.gw;
	hs = all.h2;
	hs.cfg = &all.limits;
	One(&pg, "loops", "gauge", "Event loops (--loops), each on a thread of its own.", (double) n);
	Add(&pg, "# HELP xip83_gateway_loop_connections Open client connections by loop.\n"
		"# TYPE xip83_gateway_loop_connections gauge\n");
	for (int i = 0; i < n; i++)
		Add(&pg, "xip83_gateway_loop_connections{loop=\"%d\"} %zu\n", i, loops[i].h2.connections);
	Add(&pg, "# HELP xip83_gateway_loop_streams Open streams by loop.\n"
		"# TYPE xip83_gateway_loop_streams gauge\n");
	for (int i = 0; i < n; i++)
		Add(&pg, "xip83_gateway_loop_streams{loop=\"%d\"} %zu\n", i, loops[i].h2.streams);
	free(loops);
	Add(&pg, "# HELP xip83_gateway_streams Open streams by method.\n"
		"# TYPE xip83_gateway_streams gauge\n");
	for (int i = 0; i < XIP83_GATEWAY_METHODS; i++)
		Add(&pg, "xip83_gateway_streams{method=\"%s\"} %zu\n", xip83_gateway_methods[i].path,
			st.streams[i]);
	One(&pg, "connections", "gauge", "Open client connections (HTTP/2, HTTP/1.1 and WebSocket).", (double) hs.connections);
	Add(&pg, "# HELP xip83_gateway_topics Topics routed to at least one stream (counted by each loop that routes them).\n"
		"# TYPE xip83_gateway_topics gauge\n"
		"xip83_gateway_topics{binding=\"v3\"} %zu\nxip83_gateway_topics{binding=\"d14n\"} %zu\n",
		st.topics[0], st.topics[1]);
	One(&pg, "subscriptions", "gauge", "Topic and stream pairs in the routing index.",
		(double) st.subscriptions);
	One(&pg, "waves_in_flight", "gauge", "Waves (catch-ups) not finished, all streams.",
		(double) st.waves);
	One(&pg, "wave_queue", "gauge", "Streams waiting for a wave connection.",
		(double) st.wave_queue);
	One(&pg, "pool_busy", "gauge", "Wave connections with a page query in flight.",
		(double) st.pool_busy);
	One(&pg, "pool_size", "gauge", "Wave connections (--pool).", (double) st.pool);
	One(&pg, "pool_resets_total", "counter",
		"Wave connections reconnected because they came back with a query unfinished.",
		(double) st.pool_resets);
	One(&pg, "waves_max", "gauge", "Waves in flight allowed, all streams (--max-waves).",
		(double) st.max_waves);
	One(&pg, "waves_refused_total", "counter",
		"Mutates whose stream ended RESOURCE_EXHAUSTED at a bound of waves in flight.",
		(double) st.waves_refused);
	One(&pg, "db_connections", "gauge", "Database connections open: feed and pool.",
		(double) st.db_connections);
	One(&pg, "pending_bytes", "gauge",
		"Bytes queued to clients and not yet sent, plus live rows held in waves.",
		(double) st.pending);
	One(&pg, "topic_bytes", "gauge", "Memory the streams' topics take (topic sets, index, waves).",
		(double) st.topic_bytes);
	One(&pg, "topic_bytes_limit", "gauge", "The bound of topic_bytes (--max-topic-mib).",
		(double) st.max_topic_bytes);
	One(&pg, "connection_topic_bytes_limit", "gauge",
		"The bound of one connection's streams' topics (--max-connection-topic-mib).",
		(double) st.max_connection_topic_bytes);
	One(&pg, "topic_bound_ends_total", "counter",
		"Streams ended RESOURCE_EXHAUSTED by a topic memory bound.", (double) st.topic_bound_ends);
	One(&pg, "mutates_applying", "gauge",
		"Streams applying a large Mutate in slices (or holding requests until it is whole,"
		" or freeing their topics in slices after their end).",
		(double) st.applying);
	One(&pg, "live_lag_seconds", "gauge",
		"The last feed round that delivered rows: from its wake-up to the rows queued.",
		st.live_lag_s);
	One(&pg, "feed_live", "gauge", "1 while the feed hears the notifier.", st.feed_live);
	One(&pg, "feed_started", "gauge",
		"1 once the feed read its start horizons; waves wait for them.", st.feed_started);
	One(&pg, "feed_rows_total", "counter", "Rows the live feed read.", (double) st.feed_rows);
	One(&pg, "rows_sent_total", "counter", "Rows queued to clients, waves and live.",
		(double) st.rows_sent);
	One(&pg, "frames_sent_total", "counter", "SubscribeResponse frames queued to clients.",
		(double) st.frames_sent);
	One(&pg, "transport_memory_bytes", "gauge",
		"Memory clients make the transport hold (queued, partly received, HTTP/2 state), all"
		" connections: the account --max-memory bounds.", (double) hs.memory);
	One(&pg, "request_input_bytes", "gauge", "Partly received request messages, all connections.",
		(double) hs.input);
	Add(&pg, "# HELP xip83_gateway_limit The bounds in force (bytes, seconds, counts).\n"
		"# TYPE xip83_gateway_limit gauge\n");
	Add(&pg, "xip83_gateway_limit{limit=\"max_connections\"} %u\n", hs.cfg->max_connections);
	Add(&pg, "xip83_gateway_limit{limit=\"max_memory\"} %zu\n", hs.cfg->max_memory);
	Add(&pg, "xip83_gateway_limit{limit=\"max_conn_memory\"} %zu\n", hs.cfg->max_conn_memory);
	Add(&pg, "xip83_gateway_limit{limit=\"max_conn_input\"} %zu\n", hs.cfg->max_partial);
	Add(&pg, "xip83_gateway_limit{limit=\"max_streams\"} %u\n", hs.cfg->max_streams);
	Add(&pg, "xip83_gateway_limit{limit=\"handshake_timeout\"} %.3f\n", hs.cfg->handshake_ms / 1000.0);
	Add(&pg, "xip83_gateway_limit{limit=\"idle_timeout\"} %.3f\n", hs.cfg->idle_ms / 1000.0);
	Add(&pg, "xip83_gateway_limit{limit=\"request_timeout\"} %.3f\n", hs.cfg->request_ms / 1000.0);
	Add(&pg, "xip83_gateway_limit{limit=\"metrics_connections\"} %d\n", SCRAPE_CONNS);
	Add(&pg, "xip83_gateway_limit{limit=\"metrics_timeout\"} %.3f\n", SCRAPE_TIMEOUT_MS / 1000.0);
	Add(&pg, "xip83_gateway_limit{limit=\"metrics_request\"} %d\n", REQUEST_MAX);
	Add(&pg, "# HELP xip83_gateway_limit_reached_total Times a bound was reached: a stream ended"
		" RESOURCE_EXHAUSTED, a connection refused or closed, the listeners paused (descriptors).\n"
		"# TYPE xip83_gateway_limit_reached_total counter\n");
	for (int i = 0; i < XIP83_H2_LIMITS; i++)
		Add(&pg, "xip83_gateway_limit_reached_total{limit=\"%s\"} %llu\n", xip83_h2_limit_names[i],
			(unsigned long long) hs.reached[i]);
	for (int i = 0; i < SCRAPE_LIMITS && m; i++)
		Add(&pg, "xip83_gateway_limit_reached_total{limit=\"%s\"} %llu\n", scrape_limit_names[i],
			(unsigned long long) m->reached[i]);
	Add(&pg, "# HELP xip83_gateway_stream_ends_total Streams ended by the gateway, by gRPC status.\n"
		"# TYPE xip83_gateway_stream_ends_total counter\n");
	for (int c = 0; c < XIP83_GRPC_NCODES; c++)
		if (st.errors[c] || c == 0)
			Add(&pg, "xip83_gateway_stream_ends_total{code=\"%s\"} %llu\n", xip83_grpc_codes[c],
				(unsigned long long) st.errors[c]);
	if (pg.failed)
	{
		free(pg.p);
		return NULL;
	}
	*len = pg.len;
	return pg.p;
}

char *
gw_metrics_page(Xip83Gateway *const *gws, int n, size_t *len)
{
	return MakePage(NULL, gws, n, 0, len);
}

static void
ScrapeClose(Scrape *sc)
{
	GwMetrics  *m = sc->m;

	xip83_h2_unwatch(m->srv, &sc->watch);
	xip83_h2_timer_stop(m->srv, &sc->timer);
	close(sc->fd);
	*(sc->prev ? &sc->prev->next : &m->scrapes) = sc->next;
	if (sc->next)
		sc->next->prev = sc->prev;
	m->n_scrapes--;
	free(sc->out);
	free(sc);
}

static void
ScrapeTimeout(void *arg)
{
	Scrape	   *sc = arg;

	sc->m->reached[SCRAPE_LIMIT_TIMEOUT]++;
	ScrapeClose(sc);
}

/* The figures are in: the response, header and page, in one buffer. */
static bool
Respond(Scrape *sc)
{
	size_t		len = 0;
	char	   *page = MakePage(sc->m, sc->m->gws, sc->m->n, sc->asked, &len);
	char		head[128];
	int			n;

	if (page == NULL)
		return false;
	n = snprintf(head, sizeof(head), "HTTP/1.1 200 OK\r\nContent-Type: text/plain;"
				 " version=0.0.4\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n", len);
	if ((sc->out = malloc((size_t) n + len)) == NULL)
	{
		free(page);
		return false;
	}
	memcpy(sc->out, head, (size_t) n);
	memcpy(sc->out + n, page, len);
	free(page);
	sc->out_len = (size_t) n + len;
	sc->asked = 0;
	return xip83_h2_watch(sc->m->srv, &sc->watch, sc->fd, EPOLLOUT, ScrapeEvent, sc);
}

/* Whether every other loop answered request ask. */
static bool
Answered(GwMetrics *m, uint64_t ask)
{
	Xip83GatewayFigures f;

	for (int i = 1; i < m->n; i++)
		if (!xip83_gateway_figures(m->gws[i], false, ask, &f))
			return false;
	return true;
}

/* Other loops answered: the scrapes whose figures are all in get their page. */
static void
AnswerCame(void *arg, uint32_t events)
{
	GwMetrics  *m = arg;
	uint64_t	n;

	(void) events;
	if (read(m->answer_fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		return;
	for (Scrape *sc = m->scrapes, *next; sc; sc = next)
	{
		next = sc->next;
		if (sc->asked != 0 && sc->out == NULL && Answered(m, sc->asked) && !Respond(sc))
			ScrapeClose(sc);
	}
}

/* A loop that did not answer in time: the page with the latest it published. */
static void
AnswerLate(void *arg)
{
	Scrape	   *sc = arg;

	xip83_h2_timer_start(sc->m->srv, &sc->timer, SCRAPE_TIMEOUT_MS, ScrapeTimeout, sc);
	if (!Respond(sc))
		ScrapeClose(sc);
}

/* The request is whole: the page now, or once the other loops' figures came. */
static bool
Asked(Scrape *sc)
{
	GwMetrics  *m = sc->m;

	if (m->n <= 1)
		return Respond(sc);
	/* its socket is not read meanwhile; it is written once the page is made */
	xip83_h2_unwatch(m->srv, &sc->watch);
	/* scrapes that come while the loops compute share their answer: one pass each */
	if (m->asked != 0 && !Answered(m, m->asked))
		sc->asked = m->asked;
	else
	{
		sc->asked = ++m->asked;
		for (int i = 1; i < m->n; i++)
			xip83_gateway_ask_figures(m->gws[i], sc->asked, m->answer_fd);
	}
	xip83_h2_timer_stop(m->srv, &sc->timer);
	return xip83_h2_timer_start(m->srv, &sc->timer, ANSWER_WAIT_MS, AnswerLate, sc);
}

/* Reads what the request has sent, then writes what the socket takes. */
static void
ScrapeEvent(void *arg, uint32_t events)
{
	Scrape	   *sc = arg;

	if (sc->out == NULL)
	{
		ssize_t		n = read(sc->fd, sc->req + sc->req_len, sizeof(sc->req) - sc->req_len - 1);

		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n <= 0)
			return ScrapeClose(sc);
		sc->req_len += (size_t) n;
		sc->req[sc->req_len] = '\0';
		/* whatever it asks, it gets the page: once the headers' blank line is in */
		if (strstr(sc->req, "\r\n\r\n") == NULL && strstr(sc->req, "\n\n") == NULL)
		{
			if (sc->req_len == sizeof(sc->req) - 1)
			{
				sc->m->reached[SCRAPE_LIMIT_REQUEST]++;
				ScrapeClose(sc);
			}
			return;
		}
		if (!Asked(sc))
			return ScrapeClose(sc);
		if (sc->out == NULL)
			return;
	}
	while (sc->out_off < sc->out_len)
	{
		ssize_t		n = send(sc->fd, sc->out + sc->out_off, sc->out_len - sc->out_off, MSG_NOSIGNAL);

		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n <= 0)
			break;
		sc->out_off += (size_t) n;
	}
	ScrapeClose(sc);
}

static void
Accept(void *arg, uint32_t events)
{
	GwMetrics  *m = arg;

	for (int i = 0; i < ACCEPT_BUDGET; i++)
	{
		int			fd = xip83_h2_accept(m->srv, m->fd);
		Scrape	   *sc;

		if (fd < 0)
			return;
		if (m->n_scrapes >= SCRAPE_CONNS)
		{
			/* the oldest still waiting for its request makes room: silence cannot hold them all */
			Scrape	   *old = NULL;

			for (Scrape *x = m->scrapes; x; x = x->next)
				if (x->out == NULL && x->asked == 0)
					old = x;
			if (old)
			{
				m->reached[SCRAPE_LIMIT_CONNS]++;
				ScrapeClose(old);
			}
		}
		if (m->n_scrapes >= SCRAPE_CONNS || (sc = calloc(1, sizeof(*sc))) == NULL)
		{
			m->reached[SCRAPE_LIMIT_CONNS]++;
			close(fd);
			continue;
		}
		sc->m = m;
		sc->fd = fd;
		sc->watch.fd = -1;
		if (!xip83_h2_watch(m->srv, &sc->watch, fd, EPOLLIN, ScrapeEvent, sc))
		{
			close(fd);
			free(sc);
			continue;
		}
		xip83_h2_timer_start(m->srv, &sc->timer, SCRAPE_TIMEOUT_MS, ScrapeTimeout, sc);
		sc->next = m->scrapes;
		if (m->scrapes)
			m->scrapes->prev = sc;
		m->scrapes = sc;
		m->n_scrapes++;
	}
}

GwMetrics *
gw_metrics_listen(Xip83H2Server *srv, Xip83Gateway *const *gws, int n, const char *host,
				  const char *port, int *bound, char *err, size_t errlen)
{
	GwMetrics  *m = calloc(1, sizeof(*m));

	if (m == NULL)
	{
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	m->srv = srv;
	m->gws = gws;
	m->n = n;
	m->watch.fd = m->answer_watch.fd = -1;
	if ((m->answer_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0
		|| !xip83_h2_watch(srv, &m->answer_watch, m->answer_fd, EPOLLIN, AnswerCame, m))
	{
		snprintf(err, errlen, "cannot watch for the loops' figures: %s", strerror(errno));
		if (m->answer_fd >= 0)
			close(m->answer_fd);
		free(m);
		return NULL;
	}
	if ((m->fd = xip83_tcp_listen(host, port, bound, err, errlen)) < 0)
	{
		close(m->answer_fd);
		free(m);
		return NULL;
	}
	if (!xip83_h2_watch_listener(srv, &m->watch, m->fd, Accept, m))
	{
		snprintf(err, errlen, "cannot watch the metrics listener");
		close(m->fd);
		close(m->answer_fd);
		free(m);
		return NULL;
	}
	return m;
}

void
gw_metrics_close(GwMetrics *m)
{
	if (m == NULL || m->fd < 0)
		return;
	while (m->scrapes)
		ScrapeClose(m->scrapes);
	xip83_h2_unwatch(m->srv, &m->watch);
	xip83_h2_unwatch(m->srv, &m->answer_watch);
	close(m->fd);
	m->fd = -1;
}

void
gw_metrics_free(GwMetrics *m)
{
	if (m == NULL)
		return;
	gw_metrics_close(m);
	/* only now: the other loops, which write it, have ended */
	close(m->answer_fd);
	free(m);
}
