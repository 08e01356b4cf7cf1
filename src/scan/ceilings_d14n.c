/*
 * ceilings_d14n.c: probes of the (originator_node_id, originator_sequence_id)
 * key: xip83.originator_ceilings, the per-originator ceilings a d14n wave pins
 * when it starts, and the key probes the wave scan uses to find payloads in a
 * blob table.
 *
 * With a list of originators, each gets one backward probe of the key index:
 * its highest stored sequence, or -1 when it has none (sequence 0 is a real
 * envelope of a chain originator, so "nothing" must sit below it). With NULL, a loose index scan finds the
 * originators present: each probe backwards below the last originator found
 * lands on the next originator's highest sequence, so a table costs one probe
 * per originator plus one, never a full scan. A partitioned source is probed
 * leaf by leaf from its highest bounds down (source.c gives leaves in bound
 * order); a leaf whose bounds cannot hold anything above what a higher band
 * already answered is skipped, so production's banded layout costs one probe
 * per originator too.
 *
 * Over xip83's own envelopes table the ceilings are the originators'
 * horizons instead (feed.h): every sequence at or below one is committed
 * or will never exist, so a wave pinned there leaves no late committer behind.
 *
 * Locking and visibility: relations come open and locked (AccessShareLock)
 * from source.c; every probe reads under the snapshot it is given, the
 * statement's active one.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/stratnum.h"
#include "access/tableam.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/fmgroids.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/tuplestore.h"

#include "base/base.h"
#include "feed/feed.h"
#include "wave_d14n.h"

PG_FUNCTION_INFO_V1(originator_ceilings);

/* One leaf's probe scan, opened on first use. */
typedef struct LeafProbe
{
	IndexScanDesc scan;
	TupleTableSlot *slot;
} LeafProbe;

struct KeyProbes
{
	Source	   *source;
	Snapshot	snapshot;
	int			nkeys;			/* scan keys of every probe */
	MemoryContext cxt;
	LeafProbe  *leaves;			/* by SourceLeaf.leafno */
};

/* One originator's highest stored sequence. */
typedef struct OriginatorCeiling
{
	int32		originator;
	int64		max_sequence;
} OriginatorCeiling;

static const SourceColumn key_columns[] = {
	{"originator_node_id", INT4OID},
	{"originator_sequence_id", INT8OID},
};
static const char *const key_names[] = {"originator_node_id", "originator_sequence_id"};

static const SourceSpec ceilings_spec = {
	.argname = "source",
	.columns = key_columns,
	.ncolumns = lengthof(key_columns),
	.key_columns = key_names,
	.nkeys = 2,
	.position_column = "originator_sequence_id",
	.originator_column = "originator_node_id",
};

/* Starts a set of key probes over a source's leaves, each with nkeys scan keys. */
KeyProbes *
KeyProbesBegin(Source *source, Snapshot snapshot, int nkeys)
{
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext, "xip83 key probes",
											  ALLOCSET_SMALL_SIZES);
	KeyProbes  *probes = MemoryContextAllocZero(cxt, sizeof(KeyProbes));

	probes->source = source;
	probes->snapshot = snapshot;
	probes->nkeys = nkeys;
	probes->cxt = cxt;
	probes->leaves = MemoryContextAllocZero(cxt, sizeof(LeafProbe) * Max(source->nleaves, 1));
	return probes;
}

/*
 * The first row of a leaf's key index matching the keys in the given
 * direction, visible to the probes' snapshot; NULL when there is none. The
 * slot stays valid until the next probe of the same leaf.
 */
TupleTableSlot *
KeyProbeFirst(KeyProbes *probes, SourceLeaf *leaf, ScanKey keys, ScanDirection direction)
{
	LeafProbe  *lp = &probes->leaves[leaf->leafno];
	MemoryContext old = MemoryContextSwitchTo(probes->cxt);
	bool		found;

	CHECK_FOR_INTERRUPTS();
	if (lp->scan == NULL)
	{
		lp->scan = xip83_index_beginscan(leaf->heap, leaf->index, probes->snapshot, probes->nkeys, 0);
		lp->slot = table_slot_create(leaf->heap, NULL);
	}
	index_rescan(lp->scan, keys, probes->nkeys, NULL, 0);
	found = index_getnext_slot(lp->scan, direction, lp->slot);
	MemoryContextSwitchTo(old);
	return found ? lp->slot : NULL;
}

/* Ends every probe scan and frees the probes' memory. */
void
KeyProbesEnd(KeyProbes *probes)
{
	for (int i = 0; i < probes->source->nleaves; i++)
	{
		LeafProbe  *lp = &probes->leaves[i];

		if (lp->scan != NULL)
		{
			index_endscan(lp->scan);
			ExecDropSingleTupleTableSlot(lp->slot);
		}
	}
	MemoryContextDelete(probes->cxt);
}

/*
 * The row of an exact key (originator, sequence) in any leaf that may hold
 * it, with that leaf; NULL when none is visible.
 */
TupleTableSlot *
KeyProbeExact(KeyProbes *probes, int32 originator, int64 sequence, SourceLeaf **leaf_out)
{
	for (int i = 0; i < probes->source->nleaves; i++)
	{
		SourceLeaf *leaf = &probes->source->leaves[i];
		TupleTableSlot *slot;
		ScanKeyData keys[2];

		if (!LeafMayHoldKey(leaf, originator, sequence))
			continue;
		ScanKeyInit(&keys[0], 1, BTEqualStrategyNumber, F_INT4EQ, Int32GetDatum(originator));
		ScanKeyInit(&keys[1], 2, BTEqualStrategyNumber, F_INT8EQ, Int64GetDatum(sequence));
		slot = KeyProbeFirst(probes, leaf, keys, ForwardScanDirection);
		if (slot != NULL)
		{
			*leaf_out = leaf;
			return slot;
		}
	}
	return NULL;
}

/* Whether a leaf's partition bounds allow the key (originator, sequence). */
bool
LeafMayHoldKey(const SourceLeaf *leaf, int32 originator, int64 sequence)
{
	return sequence >= leaf->position_lo && sequence < leaf->position_hi &&
		SourceLeafMayHoldOriginator(leaf, originator);
}

/* Reads an int column of a probed row by its place in the source's spec. */
static int64
KeyColumn(const SourceLeaf *leaf, TupleTableSlot *slot, int col)
{
	bool		isnull;
	Datum		d = slot_getattr(slot, leaf->attnos[col], &isnull);

	return col == ENVELOPE_COL_ORIGINATOR ? DatumGetInt32(d) : DatumGetInt64(d);
}

/*
 * Fills a scan key "originator_sequence_id IS NOT NULL". A node's table may
 * allow NULL sequence ids, which an ascending btree keeps after every other
 * sequence of an originator: a backward probe would meet them first.
 */
static void
SequenceNotNullKey(ScanKey key)
{
	ScanKeyEntryInitialize(key, SK_ISNULL | SK_SEARCHNOTNULL, 2, InvalidStrategy,
						   InvalidOid, InvalidOid, InvalidOid, (Datum) 0);
}

/* Orders ceilings by originator. */
static int
CompareOriginators(const void *a, const void *b)
{
	int32		x = ((const OriginatorCeiling *) a)->originator;
	int32		y = ((const OriginatorCeiling *) b)->originator;

	return x < y ? -1 : x > y ? 1 : 0;
}

/* The highest sequence of one originator over every leaf that may hold it, or -1. */
static int64
HighestSequenceOf(KeyProbes *probes, int32 originator)
{
	Source	   *source = probes->source;
	int64		best = -1;

	for (int i = source->nleaves - 1; i >= 0; i--)
	{
		SourceLeaf *leaf = &source->leaves[i];
		TupleTableSlot *slot;
		ScanKeyData keys[2];

		/* bands hold [position_lo, position_hi): skip those that cannot beat best */
		if (!SourceLeafMayHoldOriginator(leaf, originator) || leaf->position_hi - 1 <= best)
			continue;
		ScanKeyInit(&keys[0], 1, BTEqualStrategyNumber, F_INT4EQ, Int32GetDatum(originator));
		SequenceNotNullKey(&keys[1]);
		slot = KeyProbeFirst(probes, leaf, keys, BackwardScanDirection);
		if (slot != NULL)
			best = Max(best, KeyColumn(leaf, slot, ENVELOPE_COL_SEQUENCE));
	}
	return best;
}

/* The known ceiling of an originator so far, or -1. */
static int64
KnownCeiling(const OriginatorCeiling *found, int nfound, int32 originator)
{
	for (int i = 0; i < nfound; i++)
		if (found[i].originator == originator)
			return found[i].max_sequence;
	return -1;
}

/* The originator range a leaf's LIST bounds allow, false when none. */
static bool
LeafOriginatorRange(const SourceLeaf *leaf, int32 *lo, int32 *hi)
{
	*lo = PG_INT32_MIN;
	*hi = PG_INT32_MAX;
	if (leaf->noriginators < 0)
		return true;
	if (leaf->noriginators == 0)
		return false;
	*lo = *hi = leaf->originators[0];
	for (int i = 1; i < leaf->noriginators; i++)
	{
		*lo = Min(*lo, leaf->originators[i]);
		*hi = Max(*hi, leaf->originators[i]);
	}
	return true;
}

/* Every originator present with its highest sequence, by loose index scans. */
static OriginatorCeiling *
AllCeilings(KeyProbes *probes, int *n)
{
	Source	   *source = probes->source;
	int			cap = 16,
				nfound = 0,
				kept = 0;
	OriginatorCeiling *found = palloc(sizeof(OriginatorCeiling) * cap);

	for (int i = source->nleaves - 1; i >= 0; i--)
	{
		SourceLeaf *leaf = &source->leaves[i];
		int32		lo,
					hi;

		if (!LeafOriginatorRange(leaf, &lo, &hi))
			continue;
		/* a band below one that already answered cannot raise its ceiling */
		if (lo == hi && KnownCeiling(found, nfound, lo) >= leaf->position_hi - 1)
			continue;
		for (;;)
		{
			ScanKeyData keys[2];
			TupleTableSlot *slot;
			int32		originator;

			/* the highest key at or below hi; below lo there is nothing of this leaf's */
			ScanKeyInit(&keys[0], 1, BTLessEqualStrategyNumber, F_INT4LE, Int32GetDatum(hi));
			SequenceNotNullKey(&keys[1]);
			slot = KeyProbeFirst(probes, leaf, keys, BackwardScanDirection);
			if (slot == NULL)
				break;
			originator = (int32) KeyColumn(leaf, slot, ENVELOPE_COL_ORIGINATOR);
			if (originator < lo)
				break;

			if (nfound == cap)
			{
				cap *= 2;
				found = repalloc(found, sizeof(OriginatorCeiling) * cap);
			}
			found[nfound].originator = originator;
			found[nfound].max_sequence = KeyColumn(leaf, slot, ENVELOPE_COL_SEQUENCE);
			nfound++;
			if (originator == lo)
				break;
			hi = originator - 1;
		}
	}

	/* ascending, one row per originator with its highest sequence */
	qsort(found, nfound, sizeof(OriginatorCeiling), CompareOriginators);
	for (int i = 0; i < nfound; i++)
	{
		if (kept > 0 && found[kept - 1].originator == found[i].originator)
			found[kept - 1].max_sequence = Max(found[kept - 1].max_sequence,
											   found[i].max_sequence);
		else
			found[kept++] = found[i];
	}
	*n = kept;
	return found;
}

/* The requested originators, distinct and ascending; max_sequence left to fill. */
static OriginatorCeiling *
DistinctOriginators(const ArgArray *nodes, int *n)
{
	OriginatorCeiling *result = palloc(sizeof(OriginatorCeiling) * Max(nodes->n, 1));
	int			kept = 0;

	for (int i = 0; i < nodes->n; i++)
		result[i].originator = DatumGetInt32(nodes->values[i]);
	qsort(result, nodes->n, sizeof(OriginatorCeiling), CompareOriginators);
	for (int i = 0; i < nodes->n; i++)
		if (kept == 0 || result[kept - 1].originator != result[i].originator)
			result[kept++].originator = result[i].originator;
	*n = kept;
	return result;
}

/* The requested originators with their highest stored sequences. */
static OriginatorCeiling *
ListedCeilings(KeyProbes *probes, const ArgArray *nodes, int *n)
{
	OriginatorCeiling *result = DistinctOriginators(nodes, n);

	for (int i = 0; i < *n; i++)
		result[i].max_sequence = HighestSequenceOf(probes, result[i].originator);
	return result;
}

/* Every originator the registry knows, ascending, with its horizon. */
static OriginatorCeiling *
AllHorizons(RegistryDb *feed, int *n)
{
	HorizonSet	set;
	OriginatorCeiling *result;

	HorizonCollectFeed(feed, &set);
	result = palloc(sizeof(OriginatorCeiling) * Max(set.n_originators, 1));
	for (int i = 0; i < set.n_originators; i++)
	{
		result[i].originator = set.originator_node_ids[i];
		result[i].max_sequence = set.originator_horizons[i];
	}
	*n = set.n_originators;
	return result;
}

/* The requested originators (ascending) with their horizons, from one collection. */
static OriginatorCeiling *
ListedHorizons(RegistryDb *feed, const ArgArray *nodes, int *n)
{
	OriginatorCeiling *result = DistinctOriginators(nodes, n);
	HorizonSet	set;
	int			j = 0;

	HorizonCollectFeed(feed, &set);
	for (int i = 0; i < *n; i++)
	{
		while (j < set.n_originators && set.originator_node_ids[j] < result[i].originator)
			j++;
		result[i].max_sequence = j < set.n_originators &&
			set.originator_node_ids[j] == result[i].originator
			? set.originator_horizons[j] : -1;
	}
	return result;
}

/* Puts the ceilings into the function's result set. */
static void
EmitCeilings(ReturnSetInfo *rsinfo, const OriginatorCeiling *ceilings, int n)
{
	for (int i = 0; i < n; i++)
	{
		Datum		values[2];
		bool		nulls[2] = {false, false};

		values[0] = Int32GetDatum(ceilings[i].originator);
		values[1] = Int64GetDatum(ceilings[i].max_sequence);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
}

/*
 * originator_ceilings(node_ids int[] DEFAULT NULL, source regclass)
 * One row per originator (the listed ones, or every one present) with its
 * ceiling (horizon over xip83.envelopes, else highest stored sequence), or -1
 * for a listed originator without rows.
 */
Datum
originator_ceilings(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ArgArray	nodes = {0};
	Source	   *source;
	KeyProbes  *probes;
	OriginatorCeiling *ceilings;
	RegistryDb *feed;
	int			n;

	if (!PG_ARGISNULL(0))
		nodes = ArgGetArray(fcinfo, 0, "node_ids", INT4OID);
	ArgRequire(fcinfo, 1, "source");

	InitMaterializedSRF(fcinfo, 0);
	(void) SourceCheckReadable(PG_GETARG_OID(1), &ceilings_spec);
	feed = HorizonFeedFor(PG_GETARG_OID(1), KIND_ENVELOPE);
	if (feed != NULL)
	{
		ceilings = PG_ARGISNULL(0) ? AllHorizons(feed, &n) : ListedHorizons(feed, &nodes, &n);
		EmitCeilings(rsinfo, ceilings, n);
		return (Datum) 0;
	}
	source = SourceOpen(PG_GETARG_OID(1), &ceilings_spec);
	probes = KeyProbesBegin(source, GetActiveSnapshot(), 2);
	ceilings = PG_ARGISNULL(0) ? AllCeilings(probes, &n) : ListedCeilings(probes, &nodes, &n);
	EmitCeilings(rsinfo, ceilings, n);
	KeyProbesEnd(probes);
	SourceClose(source);
	return (Datum) 0;
}
