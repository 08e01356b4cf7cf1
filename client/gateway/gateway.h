/*
 * gateway.h: the gateway's multiplexed session core: many XIP-83 streams of
 * both bindings in one process, on the transport's loop (h2_server.h).
 *
 * Each gRPC stream runs the session engine's rules (session/session.h:
 * waves, the seam, cursors, keepalive) on a session with no connection of
 * its own. Database connections do not grow with streams:
 * - one live feed for the process (one LISTEN connection, one fetch per
 *   kind) on a thread of its own, so no fetch holds the loop; its rows are
 *   routed on the loop to the streams holding their topic (gw_router.h);
 * - waves paged on a pool of connections, one page query in flight per
 *   connection; streams with wave pages to read take turns (a FIFO: a
 *   stream goes to the back after each page), so a large catch-up never
 *   holds back the others;
 * - a wave's ceilings are the feed's cursors when its Mutate arrives: rows
 *   at or below them have passed the feed, rows above are still to come
 *   through it (and are folded into the wave), so no query pins them;
 * - one seam round of the feed for every wave whose scans reached their
 *   ceilings before it started.
 * Database connections: pool + 1 (+ 1 on the standby with a standby).
 *
 * Loops. The process may run several loops (threads), each with a
 * transport server and a gateway of its own that own their connections,
 * streams, topic index and share of the pool; only the live feed is shared
 * (Xip83GatewayFeed: one thread, one LISTEN connection, its rows read by
 * every loop from one log without a lock). The process's bounds (waves,
 * topic memory, the pool) are split evenly among the loops, so that
 * together they never pass them.
 *
 * Read replicas. Waves read on the same server as the live rows, with the
 * feed's cursors as ceilings: the feed read every row up to them there, so
 * the server has replayed them. With standby_conninfo the feed is fenced
 * (feed.h) and the pool connects to the standby; a conninfo in recovery is
 * polled, and followed across its promotion (feed.h).
 * A fenced fetch waits (on the feed's thread) while replay is behind:
 * fence_wait_ms bounds that, and the round is retried on the next poll tick.
 * A large Mutate is applied a slice at a time between the loop's other work,
 * and what the streams' topics take in memory is bounded per connection and
 * per process (gw_apply.c).
 * A slow client stops its waves (no page is read for it while more than
 * WAVE_PAUSE bytes wait to be sent to it) and, when its live rows pile up
 * past 64 MiB, its stream alone ends RESOURCE_EXHAUSTED.
 */
#ifndef XIP83_GATEWAY_H
#define XIP83_GATEWAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gw_frames.h"
#include "h2_server.h"

#define XIP83_GATEWAY_METHODS 5

typedef struct Xip83GatewayMethod
{
	const char *path;
	GwMethodKind kind;
	bool		d14n;
} Xip83GatewayMethod;

extern const Xip83GatewayMethod xip83_gateway_methods[XIP83_GATEWAY_METHODS];

typedef struct Xip83GatewayOptions
{
	const char *conninfo;		/* libpq connection string; a standby is polled */
	/*
	 * A hot standby the waves and the live rows are read on, fenced by the
	 * horizons of conninfo (the primary), which the feed LISTENs on; NULL:
	 * everything on conninfo.
	 */
	const char *standby_conninfo;
	int			poll_ms;		/* the feed's polls of a standby or while offline (50) */
	int			fence_wait_ms;	/* longest wait of a fenced fetch for replay (100) */
	int			pool;			/* wave connections (4) */
	int			keepalive_ms;	/* Subscribe's keepalive interval (30000) */
	int			max_waves;		/* waves in flight, every stream (XIP83_GATEWAY_MAX_WAVES) */
	/*
	 * What the topics of one connection's streams, and of every stream, may
	 * take in memory (topic sets, their index entries, waves' copies and scan
	 * parameters); 0: the defaults (256 MiB; a quarter of the machine's or cgroup's
	 * memory, the transport's --max-memory being half).
	 * The stream whose Mutate goes past one ends RESOURCE_EXHAUSTED.
	 */
	size_t		max_connection_topic_bytes;
	size_t		max_topic_bytes;
	/*
	 * This gateway is loop `loop` of `loops` (0 of 1 when 0): it takes its
	 * share of pool, max_waves and max_topic_bytes, and its place in the feed.
	 */
	int			loop;
	int			loops;
} Xip83GatewayOptions;

/*
 * Waves in flight: the process's default bound, and each client
 * connection's, so that no client holds them all. A Mutate that starts a
 * wave past either ends its stream RESOURCE_EXHAUSTED. The process's is
 * far above a reconnect storm's (100,000 streams, a wave each); the memory
 * waves take is bounded by the topics' (--max-topic-mib).
 */
#define XIP83_GATEWAY_MAX_WAVES 1048576
/* Loops one process runs at most. */
#define XIP83_GATEWAY_MAX_LOOPS 256
#define XIP83_GATEWAY_CONN_WAVES 1024

typedef struct Xip83Gateway Xip83Gateway;

/* What the metrics report (gw_metrics.c). */
typedef struct Xip83GatewayStats
{
	size_t		streams[XIP83_GATEWAY_METHODS]; /* open, by method */
	size_t		topics[2];		/* distinct topics routed: v3, d14n */
	size_t		subscriptions;	/* (topic, stream) pairs */
	size_t		waves;			/* waves in flight, every stream */
	size_t		wave_queue;		/* streams waiting for a wave connection */
	size_t		pool_busy;		/* wave connections with a page query in flight */
	uint64_t	pool_resets;	/* wave connections reconnected for coming back not idle */
	uint64_t	waves_refused;	/* Mutates refused at the waves' bounds */
	size_t		max_waves;
	size_t		pool;
	size_t		db_connections; /* connected now: feed and pool */
	size_t		pending;		/* bytes queued to clients and live rows held in waves */
	size_t		topic_bytes;	/* what every stream's topics take (max_topic_bytes) */
	size_t		max_connection_topic_bytes;
	size_t		max_topic_bytes;
	size_t		applying;		/* streams with a Mutate being applied or requests held */
	uint64_t	topic_bound_ends;	/* streams ended for a topic memory bound */
	uint64_t	rows_sent;
	uint64_t	frames_sent;
	uint64_t	errors[XIP83_GRPC_NCODES];		/* streams ended, by gRPC status code */
	double		live_lag_s;		/* the last feed round with rows: wake-up to rows queued */
	bool		feed_live;
	bool		feed_started;	/* the feed has its start horizons (a standby may not yet) */
	int64_t		feed_rows;
} Xip83GatewayStats;

/* The live feed every loop reads (gw_feed.c). */
typedef struct Xip83GatewayFeed Xip83GatewayFeed;

/*
 * Connects the feed (opt's conninfo, standby_conninfo, poll_ms,
 * fence_wait_ms) for `loops` gateways and starts it at the current horizons
 * (a hot standby that has none yet: its thread tries again, and requests
 * wait for them). Its thread runs once every loop's gateway is made
 * (xip83_gateway_feed_run). NULL with err set.
 */
extern Xip83GatewayFeed *xip83_gateway_feed_new(const Xip83GatewayOptions *opt, int loops,
												char *err, size_t errlen);
extern bool xip83_gateway_feed_run(Xip83GatewayFeed *feed, char *err, size_t errlen);
/*
 * Stops the thread (false: it is stuck in a query and was left behind);
 * after every loop ended, before the gateways are freed.
 */
extern bool xip83_gateway_feed_stop(Xip83GatewayFeed *feed);
/* Stops the thread and frees the feed (left as it is when the thread is stuck). */
extern void xip83_gateway_feed_free(Xip83GatewayFeed *feed);

/*
 * Connects its share of the pool, takes its place in feed (loop opt->loop)
 * and registers the five methods on srv (the loop's server). NULL with err
 * set.
 */
extern Xip83Gateway *xip83_gateway_new(Xip83H2Server *srv, const Xip83GatewayOptions *opt,
									   Xip83GatewayFeed *feed, char *err, size_t errlen);
/* Ends every stream UNAVAILABLE (the transport's on_drain). */
extern void xip83_gateway_drain(void *gw);
extern void xip83_gateway_stats(Xip83Gateway *gw, Xip83GatewayStats *out);

/* A loop's figures: its gateway's and its transport's, and the bounds in force. */
typedef struct Xip83GatewayFigures
{
	Xip83GatewayStats gw;
	Xip83H2Stats h2;			/* h2.cfg: &limits */
	Xip83H2Config limits;
} Xip83GatewayFigures;

/*
 * Several loops: the loop that serves the metrics reads its own figures as
 * of now; another loop's are computed on that loop, when asked
 * (xip83_gateway_ask_figures, from any thread: the loop publishes them for
 * request `ask` and writes answer_fd, an eventfd), and read with
 * xip83_gateway_figures (own_loop false): true once they answer `ask`, the
 * latest published either way. Nothing is computed while nobody asks.
 */
extern void xip83_gateway_ask_figures(Xip83Gateway *gw, uint64_t ask, int answer_fd);
extern bool xip83_gateway_figures(Xip83Gateway *gw, bool own_loop, uint64_t ask,
								  Xip83GatewayFigures *out);
extern Xip83H2Server *xip83_gateway_server(Xip83Gateway *gw);
/* After xip83_h2_run returned and the server was freed. */
extern void xip83_gateway_free(Xip83Gateway *gw);

/*
 * The Prometheus metrics (text exposition format 0.0.4) over plain HTTP on
 * a listener of their own, on the gateway's loop. Any request gets the page;
 * a scrape costs one pass over the streams (gw_metrics.c).
 */
typedef struct GwMetrics GwMetrics;


/*
 * Listens on host:port for scrapes, on the loop of srv, which gws[0] serves;
 * the page adds up the n loops' figures. *bound: the port. NULL with err set.
 */
extern GwMetrics *gw_metrics_listen(Xip83H2Server *srv, Xip83Gateway *const *gws, int n,
									const char *host, const char *port, int *bound, char *err,
									size_t errlen);
/* Stops listening (on drain). */
extern void gw_metrics_close(GwMetrics *m);
extern void gw_metrics_free(GwMetrics *m);
/* The page of n loops, malloc'd (NULL when out of memory); on the loop of gws[0]. */
extern char *gw_metrics_page(Xip83Gateway *const *gws, int n, size_t *len);

#endif
