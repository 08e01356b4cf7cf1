/*
 * ceilings.c: the highest id a v3 wave may pin as its ceiling.
 *
 * For now that is the highest id visible to the caller's snapshot, read by one
 * backward probe of each leaf's unique id index; the live-feed work replaces
 * it with a commit-order-safe horizon under the same SQL names.
 *
 * Locking: AccessShareLock through source.c, released at transaction end.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/relscan.h"
#include "access/tableam.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "utils/snapmgr.h"

#include "args.h"
#include "source.h"
#include "wave_v3.h"

PG_FUNCTION_INFO_V1(group_ceiling);
PG_FUNCTION_INFO_V1(welcome_ceiling);

/* The highest visible id in one leaf, or 0 when it has none. */
static int64
LeafMaxId(SourceLeaf *leaf, Snapshot snapshot)
{
	IndexScanDesc scan = index_beginscan(leaf->heap, leaf->walk_index, snapshot, 0, 0);
	TupleTableSlot *slot = table_slot_create(leaf->heap, NULL);
	int64		max = 0;
	bool		isnull;

	index_rescan(scan, NULL, 0, NULL, 0);
	if (index_getnext_slot(scan, BackwardScanDirection, slot))
	{
		Datum		id = slot_getattr(slot, leaf->attnos[V3_COL_ID], &isnull);

		if (!isnull)
			max = DatumGetInt64(id);
	}
	index_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);
	return max;
}

/* The highest visible id of a v3 source (0 when empty). */
static int64
SourceCeiling(FunctionCallInfo fcinfo, const SourceSpec *spec)
{
	Source	   *source;
	int64		ceiling = 0;

	ArgRequire(fcinfo, 0, "source");
	source = SourceOpen(PG_GETARG_OID(0), spec);
	for (int i = 0; i < source->nleaves; i++)
		if (source->leaves[i].walk_index == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("relation %s has no unique btree index on (id)", source->relname),
					 errdetail("The ceiling is read off that index."),
					 errhint("Create it with: CREATE UNIQUE INDEX ON %s (id);",
							 source->relname)));
	for (int i = 0; i < source->nleaves; i++)
		ceiling = Max(ceiling, LeafMaxId(&source->leaves[i], GetActiveSnapshot()));
	SourceClose(source);
	return ceiling;
}

/* xip83.group_ceiling: the highest group-message id a wave may pin. */
Datum
group_ceiling(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT64(SourceCeiling(fcinfo, &WaveV3GroupSource));
}

/* xip83.welcome_ceiling: the highest welcome id a wave may pin. */
Datum
welcome_ceiling(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT64(SourceCeiling(fcinfo, &WaveV3WelcomeSource));
}
