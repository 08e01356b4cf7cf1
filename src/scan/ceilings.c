/*
 * ceilings.c: the highest id a v3 wave may pin as its ceiling.
 *
 * Over xip83's own tables that is the kind's horizon (feed.h): every id at
 * or below it is committed or will never exist, so a wave pinned there leaves
 * no late committer for neither the wave nor the live lane. Over a node's own
 * table there is no in-flight registry: the ceiling is the highest id visible
 * to the caller's snapshot, read by one backward probe of each leaf's unique
 * id index, and is only as safe as that table's commit order.
 *
 * Locking: AccessShareLock through source.c, released at transaction end.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/relscan.h"
#include "access/skey.h"
#include "access/tableam.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "utils/snapmgr.h"

#include "base/base.h"
#include "rel/rel.h"
#include "feed/feed.h"
#include "scan.h"

PG_FUNCTION_INFO_V1(group_ceiling);
PG_FUNCTION_INFO_V1(welcome_ceiling);

/*
 * The highest visible id in one leaf, or 0 when it has none. A node's table
 * may allow NULL ids, which an ascending btree keeps last: a backward scan
 * meets them first, so the probe asks for non-NULL ids only.
 */
static int64
LeafMaxId(SourceLeaf *leaf, Snapshot snapshot)
{
	IndexScanDesc scan = xip83_index_beginscan(leaf->heap, leaf->walk_index, snapshot, 1, 0);
	TupleTableSlot *slot = table_slot_create(leaf->heap, NULL);
	ScanKeyData notnull;
	int64		max = 0;
	bool		isnull;

	ScanKeyEntryInitialize(&notnull, SK_ISNULL | SK_SEARCHNOTNULL, 1, InvalidStrategy,
						   InvalidOid, InvalidOid, InvalidOid, (Datum) 0);
	index_rescan(scan, &notnull, 1, NULL, 0);
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

/*
 * The ceiling of a v3 source: the horizon for xip83's own table of the kind
 * or a table tracked as that kind, else its highest visible id (0 when empty).
 */
static int64
SourceCeiling(FunctionCallInfo fcinfo, const SourceSpec *spec, PositionKind kind)
{
	Source	   *source;
	int64		ceiling = 0;
	RegistryDb *feed;

	ArgRequire(fcinfo, 0, "source");
	(void) SourceCheckReadable(PG_GETARG_OID(0), spec);
	feed = HorizonFeedFor(PG_GETARG_OID(0), kind);
	if (feed != NULL)
		return HorizonOfLine(feed, kind == KIND_GROUP ? LINE_GROUP : LINE_WELCOME);
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
	PG_RETURN_INT64(SourceCeiling(fcinfo, &WaveV3GroupSource, KIND_GROUP));
}

/* xip83.welcome_ceiling: the highest welcome id a wave may pin. */
Datum
welcome_ceiling(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT64(SourceCeiling(fcinfo, &WaveV3WelcomeSource, KIND_WELCOME));
}
