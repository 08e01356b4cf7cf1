/*
 * track_ddl.c: DDL that would bring rows into a tracked table, or change the
 * positions and topics of its rows, without the write path (track.h).
 *
 * A tracked table's rows are registered when they are written (the tracking
 * index's insert callback, the UPDATE trigger): waves skip topics by what was
 * noted (recent.h) and live consumers read up to horizons that assume every
 * row at or below them was registered. Rows that arrive otherwise must be
 * seen or refused. A ProcessUtility hook (chained) handles the DDL among
 * those ways:
 *   - ATTACH PARTITION of a table holding rows, into a tracked table or its
 *     blob table, at any depth: after PostgreSQL attached it (and built or
 *     attached the tracking index, whose build reads no row), every row of
 *     every leaf attached is registered as an insert of the attaching
 *     transaction, through the same path as an INSERT. A row below a horizon
 *     already published is a late write: live consumers past it get it in the
 *     late lane. The leaves are held ACCESS EXCLUSIVE by the ATTACH, so no
 *     row can come or go during the scan.
 *   - ALTER COLUMN ... TYPE of a position or topic column: refused, a USING
 *     clause rewrites values with no write path at all (PostgreSQL refuses
 *     it as well while the UPDATE trigger names the column, without saying
 *     what to do instead).
 *   - DROP INDEX of a tracking index in use, DROP TRIGGER of xip83's
 *     triggers on a tracked table: refused, writes would go unregistered
 *     from then on (xip83.untrack drops them, after forgetting the table).
 *   - DROP EXTENSION xip83 while a table is tracked: refused before
 *     PostgreSQL's own dependency check (TrackRefuseExtensionDrop).
 * Everything else that brings rows in goes through inserts (COPY, logical
 * replication apply, pg_restore's data, xip83.import) or brings none (index
 * builds, rewrites, CREATE TABLE ... PARTITION OF); docs/design.md lists
 * them.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/index.h"
#include "catalog/namespace.h"
#include "catalog/partition.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "tcop/utility.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "base/base.h"
#include "core/core.h"
#include "feed_internal.h"

static ProcessUtility_hook_type prev_ProcessUtility = NULL;

/*
 * Rewrites rows of a leaf in place (an UPDATE that sets the position to
 * itself): live fetch tells a late row by the late entry's transaction being
 * the row's writer, and a row attached was written by whoever filled the
 * table. The UPDATE trigger finds each position registered as late already.
 */
static void
RewriteLateRows(Relation heap, Relation index, ItemPointerData *tids, int n)
{
	Datum	   *items = palloc(sizeof(Datum) * n);
	Oid			argtype = TIDARRAYOID;
	Datum		arg;
	TrackedSource t;
	char	   *column;

	/* the index's last position column: id, or originator_sequence_id */
	if (!TrackedFind(RelationGetRelid(heap), &t))
		elog(ERROR, "xip83: %s is not tracked", RelationGetRelationName(heap));
	column = get_attname(RelationGetRelid(heap),
						 index->rd_index->indkey.values[t.kind == KIND_ENVELOPE ? 1 : 0], false);
	for (int i = 0; i < n; i++)
		items[i] = PointerGetDatum(&tids[i]);
	arg = PointerGetDatum(construct_array(items, n, TIDOID, sizeof(ItemPointerData), false,
										  TYPALIGN_SHORT));
	SPI_connect();
	if (SPI_execute_with_args(psprintf("UPDATE %s SET %s = %s WHERE ctid = ANY($1)",
									   quote_qualified_identifier(get_namespace_name(RelationGetNamespace(heap)),
																  RelationGetRelationName(heap)),
									   quote_identifier(column), quote_identifier(column)),
							  1, &argtype, &arg, NULL, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "xip83: could not rewrite the late rows of %s", RelationGetRelationName(heap));
	if (SPI_processed != (uint64) n)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("could not rewrite the rows of partition %s that are late writes",
						RelationGetRelationName(heap)),
				 errdetail_plural("An UPDATE rewrote " UINT64_FORMAT " of the %d row at or below a horizon already published: a row-level security policy or a trigger of the partition held it back.",
								  "An UPDATE rewrote " UINT64_FORMAT " of the %d rows at or below a horizon already published: a row-level security policy or a trigger of the partition held back the rest.",
								  n, (uint64) SPI_processed, n),
				 errhint("Attach an empty partition and INSERT the rows instead.")));
	SPI_finish();
}

/*
 * Registers every row of one leaf just attached, as its insert would have,
 * then rewrites those that are late writes.
 */
static void
RegisterLeafRows(Relation heap, Relation index, Snapshot snapshot)
{
	TupleTableSlot *slot = table_slot_create(heap, NULL);
	TableScanDesc scan = table_beginscan(heap, snapshot, 0, NULL);
	int			natts = IndexRelationGetNumberOfAttributes(index);
	MemoryContext row_cxt = AllocSetContextCreate(CurrentMemoryContext, "xip83 attached row",
												  ALLOCSET_DEFAULT_SIZES);
	Datum		values[INDEX_MAX_KEYS];
	bool		isnull[INDEX_MAX_KEYS];
	ItemPointerData *late = NULL;
	int			n_late = 0;
	int			late_cap = 0;

	while (table_scan_getnextslot(scan, ForwardScanDirection, slot))
	{
		MemoryContext old = MemoryContextSwitchTo(row_cxt);
		bool		is_late;

		CHECK_FOR_INTERRUPTS();
		/* the tracking index is on plain columns (TrackIndexOf) */
		for (int i = 0; i < natts; i++)
			values[i] = slot_getattr(slot, index->rd_index->indkey.values[i], &isnull[i]);
		is_late = PositionsIndexInsert(heap, index, values, isnull);
		MemoryContextSwitchTo(old);
		MemoryContextReset(row_cxt);
		if (!is_late)
			continue;
		if (n_late == late_cap)
		{
			late_cap = Max(64, late_cap * 2);
			late = late == NULL ? palloc(sizeof(ItemPointerData) * late_cap)
				: repalloc_huge(late, sizeof(ItemPointerData) * late_cap);
		}
		late[n_late++] = slot->tts_tid;
	}
	table_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);
	MemoryContextDelete(row_cxt);
	if (n_late > 0)
		RewriteLateRows(heap, index, late, n_late);
}

/*
 * After an ATTACH PARTITION: the rows of every leaf of the attached table,
 * when it now belongs to a tracked table, registered as inserts.
 */
static void
RegisterAttachedRows(Oid relid)
{
	List	   *leaves;
	ListCell   *lc;
	Snapshot	snapshot;

	/* the attach's catalog changes, and so the tracking they bring, become visible */
	CommandCounterIncrement();
	leaves = find_all_inheritors(relid, NoLock, NULL);
	snapshot = RegisterSnapshot(GetLatestSnapshot());
	foreach(lc, leaves)
	{
		Relation	heap;
		Oid			index_oid;

		if (get_rel_relkind(lfirst_oid(lc)) != RELKIND_RELATION)
			continue;
		heap = table_open(lfirst_oid(lc), NoLock);
		index_oid = TrackLiveIndex(heap);
		if (OidIsValid(index_oid))
		{
			Relation	index = index_open(index_oid, AccessShareLock);

			RegisterLeafRows(heap, index, snapshot);
			index_close(index, AccessShareLock);
		}
		table_close(heap, NoLock);
	}
	UnregisterSnapshot(snapshot);
}

/* Refuses ALTER COLUMN ... TYPE of a column the tracking of the table follows. */
static void
CheckAlterType(Oid relid, const AlterTableCmd *cmd)
{
	if (!TrackedColumn(relid, cmd->name))
		return;
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("cannot change the type of column \"%s\" of tracked table %s",
					cmd->name, get_rel_name(relid)),
			 errdetail("The column holds positions or topics, and rewriting it changes rows without registering them, so waves and live consumers would miss them."),
			 errhint("Write changed rows with INSERT or UPDATE, or run xip83.untrack, alter the table and run xip83.track again; live consumers must then start over.")));
}

/* The ATTACH PARTITION and ALTER COLUMN TYPE commands of an ALTER TABLE. */
static List *
AlterTableAttaches(AlterTableStmt *stmt)
{
	List	   *attached = NIL;
	ListCell   *lc;
	Oid			relid;

	if (stmt->objtype != OBJECT_TABLE)
		return NIL;
	relid = RangeVarGetRelid(stmt->relation, NoLock, true);
	if (!OidIsValid(relid))
		return NIL;
	foreach(lc, stmt->cmds)
	{
		AlterTableCmd *cmd = lfirst_node(AlterTableCmd, lc);

		if (cmd->subtype == AT_AttachPartition)
			attached = lappend(attached, ((PartitionCmd *) cmd->def)->name);
		else if (cmd->subtype == AT_AlterColumnType && cmd->name != NULL)
			CheckAlterType(relid, cmd);
	}
	return attached;
}

/*
 * Refuses DROP INDEX of a tracking index in use and DROP TRIGGER of xip83's
 * triggers on a tracked table: inserts, UPDATEs or a TRUNCATE would no longer
 * be registered.
 */
static void
CheckDrops(DropStmt *stmt)
{
	ListCell   *lc;

	if (stmt->removeType != OBJECT_INDEX && stmt->removeType != OBJECT_TRIGGER)
		return;
	foreach(lc, stmt->objects)
	{
		List	   *names = lfirst(lc);
		Oid			relid;
		bool		needed;
		const char *what;
		TrackedSource t;

		if (stmt->removeType == OBJECT_INDEX)
		{
			Oid			index_oid = RangeVarGetRelid(makeRangeVarFromNameList(names), NoLock, true);
			Relation	heap;

			if (!OidIsValid(index_oid) || !OidIsValid(relid = IndexGetRelation(index_oid, true)))
				continue;
			heap = table_open(relid, AccessShareLock);
			needed = TrackLiveIndex(heap) == index_oid;
			table_close(heap, AccessShareLock);
			what = psprintf("index %s", get_rel_name(index_oid));
		}
		else
		{
			const char *trigger = strVal(llast(names));

			if (list_length(names) < 2)
				continue;
			relid = RangeVarGetRelid(makeRangeVarFromNameList(list_truncate(list_copy(names),
																			  list_length(names) - 1)),
									 NoLock, true);
			needed = OidIsValid(relid) && TrackedFind(relid, &t) &&
				(strcmp(trigger, "xip83_register_position") == 0 ||
				 strcmp(trigger, "xip83_reset_positions") == 0);
			what = psprintf("trigger %s", trigger);
		}
		if (needed)
			ereport(ERROR,
					(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
					 errmsg("cannot drop %s: it registers the writes of tracked table %s",
							what, get_rel_name(relid)),
					 errdetail("Rows written without it would be missed by waves and live consumers."),
					 errhint("Run xip83.untrack on the table to stop tracking it.")));
	}
}

/*
 * Whether a DROP names this extension. A plain DROP EXTENSION would otherwise
 * fail on PostgreSQL's dependency check, whose hint is CASCADE; CASCADE is
 * refused by the object-access hook in any case (track.c).
 */
static bool
DropsExtension(DropStmt *stmt)
{
	ListCell   *lc;

	if (stmt->removeType != OBJECT_EXTENSION)
		return false;
	foreach(lc, stmt->objects)
		if (strcmp(strVal(lfirst(lc)), "xip83") == 0)
			return true;
	return false;
}

static void
TrackProcessUtility(PlannedStmt *pstmt, const char *queryString, bool readOnlyTree,
					ProcessUtilityContext context, ParamListInfo params,
					QueryEnvironment *queryEnv, DestReceiver *dest, QueryCompletion *qc)
{
	Node	   *parsetree = pstmt->utilityStmt;
	List	   *attached = NIL;
	ListCell   *lc;

	if (IsA(parsetree, AlterTableStmt))
		attached = AlterTableAttaches((AlterTableStmt *) parsetree);
	else if (IsA(parsetree, DropStmt))
	{
		CheckDrops((DropStmt *) parsetree);
		if (DropsExtension((DropStmt *) parsetree))
			TrackRefuseExtensionDrop();
	}

	if (prev_ProcessUtility)
		prev_ProcessUtility(pstmt, queryString, readOnlyTree, context, params,
							queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context, params,
								queryEnv, dest, qc);

	foreach(lc, attached)
	{
		/* locked by the ATTACH */
		Oid			relid = RangeVarGetRelid(lfirst_node(RangeVar, lc), NoLock, true);

		if (OidIsValid(relid))
			RegisterAttachedRows(relid);
	}
}

void
TrackDdlInstallHook(void)
{
	prev_ProcessUtility = ProcessUtility_hook;
	ProcessUtility_hook = TrackProcessUtility;
}
