/*
 * track_am.c: the index access method xip83_track, through which a tracked
 * table's inserts are registered (track.c creates one such index per table).
 *
 * Why an index and not a row trigger: PostgreSQL calls an index's aminsert
 * for every new row (INSERT, COPY, a row moved to another partition) with the
 * indexed columns at hand, once the row is in the heap and before anyone else
 * can see it. A BEFORE ROW trigger costs far more per row on a partitioned
 * table: the trigger machinery, a heap tuple formed for it and, because a
 * trigger could move the row, the partition constraint prepared and checked
 * again for every statement and row. Partitioned indexes reach every
 * partition, including those created or attached later, as cloned triggers
 * do.
 *
 * The index stores nothing and cannot be scanned: the planner never uses an
 * access method without amgettuple or amgetbitmap, its operator classes have
 * no operators, and building it reads no row (tracking a full table is
 * instant). UPDATEs stay with the BEFORE UPDATE trigger, which knows the
 * columns an UPDATE sets: the index leaves alone the new row versions
 * UPDATEs make (HEAP_UPDATED), and says nothing for unchanged keys. It reads
 * a row's header to tell only where an UPDATE can be behind the insert
 * (PositionsInsertMayBeUpdate): in a transaction of inserts alone, the node's
 * write path, an insert costs no buffer read and no content lock on the page
 * other writers are filling.
 */
#include "postgres.h"

#include "access/amapi.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/reloptions.h"
#include "access/tableam.h"
#include "commands/vacuum.h"
#include "fmgr.h"
#include "nodes/execnodes.h"
#include "nodes/pathnodes.h"
#include "storage/bufmgr.h"
#include "utils/rel.h"

#include "core/core.h"
#include "feed_internal.h"

PG_FUNCTION_INFO_V1(track_am_handler);

/* Reads no row; a tracked table's index must be on the columns track names. */
static IndexBuildResult *
TrackAmBuild(Relation heap, Relation index, IndexInfo *info)
{
	TrackCheckIndex(heap, index);
	return palloc0(sizeof(IndexBuildResult));
}

static void
TrackAmBuildEmpty(Relation index)
{
}

/* Whether the heap tuple at tid is the new version an UPDATE made. */
static bool
MadeByUpdate(Relation heap, ItemPointer tid)
{
	Buffer		buf = ReadBuffer(heap, ItemPointerGetBlockNumber(tid));
	Page		page;
	ItemId		lp;
	bool		updated;

	LockBuffer(buf, BUFFER_LOCK_SHARE);
	page = BufferGetPage(buf);
	lp = PageGetItemId(page, ItemPointerGetOffsetNumber(tid));
	updated = ItemIdIsNormal(lp) &&
		(((HeapTupleHeader) PageGetItem(page, lp))->t_infomask & HEAP_UPDATED) != 0;
	UnlockReleaseBuffer(buf);
	return updated;
}

static bool
TrackAmInsert(Relation index, Datum *values, bool *isnull, ItemPointer tid, Relation heap,
			  IndexUniqueCheck checkUnique, bool indexUnchanged, IndexInfo *info)
{
	/* an UPDATE's new version: its trigger registered or noted it */
	if (indexUnchanged || (PositionsInsertMayBeUpdate(heap) && MadeByUpdate(heap, tid)))
		return false;
	(void) PositionsIndexInsert(heap, index, values, isnull);
	return false;
}

static IndexBulkDeleteResult *
TrackAmBulkDelete(IndexVacuumInfo *info, IndexBulkDeleteResult *stats,
				  IndexBulkDeleteCallback callback, void *callback_state)
{
	return stats;
}

static IndexBulkDeleteResult *
TrackAmVacuumCleanup(IndexVacuumInfo *info, IndexBulkDeleteResult *stats)
{
	return stats;
}

/* Never chosen (no scans); priced out should anything ask. */
static void
TrackAmCostEstimate(PlannerInfo *root, IndexPath *path, double loop_count,
					Cost *startup, Cost *total, Selectivity *selectivity,
					double *correlation, double *pages)
{
	*startup = 1.0e10;
	*total = 1.0e10;
	*selectivity = 1.0;
	*correlation = 0.0;
	*pages = 0.0;
}

static bytea *
TrackAmOptions(Datum reloptions, bool validate)
{
	if (validate && reloptions != (Datum) 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("indexes of access method xip83_track take no options")));
	return NULL;
}

static bool
TrackAmValidate(Oid opclassoid)
{
	return true;
}

static IndexScanDesc
TrackAmBeginScan(Relation index, int nkeys, int norderbys)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("indexes of access method xip83_track cannot be scanned")));
	return NULL;				/* keep compiler quiet */
}

static void
TrackAmRescan(IndexScanDesc scan, ScanKey keys, int nkeys, ScanKey orderbys, int norderbys)
{
}

static void
TrackAmEndScan(IndexScanDesc scan)
{
}

/* xip83.track_am_handler(internal): the access method xip83_track. */
Datum
track_am_handler(PG_FUNCTION_ARGS)
{
	IndexAmRoutine *am = makeNode(IndexAmRoutine);

	am->amcanmulticol = true;
	am->amoptionalkey = true;
	am->amparallelvacuumoptions = VACUUM_OPTION_NO_PARALLEL;
	am->amkeytype = InvalidOid;
	am->ambuild = TrackAmBuild;
	am->ambuildempty = TrackAmBuildEmpty;
	am->aminsert = TrackAmInsert;
	am->ambulkdelete = TrackAmBulkDelete;
	am->amvacuumcleanup = TrackAmVacuumCleanup;
	am->amcostestimate = TrackAmCostEstimate;
	am->amoptions = TrackAmOptions;
	am->amvalidate = TrackAmValidate;
	am->ambeginscan = TrackAmBeginScan;
	am->amrescan = TrackAmRescan;
	am->amendscan = TrackAmEndScan;
	PG_RETURN_POINTER(am);
}
