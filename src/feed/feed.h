/*
 * feed.h: the API of src/feed, a feed's life above the registry: attaching
 * and loading it (feed_load.c), the write path (positions.c: id defaults,
 * triggers; track.c and track_am.c: tracking a node's tables), horizons and
 * the snapshot to read after them (horizon.c), a hot standby (standby.c) and
 * the notifier (notifier.c, live_notice.c). Declarations only the feed's own
 * files use are in feed_internal.h.
 *
 * Horizons: commit-order-safe, the contract other files build on.
 *
 * A horizon is the highest position P of one position line (group message
 * ids, welcome ids, or one originator's sequence ids, in the current database)
 * such that every row at a position <= P is committed, will never exist, or
 * is a late write announced in the late ring (src/core). Horizons handed out
 * never decrease, across restarts too: the commits behind a horizon are
 * flushed to WAL before it is handed out, and a restart loads each line from
 * what is committed (a committed TRUNCATE starts a table's lines over at 0).
 * Read P first, then take the snapshot: a snapshot taken before P was
 * computed may miss rows at or below P.
 *
 * Every function here needs shared_preload_libraries = 'xip83' and fails with
 * SQLSTATE 55000 otherwise; it must be called inside a transaction, never in
 * a parallel worker or a parallel query's leader (SQLSTATE 25000). On a
 * standby they answer with what replay published (standby.c). Each call
 * takes the registry lock in shared mode and reads every backend's slot:
 * cheap, but call it once per wave or fetch, not per row.
 *
 * Ceilings: a wave that pins group_ceiling() = HorizonOfGroups() (and the
 * others likewise) never leaves a late committer for neither the wave nor the
 * live lane: rows above the ceiling are the live lane's, and no row at or
 * below it commits after the pin except late writes, which the live lane
 * delivers from the late ring.
 */
#ifndef XIP83_FEED_H
#define XIP83_FEED_H

#include "postgres.h"

#include "access/htup.h"
#include "commands/trigger.h"
#include "fmgr.h"
#include "utils/relcache.h"
#include "utils/snapshot.h"
#include "utils/timestamp.h"

#include "access/xlogdefs.h"

#include "core/core.h"
#include "xip83/live_notice.pb-c.h"

/* Every horizon of a feed, computed at one moment. */
typedef struct HorizonSet
{
	int64		group;			/* group message ids */
	int64		welcome;		/* welcome message ids */
	int			n_originators;	/* ascending by node id */
	int32	   *originator_node_ids;	/* palloc'd */
	int64	   *originator_horizons;
	uint64		late_head;		/* seq of the newest late entry, 0 if none */
	uint64		late_writes;	/* late writes committed since the entry was loaded */
} HorizonSet;

/* The late entries of one kind after a late cursor, copied out of the ring. */
typedef struct LateBatch
{
	uint64		head;			/* newest seq in the ring (0: none ever) */
	bool		lost;			/* entries after the cursor were overwritten */
	int			n;
	LateEntry  *entries;		/* ascending seq, palloc'd */
} LateBatch;

/* Errors with 55000 unless the library was preloaded. */
extern void HorizonRequirePreload(void);

/* The horizon of one line of a feed. */
extern int64 HorizonOfLine(RegistryDb *db, int line);
#define HorizonOfGroups() HorizonOfLine(RegistryAttach(), LINE_GROUP)
#define HorizonOfWelcomes() HorizonOfLine(RegistryAttach(), LINE_WELCOME)
/* All horizons of a feed at once. */
extern void HorizonCollectFeed(RegistryDb *db, HorizonSet *out);
#define HorizonCollect(out) HorizonCollectFeed(RegistryAttach(), (out))
/* The late entries of a kind with seq > after (call after taking the read snapshot). */
extern void HorizonLateSince(RegistryDb *db, PositionKind kind, uint64 after, LateBatch *out);
extern uint64 HorizonLateStart(RegistryDb *db);
/* The feed of late_cursor(source): xip83's own (InvalidOid) or a tracked table's. */
extern RegistryDb *HorizonLateFeed(Oid relid);

/*
 * The feed whose horizons cover relid as a table of that kind: xip83's own
 * table of the kind, or a table xip83.track follows as that kind (attached);
 * NULL for any other table (its ceilings are its highest visible positions).
 */
extern RegistryDb *HorizonFeedFor(Oid relid, PositionKind kind);
/*
 * The recent-writes table a wave over relid may skip descents with: relid
 * must be xip83's own table of the kind or a table tracked as that kind, the
 * registry loaded, the server a primary; else NULL.
 */
extern RecentTable *RecentForSource(Oid relid, PositionKind kind);
/*
 * The topic summary a wave over relid may skip descents with (same sources
 * as RecentForSource; on a standby the ones it follows, which vouch for rows
 * up to a covered position: SummaryAskCovers, or for envelopes per
 * originator, SummaryMayHaveMany), and its feed into *db when not NULL.
 * Asks the builder to run when the summary waits for its pass
 * (summary_build.c); the caller asks it only when SummaryAskBegin finds it
 * READY.
 */
extern Summary *SummaryForSource(Oid relid, PositionKind kind, RegistryDb **db);
/*
 * The feed named by a function's source argument, after the caller's read
 * checks (42501); 55000 when no feed covers it.
 */
extern RegistryDb *HorizonFeedArg(FunctionCallInfo fcinfo, int argno, PositionKind kind);

/*
 * The snapshot to read rows up to a horizon, or up to a wave ceiling pinned
 * from one. Every row at or below a horizon committed before the horizon was
 * computed, so a snapshot taken after that sees it; one taken before may not
 * (a ceiling read in the same statement as the scan, or earlier in a
 * REPEATABLE READ transaction). So: the active snapshot, unless it is the
 * one this backend last read a horizon under, then one taken right after
 * that read. That one is newer than the transaction's: under SERIALIZABLE it
 * is refused (0A000), and in a parallel worker too (25000). Register it to
 * keep it. Needs no preloading.
 */
extern Snapshot HorizonReadSnapshot(void);

/*
 * Whether relid is the xip83 table of that name ("group_messages",
 * "welcome_messages", "envelopes"): the only tables horizons cover. A wave's
 * ceiling over any other source is that table's highest visible position.
 */
extern bool HorizonCoversTable(Oid relid, const char *table);

/* The read path's transaction hook (drops the read snapshots). */
extern void HorizonInstallHooks(void);

/* ---------------------------------------------------------------- tracking */
/*
 * A node's own tables followed by the registry (track.c).
 *
 * xip83.track(source, kind, blob_source) makes a node's table a feed of its
 * own (src/core): its writes register their positions exactly as writes to
 * xip83's tables do, and horizons, ceilings, live fetch and feed_status work
 * per tracked table. What is tracked is a row of xip83.tracked_sources,
 * written only by track/untrack (after checking the caller owns the tables)
 * and by a drop of a tracked table; the write path's triggers and tracking
 * index act on a table only when that row names it (or the table it is a
 * partition of).
 */

typedef struct TrackedSource
{
	Oid			source;			/* the tracked table (the meta table for envelopes) */
	PositionKind kind;
	Oid			blob;			/* envelopes: the payload table, or InvalidOid */
	Oid			sequence;		/* v3: the sequence the id default draws from */
} TrackedSource;

/*
 * The tracking that covers a relation: the tracked table itself, its blob
 * table, or a partition (at any depth) of either. Cached per backend and
 * dropped at every relcache invalidation.
 */
extern bool TrackedFind(Oid relid, TrackedSource *out);

/* The relcache callback that keeps TrackedFind's cache honest (from _PG_init). */
extern void TrackInstallHooks(void);

/* The callbacks of the index access method xip83_track (track_am.c). */
struct IndexAmRoutine;
extern struct IndexAmRoutine *TrackAmRoutine(void);
/*
 * xip83.track and xip83.untrack: makes a node's table a feed of its own
 * (kind: 'group', 'welcome' or 'envelope'; blob: envelopes' payload table,
 * or InvalidOid), and restores what track changed.
 */
extern void TrackTable(Oid source, text *kind, Oid blob);
extern void UntrackTable(Oid relid);

/* ---------------------------------------------------------------- standby */
/*
 * xip83 on a hot standby (standby.c).
 *
 * The fence. A feed's commit_lsn, read after its horizons were computed, is a
 * WAL position before which every commit at or below those horizons lies
 * (each writer raises it before its pins are cleared, and the commit record
 * precedes that). A standby that has replayed past the fence sees every such
 * row in a snapshot taken afterwards.
 *
 * On a standby the registry holds what WAL replay put there: late ring
 * entries, and the horizons the primary's notifier logged (registry_wal.c).
 * Readers use those, read-only; nothing pins or writes.
 */

/* How long a fenced read on a standby waits for replay (xip83.standby_wait_ms). */
extern int	xip83_standby_wait_ms;

extern void StandbyDefineGucs(void);

/* A WAL position and its history: where readers can check it. */
typedef struct Fence
{
	XLogRecPtr	lsn;
	TimeLineID	timeline;
	uint64		system_identifier;
} Fence;

/*
 * The fence of the horizons a feed just handed out (call right after
 * computing them): its commit_lsn, or the flushed WAL end when no commit
 * registered since the start (every row then predates the start).
 */
extern Fence StandbyFenceOf(RegistryDb *db);

/*
 * During recovery: waits until replay passed fence, for at most
 * xip83.standby_wait_ms (SQLSTATE X83F0 after that; X83F1 when recovery
 * ended short of it). Interruptible.
 */
extern void StandbyWaitForFence(XLogRecPtr fence);

/*
 * Out of recovery: fails with X83F1 when this server never wrote WAL up to
 * fence (a fence of the primary it followed before it was promoted, while
 * that primary went on). A fence at or below its own WAL end passes: this
 * check cannot tell a promoted server's WAL from the old primary's there.
 */
extern void StandbyCheckFenceWritten(XLogRecPtr fence);

/* ---------------------------------------------------------------- notifier */
/*
 * The live feed's notifier (notifier.c), one background worker per database
 * in use. The registry wakes it through registry_wake, and a transaction's
 * first write makes sure it runs (registry_first_write); SQL entry points
 * start it.
 */
extern int	xip83_notify_interval_ms;
extern int	xip83_notify_busy_interval_ms;
extern int	xip83_notify_heartbeat_ms;
extern int	xip83_notifier_idle_ms;

extern Size NotifierShmemSize(void);
extern void NotifierShmemRequest(void);
extern void NotifierShmemInit(void);
extern void NotifierInstallHooks(void);
/* Starts the current database's notifier unless it runs (or is starting). */
extern void NotifierEnsureRunning(void);
/* A copy of the current database's notifier entry (all 0 when it has none). */
typedef struct NotifierStatus
{
	int			pid;			/* the worker, 0 when none */
	uint64		epoch;
	int			state;			/* XIP83__V1__LIVE_NOTICE__STATE__* */
	uint64		ticks;			/* notices sent in this epoch */
	TimestampTz last_notice_at;
	TimestampTz start_requested_at; /* 0 unless a start is pending */
} NotifierStatus;
extern void NotifierStatusOf(NotifierStatus *out);
/* NOTIFY payloads must stay below 8000 bytes; base64 grows 4/3. */
#define LIVE_NOTICE_MAX_PAYLOAD 7999
/* A LiveNotice as the base64 text of a NOTIFY payload; errors past that size. */
extern char *LiveNoticeToBase64(const Xip83__V1__LiveNotice *notice);
extern PGDLLEXPORT void xip83_notifier_main(Datum main_arg);

/* ---------------------------------------------------------------- summary */

/* The builder of the topic summaries (summary_build.c), one worker per database. */
extern int	xip83_summary_pass_rows_per_s;
/* Starts the current database's builder unless it runs (or is starting); primary only. */
extern void SummaryBuilderEnsureRunning(void);
extern PGDLLEXPORT void xip83_summary_main(Datum main_arg);

/* ---------------------------------------------------------------- writes */

/* The write path's transaction and object-access hooks (positions.c). */
extern void PositionsInstallHooks(void);
/* Sets registry_load_feed: fresh feeds load from their tables (feed_load.c). */
extern void FeedLoadInstall(void);
/* The id defaults: of xip83's own table of a v3 kind, and of a tracked v3 table. */
extern int64 PositionsNextOwnId(PositionKind kind, Oid seq);
extern int64 PositionsNextTrackedId(Oid source);
/*
 * The register_position row trigger and the reset_positions TRUNCATE
 * trigger (trigdata NULL: not called as a trigger, refused).
 */
extern HeapTuple PositionsOnRow(TriggerData *trigdata);
extern void PositionsOnTruncate(TriggerData *trigdata);

#endif							/* XIP83_FEED_H */
