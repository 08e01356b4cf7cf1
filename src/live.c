/*
 * live.c: live fetch, the rows a live consumer reads after a notice:
 * (cursor, horizon] of one position line, straight off the primary key.
 *
 * Order of operations is the whole point: the horizon is read FIRST, then a
 * new snapshot is taken (GetLatestSnapshot, whatever the isolation level),
 * then the primary key is scanned up to the horizon. Every row at or below a
 * horizon is committed before the horizon is computed, so the later snapshot
 * sees it; rows past the horizon are left for the next fetch. Reading with the
 * statement's older snapshot could miss a row committed in between.
 *
 * Access: the caller needs SELECT on the table (42501 otherwise), and a table
 * with row-level security enabled is refused unless the caller bypasses it,
 * as a direct index read would otherwise get around the policies. Rows go to
 * a tuplestore of at most row_limit rows (<= xip83.max_page_limit); each row's
 * detoasted copies live in a per-row context that is reset.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/relscan.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "args.h"
#include "horizon.h"
#include "source.h"
#include "xip83.h"

PG_FUNCTION_INFO_V1(live_group_messages);
PG_FUNCTION_INFO_V1(live_welcome_messages);
PG_FUNCTION_INFO_V1(live_envelopes);

/* One live fetch: the table, its primary key, and the output being filled. */
typedef struct LiveFetch
{
	Relation	heap;
	Relation	index;
	Snapshot	snapshot;
	TupleTableSlot *slot;
	ReturnSetInfo *rsinfo;
	MemoryContext row_cxt;
	int			n_out;			/* output columns */
	AttrNumber	attnos[8];		/* table column of each output column */
	int			rows;			/* rows emitted so far */
	int			limit;
} LiveFetch;

/*
 * Opens an xip83 table and its primary key after the privilege and RLS
 * checks, takes the snapshot (after the caller read the horizon), and sets
 * up the output columns by name.
 */
static void
LiveFetchBegin(LiveFetch *f, FunctionCallInfo fcinfo, const char *table,
			   const char *const *columns, int n_columns, int limit)
{
	Oid			nsp = get_namespace_oid("xip83", false);
	Oid			relid = get_relname_relid(table, nsp);
	Oid			pk;

	if (!OidIsValid(relid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation \"xip83.%s\" does not exist", table)));
	SourceRequireReadable(relid, psprintf("xip83.%s", table));

	f->heap = table_open(relid, AccessShareLock);
#if PG_VERSION_NUM >= 170000
	pk = RelationGetPrimaryKeyIndex(f->heap, false);
#else
	pk = RelationGetPrimaryKeyIndex(f->heap);
#endif
	if (!OidIsValid(pk))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("relation \"xip83.%s\" has no primary key", table)));
	f->index = index_open(pk, AccessShareLock);
	f->snapshot = RegisterSnapshot(HorizonReadSnapshot());
	f->slot = table_slot_create(f->heap, NULL);
	f->n_out = n_columns;
	for (int i = 0; i < n_columns; i++)
	{
		f->attnos[i] = get_attnum(relid, columns[i]);
		if (f->attnos[i] == InvalidAttrNumber)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("column \"%s\" of relation \"xip83.%s\" does not exist",
							columns[i], table)));
	}
	f->row_cxt = AllocSetContextCreate(CurrentMemoryContext, "xip83 live fetch row",
									   ALLOCSET_DEFAULT_SIZES);
	InitMaterializedSRF(fcinfo, 0);
	f->rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	f->rows = 0;
	f->limit = limit;
}

/*
 * Scans the primary key from `lower` (exclusive) to `upper` (inclusive) of
 * the position column `keycol`, with an optional leading equality on
 * column 1 (the originator), emitting rows until the limit.
 */
static void
LiveFetchRange(LiveFetch *f, bool with_originator, int32 originator, int keycol,
			   int64 lower, int64 upper)
{
	ScanKeyData keys[3];
	int			nkeys = 0;
	IndexScanDesc scan;

	if (upper <= lower || f->rows >= f->limit)
		return;
	if (with_originator)
		ScanKeyInit(&keys[nkeys++], 1, BTEqualStrategyNumber, F_INT4EQ,
					Int32GetDatum(originator));
	ScanKeyInit(&keys[nkeys++], keycol, BTGreaterStrategyNumber, F_INT8GT,
				Int64GetDatum(lower));
	ScanKeyInit(&keys[nkeys++], keycol, BTLessEqualStrategyNumber, F_INT8LE,
				Int64GetDatum(upper));

	scan = xip83_index_beginscan(f->heap, f->index, f->snapshot, nkeys, 0);
	index_rescan(scan, keys, nkeys, NULL, 0);
	while (f->rows < f->limit && index_getnext_slot(scan, ForwardScanDirection, f->slot))
	{
		Datum		values[8];
		bool		nulls[8];
		MemoryContext old;

		CHECK_FOR_INTERRUPTS();
		old = MemoryContextSwitchTo(f->row_cxt);
		for (int i = 0; i < f->n_out; i++)
		{
			Form_pg_attribute att = TupleDescAttr(f->slot->tts_tupleDescriptor,
												  f->attnos[i] - 1);

			values[i] = slot_getattr(f->slot, f->attnos[i], &nulls[i]);
			if (!nulls[i] && att->attlen == -1)
				values[i] = PointerGetDatum(PG_DETOAST_DATUM_PACKED(values[i]));
		}
		tuplestore_putvalues(f->rsinfo->setResult, f->rsinfo->setDesc, values, nulls);
		MemoryContextSwitchTo(old);
		MemoryContextReset(f->row_cxt);
		f->rows++;
	}
	index_endscan(scan);
}

/* Releases the scan's resources (an ERROR releases them through the resource owner). */
static void
LiveFetchEnd(LiveFetch *f)
{
	ExecDropSingleTupleTableSlot(f->slot);
	UnregisterSnapshot(f->snapshot);
	index_close(f->index, AccessShareLock);
	table_close(f->heap, AccessShareLock);
	MemoryContextDelete(f->row_cxt);
}

/* One v3 kind: (after_id, horizon] by id. */
static Datum
LiveFetchMessages(FunctionCallInfo fcinfo, const char *table, const char *const *columns,
				  int n_columns, bool welcome)
{
	LiveFetch	f;
	int64		after;
	int			limit;
	int64		horizon;

	ArgRequire(fcinfo, 0, "after_id");
	after = PG_GETARG_INT64(0);
	limit = ArgGetPageLimit(fcinfo, 1, "row_limit");
	horizon = welcome ? HorizonOfWelcomes() : HorizonOfGroups();
	LiveFetchBegin(&f, fcinfo, table, columns, n_columns, limit);
	LiveFetchRange(&f, false, 0, 1, after, horizon);
	LiveFetchEnd(&f);
	return (Datum) 0;
}

/* xip83.live_group_messages(after_id, row_limit): group messages in (after_id, group_horizon()]. */
Datum
live_group_messages(PG_FUNCTION_ARGS)
{
	static const char *const columns[] = {
		"id", "created_at", "group_id", "data", "is_commit", "sender_hmac", "should_push"
	};

	return LiveFetchMessages(fcinfo, "group_messages", columns, lengthof(columns), false);
}

/* xip83.live_welcome_messages(after_id, row_limit): welcomes in (after_id, welcome_horizon()]. */
Datum
live_welcome_messages(PG_FUNCTION_ARGS)
{
	static const char *const columns[] = {
		"id", "created_at", "installation_key", "data", "hpke_public_key",
		"wrapper_algorithm", "welcome_metadata", "message_type"
	};

	return LiveFetchMessages(fcinfo, "welcome_messages", columns, lengthof(columns), true);
}

/* A requested originator and its cursor. */
typedef struct OriginatorCursor
{
	int32		node;
	int64		after;
} OriginatorCursor;

/* Orders cursors by originator, lowest cursor first within one. */
static int
CompareCursors(const void *a, const void *b)
{
	const OriginatorCursor *x = a;
	const OriginatorCursor *y = b;

	if (x->node != y->node)
		return x->node < y->node ? -1 : 1;
	return (x->after > y->after) - (x->after < y->after);
}

/*
 * xip83.live_envelopes(node_ids, after_sequence_ids, row_limit): per listed
 * originator, envelopes in (after, its horizon], ordered (originator,
 * sequence). An originator listed twice counts once, with its lowest cursor.
 */
Datum
live_envelopes(PG_FUNCTION_ARGS)
{
	static const char *const columns[] = {
		"originator_node_id", "originator_sequence_id", "gateway_time", "topic",
		"originator_envelope"
	};
	ArgArray	nodes = ArgGetArray(fcinfo, 0, "node_ids", INT4OID);
	ArgArray	afters = ArgGetArray(fcinfo, 1, "after_sequence_ids", INT8OID);
	int			limit;
	OriginatorCursor *cursors;
	int64	   *horizons;
	HorizonSet	set;
	LiveFetch	f;

	ArgRequireSameLength(&nodes, &afters);
	limit = ArgGetPageLimit(fcinfo, 2, "row_limit");
	cursors = palloc(sizeof(OriginatorCursor) * (nodes.n + 1));
	horizons = palloc(sizeof(int64) * (nodes.n + 1));
	for (int i = 0; i < nodes.n; i++)
	{
		cursors[i].node = DatumGetInt32(nodes.values[i]);
		cursors[i].after = DatumGetInt64(afters.values[i]);
	}
	qsort(cursors, nodes.n, sizeof(OriginatorCursor), CompareCursors);
	/* every horizon before the snapshot; an originator without envelopes has 0 */
	HorizonCollect(&set);
	for (int i = 0; i < nodes.n; i++)
	{
		horizons[i] = 0;
		for (int j = 0; j < set.n_originators; j++)
			if (set.originator_node_ids[j] == cursors[i].node)
				horizons[i] = set.originator_horizons[j];
	}

	LiveFetchBegin(&f, fcinfo, "envelopes", columns, lengthof(columns), limit);
	for (int i = 0; i < nodes.n; i++)
	{
		if (i > 0 && cursors[i].node == cursors[i - 1].node)
			continue;
		LiveFetchRange(&f, true, cursors[i].node, 2, cursors[i].after, horizons[i]);
	}
	LiveFetchEnd(&f);
	return (Datum) 0;
}
