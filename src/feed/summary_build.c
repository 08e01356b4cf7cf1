/*
 * summary_build.c: the pass that fills a feed's topic summary from the rows
 * stored before it was loaded (src/core/core.h has the model and why it
 * never skips a row), and the summary a wave may ask (SummaryForSource).
 *
 * One dynamic background worker per database, "xip83 summary" (started,
 * claimed and asked to leave through notifier.c's table of databases, as the
 * notifier is), started by the load of a feed and by a wave that finds a
 * summary EMPTY, runs the passes: per loaded feed of its database and kind
 * whose summary is EMPTY, in one transaction,
 *   1. waits for every transaction holding a write lock on one of the
 *      feed's leaves to end (WaitForLockersMultiple, as CREATE INDEX
 *      CONCURRENTLY does), so that each row not yet committed was written
 *      by a transaction that noted it;
 *   2. takes one snapshot and reads every leaf's heap with it, raising the
 *      buckets of each row's key to its position. One snapshot for all
 *      leaves: a row moved by an UPDATE between two reads is seen in
 *      exactly one place, and a row attached as a partition after the list
 *      of leaves was taken was noted by the attaching transaction;
 *   3. marks it READY, unless a reset came meanwhile (TRUNCATE, the entry
 *      loaded again): then the next pass starts over.
 * Reads are rate-bounded by xip83.summary_pass_rows_per_s. An error ends the
 * pass with the summary EMPTY again, and the worker tries again a second
 * later. The worker leaves when no summary of its database has wanted a
 * pass for a few seconds, or when its database is dropped.
 *
 * The pass is a primary's: during recovery nothing writes, so nothing would
 * note the rows replay brings after the snapshot, and a standby's waves read
 * without the summary (SummaryForSource). A promoted standby's summaries
 * were never filled (EMPTY since its start): the first wave after the
 * promotion starts their pass, while the new writers raise them.
 */
#include "postgres.h"

#include "access/relation.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lmgr.h"
#include "storage/proc.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "base/base.h"
#include "core/core.h"
#include "rel/rel.h"
#include "feed_internal.h"

#define BUILDER_IDLE_MS 3000
#define PASS_CHUNK_ROWS 4096

int			xip83_summary_pass_rows_per_s = 5000000;

void
SummaryBuilderEnsureRunning(void)
{
	if (SummaryReady() && IsUnderPostmaster)
		DbWorkerStart(WORKER_SUMMARY);
}

Summary *
SummaryForSource(Oid relid, PositionKind kind)
{
	TrackedSource t;
	Summary    *s;

	if (!SummaryReady() || RecoveryInProgress())
		return NULL;
	if (relid == SourceOwnRelation(RegistryKindTable[kind]))
		s = SummaryOf(RegistryAttach(), kind);
	else if (TrackedFind(relid, &t) && t.source == relid && t.kind == kind)
		s = SummaryOf(RegistryAttachFeed(relid), kind);
	else
		return NULL;
	if (SummaryStateOf(s, NULL) == SUMMARY_EMPTY)
		SummaryBuilderEnsureRunning();
	return s;
}

/* ---------------------------------------------------------------- the worker */

static bool
StopWanted(void)
{
	return DbWorkerStopRequested(WORKER_SUMMARY) || ProcDiePending;
}

/* The columns a kind's rows are summarized by. */
static const char *const TopicColumn[3] = {"group_id", "installation_key", "topic"};
static const char *const PositionColumn[3] = {"id", "id", "originator_sequence_id"};

/* Sleeps as long as the rate bound asks after rows read since start_us. */
static void
Pace(uint64 rows, TimestampTz start)
{
	int64		due_us;
	int64		elapsed_us;

	if (xip83_summary_pass_rows_per_s <= 0)
		return;
	due_us = (int64) ((double) rows * 1000000.0 / xip83_summary_pass_rows_per_s);
	elapsed_us = GetCurrentTimestamp() - start;
	if (due_us > elapsed_us + 1000)
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 (due_us - elapsed_us) / 1000, PG_WAIT_EXTENSION);
	ResetLatch(MyLatch);
}

/*
 * Reads one leaf under the pass's snapshot into the summary; false when the
 * pass must stop (a reset voided it, or the worker is asked to leave).
 */
static bool
ReadLeaf(Summary *s, uint64 gen, PositionKind kind, Oid leaf, Snapshot snapshot,
		 uint64 *rows, TimestampTz start)
{
	Relation	rel = table_open(leaf, AccessShareLock);
	AttrNumber	topic_col = get_attnum(leaf, TopicColumn[kind]);
	AttrNumber	pos_col = get_attnum(leaf, PositionColumn[kind]);
	AttrNumber	node_col = kind == KIND_ENVELOPE ? get_attnum(leaf, "originator_node_id") : InvalidAttrNumber;
	TableScanDesc scan;
	TupleTableSlot *slot;
	bool		pos_int4;
	uint64		chunk = 0;
	bool		go_on = true;

	if (topic_col == InvalidAttrNumber || pos_col == InvalidAttrNumber ||
		(kind == KIND_ENVELOPE && node_col == InvalidAttrNumber))
	{
		/* a blob table's leaf, or not a table of this kind: no topics */
		table_close(rel, AccessShareLock);
		return true;
	}
	pos_int4 = TupleDescAttr(RelationGetDescr(rel), pos_col - 1)->atttypid == INT4OID;
	scan = table_beginscan(rel, snapshot, 0, NULL);
	slot = table_slot_create(rel, NULL);
	while (table_scan_getnextslot(scan, ForwardScanDirection, slot))
	{
		bool		null_topic,
					null_pos,
					null_node = false;
		Datum		topic_d = slot_getattr(slot, topic_col, &null_topic);
		Datum		pos_d = slot_getattr(slot, pos_col, &null_pos);
		int32		node = 0;

		if (node_col != InvalidAttrNumber)
			node = DatumGetInt32(slot_getattr(slot, node_col, &null_node));
		if (!null_topic && !null_pos && !null_node)
		{
			bytea	   *topic = DatumGetByteaPP(topic_d);
			int64		pos = pos_int4 ? DatumGetInt32(pos_d) : DatumGetInt64(pos_d);

			if (pos >= 0)
				SummaryNote(s, RecentKey(VARDATA_ANY(topic), VARSIZE_ANY_EXHDR(topic), node),
							(uint64) pos);
			if ((Pointer) topic != DatumGetPointer(topic_d))
				pfree(topic);
		}
		if (++chunk == PASS_CHUNK_ROWS)
		{
			uint64		g;

			*rows += chunk;
			SummaryPassProgress(s, chunk);
			chunk = 0;
			CHECK_FOR_INTERRUPTS();
			if (SummaryStateOf(s, &g) != SUMMARY_BUILDING || g != gen || StopWanted())
			{
				go_on = false;
				break;
			}
			Pace(*rows, start);
		}
	}
	*rows += chunk;
	SummaryPassProgress(s, chunk);
	ExecDropSingleTupleTableSlot(slot);
	table_endscan(scan);
	table_close(rel, AccessShareLock);
	return go_on;
}

/*
 * The table a feed's summary of a kind is read from, InvalidOid when the
 * feed has no rows of that kind (a tracked table of another kind).
 */
static Oid
PassTable(RegistryDb *db, PositionKind kind)
{
	Oid			relid = RegistryFeedRelid(db);
	TrackedSource t;

	if (!OidIsValid(relid))
		return SourceOwnRelation(RegistryKindTable[kind]);
	if (TrackedFind(relid, &t) && t.source == relid && t.kind == kind)
		return relid;
	return InvalidOid;
}

/* One pass over a feed's rows of a kind (in a transaction); see the header. */
static void
RunPass(RegistryDb *db, PositionKind kind, Summary *s, uint64 gen)
{
	Oid			table = PassTable(db, kind);
	List	   *leaves = NIL;
	List	   *tags = NIL;
	ListCell   *lc;
	Snapshot	snapshot;
	TimestampTz start = GetCurrentTimestamp();
	uint64		rows = 0;
	bool		done = true;

	if (OidIsValid(table) && get_rel_relkind(table) != '\0')
	{
		foreach(lc, find_all_inheritors(table, AccessShareLock, NULL))
		{
			Oid			leaf = lfirst_oid(lc);
			LOCKTAG    *tag = palloc(sizeof(LOCKTAG));

			SET_LOCKTAG_RELATION(*tag, MyDatabaseId, leaf);
			tags = lappend(tags, tag);
			if (get_rel_relkind(leaf) == RELKIND_RELATION)
				leaves = lappend_oid(leaves, leaf);
		}
	}
	/* every writer that may have written before the load has ended */
	if (tags != NIL)
		WaitForLockersMultiple(tags, ShareLock, false);
	snapshot = RegisterSnapshot(GetLatestSnapshot());
	foreach(lc, leaves)
		if (!(done = ReadLeaf(s, gen, kind, lfirst_oid(lc), snapshot, &rows, start)))
			break;
	UnregisterSnapshot(snapshot);
	if (SummaryPassEnd(s, gen, done))
		ereport(DEBUG1,
				(errmsg("xip83 summary of %s ready: " UINT64_FORMAT " rows in %ld ms",
						OidIsValid(table) ? get_rel_name(table) : "(no table)", rows,
						(long) TimestampDifferenceMilliseconds(start, GetCurrentTimestamp()))));
}

/* One pass in a transaction of its own; an error leaves the summary EMPTY, retried after a pause. */
static void
RunPassSafely(RegistryDb *db, PositionKind kind, Summary *s, uint64 gen, MemoryContext cxt)
{
	PG_TRY();
	{
		SetCurrentStatementStartTimestamp();
		StartTransactionCommand();
		PushActiveSnapshot(GetTransactionSnapshot());
		RunPass(db, kind, s, gen);
		PopActiveSnapshot();
		CommitTransactionCommand();
	}
	PG_CATCH();
	{
		/* a dropped table, a cancel */
		MemoryContextSwitchTo(cxt);
		EmitErrorReport();
		AbortCurrentTransaction();
		FlushErrorState();
		(void) SummaryPassEnd(s, gen, false);
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 1000, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
	PG_END_TRY();
	MemoryContextSwitchTo(cxt);
}

/* Runs every pass wanted in the database; returns whether one ran or runs. */
static bool
PassesWanted(MemoryContext cxt)
{
	RegistryDb *feeds[64];
	int			n = RegistryFeedsOf(MyDatabaseId, feeds, lengthof(feeds));
	bool		any = false;

	for (int i = 0; i < n && !StopWanted(); i++)
		for (int k = 0; k < 3 && !StopWanted(); k++)
		{
			Summary    *s = SummaryOf(feeds[i], (PositionKind) k);
			uint64		gen;

			if (s == NULL)
				continue;
			if (SummaryStateOf(s, NULL) == SUMMARY_BUILDING)
				any = true;
			if (!SummaryPassBegin(s, &gen))
				continue;
			any = true;
			RunPassSafely(feeds[i], (PositionKind) k, s, gen, cxt);
		}
	return any;
}

void
xip83_summary_main(Datum main_arg)
{
	MemoryContext cxt;
	TimestampTz last_work;

	pqsignal(SIGTERM, die);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnectionByOid(DatumGetObjectId(main_arg), InvalidOid, 0);
	pgstat_report_appname("xip83 summary");
	if (!DbWorkerClaim(WORKER_SUMMARY))
		proc_exit(0);
	cxt = AllocSetContextCreate(TopMemoryContext, "xip83 summary pass", ALLOCSET_DEFAULT_SIZES);
	MemoryContextSwitchTo(cxt);
	last_work = GetCurrentTimestamp();
	for (;;)
	{
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		if (StopWanted() || RecoveryInProgress())
			proc_exit(0);
		if (PassesWanted(cxt))
			last_work = GetCurrentTimestamp();
		else if (TimestampDifferenceExceeds(last_work, GetCurrentTimestamp(), BUILDER_IDLE_MS))
			proc_exit(0);
		MemoryContextReset(cxt);
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 200,
						 PG_WAIT_EXTENSION);
	}
}
