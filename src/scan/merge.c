/*
 * merge.c: the k-way merge engine of the wave scans (see merge.h): setting
 * a merge up, the heap of stream heads, and MergeNext. The per-topic
 * streams are in merge_streams.c, the dense walk in merge_walk.c.
 *
 * Invariants:
 *   - a stream's floor is the exclusive lower bound of what it has not yet
 *     read; items[next..nitems) are read but not yet produced, ascending;
 *   - a batch never ends inside a run of equal positions, so refilling from
 *     "position > floor" never skips an index entry;
 *   - a stream is in the heap of heads exactly when it has an unproduced item,
 *     and its head there is the position of items[next];
 *   - a stream set up from exact candidates (MergeTakeCandidates) is drained: its
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

#include "core/core.h"
#include "merge_internal.h"

int			xip83_wave_strategy = MERGE_STRATEGY_AUTO;

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
 * the source (src/core/recent.c) instead of descending their scan index, when it
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
bool
MergePeekPending(MergeScan *merge, MergeHead *top)
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

	while (MergePeekPending(merge, &top) &&
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
		if (MergeTakeCandidates(merge, s) ? s->nitems > 0 : MergeRefill(merge, s) > 0)
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
	if (s->next < s->nitems || (!s->drained && MergeRefill(merge, s) > 0))
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
		ls = MergeLeafScan(merge, leaf);
		if (!ItemPointerIsValid(&item.tid))
			found = MergeFetchByPosition(merge, s, leaf, ls, item.position);
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
				MergeStartWalk(merge);
			else
				PrimeHeap(merge, PG_INT64_MIN);
		}
	}
	if (merge->mode == MODE_WALK)
	{
		if (MergeNextFromWalk(merge, row))
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
