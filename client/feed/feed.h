/*
 * feed.h: the xip83 live feed as a libpq library (the consumer side).
 *
 * A feed follows the rows of its kinds from its cursors: group message ids,
 * welcome ids, one sequence cursor per originator, and a late cursor per
 * kind. It LISTENs on xip83_live (in autocommit, so the LISTEN is committed
 * before it reads), reads with the live fetch functions, then waits on the
 * connection's socket and fetches again on every notice. Rows reach the
 * caller exactly once, in position order per kind (sequence order per
 * originator), except late writes: a row stored at or below a horizon the
 * feed already passed arrives later, flagged `late`.
 *
 * Availability: the notifier's notices (checked by the sending backend's
 * pid, which no other role can forge) carry its epoch and state. The feed is
 * "live" while LIVE notices arrive; a STOPPING notice, a new epoch, silence
 * longer than offline_after_ms or a lost connection make it "offline": it then
 * polls every poll_ms (reconnecting with backoff when needed) and resumes from
 * its cursors, and reports "back" with the next LIVE notice. Notices from
 * anyone else only wake it up. Status changes go to the status callback. The
 * feed never holds a transaction open.
 *
 * Read replicas: with standby_conninfo the feed LISTENs and reads horizons
 * and their fence (xip83.horizon_fence) on conninfo, the primary, and reads
 * rows on the standby, which waits until it replayed the fence: no row is
 * skipped whatever the replay lag. A fetch the standby could not serve in
 * time (SQLSTATE X83F0) is retried on the next notice or poll tick; the
 * start horizons are the standby's own (replayed), so every position below
 * the cursors is on the server the rows come from. When the primary cannot
 * be reached and the standby says it is no longer in recovery, or a fetch
 * finds it promoted short of a fence (X83F1), the feed serves from the
 * promoted server alone (LISTEN, horizons and rows there), reports
 * "promoted" and goes on from its cursors, the late cursor included; a
 * primary that cannot be reached while the standby is still in recovery is
 * reconnected to, as without a standby.
 *
 * Without standby_conninfo the feed asks conninfo whether it is in recovery
 * on every connect. A standby cannot LISTEN: the feed polls it every poll_ms
 * and reads up to its own replayed horizons. When it is promoted (checked
 * on every poll) the feed LISTENs there, reports "promoted" and goes on from
 * its cursors, the late cursor included: horizons and late cursors carry
 * over a promotion, and the feed never read past what the standby replayed.
 */
#ifndef XIP83_FEED_H
#define XIP83_FEED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libpq-fe.h>

#include "pgconn.h"
#include "v3row.h"

#define XIP83_FEED_GROUP	1
#define XIP83_FEED_WELCOME	2
#define XIP83_FEED_ENVELOPE 4
#define XIP83_FEED_ALL		7

/* One delivered row; pointers are valid during the callback only. */
typedef struct Xip83FeedRow
{
	int			kind;			/* XIP83_FEED_GROUP, _WELCOME or _ENVELOPE */
	int32_t		originator_node_id; /* envelopes; 0 otherwise */
	int64_t		position;		/* id, or sequence id for envelopes */
	const unsigned char *topic; /* kind-prefixed topic */
	size_t		topic_len;
	const unsigned char *data;	/* payload (data / originator_envelope) */
	size_t		data_len;
	bool		late;			/* a late write: at or below rows delivered before */
	const Xip83V3Row *v3;		/* group messages and welcomes: every column; else NULL */
} Xip83FeedRow;

typedef void (*Xip83FeedRowFn) (void *arg, const Xip83FeedRow *row);
/*
 * status: "live", "offline" or "back"; "promoted" when the standby the feed
 * polled or read its rows from became a primary (it LISTENs there from then
 * on); or "late-lost" when late writes owed
 * to the feed were dropped (late ring overflow, server restart): a caller that
 * must not miss them replays its topics as a wave. detail says why.
 */
typedef void (*Xip83FeedStatusFn) (void *arg, const char *status, const char *detail);

typedef struct Xip83FeedOptions
{
	const char *conninfo;		/* libpq connection string ("" = environment) */
	int			kinds;			/* XIP83_FEED_* bits; 0 = all */
	int			page_rows;		/* rows per fetch; 0 = 1000 */
	int			poll_ms;		/* poll interval while offline; 0 = 50 */
	int			offline_after_ms;	/* silence that means offline; 0 = 3000 */
	int			max_backoff_ms; /* reconnect backoff cap; 0 = 2000 */
	/*
	 * The table each kind is read from: a table xip83.track follows, or NULL
	 * for xip83's own. Each tracked table has its own horizons and late ring.
	 */
	const char *group_source;
	const char *welcome_source;
	const char *envelope_source;
	const char *blob_source;	/* envelopes: the blob table it was tracked with */
	const char *standby_conninfo;	/* rows from this standby, fenced; NULL: none */
	bool		standby_only;	/* unused: a standby as conninfo is detected */
	/*
	 * Longest wait of a fenced fetch on the standby for replay (a session
	 * setting of xip83.standby_wait_ms); 0 = the server's setting.
	 */
	int			fence_wait_ms;
	/*
	 * Longest wait of a fetch for a lock on a table (DDL holding one, or
	 * queued for one behind a long query), a session lock_timeout: past it
	 * the round is retried on the next notice or poll tick instead of
	 * holding the caller; 0 = the server's setting.
	 */
	int			lock_timeout_ms;
	const char *application_name;	/* unless conninfo names one; NULL = xip83-feed */
	Xip83FeedRowFn on_row;
	Xip83FeedStatusFn on_status;	/* may be NULL */
	void	   *arg;			/* passed to both callbacks */
} Xip83FeedOptions;

typedef struct Xip83Feed Xip83Feed;

/* A feed with its id cursors at 0 and originators before sequence 0 (-1); it connects on the first step. */
extern Xip83Feed *xip83_feed_new(const Xip83FeedOptions *options);
extern void xip83_feed_free(Xip83Feed *feed);
/* Cursors: rows after these positions are delivered. */
extern void xip83_feed_set_cursor(Xip83Feed *feed, int kind, int32_t originator_node_id,
								  int64_t after);
extern int64_t xip83_feed_cursor(const Xip83Feed *feed, int kind, int32_t originator_node_id);
/*
 * Moves every cursor to the current horizons (follow from now; with a
 * standby, its replayed ones); false if unreachable. It may wait for a
 * connect up to its connect timeout (pgconn.h).
 */
extern bool xip83_feed_start_at_horizon(Xip83Feed *feed);
/*
 * Waits at most timeout_ms for a notice or a poll tick and delivers what is
 * new. Returns the rows delivered, or -1 after a fatal error (printed).
 * While disconnected, a reconnect goes on across steps, each waiting for it
 * at most timeout_ms, until it connects or its connect timeout (pgconn.h)
 * fails it: a server that accepts and never answers holds no step longer.
 */
extern int	xip83_feed_step(Xip83Feed *feed, int timeout_ms);
/*
 * Fetches everything up to the current horizons now, without waiting for a
 * notice: afterwards every row committed before the call has been delivered.
 * Returns the rows delivered; -1 when the server could not be reached (a
 * reconnect is started or advanced, never waited for) or the
 * standby had not replayed the fence in time (try again later), -2 after a
 * fatal error (printed).
 */
extern int	xip83_feed_fetch(Xip83Feed *feed);
/*
 * The originators the feed follows and their cursors: up to max of them into
 * nodes and afters (which may be NULL when max is 0); returns how many there
 * are.
 */
extern int	xip83_feed_originators(const Xip83Feed *feed, int32_t *nodes, int64_t *afters,
								   int max);
/* Whether the feed currently hears LIVE notices. */
extern bool xip83_feed_is_live(const Xip83Feed *feed);
/*
 * Whether notices arrived while the last step fetched: libpq read them off
 * the socket then, so the socket no longer wakes an event loop for them; the
 * caller steps again without waiting.
 */
extern bool xip83_feed_woken(const Xip83Feed *feed);
/*
 * The socket to wait on for notices, or -1 while disconnected; it changes
 * when the feed reconnects. For callers with their own event loop, which call
 * xip83_feed_step with timeout 0 when it is readable and every poll_ms.
 */
extern int	xip83_feed_socket(const Xip83Feed *feed);
/* Rows delivered since the feed was created. */
extern int64_t xip83_feed_rows(const Xip83Feed *feed);
/*
 * The WAL position (as xip83_pg_lsn) a hot standby must have replayed
 * before a wave whose ceilings are the feed's cursors reads there: every row
 * at or below a cursor had committed by then. The cursors came from a
 * standby (fenced or polled alone), which a restart may set back to an
 * earlier replay position. 0 while they came from a primary only.
 */
extern uint64_t xip83_feed_replay_lsn(const Xip83Feed *feed);
/*
 * A copy of a feed that another thread steps, which is never stepped itself:
 * xip83_feed_follow gives copy the cursors and replay position of feed (call
 * it before that thread starts), and xip83_feed_follow_row moves it past a
 * row the feed delivered, with the feed's replay position of that moment.
 * Its cursors and replay position are then what a wave takes as ceilings,
 * as of the rows the copy's thread has seen.
 */
extern void xip83_feed_follow(Xip83Feed *copy, const Xip83Feed *feed);
extern void xip83_feed_follow_row(Xip83Feed *copy, const Xip83FeedRow *row, uint64_t replay_lsn);

#endif							/* XIP83_FEED_H */
