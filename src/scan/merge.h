/*
 * merge.h: the one k-way merge engine of the wave scans (both bindings).
 *
 * A merge reads streams. A stream is one topic (bytea) and, with a 2-column
 * prefix, one originator (int4), read between an exclusive lower bound (its
 * floor, or a scan cursor) and an inclusive upper bound (its ceiling) of an
 * int8 position, through the scan index of an ordered list of leaves (the
 * index leads with topic[, originator], position). Leaves of one stream must
 * hold disjoint, ascending position ranges (RANGE bands); a source whose
 * leaves are not so ordered adds one stream per (topic, leaf).
 *
 * Rows come out ordered by (originator, position): v3 streams all have
 * originator 0, so that is position order. Only rows visible to the merge's
 * snapshot come out, each at most once provided a stream's rows are unique by
 * position. The engine knows keys and positions, not tables: each row is a
 * slot holding the leaf's heap tuple, and callers project their columns.
 *
 * Two ways of producing rows, chosen while running (see MergeStrategy):
 *   - the heap: per-stream batches of (position, tid) read off the scan index
 *     without touching the heap, a binary heap over stream heads, one heap
 *     fetch per row emitted; a stream leaves the heap when it is exhausted, and
 *     a stream whose floor is at or above its ceiling is never read at all.
 *     Streams are first read in floor order, only once the merge reaches
 *     their floor, so a page descends the streams whose floors lie below its
 *     last row, not every stream. With a recent-writes table (MergeSetRecent)
 *     a stream it knows exactly is not descended: its candidate positions
 *     are its items, each fetched through the leaf's walk index when the
 *     merge is about to produce it, and dropped silently when no row there
 *     is visible or the visible one is of another topic or originator;
 *   - the dense walk: when the wave's topics hold most rows of the position
 *     range, walking a unique position index in order and keeping the rows a
 *     caller's classify callback maps to a stream (and that are above that
 *     stream's floor) costs less than descending every topic's index.
 *
 * Memory: everything lives in a context the merge owns; per-stream batches are
 * bounded by work_mem in total (a stream keeps at least one slot), so memory
 * follows the number of streams, not the rows of the wave. Long loops answer
 * query cancel. MergeEnd releases every scan, fetch and buffer pin; on ERROR
 * the resource owner releases pins and the context goes with its parent.
 */
#ifndef XIP83_MERGE_H
#define XIP83_MERGE_H

#include "postgres.h"

#include "executor/tuptable.h"
#include "utils/snapshot.h"

#include "core/core.h"
#include "rel/rel.h"
#include "scan.h"

typedef struct MergeScan MergeScan;


/* One row produced by MergeNext; valid until the next call. */
typedef struct MergeRow
{
	TupleTableSlot *slot;		/* the visible heap tuple */
	SourceLeaf *leaf;			/* the leaf it lives in (for attnos) */
	int			stream;			/* as returned by MergeAddStream */
	int32		originator;
	int64		position;
} MergeRow;

/* Counters of the work done, for tests and benchmarks. */
typedef struct MergeStats
{
	int64		descents;		/* scan-index descents (one per stream refill) */
	int64		index_items;	/* index entries read by refills */
	int64		walked;			/* rows visited by the dense walk */
	int64		fetched;		/* heap fetches by the heap strategy */
	int64		exact_streams;	/* streams whose rows the recent table knew */
	int64		by_position;	/* their candidates fetched by position */
	bool		used_walk;		/* the dense walk produced rows */
	bool		used_heap;		/* the heap produced rows */
} MergeStats;

/*
 * Maps a tuple found by the dense walk to its stream, or -1 when the tuple is
 * not in the wave. The engine then checks the stream's floor and ceiling.
 */
typedef int (*MergeClassifyFn) (void *arg, const SourceLeaf *leaf, TupleTableSlot *slot);

/*
 * Decides about a stream once, when the merge first reaches it: in
 * (originator, floor) order, before it is descended or any row is classified
 * into it; false drops it. A row the dense walk classifies lies above the
 * floor of no stream not yet reached, so classify need only know the streams
 * admitted so far: a caller sets up per-stream state (its topic map, a
 * topic listed twice kept once) for the streams a page gets to, not all.
 */
typedef bool (*MergeAdmitFn) (void *arg, int stream);

extern MergeScan *MergeBegin(int nprefix, Snapshot snapshot, MergeStrategy strategy,
							 int64 row_goal);
extern void MergeReserveStreams(MergeScan *merge, int n);
extern void MergeLowerFloor(MergeScan *merge, int stream, int64 floor);
extern int	MergeAddStream(MergeScan *merge, Datum topic, int32 originator,
						   int64 floor, int64 ceiling, SourceLeaf **leaves, int nleaves);
extern void MergeSetAdmit(MergeScan *merge, MergeAdmitFn admit, void *arg);
extern void MergeSetRecent(MergeScan *merge, const RecentTable *recent);
extern void MergeSetDenseWalk(MergeScan *merge, SourceLeaf **leaves, int nleaves,
							  int32 originator, MergeClassifyFn classify, void *arg);
extern int	MergeStreamCount(const MergeScan *merge);
extern Datum MergeStreamTopic(const MergeScan *merge, int stream);
extern bool MergeNext(MergeScan *merge, MergeRow *row);
extern const MergeStats *MergeGetStats(const MergeScan *merge);
extern void MergeEnd(MergeScan *merge);

#endif							/* XIP83_MERGE_H */
