/*
 * merge_internal.h, private to the merge engine (merge.c, merge_streams.c,
 * merge_walk.c): its state, and what its three parts call of each other.
 * See merge.c for the invariants.
 */
#ifndef XIP83_MERGE_INTERNAL_H
#define XIP83_MERGE_INTERNAL_H

#include "postgres.h"

#include "access/genam.h"
#include "access/skey.h"

#include "core/core.h"
#include "merge.h"

/* Relative costs, in units of one dense-walk row (an index entry and a heap
 * tuple read in position order). Measured by tests/bench/bench_wave_v3. */
#define COST_WALK_ROW		1.0
#define COST_DESCENT		8.0		/* rescan and descend a scan index */
#define COST_FETCH			3.0		/* fetch one heap tuple out of order */

#define MIN_PROBE_ROWS		128
#define FIRST_BATCH_MIN		8
#define FIRST_BATCH_MAX		32
#define BATCH_MAX			256
#define STREAM_BATCH_FIRST	64
#define BATCH_GROWTH		4
#define INTERRUPT_EVERY		256

/*
 * One index entry read by a refill: where a row is and its position; or a
 * candidate position known from the recent-writes table, its tid invalid:
 * fetched through the leaf's walk index when the merge gets to it.
 */
typedef struct MergeItem
{
	int64		position;
	ItemPointerData tid;
	uint16		leaf;			/* index into the stream's leaves */
} MergeItem;

/* A topic (and originator) read in batches through its leaves' scan indexes. */
typedef struct MergeStream
{
	Datum		topic;
	int32		originator;
	uint16		nleaves;
	uint16		leaf;			/* the leaf the next refill reads */
	int64		floor;
	int64		ceiling;
	SourceLeaf **leaves;
	MergeItem  *items;
	int			nitems;
	int			next;
	int			cap;
	bool		drained;		/* the index holds nothing beyond items */
	bool		admitted;		/* reached and let in by the admit callback */
} MergeStream;

/* A stream's next item as the heap orders it; kept inline for cache locality. */
typedef struct MergeHead
{
	int64		position;
	int32		originator;
	int32		stream;
} MergeHead;

/* What the merge keeps open per leaf, created on first use. */
typedef struct LeafScan
{
	IndexScanDesc scan;			/* on the scan index, rescanned per refill */
	IndexFetchTableData *fetch; /* heap fetches by tid */
	TupleTableSlot *slot;
	IndexScanDesc walk;			/* on the walk index */
	IndexScanDesc point;		/* on the walk index, one candidate per rescan */
} LeafScan;

typedef enum MergeMode
{
	MODE_START,
	MODE_WALK,
	MODE_HEAP,
	MODE_DONE
} MergeMode;

struct MergeScan
{
	MemoryContext cxt;
	int			nprefix;
	Snapshot	snapshot;
	MergeStrategy strategy;
	int64		row_goal;		/* rows the caller wants at most; 0 = all */
	int64		emitted;
	MergeMode	mode;

	MergeStream *streams;
	int			nstreams;
	int			cap;
	int64		budget_items;	/* bound on buffered items over all streams */
	int64		buffered_items;
	MergeHead  *heads;			/* min-heap of the heads of unexhausted streams */
	int			nheads;
	int			heads_cap;
	MergeHead  *pending;		/* streams by floor, sorted as they are reached */
	int			npending;
	int			pending_next;	/* pending[..next) are reached */
	int			sorted_end;		/* pending[next..sorted_end) are in order */
	int		   *bounds;			/* stack: all of pending[next..b) sort before
								 * pending[b..), top the lowest b */
	int			nbounds;
	int			bounds_cap;
	int64		heap_floor;		/* every stream's floor is raised to it */
	int64		top_ceiling;	/* the highest ceiling of a stream */
	bool		one_originator; /* every stream is of the first's originator */
	MergeAdmitFn admit;
	void	   *admit_arg;
	const RecentTable *recent;	/* exact candidates of streams, or NULL */
	int		   *reached;		/* streams the walk admitted, to refill */
	int			nreached;
	int			nfront;			/* reached[..nfront): refilled before pending */

	LeafScan   *leafscans;		/* by SourceLeaf.leafno */
	int			nleafscans;

	/* dense walk */
	SourceLeaf **walk_leaves;
	int			nwalk_leaves;
	int			walk_leaf;
	int32		walk_originator;
	int			walk_nprefix;
	MergeClassifyFn classify;
	void	   *classify_arg;
	int64		walk_lo;		/* exclusive */
	int64		walk_hi;		/* inclusive */
	int64		walk_position;	/* last position the walk decided */
	bool		walk_open;		/* the current walk leaf's scan is positioned */
	int64		window_walked;
	int64		window_matched;
	int64		window_size;

	MemoryContext caller_cxt;	/* CurrentMemoryContext of the running MergeNext */
	MergeStats	stats;
};

/* Whether head a comes before head b: (originator, position) order. */
static inline bool
HeadBefore(const MergeHead *a, const MergeHead *b)
{
	if (a->originator != b->originator)
		return a->originator < b->originator;
	return a->position < b->position;
}

/* Takes the stream MergePeekPending just returned. */
static inline int
PopPending(MergeScan *merge)
{
	if (merge->nfront > 0)
		return merge->reached[--merge->nfront];
	return merge->pending[merge->pending_next++].stream;
}

/* Marks a stream reached; false when the caller's admit callback drops it. */
static inline bool
Admit(MergeScan *merge, int sno)
{
	merge->streams[sno].admitted = true;
	return merge->admit == NULL || merge->admit(merge->admit_arg, sno);
}

/* merge_streams.c: the per-topic index scans and the exact candidates. */
extern LeafScan *MergeLeafScan(MergeScan *merge, SourceLeaf *leaf);
extern int	MergePositionKeys(ScanKey keys, Datum topic, bool by_originator, int32 originator,
							  int64 floor, int64 ceiling);
extern bool MergeLeafMayHold(const SourceLeaf *leaf, int nprefix, int32 originator,
							 int64 floor, int64 ceiling);
extern int	MergeRefill(MergeScan *merge, MergeStream *s);
extern bool MergeTakeCandidates(MergeScan *merge, MergeStream *s);
extern bool MergeFetchByPosition(MergeScan *merge, const MergeStream *s, SourceLeaf *leaf,
								 LeafScan *ls, int64 position);

/* merge.c: the heap of heads. */
extern bool MergePeekPending(MergeScan *merge, MergeHead *top);

/* merge_walk.c: the dense walk of the id (or originator, sequence) index. */
extern void MergeStartWalk(MergeScan *merge);
extern bool MergeNextFromWalk(MergeScan *merge, MergeRow *row);

#endif							/* XIP83_MERGE_INTERNAL_H */
