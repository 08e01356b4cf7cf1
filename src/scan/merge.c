/*
 * merge.c: the k-way merge engine of the wave scans (see merge.h).
 *
 * Invariants:
 *   - a stream's floor is the exclusive lower bound of what it has not yet
 *     read; items[next..nitems) are read but not yet produced, ascending;
 *   - a batch never ends inside a run of equal positions, so refilling from
 *     "position > floor" never skips an index entry;
 *   - a stream is in the heap of heads exactly when it has an unproduced item,
 *     and its head there is the position of items[next];
 *   - a stream set up from exact candidates (TakeCandidates) is drained: its
 *     items are every row it can hold above its floor, and it is never
 *     descended;
 *   - the dense walk only runs before the heap is primed; when it hands over
 *     at walk position W, every row at or below W has been decided, and each
 *     stream's floor is raised to W before its first refill.
 *
 * Locking: none of its own. The relations come open and locked from source.c;
 * buffer pins are held only inside index scans and index fetches, all ended
 * by MergeEnd.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/itup.h"
#include "access/relscan.h"
#include "access/skey.h"
#include "access/stratnum.h"
#include "access/tableam.h"
#include "miscadmin.h"
#include "utils/fmgroids.h"
#include "utils/memutils.h"

#include "merge.h"
#include "core/recent.h"

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

/* Starts a merge over int8 positions with a 1- or 2-column equality prefix. */
MergeScan *
MergeBegin(int nprefix, Snapshot snapshot, MergeStrategy strategy, int64 row_goal)
{
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext, "xip83 merge",
											  ALLOCSET_DEFAULT_SIZES);
	MergeScan  *merge = MemoryContextAllocZero(cxt, sizeof(MergeScan));

	Assert(nprefix == 1 || nprefix == 2);
	merge->cxt = cxt;
	merge->nprefix = nprefix;
	merge->snapshot = snapshot;
	merge->strategy = strategy;
	merge->row_goal = row_goal;
	merge->mode = MODE_START;
	merge->cap = 16;
	merge->streams = MemoryContextAlloc(cxt, sizeof(MergeStream) * merge->cap);
	merge->budget_items = Max((int64) work_mem * 1024 / (int64) sizeof(MergeItem), 1024);
	merge->top_ceiling = PG_INT64_MIN;
	merge->one_originator = true;
	return merge;
}

/*
 * Has admit decide about each stream when the merge first reaches it (see
 * MergeAdmitFn); without it every stream is read.
 */
void
MergeSetAdmit(MergeScan *merge, MergeAdmitFn admit, void *arg)
{
	if (merge->mode != MODE_START)
		elog(ERROR, "a merge's admit callback must be set before the first row is read");
	merge->admit = admit;
	merge->admit_arg = arg;
}

/*
 * Lets streams take their rows' positions from the recent-writes table of
 * the source (recent.h) instead of descending their scan index, when it
 * knows them exactly. Streams' keys are their topic and, with a 2-column
 * prefix, originator (as writers note them).
 */
void
MergeSetRecent(MergeScan *merge, const RecentTable *recent)
{
	if (merge->mode != MODE_START)
		elog(ERROR, "a merge's recent-writes table must be set before the first row is read");
	merge->recent = recent;
}

/* Lowers a stream's floor before the first row is read (a topic listed twice). */
void
MergeLowerFloor(MergeScan *merge, int stream, int64 floor)
{
	if (merge->mode != MODE_START)
		elog(ERROR, "merge floors must be set before the first row is read");
	if (floor < merge->streams[stream].floor)
		merge->streams[stream].floor = floor;
}

/* Makes room for n more streams at once (a wave knows how many it adds). */
void
MergeReserveStreams(MergeScan *merge, int n)
{
	if (n <= merge->cap - merge->nstreams)
		return;
	if (n > PG_INT32_MAX / 2 - merge->nstreams)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("too many topics in one wave scan")));
	merge->cap = merge->nstreams + n;
	merge->streams = repalloc_huge(merge->streams, sizeof(MergeStream) * merge->cap);
}

/*
 * Adds a stream read between floor (exclusive) and ceiling (inclusive).
 * Returns its number, or -1 when it can hold no row (floor >= ceiling): such a
 * stream is never read. leaves must stay valid until MergeEnd.
 */
int
MergeAddStream(MergeScan *merge, Datum topic, int32 originator, int64 floor,
			   int64 ceiling, SourceLeaf **leaves, int nleaves)
{
	MergeStream *s;

	if (merge->mode != MODE_START)
		elog(ERROR, "merge streams must be added before the first row is read");
	if (floor >= ceiling || nleaves == 0)
		return -1;
	if (nleaves > PG_UINT16_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("a wave scan reads at most %d partitions of one source", PG_UINT16_MAX),
				 errdetail("The source has %d.", nleaves)));
	if (merge->nstreams == merge->cap)
	{
		if (merge->cap > PG_INT32_MAX / 2)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("too many topics in one wave scan")));
		merge->cap *= 2;
		merge->streams = repalloc_huge(merge->streams, sizeof(MergeStream) * merge->cap);
	}
	s = &merge->streams[merge->nstreams];
	memset(s, 0, sizeof(MergeStream));
	s->topic = topic;
	s->originator = originator;
	s->floor = floor;
	s->ceiling = ceiling;
	s->leaves = leaves;
	s->nleaves = (uint16) nleaves;
	merge->top_ceiling = Max(merge->top_ceiling, ceiling);
	if (merge->nstreams > 0 && originator != merge->streams[0].originator)
		merge->one_originator = false;
	return merge->nstreams++;
}

/*
 * Lets the merge walk a unique position index (walk_index of each leaf, in
 * ascending position order) instead of descending every stream, when that is
 * cheaper. With a 2-column walk index every stream must be of `originator`.
 */
void
MergeSetDenseWalk(MergeScan *merge, SourceLeaf **leaves, int nleaves, int32 originator,
				  MergeClassifyFn classify, void *arg)
{
	if (merge->mode != MODE_START)
		elog(ERROR, "a dense walk must be set up before the first row is read");
	for (int i = 0; i < nleaves; i++)
		if (leaves[i]->walk_index == NULL)
			return;				/* some leaf cannot be walked: the heap it is */
	if (nleaves == 0)
		return;
	merge->walk_leaves = leaves;
	merge->nwalk_leaves = nleaves;
	merge->walk_originator = originator;
	merge->walk_nprefix = leaves[0]->walk_index->rd_index->indnkeyatts - 1;
	merge->classify = classify;
	merge->classify_arg = arg;
}

/* The number of streams that can hold rows. */
int
MergeStreamCount(const MergeScan *merge)
{
	return merge->nstreams;
}

/* The topic a stream was added with. */
Datum
MergeStreamTopic(const MergeScan *merge, int stream)
{
	return merge->streams[stream].topic;
}

/* The scans the merge keeps for a leaf, created on first use. */
static LeafScan *
GetLeafScan(MergeScan *merge, SourceLeaf *leaf)
{
	LeafScan   *ls;

	if (leaf->leafno >= merge->nleafscans)
	{
		int			n = Max(leaf->leafno + 1, merge->nleafscans * 2);

		if (merge->leafscans == NULL)
			merge->leafscans = MemoryContextAllocZero(merge->cxt, sizeof(LeafScan) * n);
		else
		{
			merge->leafscans = repalloc(merge->leafscans, sizeof(LeafScan) * n);
			memset(&merge->leafscans[merge->nleafscans], 0,
				   sizeof(LeafScan) * (n - merge->nleafscans));
		}
		merge->nleafscans = n;
	}
	ls = &merge->leafscans[leaf->leafno];
	if (ls->slot == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(merge->cxt);

		ls->slot = table_slot_create(leaf->heap, NULL);
		ls->fetch = table_index_fetch_begin(leaf->heap);
		MemoryContextSwitchTo(old);
	}
	return ls;
}

/*
 * Sets up the keys [topic =] [originator =] position > floor[, position <=
 * ceiling] of a scan; a zero topic means the index has no topic column, a
 * ceiling of PG_INT64_MAX no upper key (its caller stops at the ceiling).
 */
static int
PositionKeys(ScanKey keys, Datum topic, bool by_originator, int32 originator,
			 int64 floor, int64 ceiling)
{
	int			n = 0;

	if (topic != (Datum) 0)
	{
		ScanKeyInit(&keys[n], n + 1, BTEqualStrategyNumber, F_BYTEAEQ, topic);
		n++;
	}
	if (by_originator)
	{
		ScanKeyInit(&keys[n], n + 1, BTEqualStrategyNumber, F_INT4EQ,
					Int32GetDatum(originator));
		n++;
	}
	ScanKeyInit(&keys[n], n + 1, BTGreaterStrategyNumber, F_INT8GT, Int64GetDatum(floor));
	n++;
	if (ceiling != PG_INT64_MAX)
	{
		ScanKeyInit(&keys[n], n, BTLessEqualStrategyNumber, F_INT8LE, Int64GetDatum(ceiling));
		n++;
	}
	return n;
}

/* Whether a leaf can hold rows of a stream between its floor and ceiling. */
static bool
LeafMayHold(const SourceLeaf *leaf, int nprefix, int32 originator, int64 floor, int64 ceiling)
{
	if (leaf->position_hi == PG_INT64_MIN || leaf->position_hi - 1 <= floor ||
		leaf->position_lo > ceiling)
		return false;
	return nprefix < 2 || SourceLeafMayHoldOriginator(leaf, originator);
}

/* Appends one index entry to a stream's batch, growing it for equal runs. */
static void
AppendItem(MergeScan *merge, MergeStream *s, int64 position, const ItemPointerData *tid)
{
	MergeItem  *item;

	if (s->nitems == s->cap)
	{
		int			cap = Max(s->cap * 2, 1);

		s->items = s->items == NULL ?
			MemoryContextAlloc(merge->cxt, sizeof(MergeItem) * cap) :
			repalloc(s->items, sizeof(MergeItem) * cap);
		merge->buffered_items += cap - s->cap;
		s->cap = cap;
	}
	item = &s->items[s->nitems++];
	item->position = position;
	item->tid = *tid;
	item->leaf = s->leaf;
}

/* The batch size of a stream's next refill: grows for busy streams, in budget. */
static int
NextBatchSize(MergeScan *merge, MergeStream *s)
{
	int64		share = merge->budget_items / Max(merge->nstreams, 1);
	int			want;

	if (s->cap == 0 && merge->row_goal > 0)
	{
		/*
		 * A page: about twice a stream's share of it, and at least a few
		 * rows: the descent has read the leaf page into the scan already, so
		 * a few more items cost little next to a second descent.
		 */
		want = (int) Min(Max(2 * merge->row_goal / Max(merge->nstreams, 1), FIRST_BATCH_MIN),
						 FIRST_BATCH_MAX);
	}
	else if (s->cap == 0)
	{
		/*
		 * A whole wave: a descent reads the rest of the stream's leaf page
		 * anyway, so start with a batch that takes most of it.
		 */
		want = STREAM_BATCH_FIRST;
	}
	else
		want = Min(s->cap * BATCH_GROWTH, BATCH_MAX);
	if (want > s->cap && merge->buffered_items + (want - s->cap) > merge->budget_items)
		want = (int) Max(Min((int64) want, share), Max(s->cap, 1));
	return want;
}

/* Gives a stream's batch room for want items; what it held is dropped. */
static void
ReserveItems(MergeScan *merge, MergeStream *s, int want)
{
	if (want <= s->cap)
		return;
	if (s->items != NULL)
		pfree(s->items);
	s->items = MemoryContextAlloc(merge->cxt, sizeof(MergeItem) * want);
	merge->buffered_items += want - s->cap;
	s->cap = want;
}

/*
 * Reads the next batch of a stream off its scan index; returns the number of
 * items read (0: the stream is exhausted).
 */
static int
Refill(MergeScan *merge, MergeStream *s)
{
	int			want = NextBatchSize(merge, s);

	ReserveItems(merge, s, want);
	s->nitems = 0;
	s->next = 0;

	while (s->leaf < s->nleaves)
	{
		SourceLeaf *leaf = s->leaves[s->leaf];
		LeafScan   *ls;
		ScanKeyData keys[4];
		int			nkeys;
		ItemPointer tid;
		bool		past = false;

		if (!LeafMayHold(leaf, merge->nprefix, s->originator, s->floor, s->ceiling))
		{
			s->leaf++;
			continue;
		}
		ls = GetLeafScan(merge, leaf);

		/*
		 * No ceiling key: the index checks every key on every entry it reads,
		 * each position a non-cached attribute after the topic; the loop
		 * below has the position at hand anyway.
		 */
		nkeys = PositionKeys(keys, s->topic, merge->nprefix == 2, s->originator,
							 s->floor, PG_INT64_MAX);
		if (ls->scan == NULL)
		{
			ls->scan = xip83_index_beginscan(leaf->heap, leaf->index, merge->snapshot, nkeys, 0);
			ls->scan->xs_want_itup = true;
		}
		index_rescan(ls->scan, keys, nkeys, NULL, 0);
		merge->stats.descents++;

		while ((tid = index_getnext_tid(ls->scan, ForwardScanDirection)) != NULL)
		{
			bool		isnull;
			int64		position;

			position = DatumGetInt64(index_getattr(ls->scan->xs_itup, merge->nprefix + 1,
												   ls->scan->xs_itupdesc, &isnull));
			merge->stats.index_items++;
			if (isnull)
				continue;		/* NULL positions sort last and match no bound */
			if (position > s->ceiling)
			{
				/* the stream's later leaves hold higher positions still */
				past = true;
				break;
			}
			if (s->nitems >= want && position != s->items[s->nitems - 1].position)
			{
				/* full, and not inside an equal run: the rest waits */
				s->floor = s->items[s->nitems - 1].position;
				return s->nitems;
			}
			AppendItem(merge, s, position, tid);
		}
		/* this leaf has nothing more for the stream */
		s->leaf = past ? s->nleaves : s->leaf + 1;
		if (s->nitems > 0)
		{
			s->floor = s->items[s->nitems - 1].position;
			break;
		}
	}
	s->drained = s->leaf >= s->nleaves;
	return s->nitems;
}

/*
 * Sets up a stream's items from the recent-writes table when it knows the
 * stream's rows above its floor exactly: each candidate position up to the
 * ceiling, in the leaf that may hold it, fetched by position when the merge
 * gets to it. false when not known (the stream descends its index), or when
 * a leaf cannot be read by position.
 */
static bool
TakeCandidates(MergeScan *merge, MergeStream *s)
{
	uint64		positions[RECENT_KEEP];
	bytea	   *topic;
	int			n;

	if (merge->recent == NULL || s->floor < 0)
		return false;
	for (int l = 0; l < s->nleaves; l++)
		if (s->leaves[l]->walk_index == NULL)
			return false;
	topic = DatumGetByteaPP(s->topic);
	n = RecentExact(merge->recent,
					RecentKey(VARDATA_ANY(topic), VARSIZE_ANY_EXHDR(topic), s->originator),
					s->floor, positions);
	if (n < 0)
		return false;
	merge->stats.exact_streams++;
	/* one allocation, not AppendItem's doubling: most streams are set up so */
	ReserveItems(merge, s, n);
	s->nitems = s->next = 0;
	for (int j = 0; j < n && (int64) positions[j] <= s->ceiling; j++)
	{
		int64		position = (int64) positions[j];
		ItemPointerData none;

		for (s->leaf = 0; s->leaf < s->nleaves; s->leaf++)
			if (LeafMayHold(s->leaves[s->leaf], merge->nprefix, s->originator,
							position - 1, position))
				break;
		if (s->leaf == s->nleaves)
			continue;			/* no leaf of the stream holds it */
		ItemPointerSetInvalid(&none);
		AppendItem(merge, s, position, &none);
	}
	s->leaf = s->nleaves;
	s->drained = true;
	return true;
}

/* Whether a row fetched by position is of the stream: its topic and originator. */
static bool
RowOfStream(const MergeScan *merge, const MergeStream *s, const SourceLeaf *leaf,
			TupleTableSlot *slot)
{
	const int2vector *indkey = &leaf->index->rd_index->indkey;
	bool		isnull;
	Datum		d = slot_getattr(slot, indkey->values[0], &isnull);
	bytea	   *mine = DatumGetByteaPP(s->topic);
	bytea	   *theirs;
	bool		same;

	if (isnull)
		return false;
	if (merge->nprefix == 2)
	{
		Datum		o = slot_getattr(slot, indkey->values[1], &isnull);

		if (isnull || DatumGetInt32(o) != s->originator)
			return false;
	}
	theirs = DatumGetByteaPP(d);
	same = VARSIZE_ANY_EXHDR(theirs) == VARSIZE_ANY_EXHDR(mine) &&
		memcmp(VARDATA_ANY(theirs), VARDATA_ANY(mine), VARSIZE_ANY_EXHDR(mine)) == 0;
	if ((Pointer) theirs != DatumGetPointer(d))
		pfree(theirs);
	return same;
}

/*
 * Fetches a candidate through the leaf's walk index into ls->slot: false
 * when no row at the position is visible to the merge's snapshot or the
 * visible one is of another topic (deleted, rolled back, moved, a hash
 * collision).
 */
static bool
FetchByPosition(MergeScan *merge, const MergeStream *s, SourceLeaf *leaf, LeafScan *ls,
				int64 position)
{
	ScanKeyData keys[2];
	int			nkeys = 0;

	/* equality keys: the index checks fewer keys per entry than with a range */
	if (merge->nprefix == 2)
		ScanKeyInit(&keys[nkeys++], 1, BTEqualStrategyNumber, F_INT4EQ,
					Int32GetDatum(s->originator));
	ScanKeyInit(&keys[nkeys], nkeys + 1, BTEqualStrategyNumber, F_INT8EQ,
				Int64GetDatum(position));
	nkeys++;

	if (ls->point == NULL)
		ls->point = xip83_index_beginscan(leaf->heap, leaf->walk_index, merge->snapshot,
										  nkeys, 0);
	index_rescan(ls->point, keys, nkeys, NULL, 0);
	merge->stats.by_position++;
	while (index_getnext_slot(ls->point, ForwardScanDirection, ls->slot))
		if (RowOfStream(merge, s, leaf, ls->slot))
			return true;
	return false;
}

/* Whether head a comes before head b: (originator, position) order. */
static inline bool
HeadBefore(const MergeHead *a, const MergeHead *b)
{
	if (a->originator != b->originator)
		return a->originator < b->originator;
	return a->position < b->position;
}

/* Restores the min-heap property of heads[0..n) below slot i. */
static void
SiftDownIn(MergeHead *heads, int n, int i)
{
	MergeHead	x = heads[i];

	for (;;)
	{
		int			child = 2 * i + 1;

		if (child >= n)
			break;
		if (child + 1 < n && HeadBefore(&heads[child + 1], &heads[child]))
			child++;
		if (!HeadBefore(&heads[child], &x))
			break;
		heads[i] = heads[child];
		i = child;
	}
	heads[i] = x;
}

static inline void
SiftDown(MergeScan *merge, int i)
{
	SiftDownIn(merge->heads, merge->nheads, i);
}

/* Adds a head to the heap of heads. */
static void
PushHead(MergeScan *merge, MergeHead h)
{
	int			i;

	if (merge->nheads == merge->heads_cap)
	{
		/* heads grow with the streams read so far, not all streams */
		merge->heads_cap = Min(merge->heads_cap * 2, Max(merge->nstreams, 1));
		merge->heads = repalloc_huge(merge->heads, sizeof(MergeHead) * merge->heads_cap);
	}
	i = merge->nheads++;
	while (i > 0 && HeadBefore(&h, &merge->heads[(i - 1) / 2]))
	{
		merge->heads[i] = merge->heads[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	merge->heads[i] = h;
}

/*
 * Lists every stream with its (originator, floor) as pending, once, when the
 * merge starts: the walk and the heap both reach streams in that order, and a
 * page reaches a few hundred of 10,000 topics, so pending is sorted only as
 * far as it is reached (an incremental quicksort: about 2n comparisons in
 * cache order for the first, a little for each next).
 */
static void
BuildPending(MergeScan *merge)
{
	merge->pending = MemoryContextAllocHuge(merge->cxt,
											sizeof(MergeHead) * Max(merge->nstreams, 1));
	for (int i = 0; i < merge->nstreams; i++)
	{
		MergeHead  *h = &merge->pending[i];

		h->position = merge->streams[i].floor;
		h->originator = merge->streams[i].originator;
		h->stream = i;
	}
	merge->npending = merge->nstreams;
	merge->pending_next = 0;
	merge->sorted_end = 0;
	merge->nbounds = 0;
	merge->heap_floor = PG_INT64_MIN;
}

static inline void
SwapHeads(MergeHead *a, MergeHead *b)
{
	MergeHead	t = *a;

	*a = *b;
	*b = t;
}

/* Pushes a bound on the pending sort's stack. */
static void
PushBound(MergeScan *merge, int bound)
{
	if (merge->nbounds == merge->bounds_cap)
	{
		merge->bounds_cap = Max(merge->bounds_cap * 2, 64);
		merge->bounds = merge->bounds == NULL ?
			MemoryContextAllocHuge(merge->cxt, sizeof(int) * merge->bounds_cap) :
			repalloc_huge(merge->bounds, sizeof(int) * merge->bounds_cap);
	}
	merge->bounds[merge->nbounds++] = bound;
}

/* Elements of a range that SettleNext samples for its pivot. */
#define PIVOT_SAMPLE 15

/*
 * Puts the lowest unreached pending stream at pending[next]. The part before
 * the lowest bound is split around a low pivot (the second lowest of a
 * sample, about its lowest eighth), moving only what sorts before it: most
 * elements stay put and the branch is predictable, so a split costs about a
 * read of the part. A small part is sorted by insertion; a pivot with nothing
 * below it is the lowest, and the elements equal to it are in order.
 */
static void
SettleNext(MergeScan *merge)
{
	MergeHead  *a = merge->pending;

	for (;;)
	{
		int			lo = merge->pending_next;
		int			hi;
		int			lt;
		MergeHead	sample[PIVOT_SAMPLE];
		MergeHead	pivot;

		if (lo < merge->sorted_end)
			return;
		while (merge->nbounds > 0 && merge->bounds[merge->nbounds - 1] <= lo)
			merge->nbounds--;
		hi = merge->nbounds > 0 ? merge->bounds[merge->nbounds - 1] : merge->npending;
		if (hi - lo <= 16)
		{
			for (int i = lo + 1; i < hi; i++)
				for (int j = i; j > lo && HeadBefore(&a[j], &a[j - 1]); j--)
					SwapHeads(&a[j], &a[j - 1]);
			merge->sorted_end = hi;
			return;
		}
		for (int k = 0; k < PIVOT_SAMPLE; k++)
		{
			sample[k] = a[lo + (int) ((int64) (hi - lo - 1) * k / (PIVOT_SAMPLE - 1))];
			for (int j = k; j > 0 && HeadBefore(&sample[j], &sample[j - 1]); j--)
				SwapHeads(&sample[j], &sample[j - 1]);
		}
		pivot = sample[1];
		lt = lo;
		for (int i = lo; i < hi; i++)
			if (unlikely(HeadBefore(&a[i], &pivot)))
				SwapHeads(&a[lt++], &a[i]);
		if (lt > lo)
		{
			/* pending[lo..lt) sort before pending[lt..hi) */
			PushBound(merge, lt);
			continue;
		}
		/* nothing sorts before the pivot: the elements equal to it come first */
		for (int i = lo; i < hi; i++)
			if (!HeadBefore(&pivot, &a[i]))
				SwapHeads(&a[lt++], &a[i]);
		merge->sorted_end = lt;
		return;
	}
}

/*
 * The next stream the merge reaches, false when none is left: the streams
 * the walk reached, waiting again at its handover position, then pending.
 */
static bool
PeekPending(MergeScan *merge, MergeHead *top)
{
	if (merge->nfront > 0)
	{
		int			sno = merge->reached[merge->nfront - 1];

		top->position = merge->streams[sno].floor;
		top->originator = merge->streams[sno].originator;
		top->stream = sno;
		return true;
	}
	if (merge->pending_next >= merge->npending)
		return false;
	SettleNext(merge);
	*top = merge->pending[merge->pending_next];
	return true;
}

/* Takes the stream PeekPending just returned. */
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

/*
 * Starts the heap strategy with every stream's floor raised to `floor`
 * (where the walk handed over: the streams it reached wait again, by their
 * raised floors). Streams are read lazily, in floor order: a stream whose
 * floor is at or above the current head cannot hold the next row, so it
 * waits (PrimeDue). A page of a wave whose topics all have rows far above
 * the lowest floor then descends the topics whose floors are below the
 * page's last row, not every topic.
 */
static void
PrimeHeap(MergeScan *merge, int64 floor)
{
	merge->heads_cap = Min(Max(merge->nstreams, 1), 64);
	merge->heads = MemoryContextAlloc(merge->cxt, sizeof(MergeHead) * merge->heads_cap);
	merge->nheads = 0;
	merge->heap_floor = floor;
	/* reached at floors below the handover: all wait at it, before pending */
	merge->nfront = 0;
	for (int i = 0; i < merge->nreached; i++)
	{
		MergeStream *s = &merge->streams[merge->reached[i]];

		s->floor = Max(s->floor, floor);
		if (s->floor < s->ceiling)
			merge->reached[merge->nfront++] = merge->reached[i];
	}
	merge->nreached = 0;
	merge->mode = MODE_HEAP;
}

/*
 * Reads the first batch of every waiting stream that may hold a row before
 * the current head: one whose (originator, floor) is before the head's
 * (originator, position), so its rows (above its floor) may come first.
 */
static void
PrimeDue(MergeScan *merge)
{
	MergeHead	top;

	while (PeekPending(merge, &top) &&
		   (merge->nheads == 0 || HeadBefore(&top, &merge->heads[0])))
	{
		int			sno = PopPending(merge);
		MergeStream *s = &merge->streams[sno];

		/* the walk decided every row at or below where it handed over */
		s->floor = Max(s->floor, merge->heap_floor);
		if (s->floor >= s->ceiling || (!s->admitted && !Admit(merge, sno)))
			continue;
		if ((merge->stats.descents % INTERRUPT_EVERY) == 0)
			CHECK_FOR_INTERRUPTS();
		if (TakeCandidates(merge, s) ? s->nitems > 0 : Refill(merge, s) > 0)
		{
			MergeHead	h;

			h.position = s->items[0].position;
			h.originator = s->originator;
			h.stream = sno;
			PushHead(merge, h);
		}
	}
}

/* Moves the top stream past the item just taken and restores the heap. */
static void
AdvanceTop(MergeScan *merge, MergeStream *s)
{
	s->next++;
	if (s->next < s->nitems || (!s->drained && Refill(merge, s) > 0))
		merge->heads[0].position = s->items[s->next].position;
	else
	{
		/* exhausted: the stream leaves the heap and gives back its batch */
		merge->heads[0] = merge->heads[--merge->nheads];
		if (s->items != NULL)
		{
			pfree(s->items);
			merge->buffered_items -= s->cap;
			s->items = NULL;
			s->cap = 0;
		}
		s->nitems = s->next = 0;
	}
	if (merge->nheads > 0)
		SiftDown(merge, 0);
}

/* The next visible row from the heap of stream heads, or false at the end. */
static bool
NextFromHeap(MergeScan *merge, MergeRow *row)
{
	int64		loops = 0;

	for (PrimeDue(merge); merge->nheads > 0; PrimeDue(merge))
	{
		int			sno = merge->heads[0].stream;
		MergeStream *s = &merge->streams[sno];
		MergeItem	item = s->items[s->next];
		SourceLeaf *leaf = s->leaves[item.leaf];
		LeafScan   *ls;
		bool		call_again = false;
		bool		all_dead = false;
		bool		found;

		if ((++loops % INTERRUPT_EVERY) == 0)
			CHECK_FOR_INTERRUPTS();
		AdvanceTop(merge, s);
		/* after the refill: opening another leaf's scans may move leafscans */
		ls = GetLeafScan(merge, leaf);
		if (!ItemPointerIsValid(&item.tid))
			found = FetchByPosition(merge, s, leaf, ls, item.position);
		else
		{
			found = table_index_fetch_tuple(ls->fetch, &item.tid, merge->snapshot, ls->slot,
											&call_again, &all_dead);
			merge->stats.fetched++;
		}
		if (found)
		{
			row->slot = ls->slot;
			row->leaf = leaf;
			row->stream = sno;
			row->originator = s->originator;
			row->position = item.position;
			merge->stats.used_heap = true;
			return true;
		}
	}
	return false;
}

/*
 * The streams the walk has reached (floor below its position) whose ceiling
 * is above it. Only these would the heap descend if it took over now (it
 * reads the others lazily, when the merge gets to their floors).
 */
static int64
ActiveStreams(const MergeScan *merge)
{
	int64		live = 0;

	for (int i = 0; i < merge->nreached; i++)
		if (merge->streams[merge->reached[i]].ceiling > merge->walk_position)
			live++;
	return live;
}

/*
 * Reaches, in floor order, the streams whose floor is below a row the walk
 * is about to classify at `position`: a stream not reached has its floor at
 * or above it, so the row is not one of its rows.
 */
static void
AdmitBelow(MergeScan *merge, int64 position)
{
	MergeHead	row = {position, merge->walk_originator, 0};
	MergeHead	top;

	for (int n = 1; PeekPending(merge, &top) && HeadBefore(&top, &row); n++)
	{
		int			sno = PopPending(merge);

		/* a first row may reach every stream of a million-topic wave */
		if ((n % INTERRUPT_EVERY) == 0)
			CHECK_FOR_INTERRUPTS();
		if (Admit(merge, sno))
			merge->reached[merge->nreached++] = sno;
	}
}

/*
 * The rows the walk reads before it judges again: about half what the heap
 * would pay to descend the streams reached, so probing costs at most half
 * of what it may save.
 */
static int64
WindowSize(const MergeScan *merge, int64 live)
{
	return Max(MIN_PROBE_ROWS, (int64) (live * COST_DESCENT / (2 * COST_WALK_ROW)));
}

/*
 * Sets the walk's bounds from the streams: below the lowest floor (the
 * first pending), to the top ceiling.
 */
static void
StartWalk(MergeScan *merge)
{
	MergeHead	top;

	(void) PeekPending(merge, &top);
	if (merge->walk_nprefix == 1 &&
		(!merge->one_originator || merge->streams[0].originator != merge->walk_originator))
		elog(ERROR, "a dense walk covers streams of one originator only");
	merge->walk_lo = top.position;
	merge->walk_hi = merge->top_ceiling;
	merge->reached = MemoryContextAllocHuge(merge->cxt, sizeof(int) * merge->nstreams);
	merge->nreached = 0;
	merge->walk_position = merge->walk_lo;
	merge->walk_leaf = 0;
	merge->walk_open = false;
	merge->window_size = WindowSize(merge, ActiveStreams(merge));
	merge->mode = MODE_WALK;
}

/*
 * Whether the heap would now produce the rest more cheaply than the walk,
 * judged from the share of walked rows the last window kept. The heap would
 * descend the `live` streams the walk has reached now; streams whose floors
 * lie ahead cost both ways (the walk reads past their floors too).
 */
static bool
HeapIsCheaper(MergeScan *merge, int64 live)
{
	double		share = (double) merge->window_matched / (double) merge->window_walked;
	double		need;
	if (merge->row_goal > 0)
		need = (double) (merge->row_goal - merge->emitted);
	else
		need = share * (double) (merge->walk_hi - merge->walk_position);
	if (share <= 0.0)
		return true;
	return live * COST_DESCENT + need * COST_FETCH < need / share * COST_WALK_ROW;
}

/* The next row of the dense walk, false at its end or when the heap takes over. */
static bool
NextFromWalk(MergeScan *merge, MergeRow *row)
{
	while (merge->walk_leaf < merge->nwalk_leaves)
	{
		SourceLeaf *leaf = merge->walk_leaves[merge->walk_leaf];
		LeafScan   *ls;

		if (!merge->walk_open)
		{
			ScanKeyData keys[3];
			int			nkeys;

			if (!LeafMayHold(leaf, merge->walk_nprefix + 1, merge->walk_originator,
							 merge->walk_position, merge->walk_hi))
			{
				merge->walk_leaf++;
				continue;
			}
			ls = GetLeafScan(merge, leaf);
			/* the walk index has no topic column; it may lead with the originator */
			nkeys = PositionKeys(keys, (Datum) 0, merge->walk_nprefix == 1,
								 merge->walk_originator, merge->walk_position,
								 merge->walk_hi);
			if (ls->walk == NULL)
				ls->walk = xip83_index_beginscan(leaf->heap, leaf->walk_index, merge->snapshot,
												 nkeys, 0);
			index_rescan(ls->walk, keys, nkeys, NULL, 0);
			merge->walk_open = true;
		}
		ls = GetLeafScan(merge, leaf);
		while (index_getnext_slot(ls->walk, ForwardScanDirection, ls->slot))
		{
			AttrNumber	posattno = leaf->walk_index->rd_index->indkey.values[merge->walk_nprefix];
			bool		isnull;
			int64		position = DatumGetInt64(slot_getattr(ls->slot, posattno, &isnull));
			int			sno;
			MemoryContext old;

			merge->stats.walked++;
			merge->window_walked++;
			if ((merge->stats.walked % INTERRUPT_EVERY) == 0)
				CHECK_FOR_INTERRUPTS();
			merge->walk_position = position;
			AdmitBelow(merge, position);
			/* the caller's callback runs in the caller's (per-row) context */
			old = MemoryContextSwitchTo(merge->caller_cxt);
			sno = merge->classify(merge->classify_arg, leaf, ls->slot);
			MemoryContextSwitchTo(old);
			if (sno >= 0 && position > merge->streams[sno].floor &&
				position <= merge->streams[sno].ceiling)
			{
				merge->window_matched++;
				merge->stats.used_walk = true;
				row->slot = ls->slot;
				row->leaf = leaf;
				row->stream = sno;
				row->originator = merge->streams[sno].originator;
				row->position = position;
				return true;
			}
			if (merge->window_walked >= merge->window_size)
			{
				int64		live = ActiveStreams(merge);

				if (merge->strategy == MERGE_STRATEGY_AUTO && HeapIsCheaper(merge, live))
					return false;
				merge->window_walked = merge->window_matched = 0;
				merge->window_size = WindowSize(merge, live);
			}
		}
		merge->walk_open = false;
		merge->walk_leaf++;
	}
	merge->walk_position = merge->walk_hi;
	return false;
}

/*
 * The next row of the merge, in its context: index scans allocate workspace
 * lazily (tuple buffers on rescan, killed-item arrays on getnext) that must
 * live as long as the scans, not as long as the caller's row.
 */
static bool
MergeNextInContext(MergeScan *merge, MergeRow *row)
{
	if (merge->row_goal > 0 && merge->emitted >= merge->row_goal)
		return false;
	if (merge->mode == MODE_START)
	{
		if (merge->nstreams == 0)
			merge->mode = MODE_DONE;
		else
		{
			BuildPending(merge);
			if (merge->walk_leaves != NULL && merge->strategy != MERGE_STRATEGY_HEAP)
				StartWalk(merge);
			else
				PrimeHeap(merge, PG_INT64_MIN);
		}
	}
	if (merge->mode == MODE_WALK)
	{
		if (NextFromWalk(merge, row))
		{
			merge->emitted++;
			return true;
		}
		if (merge->walk_position >= merge->walk_hi)
			merge->mode = MODE_DONE;
		else
			PrimeHeap(merge, merge->walk_position);
	}
	if (merge->mode == MODE_HEAP)
	{
		if (NextFromHeap(merge, row))
		{
			merge->emitted++;
			return true;
		}
		merge->mode = MODE_DONE;
	}
	return false;
}

/* The next row of the merge in (originator, position) order, or false at its end. */
bool
MergeNext(MergeScan *merge, MergeRow *row)
{
	MemoryContext old;
	bool		found;

	merge->caller_cxt = CurrentMemoryContext;
	old = MemoryContextSwitchTo(merge->cxt);
	found = MergeNextInContext(merge, row);
	MemoryContextSwitchTo(old);
	return found;
}

/* The work counters of a merge. */
const MergeStats *
MergeGetStats(const MergeScan *merge)
{
	return &merge->stats;
}

/* Ends every scan and fetch, drops buffer pins and frees the merge's memory. */
void
MergeEnd(MergeScan *merge)
{
	for (int i = 0; i < merge->nleafscans; i++)
	{
		LeafScan   *ls = &merge->leafscans[i];

		if (ls->scan != NULL)
			index_endscan(ls->scan);
		if (ls->walk != NULL)
			index_endscan(ls->walk);
		if (ls->point != NULL)
			index_endscan(ls->point);
		if (ls->fetch != NULL)
			table_index_fetch_end(ls->fetch);
		if (ls->slot != NULL)
			ExecDropSingleTupleTableSlot(ls->slot);
	}
	MemoryContextDelete(merge->cxt);
}
