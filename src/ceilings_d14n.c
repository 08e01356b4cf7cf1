/*
 * ceilings_d14n.c: xip83.originator_ceilings, the per-originator ceilings a
 * d14n wave pins when it starts.
 *
 * With a list of originators, each gets one backward probe of the
 * (originator_node_id, originator_sequence_id) index: its highest stored
 * sequence, or 0. With NULL, a loose index scan finds the originators present:
 * each probe backwards below the last originator found lands on the next
 * originator's highest sequence, so a table costs one probe per originator
 * plus one, never a full scan. A partitioned source is probed leaf by leaf from
 * its highest bounds down; a leaf whose bounds hold one originator is skipped
 * once a higher band of that originator has answered, so production's banded
 * layout costs one probe per originator too.
 *
 * Locking and visibility as in wave_d14n_source.c: AccessShareLock on every
 * relation read, the statement's active snapshot for every probe.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/stratnum.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/fmgroids.h"
#include "utils/tuplestore.h"

#include "args.h"
#include "wave_d14n.h"

PG_FUNCTION_INFO_V1(originator_ceilings);

/* One originator's highest stored sequence. */
typedef struct OriginatorCeiling
{
	int32		originator;
	int64		max_sequence;
} OriginatorCeiling;

/* Orders ceilings by originator. */
static int
CompareOriginators(const void *a, const void *b)
{
	int32		x = ((const OriginatorCeiling *) a)->originator;
	int32		y = ((const OriginatorCeiling *) b)->originator;

	return x < y ? -1 : x > y ? 1 : 0;
}

/*
 * Probes a leaf backwards for the highest key with originator in [lo, hi];
 * true with that key when there is one.
 */
static bool
ProbeHighestKey(EnvelopeLeaf *leaf, int64 lo, int64 hi, int32 *originator, int64 *sequence)
{
	ScanKeyData keys[2];
	bool		found,
				isnull;

	CHECK_FOR_INTERRUPTS();
	lo = Max(lo, Max(leaf->originator_lo, PG_INT32_MIN));
	hi = Min(hi, Min(leaf->originator_hi, PG_INT32_MAX));
	if (lo > hi)
		return false;
	ScanKeyInit(&keys[0], 1, BTGreaterEqualStrategyNumber, F_INT4GE, Int32GetDatum((int32) lo));
	ScanKeyInit(&keys[1], 1, BTLessEqualStrategyNumber, F_INT4LE, Int32GetDatum((int32) hi));
	EnvelopeLeafScan(leaf, keys, 2);
	found = EnvelopeLeafNext(leaf, BackwardScanDirection);
	if (found)
	{
		*originator = DatumGetInt32(slot_getattr(leaf->slot, leaf->originator_att, &isnull));
		*sequence = DatumGetInt64(slot_getattr(leaf->slot, leaf->sequence_att, &isnull));
	}
	ExecClearTuple(leaf->slot);
	return found;
}

/* The highest sequence of one originator over every leaf that may hold it, or 0. */
static int64
HighestSequenceOf(EnvelopeSource *src, int32 originator)
{
	int64		best = 0;

	for (int i = src->nleaves - 1; i >= 0; i--)
	{
		EnvelopeLeaf *leaf = &src->leaves[i];
		int32		found_originator;
		int64		sequence;

		if (EnvelopeLeafMayHold(leaf, originator, best, PG_INT64_MAX) &&
			ProbeHighestKey(leaf, originator, originator, &found_originator, &sequence))
			best = Max(best, sequence);
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

/* Every originator present with its highest sequence, by loose index scans. */
static OriginatorCeiling *
AllCeilings(EnvelopeSource *src, int *n)
{
	int			cap = 16,
				nfound = 0;
	OriginatorCeiling *found = palloc(sizeof(OriginatorCeiling) * cap);
	int			kept = 0;

	for (int i = src->nleaves - 1; i >= 0; i--)
	{
		EnvelopeLeaf *leaf = &src->leaves[i];
		int64		hi = PG_INT32_MAX;
		int32		originator;
		int64		sequence;

		/* a band below one that already answered cannot raise its ceiling */
		if (leaf->originator_lo == leaf->originator_hi &&
			KnownCeiling(found, nfound, (int32) leaf->originator_lo) >= leaf->sequence_hi)
			continue;
		while (ProbeHighestKey(leaf, PG_INT32_MIN, hi, &originator, &sequence))
		{
			if (nfound == cap)
			{
				cap *= 2;
				found = repalloc(found, sizeof(OriginatorCeiling) * cap);
			}
			found[nfound].originator = originator;
			found[nfound].max_sequence = sequence;
			nfound++;
			hi = (int64) originator - 1;
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

/* The requested originators, distinct and ascending, with their ceilings. */
static OriginatorCeiling *
ListedCeilings(EnvelopeSource *src, const ArgArray *nodes, int *n)
{
	OriginatorCeiling *result = palloc(sizeof(OriginatorCeiling) * Max(nodes->n, 1));
	int			kept = 0;

	for (int i = 0; i < nodes->n; i++)
		result[i].originator = DatumGetInt32(nodes->values[i]);
	qsort(result, nodes->n, sizeof(OriginatorCeiling), CompareOriginators);
	for (int i = 0; i < nodes->n; i++)
	{
		if (kept > 0 && result[kept - 1].originator == result[i].originator)
			continue;
		result[kept].originator = result[i].originator;
		result[kept].max_sequence = HighestSequenceOf(src, result[i].originator);
		kept++;
	}
	*n = kept;
	return result;
}

/*
 * originator_ceilings(node_ids int[] DEFAULT NULL, source regclass)
 * One row per originator (the listed ones, or every one present) with its
 * highest stored sequence, or 0 for a listed originator without rows.
 */
Datum
originator_ceilings(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ArgArray	nodes = {0};
	EnvelopeSource *src;
	OriginatorCeiling *ceilings;
	int			n;

	if (!PG_ARGISNULL(0))
		nodes = ArgGetArray(fcinfo, 0, "node_ids", INT4OID);
	ArgRequire(fcinfo, 1, "source");

	InitMaterializedSRF(fcinfo, 0);
	src = EnvelopeSourceOpen(PG_GETARG_OID(1), "source", 0, ENVELOPE_KEY_INDEX);
	ceilings = PG_ARGISNULL(0) ? AllCeilings(src, &n) : ListedCeilings(src, &nodes, &n);
	for (int i = 0; i < n; i++)
	{
		Datum		values[2];
		bool		nulls[2] = {false, false};

		values[0] = Int32GetDatum(ceilings[i].originator);
		values[1] = Int64GetDatum(ceilings[i].max_sequence);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	EnvelopeSourceClose(src);
	return (Datum) 0;
}
