/*
 * gw_metrics.c: Prometheus text metrics over HTTP (see gw_metrics.h).
 *
 * A scrape is answered in the accept callback: the request is read with a
 * short timeout (scrapers send it at once), the page is written and the
 * connection closed. That holds the loop for at most the timeout, which is
 * fine for a scrape every few seconds from a local agent.
 */
#define _GNU_SOURCE				/* accept4 */
#include "gw_metrics.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#define REQUEST_TIMEOUT_MS 200

struct GwMetrics
{
	Xip83H2Server *srv;
	Xip83Gateway *gw;
	Xip83Watch	watch;
	int			fd;
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

char *
gw_metrics_page(Xip83Gateway *gw, size_t *len)
{
	Xip83GatewayStats st;
	Xip83H2Stats hs;
	Page		pg = {0};

	xip83_gateway_stats(gw, &st);
	xip83_h2_stats(xip83_gateway_server(gw), &hs);
	Add(&pg, "# HELP xip83_gateway_streams Open streams by method.\n"
		"# TYPE xip83_gateway_streams gauge\n");
	for (int i = 0; i < XIP83_GATEWAY_METHODS; i++)
		Add(&pg, "xip83_gateway_streams{method=\"%s\"} %zu\n", xip83_gateway_methods[i].path,
			st.streams[i]);
	One(&pg, "connections", "gauge", "Open HTTP/2 connections.", (double) hs.connections);
	Add(&pg, "# HELP xip83_gateway_topics Distinct topics routed to at least one stream.\n"
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
	One(&pg, "feed_rows_total", "counter", "Rows the live feed read.", (double) st.feed_rows);
	One(&pg, "rows_sent_total", "counter", "Rows queued to clients, waves and live.",
		(double) st.rows_sent);
	One(&pg, "frames_sent_total", "counter", "SubscribeResponse frames queued to clients.",
		(double) st.frames_sent);
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

static void
WriteAll(int fd, const char *p, size_t n)
{
	while (n > 0)
	{
		ssize_t		w = write(fd, p, n);

		if (w <= 0)
			return;
		p += w;
		n -= (size_t) w;
	}
}

static void
Accept(void *arg, uint32_t events)
{
	GwMetrics  *m = arg;
	struct timeval tv = {0, REQUEST_TIMEOUT_MS * 1000};
	char		req[2048];
	char	   *page;
	size_t		len = 0;
	int			fd = accept4(m->fd, NULL, NULL, SOCK_CLOEXEC);

	if (fd < 0)
		return;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	/* the request line is all that matters; whatever it asks, it gets the page */
	if (read(fd, req, sizeof(req)) > 0 && (page = gw_metrics_page(m->gw, &len)) != NULL)
	{
		char		head[128];
		int			n = snprintf(head, sizeof(head), "HTTP/1.1 200 OK\r\nContent-Type: text/plain;"
								 " version=0.0.4\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
								 len);

		WriteAll(fd, head, (size_t) n);
		WriteAll(fd, page, len);
		free(page);
	}
	close(fd);
}

GwMetrics *
gw_metrics_listen(Xip83H2Server *srv, Xip83Gateway *gw, const char *host, const char *port,
				  int *bound, char *err, size_t errlen)
{
	GwMetrics  *m = calloc(1, sizeof(*m));

	if (m == NULL)
	{
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	m->srv = srv;
	m->gw = gw;
	m->watch.fd = -1;
	if ((m->fd = xip83_tcp_listen(host, port, bound, err, errlen)) < 0)
	{
		free(m);
		return NULL;
	}
	if (!xip83_h2_watch(srv, &m->watch, m->fd, EPOLLIN, Accept, m))
	{
		snprintf(err, errlen, "cannot watch the metrics listener");
		close(m->fd);
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
	xip83_h2_unwatch(m->srv, &m->watch);
	close(m->fd);
	m->fd = -1;
}

void
gw_metrics_free(GwMetrics *m)
{
	gw_metrics_close(m);
	free(m);
}
