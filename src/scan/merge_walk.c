/*
 * merge_walk.c: the merge's dense walk (see merge.c for the invariants): one
 * walk of the id (or originator, sequence) index filtered by topic, in
 * windows, handing over to the heap of per-topic streams when that is
 * cheaper (xip83.wave_strategy).
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

	for (int n = 1; MergePeekPending(merge, &top) && HeadBefore(&top, &row); n++)
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
void
MergeStartWalk(MergeScan *merge)
{
	MergeHead	top;

	(void) MergePeekPending(merge, &top);
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
bool
MergeNextFromWalk(MergeScan *merge, MergeRow *row)
{
	while (merge->walk_leaf < merge->nwalk_leaves)
	{
		SourceLeaf *leaf = merge->walk_leaves[merge->walk_leaf];
		LeafScan   *ls;

		if (!merge->walk_open)
		{
			ScanKeyData keys[3];
			int			nkeys;

			if (!MergeLeafMayHold(leaf, merge->walk_nprefix + 1, merge->walk_originator,
							 merge->walk_position, merge->walk_hi))
			{
				merge->walk_leaf++;
				continue;
			}
			ls = MergeLeafScan(merge, leaf);
			/* the walk index has no topic column; it may lead with the originator */
			nkeys = MergePositionKeys(keys, (Datum) 0, merge->walk_nprefix == 1,
								 merge->walk_originator, merge->walk_position,
								 merge->walk_hi);
			if (ls->walk == NULL)
				ls->walk = xip83_index_beginscan(leaf->heap, leaf->walk_index, merge->snapshot,
												 nkeys, 0);
			index_rescan(ls->walk, keys, nkeys, NULL, 0);
			merge->walk_open = true;
		}
		ls = MergeLeafScan(merge, leaf);
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

