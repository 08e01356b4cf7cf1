/*
 * feed_internal.h, private to the live feed (feed.c, feed_fetch.c): the
 * feed's state and what the two halves call of each other.
 */
#ifndef XIP83_FEED_INTERNAL_H
#define XIP83_FEED_INTERNAL_H

#include "feed.h"
#include "pgconn.h"

/* How often the notifier's pid may be looked up after a notice from another pid. */
#define PID_RECHECK_MS 100

typedef struct OriginatorCursor
{
	int32_t		node;
	int64_t		after;
} OriginatorCursor;

/* The horizons a round reads up to on a standby, and their fence. */
typedef struct FencedHorizons
{
	int64_t		horizon;		/* group or welcome */
	int			n;				/* envelopes: originators with a horizon */
	OriginatorCursor *originators;	/* (node, horizon) */
	char		fence[32];
} FencedHorizons;

struct Xip83Feed
{
	Xip83FeedOptions opt;
	PGconn	   *conn;
	PGconn	   *standby;		/* rows come from here when set */
	Xip83PgStart pending;		/* a connect under way (pending.conn set) */
	/*
	 * With a standby: its connect under way, for the rows (primary_up holds
	 * the primary's connection meanwhile) or, when the primary could not be
	 * reached (primary_up NULL), to ask whether it was promoted.
	 */
	Xip83PgStart pending_standby;
	PGconn	   *primary_up;
	FencedHorizons fenced;		/* of the kind being read from the standby */
	int64_t		group_after;
	int64_t		welcome_after;
	int64_t		late[3];		/* late cursor per kind: group, welcome, envelope */
	int			n_originators;
	int			cap_originators;
	OriginatorCursor *originators;
	int			notifier_pid;	/* the real notifier's backend, 0 when unknown */
	int64_t		pid_checked_ms; /* when notifier_pid was last looked up */
	bool		in_recovery;	/* conninfo is a standby: polled, no LISTEN */
	/* the last round stopped short: a fence not replayed, a lock not granted in time */
	bool		round_missed;
	bool		fence_unreachable;	/* the standby was promoted short of a fence */
	bool		live;			/* hearing LIVE notices */
	bool		ever_live;		/* reported "live" once */
	bool		offline_reported;
	bool		woken;			/* notices came in during the last fetch */
	uint64_t	epoch;			/* of the last notice, 0 before any */
	int64_t		last_notice_ms; /* monotonic time of the last LIVE notice */
	int64_t		last_poll_ms;	/* monotonic time of the last offline poll */
	int64_t		next_connect_ms;	/* earliest reconnect attempt */
	int			backoff_ms;
	int64_t		rows;
	uint64_t	replay_lsn;		/* xip83_feed_replay_lsn */
	unsigned char *scratch;		/* kind-prefixed topic */
	size_t		scratch_len;
};

extern OriginatorCursor *FeedOriginator(Xip83Feed *f, int32_t node);
extern const char *FeedSourceOf(const Xip83Feed *f, int kind);
extern int FeedFetchAll(Xip83Feed *f, bool discover);
extern int FeedQueryFailed(Xip83Feed *f, PGresult *res);
extern bool FeedLockTimedOut(const PGresult *res);
extern void FeedStatus(Xip83Feed *f, const char *status, const char *detail);
extern bool FeedFollowStandby(Xip83Feed *f);
/* Whether a connection's server is in recovery: 1 yes, 0 no, -1 unknown. */
extern int	FeedServerInRecovery(PGconn *conn);

/* Raises the feed's replay position (xip83_feed_replay_lsn). */
static inline void
FeedRaiseReplay(Xip83Feed *f, uint64_t lsn)
{
	if (lsn > f->replay_lsn)
		f->replay_lsn = lsn;
}

#endif							/* XIP83_FEED_INTERNAL_H */
