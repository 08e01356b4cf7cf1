/*
 * live.c: live fetch, the rows a live consumer reads after a notice: late
 * rows it has passed, then (cursor, horizon] of one position line, straight
 * off the primary key.
 *
 * Order of operations is the whole point: the horizon is read FIRST, then a
 * new snapshot S is taken (HorizonReadSnapshot), then the late ring is read,
 * then the primary key is scanned up to the horizon in S. Every row at or
 * below a horizon is committed before the horizon is computed (or is a late
 * write), so S sees it; rows past the horizon are left for the next fetch.
 *
 * Late writes (registry.h). A consumer keeps a late cursor besides its
 * position cursor; every returned row carries the late cursor to pass next.
 * The ring's entries after it are taken in order:
 *   - the writer was still running as of S: it blocks. It and every later
 *     entry stay unconsumed, and their rows are left out of the range scan
 *     (by position and xmin), so they come later, through the late lane;
 *   - the row at the entry's position, visible in S, written by the entry's
 *     transaction (xmin), at or below the consumer's cursor: delivered now;
 *   - anything else (aborted, not inserted after a conflict, deleted, or
 *     above the cursor, where the range scan delivers it): consumed.
 * A late cursor of 0 means "no late history": every remembered entry is
 * taken. A late cursor older than what the ring remembers (it overflowed, or
 * the server restarted since: the ring lives in memory) fails with SQLSTATE
 * X83L0 for a consumer with any position cursor set: late rows it is owed may
 * be gone, and it must resynchronize; it is never skipped silently.
 * The ring is read after S is taken and an entry is added before its row is
 * inserted, so every late row S can see has its entry in what was read. A
 * row therefore reaches a consumer once: by the range scan or by the late
 * lane. Late rows arrive after rows with higher positions: that is the
 * ordering price of storing them instead of refusing them.
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
#include "access/sysattr.h"
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "catalog/pg_class.h"
#include "utils/regproc.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "args.h"
#include "compat.h"
#include "horizon.h"
#include "notifier.h"
#include "source.h"

PG_FUNCTION_INFO_V1(live_group_messages);
PG_FUNCTION_INFO_V1(live_welcome_messages);
PG_FUNCTION_INFO_V1(live_envelopes);

#define LIVE_MAX_COLUMNS 8

/*
 * SQLSTATE X83L0: late writes after the consumer's late cursor were dropped
 * (ring overflow, or a server restart since). Its own code so that a client
 * can resynchronize on it without parsing messages.
 */
#define ERRCODE_XIP83_LATE_WRITES_LOST MAKE_SQLSTATE('X','8','3','L','0')

/* One live fetch: the table, its primary key, and the output being filled. */
typedef struct LiveFetch
{
	RegistryDb *feed;			/* whose horizons and late ring */
	Oid			feed_relid;		/* the table read */
	Relation	heap;
	Relation	index;
	Snapshot	snapshot;
	TupleTableSlot *slot;
	ReturnSetInfo *rsinfo;
	MemoryContext row_cxt;
	int			n_out;			/* table columns returned, then late_cursor */
	AttrNumber	attnos[LIVE_MAX_COLUMNS];	/* table column of each output column */
	bool		envelopes;		/* key (originator, sequence) instead of id */
	int			rows;			/* rows emitted so far */
	int			limit;
	int64		late_cursor;	/* the late cursor returned with every row */
	int			n_excluded;		/* unconsumed late entries: left out of the range */
	LateEntry  *excluded;
} LiveFetch;

/* The table a feed reads for a kind: the tracked one, or xip83's own. */
static Oid
FeedTable(RegistryDb *feed, PositionKind kind)
{
	return OidIsValid(feed->relid) ? feed->relid : SourceOwnTable(RegistryKindTable[kind]);
}

/*
 * Opens an xip83 table and its primary key after the privilege and RLS
 * checks, takes the snapshot (after the caller read the horizon), and sets
 * up the output columns by name.
 */
static void
LiveFetchBegin(LiveFetch *f, FunctionCallInfo fcinfo, Oid relid, bool envelopes,
			   const char *const *columns, int n_columns, int limit)
{
	char	   *relname = DatumGetCString(DirectFunctionCall1(regclassout, ObjectIdGetDatum(relid)));

	if (get_rel_relkind(relid) != RELKIND_RELATION)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("live fetch reads plain tables only; %s is not one", relname),
				 errhint("A partitioned envelope table is read by its waves; follow it live through a plain table for now.")));
	SourceOpenKeyed(relid, relname, &f->heap, &f->index);
	f->snapshot = RegisterSnapshot(HorizonReadSnapshot());
	f->slot = table_slot_create(f->heap, NULL);
	f->n_out = n_columns;
	f->envelopes = envelopes;
	for (int i = 0; i < n_columns; i++)
	{
		f->attnos[i] = get_attnum(relid, columns[i]);
		if (f->attnos[i] == InvalidAttrNumber)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("column \"%s\" of relation %s does not exist",
							columns[i], relname)));
	}
	f->row_cxt = AllocSetContextCreate(CurrentMemoryContext, "xip83 live fetch row",
									   ALLOCSET_DEFAULT_SIZES);
	InitMaterializedSRF(fcinfo, 0);
	f->rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	f->rows = 0;
	f->limit = limit;
	f->n_excluded = 0;
	f->excluded = NULL;
}

/* The position (and originator) of the row in the slot. */
static int64
SlotPosition(LiveFetch *f, int32 *node)
{
	bool		isnull;

	if (!f->envelopes)
	{
		*node = 0;
		return DatumGetInt64(slot_getattr(f->slot, f->attnos[0], &isnull));
	}
	*node = DatumGetInt32(slot_getattr(f->slot, f->attnos[0], &isnull));
	return DatumGetInt64(slot_getattr(f->slot, f->attnos[1], &isnull));
}

/* The xmin of the row in the slot: which (sub)transaction inserted it. */
static TransactionId
SlotXmin(LiveFetch *f)
{
	bool		isnull;

	return DatumGetTransactionId(slot_getsysattr(f->slot, MinTransactionIdAttributeNumber,
												 &isnull));
}

/* Whether the row in the slot is a late row still owed through the late lane. */
static bool
Excluded(LiveFetch *f)
{
	int32		node;
	int64		position;
	TransactionId xmin;

	if (f->n_excluded == 0)
		return false;
	position = SlotPosition(f, &node);
	xmin = SlotXmin(f);
	for (int i = 0; i < f->n_excluded; i++)
		if (f->excluded[i].position == position && f->excluded[i].node == node &&
			TransactionIdEquals(f->excluded[i].xid, xmin))
			return true;
	return false;
}

/* Copies the row in the slot to the output, with the late cursor. */
static void
EmitRow(LiveFetch *f)
{
	Datum		values[LIVE_MAX_COLUMNS + 1];
	bool		nulls[LIVE_MAX_COLUMNS + 1];
	MemoryContext old = MemoryContextSwitchTo(f->row_cxt);

	for (int i = 0; i < f->n_out; i++)
	{
		Form_pg_attribute att = TupleDescAttr(f->slot->tts_tupleDescriptor,
											  f->attnos[i] - 1);

		values[i] = slot_getattr(f->slot, f->attnos[i], &nulls[i]);
		if (!nulls[i] && att->attlen == -1)
			values[i] = PointerGetDatum(PG_DETOAST_DATUM_PACKED(values[i]));
	}
	values[f->n_out] = Int64GetDatum(f->late_cursor);
	nulls[f->n_out] = false;
	tuplestore_putvalues(f->rsinfo->setResult, f->rsinfo->setDesc, values, nulls);
	MemoryContextSwitchTo(old);
	MemoryContextReset(f->row_cxt);
	f->rows++;
}

/*
 * Scans the primary key for positions in (lower, upper] of the position
 * column, with a leading equality on the originator for envelopes; emit
 * decides what to do with each visible row and returns false to stop.
 */
static void
LiveFetchScan(LiveFetch *f, int32 originator, int64 lower, int64 upper,
			  bool (*emit) (LiveFetch *f, void *arg), void *arg)
{
	ScanKeyData keys[3];
	int			nkeys = 0;
	int			keycol = f->envelopes ? 2 : 1;
	IndexScanDesc scan;

	if (upper <= lower)
		return;
	if (f->envelopes)
		ScanKeyInit(&keys[nkeys++], 1, BTEqualStrategyNumber, F_INT4EQ,
					Int32GetDatum(originator));
	ScanKeyInit(&keys[nkeys++], keycol, BTGreaterStrategyNumber, F_INT8GT,
				Int64GetDatum(lower));
	ScanKeyInit(&keys[nkeys++], keycol, BTLessEqualStrategyNumber, F_INT8LE,
				Int64GetDatum(upper));

	scan = xip83_index_beginscan(f->heap, f->index, f->snapshot, nkeys, 0);
	index_rescan(scan, keys, nkeys, NULL, 0);
	while (index_getnext_slot(scan, ForwardScanDirection, f->slot))
	{
		CHECK_FOR_INTERRUPTS();
		if (!emit(f, arg))
			break;
	}
	index_endscan(scan);
}

/* Range rows: every visible row but the late rows still owed, up to the limit. */
static bool
EmitRangeRow(LiveFetch *f, void *arg)
{
	if (f->rows >= f->limit)
		return false;
	if (!Excluded(f))
		EmitRow(f);
	return f->rows < f->limit;
}

/* Whether the visible row at a late entry's position is the one that entry's transaction wrote. */
static bool
ProbeLateRow(LiveFetch *f, void *arg)
{
	LateEntry  *e = arg;

	if (TransactionIdEquals(SlotXmin(f), e->xid))
		e->seq = 0;				/* marks "deliver" */
	return false;
}

/* Emits the row at a late entry's position that ProbeLateRow found. */
static bool
EmitLateRow(LiveFetch *f, void *arg)
{
	EmitRow(f);
	return false;
}

/*
 * Takes the late entries after the consumer's late cursor (see the header).
 * cursor_of returns the consumer's position cursor for an entry, or -1 when
 * the consumer does not follow its line. The late rows are emitted after the
 * new late cursor is known, since every row carries it.
 */
static void
LiveFetchLate(LiveFetch *f, PositionKind kind, int64 late_after,
			  int64 (*cursor_of) (const LateEntry *e, void *arg), void *arg,
			  bool any_cursor_set)
{
	LateBatch	late;
	bool		blocked = false;
	int			n_deliver = 0;
	LateEntry  *deliver;

	if (late_after < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("late_after must not be negative")));
	HorizonLateSince(f->feed, kind, (uint64) late_after, &late);
	if (late.lost && late_after != 0 && any_cursor_set)
		ereport(ERROR,
				(errcode(ERRCODE_XIP83_LATE_WRITES_LOST),
				 errmsg("late writes after late cursor " INT64_FORMAT " are no longer remembered",
						late_after),
				 errdetail("The late ring keeps the newest %d late writes of the database, in memory since the server started.",
						   xip83_late_ring_size),
				 errhint("Resynchronize: replay the consumer's topics up to the current horizon as a wave, then follow from xip83.late_cursor(); raise xip83.late_ring_size to make overflows rarer.")));
	f->late_cursor = late_after;
	f->excluded = palloc(sizeof(LateEntry) * Max(late.n, 1));
	deliver = palloc(sizeof(LateEntry) * Max(late.n, 1));
	for (int i = 0; i < late.n; i++)
	{
		LateEntry  *e = &late.entries[i];
		int64		cursor = cursor_of(e, arg);

		if (!blocked && XidInMVCCSnapshot(e->xid, f->snapshot))
			blocked = true;
		if (!blocked && cursor >= 0 && e->position <= cursor)
		{
			LateEntry	probe = *e;

			LiveFetchScan(f, e->node, e->position - 1, e->position, ProbeLateRow, &probe);
			if (probe.seq == 0 && n_deliver >= f->limit)
				blocked = true;
			else if (probe.seq == 0)
				deliver[n_deliver++] = *e;
		}
		if (blocked)
			f->excluded[f->n_excluded++] = *e;
		else
			f->late_cursor = (int64) e->seq;
	}
	if (!blocked)
		f->late_cursor = (int64) late.head;
	for (int i = 0; i < n_deliver; i++)
		LiveFetchScan(f, deliver[i].node, deliver[i].position - 1, deliver[i].position,
					  EmitLateRow, NULL);
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

/* A v3 consumer's cursor: one for the whole kind. */
static int64
V3Cursor(const LateEntry *e, void *arg)
{
	return *(const int64 *) arg;
}

/* One v3 kind: late rows, then (after_id, horizon] by id. */
static Datum
LiveFetchMessages(FunctionCallInfo fcinfo, const char *const *columns, int n_columns,
				  PositionKind kind)
{
	LiveFetch	f;
	int64		after;
	int64		late_after;
	int			limit;
	int64		horizon;

	ArgRequire(fcinfo, 0, "after_id");
	ArgRequire(fcinfo, 2, "late_after");
	after = PG_GETARG_INT64(0);
	limit = ArgGetPageLimit(fcinfo, 1, "row_limit");
	late_after = PG_GETARG_INT64(2);
	f.feed = HorizonFeedArg(fcinfo, 3, kind);
	f.feed_relid = FeedTable(f.feed, kind);
	NotifierEnsureRunning();
	horizon = HorizonOfLine(f.feed, kind == KIND_WELCOME ? LINE_WELCOME : LINE_GROUP);
	LiveFetchBegin(&f, fcinfo, f.feed_relid, false, columns, n_columns, limit);
	LiveFetchLate(&f, kind, late_after, V3Cursor, &after, after > 0);
	LiveFetchScan(&f, 0, after, horizon, EmitRangeRow, NULL);
	LiveFetchEnd(&f);
	return (Datum) 0;
}

/* xip83.live_group_messages(after_id, row_limit, late_after). */
Datum
live_group_messages(PG_FUNCTION_ARGS)
{
	static const char *const columns[] = {
		"id", "created_at", "group_id", "data", "is_commit", "sender_hmac", "should_push"
	};

	return LiveFetchMessages(fcinfo, columns, lengthof(columns), KIND_GROUP);
}

/* xip83.live_welcome_messages(after_id, row_limit, late_after). */
Datum
live_welcome_messages(PG_FUNCTION_ARGS)
{
	static const char *const columns[] = {
		"id", "created_at", "installation_key", "data", "hpke_public_key",
		"wrapper_algorithm", "welcome_metadata", "message_type"
	};

	return LiveFetchMessages(fcinfo, columns, lengthof(columns), KIND_WELCOME);
}

/* A requested originator and its cursor. */
typedef struct OriginatorCursor
{
	int32		node;
	int64		after;
} OriginatorCursor;

typedef struct OriginatorCursors
{
	int			n;				/* distinct, ascending by node */
	OriginatorCursor *c;
} OriginatorCursors;

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

/* A d14n consumer's cursor for an entry's originator, -1 when it does not follow it. */
static int64
EnvelopeCursor(const LateEntry *e, void *arg)
{
	const OriginatorCursors *cs = arg;
	int			lo = 0;
	int			hi = cs->n - 1;

	while (lo <= hi)
	{
		int			mid = (lo + hi) / 2;

		if (cs->c[mid].node == e->node)
			return cs->c[mid].after;
		if (cs->c[mid].node < e->node)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return -1;
}

/*
 * xip83.live_envelopes(node_ids, after_sequence_ids, row_limit, late_after):
 * late envelopes of listed originators, then per listed originator envelopes
 * in (after, its horizon], ordered (originator, sequence). An originator
 * listed twice counts once, with its lowest cursor.
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
	int64		late_after;
	OriginatorCursors cs;
	int64	   *horizons;
	bool		any_set = false;
	HorizonSet	set;
	LiveFetch	f;
	int			j = 0;

	ArgRequireSameLength(&nodes, &afters);
	limit = ArgGetPageLimit(fcinfo, 2, "row_limit");
	ArgRequire(fcinfo, 3, "late_after");
	late_after = PG_GETARG_INT64(3);
	cs.c = palloc(sizeof(OriginatorCursor) * (nodes.n + 1));
	cs.n = 0;
	for (int i = 0; i < nodes.n; i++)
	{
		cs.c[i].node = DatumGetInt32(nodes.values[i]);
		cs.c[i].after = DatumGetInt64(afters.values[i]);
		any_set |= cs.c[i].after > 0;
	}
	qsort(cs.c, nodes.n, sizeof(OriginatorCursor), CompareCursors);
	for (int i = 0; i < nodes.n; i++)
		if (i == 0 || cs.c[i].node != cs.c[cs.n - 1].node)
			cs.c[cs.n++] = cs.c[i];

	/* every horizon before the snapshot; an originator without envelopes has 0 */
	f.feed = HorizonFeedArg(fcinfo, 4, KIND_ENVELOPE);
	f.feed_relid = FeedTable(f.feed, KIND_ENVELOPE);
	if (PG_NARGS() > 5 && !PG_ARGISNULL(5))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("live fetch does not read a blob_source yet"),
				 errhint("Follow a tracked envelope table that holds its payload.")));
	NotifierEnsureRunning();
	HorizonCollectFeed(f.feed, &set);
	horizons = palloc(sizeof(int64) * (cs.n + 1));
	for (int i = 0; i < cs.n; i++)
	{
		while (j < set.n_originators && set.originator_node_ids[j] < cs.c[i].node)
			j++;
		horizons[i] = j < set.n_originators && set.originator_node_ids[j] == cs.c[i].node
			? set.originator_horizons[j] : 0;
	}

	LiveFetchBegin(&f, fcinfo, f.feed_relid, true, columns, lengthof(columns), limit);
	LiveFetchLate(&f, KIND_ENVELOPE, late_after, EnvelopeCursor, &cs, any_set);
	for (int i = 0; i < cs.n && f.rows < f.limit; i++)
		LiveFetchScan(&f, cs.c[i].node, cs.c[i].after, horizons[i], EmitRangeRow, NULL);
	LiveFetchEnd(&f);
	return (Datum) 0;
}
