/*
 * feed_internal.h: what the files of src/feed share and nothing else uses.
 */
#ifndef XIP83_FEED_INTERNAL_H
#define XIP83_FEED_INTERNAL_H

#include "postgres.h"

#include "utils/rel.h"

#include "feed.h"

/* ---------------------------------------------------------------- tracking */

/* What an xip83_track index of a table does (track_am.c, positions.c). */
typedef enum TrackIndexUse
{
	TRACK_INDEX_INERT,			/* the table is not tracked: nothing */
	TRACK_INDEX_LIVE,			/* registers the table's inserts */
	TRACK_INDEX_MISMATCH		/* tracked, but not on the columns track names */
} TrackIndexUse;

/*
 * The use of an index of a table, with the tracking that covers the table
 * and whether it is the blob side (no topic column in the index).
 */
extern TrackIndexUse TrackIndexOf(Relation heap, Relation index, TrackedSource *t,
								  bool *blob_side);

/* An xip83_track index being built: refused when a tracked table would misread it. */
extern void TrackCheckIndex(Relation heap, Relation index);

/* The xip83_track index through which a leaf's inserts are registered, or InvalidOid. */
extern Oid	TrackLiveIndex(Relation heap);

/* Whether a column of a tracked table (or partition) holds positions or the topic. */
extern bool TrackedColumn(Oid relid, const char *column);

/* ProcessUtility hook: DDL that would move rows past the write path (track_ddl.c). */
extern void TrackDdlInstallHook(void);

/*
 * A tracked table or its blob table is being dropped: its row goes too. The
 * drop of xip83.tracked_sources itself is the extension's: refused while a
 * table is tracked.
 */
extern void TrackedDropped(Oid relid);
/* Refuses to drop the extension while a table is tracked. */
extern void TrackRefuseExtensionDrop(void);

/* ---------------------------------------------------------------- writes */

/*
 * A new row of a tracked table, from its xip83_track index (track_am.c):
 * values are the index's columns, positions first and then the topic (none
 * on a blob table). A table no longer tracked is left alone. Returns whether
 * the write is late.
 */
extern bool PositionsIndexInsert(Relation heap, Relation index, Datum *values, bool *isnull);
/* Whether such an insert may be an UPDATE's new row version (false: surely a new row). */
extern bool PositionsInsertMayBeUpdate(Relation heap);
/* A sequence's last value, read off its page (bookkeeping: no privilege check). */
extern int64 FeedSequenceLastValue(Oid seqid);

/* ---------------------------------------------------------------- workers */

/*
 * A database's background workers. Who runs each one lives in the
 * notifier's table of databases (notifier.c), one entry per database.
 */
typedef enum DbWorkerSort
{
	WORKER_NOTIFIER = 0,		/* notifier.c */
	WORKER_SUMMARY = 1			/* the topic summary's passes, summary_build.c */
} DbWorkerSort;
#define DB_WORKER_SORTS 2

/*
 * Starts the current database's worker of a sort unless it runs or its start
 * is pending (a start that failed is tried again after 10 s); never during
 * recovery.
 */
extern void DbWorkerStart(DbWorkerSort sort);
/* In the worker: takes its slot, given back when it exits; false when another one runs. */
extern bool DbWorkerClaim(DbWorkerSort sort);
/* In the worker: whether its database is being dropped (it must leave). */
extern bool DbWorkerStopRequested(DbWorkerSort sort);

/* ---------------------------------------------------------------- standby */


/*
 * The notifier: logs a feed's horizons for standbys, only the lines that
 * moved since its last record of that feed, or every line when full.
 */
extern void StandbyLogHorizons(RegistryDb *db, const HorizonSet *set, bool full);

#endif							/* XIP83_FEED_INTERNAL_H */
