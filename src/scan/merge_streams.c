/*
 * merge_streams.c: the merge's per-topic streams (see merge.c for the
 * invariants): the scans kept per leaf, the batches a stream refills from
 * its index, and the exact candidates of the recent-writes table, fetched
 * by position instead of descending the topic's index.
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

/* The scans the merge keeps for a leaf, created on first use. */
LeafScan *
MergeLeafScan(MergeScan *merge, SourceLeaf *leaf)
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
int
MergePositionKeys(ScanKey keys, Datum topic, bool by_originator, int32 originator,
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
bool
MergeLeafMayHold(const SourceLeaf *leaf, int nprefix, int32 originator, int64 floor, int64 ceiling)
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
int
MergeRefill(MergeScan *merge, MergeStream *s)
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

		if (!MergeLeafMayHold(leaf, merge->nprefix, s->originator, s->floor, s->ceiling))
		{
			s->leaf++;
			continue;
		}
		ls = MergeLeafScan(merge, leaf);

		/*
		 * No ceiling key: the index checks every key on every entry it reads,
		 * each position a non-cached attribute after the topic; the loop
		 * below has the position at hand anyway.
		 */
		nkeys = MergePositionKeys(keys, s->topic, merge->nprefix == 2, s->originator,
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
bool
MergeTakeCandidates(MergeScan *merge, MergeStream *s)
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
			if (MergeLeafMayHold(s->leaves[s->leaf], merge->nprefix, s->originator,
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
bool
MergeFetchByPosition(MergeScan *merge, const MergeStream *s, SourceLeaf *leaf, LeafScan *ls,
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

