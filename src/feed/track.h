/*
 * track.h: a node's own tables followed by the registry (track.c).
 *
 * xip83.track(source, kind, blob_source) makes a node's table a feed of its
 * own (registry.h): its writes register their positions exactly as writes to
 * xip83's tables do, and horizons, ceilings, live fetch and feed_status work
 * per tracked table. What is tracked is a row of xip83.tracked_sources,
 * written only by track/untrack (after checking the caller owns the tables)
 * and by a drop of a tracked table; the write path's triggers and tracking
 * index act on a table only when that row names it (or the table it is a
 * partition of).
 */
#ifndef XIP83_TRACK_H
#define XIP83_TRACK_H

#include "postgres.h"

#include "core/registry.h"

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

/* The xip83_track index through which a leaf's inserts are registered, or InvalidOid. */
extern Oid	TrackLiveIndex(Relation heap);

/* Whether a column of a tracked table (or partition) holds positions or the topic. */
extern bool TrackedColumn(Oid relid, const char *column);

/* ProcessUtility hook: DDL that would move rows past the write path (track_ddl.c). */
extern void TrackDdlInstallHook(void);

/* An xip83_track index being built: refused when a tracked table would misread it. */
extern void TrackCheckIndex(Relation heap, Relation index);

/* A tracked table or its blob table is being dropped: its row goes too. */
extern void TrackedDropped(Oid relid);

#endif							/* XIP83_TRACK_H */
