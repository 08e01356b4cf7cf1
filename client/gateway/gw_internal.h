/*
 * gw_internal.h: what the gateway core's files share (gw_core.c: streams,
 * the feed, the seam; gw_pool.c: the wave queue and the pool of wave
 * connections). Not an API: gateway.h is.
 */
#ifndef XIP83_GW_INTERNAL_H
#define XIP83_GW_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "gateway.h"
#include "gw_router.h"
#include "session/session.h"

/* No wave page is read for a stream with more than this queued to its client. */
#define WAVE_PAUSE (1024 * 1024)
typedef struct GwStream GwStream;
typedef struct GwFeedTap GwFeedTap;
typedef struct GwCoreHooks GwCoreHooks;

/* A request that waits for the feed's start (its copy). */
typedef struct GwWaiting
{
	struct GwWaiting *next;
	size_t		len;
	unsigned char msg[];
} GwWaiting;

/*
 * A client connection's streams, by its serial (xip83_h2_conn_serial): what
 * their topics take, against the per-connection bound, and their waves in
 * flight. Freed with its last stream.
 */
typedef struct GwConn
{
	uint64_t	serial;
	size_t		streams;
	size_t		topic_bytes;
	int			waves;			/* of its streams, against XIP83_GATEWAY_CONN_WAVES */
	struct GwConn *next;		/* in its slot */
} GwConn;

#define GW_CONN_SLOTS 1024

/* A wave connection of the pool. */
typedef struct PoolConn
{
	Xip83Gateway *gw;
	PGconn	   *conn;
	Xip83Watch	watch;
	GwStream   *owner;			/* whose page query is in flight; NULL: none or orphaned */
	bool		busy;			/* a query is in flight */
	bool		writing;		/* libpq still holds some of it: EPOLLOUT watched too */
	unsigned	prepared;		/* the session's wave_prepared while it runs here */
	int			preparing;		/* the statement a prepare in flight is of */
	Xip83PgStart reset;			/* reconnecting (reset.conn set): out of the pool */
	Xip83Timer	reset_timer;	/* its deadline, or its next try */
	int64_t		broken_ms;		/* when it was found broken; 0: it works */
	bool		reset_failed;	/* the next page here fails, as on a lost connection */
	/* what its server had replayed when last asked (UINT64_MAX: a primary) */
	uint64_t	replayed;
	int64_t		gate_since;		/* a stream waits for its replay since; 0: none */
	Xip83Timer	gate_timer;		/* its next ask */
	struct PoolConn *next_free;
} PoolConn;

struct GwStream
{
	Xip83Gateway *gw;
	Xip83H2Stream *h2;
	Xip83Session *s;
	GwMethodKind kind;
	int			method;			/* index in xip83_gateway_methods */
	bool		half_closed;
	bool		finished;		/* ended by the core: nothing more is done for it */
	int			code;			/* the status it was ended with, as counted */
	bool		requested;		/* server streams: the filters came */
	bool		dirty;			/* took live rows this turn: checked after the turn's rows */
	bool		queued;			/* in the wave queue */
	bool		paused;			/* waves wait for the client to read */
	bool		at_seam;		/* a wave waits for a seam round (in seam_waiters) */
	uint64_t	seam_wait;		/* the lowest ticket its waves at the seam wait for */
	PoolConn   *conn;			/* holding a wave connection */
	GwWaiting  *waiting;		/* requests waiting for the feed's start, in order */
	GwWaiting  *waiting_tail;
	size_t		n_waiting;
	size_t		waiting_bytes;
	int			waves;			/* its waves counted in the gateway's (gw_count_waves) */
	GwConn	   *client;			/* its client connection */
	size_t		topic_bytes;	/* what its topics take, as last counted there */
	/* requests that came while a Mutate is applied, each a size_t length and its bytes */
	unsigned char *held;
	size_t		held_len;
	size_t		held_off;		/* the next one */
	bool		applying;		/* in the apply queue */
	bool		reaping;		/* finished: its topics leave a slice at a time (apply queue) */
	bool		closed;			/* its h2 stream is gone: freed once reaped */
	GwStream   *a_next;			/* the apply queue */
	Xip83Timer	keepalive;
	GwStream   *q_prev,
			   *q_next;			/* the wave queue */
	GwStream   *prev,
			   *next;			/* every stream */
};

struct Xip83Gateway
{
	Xip83GatewayOptions opt;
	const GwCoreHooks *up;		/* the core, for the feed's thread and the pool */
	Xip83H2Server *srv;
	GwFeedTap  *tap;			/* this loop's place in the live feed (gw_feed.c) */
	Xip83Feed  *view;			/* its cursors as of the rows routed: wave ceilings */
	uint64_t	seam_done;		/* the last seam ticket a round served */
	GwStream  **seam_waiters;
	size_t		n_seam_waiters;
	size_t		cap_seam_waiters;
	PoolConn   *pool;
	PoolConn   *free_conns;
	size_t		n_waves;		/* waves in flight, every stream */
	GwRouter	routers[2];		/* v3, d14n: their topic bytes overlap */
	GwStream   *streams;
	GwStream   *q_head,
			   *q_tail;
	/* streams with a Mutate to apply or requests held, a slice each per loop turn */
	GwStream   *a_head,
			   *a_tail;
	Xip83Timer	apply_timer;
	GwConn	   *conns[GW_CONN_SLOTS];
	size_t		topic_bytes;	/* every stream's topics */
	GwStream  **dirty;
	size_t		n_dirty;
	size_t		cap_dirty;
	unsigned char *packed;		/* the v3 feed row being routed, packed once */
	size_t		cap_packed;
	Xip83H2Shared *last[XIP83_GATEWAY_METHODS];	/* by method: the last small message sent */
	bool		draining;
	bool		feed_started;	/* gw->view has the feed's start horizons */
	Xip83GrpcMethod methods[XIP83_GATEWAY_METHODS];
	Xip83GatewayStats stats;	/* the counters; the gauges are computed when asked */
	/* several loops: figures asked by the metrics' loop, computed on this one */
	int			ask_fd;			/* eventfd: figures asked */
	Xip83Watch	ask_watch;
	_Atomic uint64_t asked;		/* the latest request */
	_Atomic int answer_fd;		/* written once they are published */
	pthread_mutex_t publish_lock;
	Xip83GatewayFigures published;	/* under publish_lock */
	uint64_t	published_for;	/* under publish_lock: the request they answer */
};

/*
 * What the feed's thread (gw_feed.c), the pool (gw_pool.c) and the Mutates
 * applied in slices (gw_apply.c) hand up to the core: gw_core.c registers
 * these (Xip83Gateway.up) before it starts any, so the core calls down to
 * them and they never call up by name.
 */
struct GwCoreHooks
{
	/* Ends the stream if the engine failed it, the client is done or too far behind. */
	void		(*check) (GwStream *st);
	/* Flushes the live batches the feed wrote into, and checks their streams. */
	void		(*flush_dirty) (Xip83Gateway *gw);
	/* A live row to the streams holding its topic; returns how many those are. */
	size_t		(*route_row) (Xip83Gateway *gw, const Xip83FeedRow *row);
	/* A status of the feed to every stream. */
	void		(*feed_status) (Xip83Gateway *gw, const char *status, const char *detail);
	/* A seam round ended (rc < -1: it failed): the waves that waited go on. */
	void		(*seam_done) (Xip83Gateway *gw, uint64_t ticket, int rc);
	/* The feed started: the requests that waited for it run. */
	void		(*feed_started) (Xip83Gateway *gw);
	/* Runs one request (msg), or the next slice of the Mutate being applied (msg NULL). */
	void		(*request) (GwStream *st, const unsigned char *msg, size_t len);
	/* Frees a stream the transport closed. */
	void		(*stream_free) (GwStream *st);
};

/* gw_live.c */
/* A live row to the streams holding its topic; returns how many those are. */
extern size_t gw_route_row(Xip83Gateway *gw, const Xip83FeedRow *row);

/* gw_apply.c */
/* Topics of a Mutate applied per slice. */
#define GW_MUTATE_SLICE 2048
/* The topic memory bounds' defaults where the options leave them 0. */
extern void gw_apply_defaults(Xip83GatewayOptions *opt);
/* Counts what the stream's topics take again: one that grew past a bound fails. */
extern void gw_count_topics(GwStream *st);
/* The record of a client connection, counting one more stream; NULL when out of memory. */
extern GwConn *gw_conn_get(Xip83Gateway *gw, uint64_t serial);
/* One stream fewer: the record goes with the last. */
extern void gw_conn_release(Xip83Gateway *gw, GwConn *c);
/* The stream has a Mutate to apply or requests held: a turn of its own soon. */
extern void gw_apply_queue(GwStream *st);
extern void gw_apply_unqueue(GwStream *st);
/* Keeps a request that came while a Mutate is applied; false when too much waits. */
extern bool gw_hold(GwStream *st, const unsigned char *msg, size_t len);
/* Whether the stream holds requests. */
extern bool gw_holding(const GwStream *st);
/* A finished stream's topics leave the index: at once, or a slice per turn (reaping). */
extern void gw_release_topics(GwStream *st);

/* gw_feed.c */
/*
 * Takes the loop's place (gw->opt.loop) in the shared live feed, before its
 * thread runs; gw->view follows it (at once when it started).
 */
extern bool gw_feed_attach(Xip83Gateway *gw, Xip83GatewayFeed *hub, char *err, size_t errlen);
/* A ticket for the seam: served by the next round the thread starts. */
extern uint64_t gw_feed_ask_round(Xip83Gateway *gw);
/* The feed's metrics (live, rows, lag; its connection added to db_connections by loop 0). */
extern void gw_feed_stats(Xip83Gateway *gw, Xip83GatewayStats *out);
/* Leaves the feed (its thread stopped first) and frees the view. */
extern void gw_feed_detach(Xip83Gateway *gw);
/* gw_pool.c */
/* Queues a stream with wave pages to read (no-op when it cannot read one now). */
extern void gw_enqueue(GwStream *st);
/* Takes a stream out of the wave queue. */
extern void gw_unqueue(GwStream *st);
/*
 * Counts st's waves (n: what it has now) in the gateway's and its client
 * connection's; a wave it started past either bound fails it
 * RESOURCE_EXHAUSTED.
 */
extern void gw_count_waves(GwStream *st, int n);
/* Hands free wave connections to the streams in the queue, in turn. */
extern void gw_schedule(Xip83Gateway *gw);
/* Connects the pool (opt.pool connections, to the standby when there is one). */
extern bool gw_pool_open(Xip83Gateway *gw, char *err, size_t errlen);
extern void gw_pool_close(Xip83Gateway *gw);

#endif
