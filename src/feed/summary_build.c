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
 *      slot of each row's key to its position. One snapshot for all
 *      leaves: a row moved by an UPDATE between two reads is seen in
 *      exactly one place, and a row attached as a partition after the list
 *      of leaves was taken was noted by the attaching transaction;
 *   3. marks it READY, unless a reset came meanwhile (TRUNCATE, the entry
 *      loaded again): then the next pass starts over.
 * A pass that cannot see the feed's table tracked (the track not committed
 * yet, or on a standby not replayed yet) reads nothing and leaves the
 * summary EMPTY: the rows stored before the track were never noted.
 * Reads are rate-bounded by xip83.summary_pass_rows_per_s. An error ends the
 * pass with the summary EMPTY again, and the worker tries again a second
 * later. The worker leaves when no summary of its database has wanted a
 * pass for a few seconds, or when its database is dropped.
 *
 * On a hot standby nothing writes, so nothing would raise the summary for
 * the rows replay brings after a pass's snapshot. There the worker builds
 * the summaries of every kind and follows replay:
 *   1. waits for every transaction the standby knows to be running to end,
 *      so that a RAISE record replayed before the summary was emptied (or
 *      before this server's redo began) belongs to a row the pass sees;
 *   2. reads the line's replayed horizon H0, then takes the pass's snapshot,
 *      reads every leaf as above, and ends READY covering H0: a fresh row at
 *      or below H0 was committed before the horizon record that carried H0
 *      (src/feed/standby.c), so the snapshot sees it;
 *   3. every few milliseconds, when the replayed horizon H1 passed the
 *      covered one, takes a snapshot after reading H1, reads the rows in
 *      (covered, H1] of each leaf by its primary key, and covers H1.
 * Rows a position range cannot find (late writes, rows moved to another
 * topic) were raised by the replay of their writer's RAISE record before
 * their commit; a TRUNCATE or drop turns the kind's summary off until the
 * server leaves recovery (core.h). Waves trust a "no" only for a ceiling at
 * or below the covered position (SummaryAskCovers). Envelopes have a horizon
 * per originator: their summary covers SUMMARY_COVERS_LINES, and steps 2 and
 * 3 run per originator line (its horizon, its (covered, H1] read through the
 * (originator, sequence) key, its covered value kept on the line), so a
 * d14n wave trusts a "no" for an originator's ceiling at or below that
 * line's (SummaryMayHaveMany).
 * Promotion: the first attach of a feed loads it on the new primary, which
 * keeps a summary the standby made READY (registry.c, KeepsAfterPromotion)
 * and resets the others, which a primary's pass rebuilds. A kept summary
 * still covers only what the standby followed; every row of before the
 * promotion is committed by then (writers may not PREPARE), and one above
 * that (replayed after the follower's last step, or above the last horizon
 * record the old primary logged) is read by CatchUp, under a snapshot taken
 * after the load, before the summary covers every position. Rows committed
 * later were raised by their writers.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/relation.h"
#include "access/stratnum.h"
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
#include "storage/procarray.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/inval.h"
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
#define FOLLOW_POLL_MS 2

int			xip83_summary_pass_rows_per_s = 5000000;

/* the last pass found its feed's table not tracked (PassTable) */
static bool pass_unreadable = false;

void
SummaryBuilderEnsureRunning(void)
{
	if (SummaryReady() && IsUnderPostmaster)
		DbWorkerStart(WORKER_SUMMARY);
}

/* Whether a primary's summary is READY but vouches for less than every position. */
static bool
CatchUpWanted(Summary *s, uint64 *gen)
{
	return !RecoveryInProgress() && SummaryStateOf(s, gen) == SUMMARY_READY &&
		SummaryCoveredOf(s) != SUMMARY_COVERS_ALL;
}

Summary *
SummaryForSource(Oid relid, PositionKind kind, RegistryDb **dbp)
{
	TrackedSource t;
	Summary    *s;
	RegistryDb *db;
	bool		standby = RecoveryInProgress();
	Oid			feed;

	if (!SummaryReady())
		return NULL;
	if (relid == SourceOwnRelation(RegistryKindTable[kind]))
		feed = InvalidOid;
	else if (TrackedFind(relid, &t) && t.source == relid && t.kind == kind)
		feed = relid;
	else
		return NULL;
	/* a standby's feed is what replay brought, perhaps nothing yet: no error */
	db = standby ? RegistryLookupFeed(feed) : RegistryAttachFeed(feed);
	s = SummaryOf(db, kind);
	if (dbp != NULL)
		*dbp = db;
	if (s == NULL || (standby && SummaryStandbyOff(s)))
		return NULL;
	/* EMPTY: a pass is wanted; on a primary, READY covering less: a catch-up */
	if (SummaryStateOf(s, NULL) == SUMMARY_EMPTY || CatchUpWanted(s, NULL))
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

/* The columns of a leaf a summary reads; false when it has no topics of the kind. */
typedef struct LeafColumns
{
	AttrNumber	topic;
	AttrNumber	pos;
	AttrNumber	node;			/* envelopes */
	bool		pos_int4;
} LeafColumns;

static bool
LeafColumnsOf(Relation rel, PositionKind kind, LeafColumns *c)
{
	Oid			leaf = RelationGetRelid(rel);

	c->topic = get_attnum(leaf, TopicColumn[kind]);
	c->pos = get_attnum(leaf, PositionColumn[kind]);
	c->node = kind == KIND_ENVELOPE ? get_attnum(leaf, "originator_node_id") : InvalidAttrNumber;
	/* a blob table's leaf, or not a table of this kind: no topics */
	if (c->topic == InvalidAttrNumber || c->pos == InvalidAttrNumber ||
		(kind == KIND_ENVELOPE && c->node == InvalidAttrNumber))
		return false;
	c->pos_int4 = TupleDescAttr(RelationGetDescr(rel), c->pos - 1)->atttypid == INT4OID;
	return true;
}

/* Raises the slot of one row's key to its position. */
static void
NoteSlot(Summary *s, TupleTableSlot *slot, const LeafColumns *c)
{
	bool		null_topic,
				null_pos,
				null_node = false;
	Datum		topic_d = slot_getattr(slot, c->topic, &null_topic);
	Datum		pos_d = slot_getattr(slot, c->pos, &null_pos);
	int32		node = 0;

	if (c->node != InvalidAttrNumber)
		node = DatumGetInt32(slot_getattr(slot, c->node, &null_node));
	if (!null_topic && !null_pos && !null_node)
	{
		bytea	   *topic = DatumGetByteaPP(topic_d);
		int64		pos = c->pos_int4 ? DatumGetInt32(pos_d) : DatumGetInt64(pos_d);

		if (pos >= 0)
			SummaryNote(s, RecentKey(VARDATA_ANY(topic), VARSIZE_ANY_EXHDR(topic), node),
						(uint64) pos);
		if ((Pointer) topic != DatumGetPointer(topic_d))
			pfree(topic);
	}
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
	LeafColumns c;
	TableScanDesc scan;
	TupleTableSlot *slot;
	uint64		chunk = 0;
	bool		go_on = true;

	if (!LeafColumnsOf(rel, kind, &c))
	{
		table_close(rel, AccessShareLock);
		return true;
	}
	scan = table_beginscan(rel, snapshot, 0, NULL);
	slot = table_slot_create(rel, NULL);
	while (table_scan_getnextslot(scan, ForwardScanDirection, slot))
	{
		NoteSlot(s, slot, &c);
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
 * The table a feed's summary of a kind is read from into *table, InvalidOid
 * when the feed has no rows of that kind (a tracked table of another kind).
 * False when the feed is a tracked table this transaction does not see
 * tracked: its track has not committed yet (or, on a standby, not been
 * replayed), or it was untracked. Nothing may then be taken as read: rows
 * stored while it was not tracked were never noted.
 */
static bool
PassTable(RegistryDb *db, PositionKind kind, Oid *table)
{
	Oid			relid = RegistryFeedRelid(db);
	TrackedSource t;

	*table = InvalidOid;
	if (!OidIsValid(relid))
		*table = SourceOwnRelation(RegistryKindTable[kind]);
	else if (!TrackedFind(relid, &t) || t.source != relid)
		return false;
	else if (t.kind == kind)
		*table = relid;
	return true;
}

/*
 * The leaves (plain tables) of a feed's table of a kind into *leaves, and
 * into *tags, when not NULL, a lock tag for every relation of it; false as
 * PassTable.
 */
static bool
PassLeaves(RegistryDb *db, PositionKind kind, List **leaves, List **tags)
{
	Oid			table;
	ListCell   *lc;

	*leaves = NIL;
	if (!PassTable(db, kind, &table))
		return false;
	if (!OidIsValid(table) || get_rel_relkind(table) == '\0')
		return true;
	foreach(lc, find_all_inheritors(table, AccessShareLock, NULL))
	{
		Oid			leaf = lfirst_oid(lc);

		if (tags != NULL)
		{
			LOCKTAG    *tag = palloc(sizeof(LOCKTAG));

			SET_LOCKTAG_RELATION(*tag, MyDatabaseId, leaf);
			*tags = lappend(*tags, tag);
		}
		if (get_rel_relkind(leaf) == RELKIND_RELATION)
			*leaves = lappend_oid(*leaves, leaf);
	}
	return true;
}

/* The horizon this standby replayed for a v3 kind's line; false when it knows none yet. */
static bool
ReplayedHorizon(RegistryDb *db, PositionKind kind, uint64 *horizon)
{
	uint64		h[2];

	if (kind == KIND_ENVELOPE || !RegistryFeedHorizonsReplayed(db))
		return false;
	RegistryHorizons(db, 2, h);
	*horizon = h[kind == KIND_GROUP ? LINE_GROUP : LINE_WELCOME];
	return true;
}

/*
 * The horizons this standby replayed for every line of a feed (palloc'd,
 * *n lines: the originators' from LINE_FIRST_ORIGINATOR); NULL when it
 * knows none yet.
 */
static uint64 *
ReplayedLines(RegistryDb *db, int *n)
{
	uint64	   *h;

	if (!RegistryFeedHorizonsReplayed(db))
		return NULL;
	*n = RegistryLineCount(db);
	h = palloc(sizeof(uint64) * Max(*n, 1));
	RegistryHorizons(db, *n, h);
	return h;
}

/*
 * Standby: waits until every transaction this standby knows to be running
 * has ended; false when the pass must stop meanwhile.
 */
static bool
WaitForRunning(Summary *s, uint64 gen)
{
	Snapshot	snap = GetLatestSnapshot();
	int			n = snap->xcnt + Max(snap->subxcnt, 0);
	TransactionId *xids = palloc(sizeof(TransactionId) * Max(n, 1));

	/* during recovery the running xids are in subxip */
	memcpy(xids, snap->xip, sizeof(TransactionId) * snap->xcnt);
	if (snap->subxcnt > 0)
		memcpy(xids + snap->xcnt, snap->subxip, sizeof(TransactionId) * snap->subxcnt);
	for (int i = 0; i < n; i++)
		while (TransactionIdIsInProgress(xids[i]))
		{
			uint64		g;

			if (SummaryStateOf(s, &g) != SUMMARY_BUILDING || g != gen || StopWanted())
			{
				pfree(xids);
				return false;
			}
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 10,
							 PG_WAIT_EXTENSION);
			ResetLatch(MyLatch);
			CHECK_FOR_INTERRUPTS();
		}
	pfree(xids);
	return true;
}

/* One pass over a feed's rows of a kind (in a transaction); see the header. */
static void
RunPass(RegistryDb *db, PositionKind kind, Summary *s, uint64 gen)
{
	List	   *tags = NIL;
	List	   *leaves;
	ListCell   *lc;
	Snapshot	snapshot;
	TimestampTz start = GetCurrentTimestamp();
	uint64		rows = 0;
	uint64		covered = SUMMARY_COVERS_ALL;
	uint64	   *lines = NULL;
	int			nlines = 0;
	bool		done = true;
	bool		readable;

	if (RecoveryInProgress())
	{
		/* no horizon replayed yet: the pass is tried again later */
		if (!WaitForRunning(s, gen) ||
			(kind == KIND_ENVELOPE ? (lines = ReplayedLines(db, &nlines)) == NULL
			 : !ReplayedHorizon(db, kind, &covered)))
		{
			(void) SummaryPassEnd(s, gen, false, 0);
			return;
		}
		if (kind == KIND_ENVELOPE)
			covered = SUMMARY_COVERS_LINES;
		/* the catalogs as the transactions waited for left them */
		AcceptInvalidationMessages();
		readable = PassLeaves(db, kind, &leaves, NULL);
	}
	else
	{
		readable = PassLeaves(db, kind, &leaves, &tags);
		/* every writer that may have written before the load has ended */
		if (tags != NIL)
			WaitForLockersMultiple(tags, ShareLock, false);
	}
	if (!readable)
	{
		/* a wave that finds the summary EMPTY asks again */
		pass_unreadable = true;
		(void) SummaryPassEnd(s, gen, false, 0);
		return;
	}
	/* on a standby taken after the horizon was read: it sees every fresh row up to it */
	snapshot = RegisterSnapshot(GetLatestSnapshot());
	foreach(lc, leaves)
		if (!(done = ReadLeaf(s, gen, kind, lfirst_oid(lc), snapshot, &rows, start)))
			break;
	UnregisterSnapshot(snapshot);
	/*
	 * Each originator line counted before the snapshot covers its horizon
	 * then; a line made since starts at 0 and the follower covers it.
	 */
	for (int l = LINE_FIRST_ORIGINATOR; done && l < nlines; l++)
		SummaryCoverLine(db, l, lines[l]);
	if (SummaryPassEnd(s, gen, done, covered))
		ereport(DEBUG1,
				(errmsg("xip83 summary of %s ready: " UINT64_FORMAT " rows in %ld ms",
						OidIsValid(RegistryFeedRelid(db)) ?
						get_rel_name(RegistryFeedRelid(db)) : "xip83's table", rows,
						(long) TimestampDifferenceMilliseconds(start, GetCurrentTimestamp()))));
}

/* A step of the worker, run in a transaction of its own (InTransaction). */
typedef void (*WorkerStep) (RegistryDb *db, PositionKind kind, Summary *s, uint64 gen);

/* Runs a step in a transaction of its own; false when it failed (reported). */
static bool
InTransaction(WorkerStep step, RegistryDb *db, PositionKind kind, Summary *s, uint64 gen,
			  MemoryContext cxt)
{
	volatile bool ok = true;

	PG_TRY();
	{
		SetCurrentStatementStartTimestamp();
		StartTransactionCommand();
		PushActiveSnapshot(GetTransactionSnapshot());
		step(db, kind, s, gen);
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
		ok = false;
	}
	PG_END_TRY();
	MemoryContextSwitchTo(cxt);
	return ok;
}

/* One pass; an error leaves the summary EMPTY, retried after a pause. */
static void
RunPassSafely(RegistryDb *db, PositionKind kind, Summary *s, uint64 gen, MemoryContext cxt)
{
	if (InTransaction(RunPass, db, kind, s, gen, cxt))
		return;
	(void) SummaryPassEnd(s, gen, false, 0);
	(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
					 1000, PG_WAIT_EXTENSION);
	ResetLatch(MyLatch);
}

/*
 * Raises the rows of a leaf with positions in (lo, hi] (envelopes: of
 * originator node), read by its primary key when that leads with the
 * position, or with (originator, sequence) for envelopes; otherwise by a
 * filtered scan.
 */
static void
ReadRange(Summary *s, PositionKind kind, Oid leaf, Snapshot snapshot, int32 node,
		  uint64 lo, uint64 hi)
{
	Relation	rel = table_open(leaf, AccessShareLock);
	Oid			pkid = xip83_primary_key_index(rel);
	LeafColumns c;
	TupleTableSlot *slot;

	if (!LeafColumnsOf(rel, kind, &c) || c.pos_int4)
	{
		/* v3 ids are bigint (register_position insists) */
		table_close(rel, AccessShareLock);
		return;
	}
	slot = table_slot_create(rel, NULL);
	if (OidIsValid(pkid))
	{
		Relation	pk = index_open(pkid, AccessShareLock);
		int2vector *cols = &pk->rd_index->indkey;
		bool		by_node = kind == KIND_ENVELOPE;

		if (by_node ? cols->dim1 < 2 || cols->values[0] != c.node || cols->values[1] != c.pos
			: cols->values[0] != c.pos)
		{
			index_close(pk, AccessShareLock);
			pkid = InvalidOid;
		}
		else
		{
			ScanKeyData keys[3];
			IndexScanDesc scan;
			int			nkeys = 0;
			AttrNumber	pos_col = by_node ? 2 : 1;

			if (by_node)
				ScanKeyInit(&keys[nkeys++], 1, BTEqualStrategyNumber, F_INT4EQ, Int32GetDatum(node));
			ScanKeyInit(&keys[nkeys++], pos_col, BTGreaterStrategyNumber, F_INT8GT,
						Int64GetDatum((int64) lo));
			ScanKeyInit(&keys[nkeys++], pos_col, BTLessEqualStrategyNumber, F_INT8LE,
						Int64GetDatum((int64) hi));
			scan = xip83_index_beginscan(rel, pk, snapshot, nkeys, 0);
			index_rescan(scan, keys, nkeys, NULL, 0);
			while (index_getnext_slot(scan, ForwardScanDirection, slot))
				NoteSlot(s, slot, &c);
			index_endscan(scan);
			index_close(pk, AccessShareLock);
		}
	}
	if (!OidIsValid(pkid))
	{
		TableScanDesc scan = table_beginscan(rel, snapshot, 0, NULL);

		while (table_scan_getnextslot(scan, ForwardScanDirection, slot))
		{
			bool		isnull;
			bool		null_node = false;
			int64		pos = DatumGetInt64(slot_getattr(slot, c.pos, &isnull));

			if (kind == KIND_ENVELOPE &&
				DatumGetInt32(slot_getattr(slot, c.node, &null_node)) != node)
				continue;
			if (!isnull && !null_node && pos > (int64) lo && pos <= (int64) hi)
				NoteSlot(s, slot, &c);
		}
		table_endscan(scan);
	}
	ExecDropSingleTupleTableSlot(slot);
	table_close(rel, AccessShareLock);
}

/*
 * Standby: raises the rows in (covered, H1] for the replayed horizon H1 and
 * covers H1 (the header's step 3).
 */
static void
FollowStep(RegistryDb *db, PositionKind kind, Summary *s, uint64 gen)
{
	uint64		covered = SummaryCoveredOf(s);
	uint64		h1;
	Snapshot	snapshot;
	List	   *leaves;
	ListCell   *lc;

	/* not tracked as this transaction sees it: nothing is covered */
	if (!ReplayedHorizon(db, kind, &h1) || h1 <= covered ||
		!PassLeaves(db, kind, &leaves, NULL))
		return;
	/* taken after h1 was read: every fresh row up to it is visible */
	snapshot = RegisterSnapshot(GetLatestSnapshot());
	foreach(lc, leaves)
		ReadRange(s, kind, lfirst_oid(lc), snapshot, 0, covered, h1);
	UnregisterSnapshot(snapshot);
	SummaryAdvance(s, gen, h1);
}

/* Whether an originator line's replayed horizon passed what the summary covers of it. */
static bool
LineBehind(RegistryDb *db, const uint64 *h, int l)
{
	return h[l] > SummaryLineCovered(db, l);
}

/*
 * Standby, envelopes: the same per originator line, through the
 * (originator, sequence) key.
 */
static void
FollowLinesStep(RegistryDb *db, PositionKind kind, Summary *s, uint64 gen)
{
	int			n;
	uint64	   *h = ReplayedLines(db, &n);
	List	   *leaves;
	Snapshot	snapshot;
	uint64		g;

	if (h == NULL || !PassLeaves(db, kind, &leaves, NULL))
		return;
	/* taken after the horizons were read: every fresh row up to them is visible */
	snapshot = RegisterSnapshot(GetLatestSnapshot());
	for (int l = LINE_FIRST_ORIGINATOR; l < n; l++)
	{
		ListCell   *lc;

		if (!LineBehind(db, h, l))
			continue;
		foreach(lc, leaves)
			ReadRange(s, kind, lfirst_oid(lc), snapshot, RegistryLineNode(db, l),
					  SummaryLineCovered(db, l), h[l]);
		/* a reset meanwhile: the next pass sets every line */
		if (SummaryStateOf(s, &g) != SUMMARY_READY || g != gen)
			break;
		SummaryCoverLine(db, l, h[l]);
	}
	UnregisterSnapshot(snapshot);
}

/*
 * Standby: follows replay when its horizon passed what a READY summary
 * covers. Returns whether the summary is one this standby follows.
 */
static bool
Follow(RegistryDb *db, PositionKind kind, Summary *s, MemoryContext cxt)
{
	uint64		gen;
	uint64		covered;
	uint64		h1;

	if (SummaryStateOf(s, &gen) != SUMMARY_READY ||
		(covered = SummaryCoveredOf(s)) == SUMMARY_COVERS_ALL)
		return false;
	if (covered == SUMMARY_COVERS_LINES)
	{
		int			n;
		uint64	   *h = ReplayedLines(db, &n);
		bool		behind = false;

		for (int l = LINE_FIRST_ORIGINATOR; h != NULL && l < n && !behind; l++)
			behind = LineBehind(db, h, l);
		if (behind && !InTransaction(FollowLinesStep, db, kind, s, gen, cxt))
			SummaryReset(s);
		return true;
	}
	/* looked at without a transaction: most polls find nothing new */
	if (ReplayedHorizon(db, kind, &h1) && h1 > covered &&
		!InTransaction(FollowStep, db, kind, s, gen, cxt))
		SummaryReset(s);		/* the pass starts over */
	return true;
}

/*
 * A promoted standby's kept summary (registry.c, KeepsAfterPromotion), or a
 * standby's pass that ended after the promotion: it vouches for the rows up
 * to its covered position (for envelopes, per originator line), and the rows
 * above were replayed after the follower's last step (or committed above the
 * last horizon record the standby replayed). One snapshot, taken after the
 * load (every originator stored has a line by then, a new one covering 0),
 * sees every row of before the promotion; rows committed later were raised
 * by their writers. Reading what is above the covered position under it lets
 * the summary cover every position, as a primary's pass does.
 */
static void
CatchUp(RegistryDb *db, PositionKind kind, Summary *s, uint64 gen)
{
	uint64		covered = SummaryCoveredOf(s);
	List	   *leaves;
	Snapshot	snapshot;
	ListCell   *lc;

	/* a table not seen tracked: a full pass, once a wave asks for it */
	if (!PassLeaves(db, kind, &leaves, NULL))
	{
		SummaryReset(s);
		return;
	}
	snapshot = RegisterSnapshot(GetLatestSnapshot());
	if (covered == SUMMARY_COVERS_LINES)
	{
		int			n = RegistryLineCount(db);

		for (int l = LINE_FIRST_ORIGINATOR; l < n; l++)
			foreach(lc, leaves)
				ReadRange(s, kind, lfirst_oid(lc), snapshot, RegistryLineNode(db, l),
						  SummaryLineCovered(db, l), (uint64) PG_INT64_MAX);
	}
	else
		foreach(lc, leaves)
			ReadRange(s, kind, lfirst_oid(lc), snapshot, 0, covered, (uint64) PG_INT64_MAX);
	UnregisterSnapshot(snapshot);
	SummaryAdvance(s, gen, SUMMARY_COVERS_ALL);
}

/*
 * Runs every pass wanted in the database, and on a standby follows replay;
 * returns whether one ran or runs (or a summary is followed).
 */
static bool
PassesWanted(MemoryContext cxt, bool *following)
{
	RegistryDb *feeds[64];
	int			n = RegistryFeedsOf(MyDatabaseId, feeds, lengthof(feeds));
	bool		standby = RecoveryInProgress();
	bool		any = false;

	*following = false;
	for (int i = 0; i < n && !StopWanted(); i++)
		for (int k = 0; k < 3 && !StopWanted(); k++)
		{
			Summary    *s = SummaryOf(feeds[i], (PositionKind) k);
			uint64		gen;

			/* a standby follows the kinds it was not told to leave */
			if (s == NULL || (standby && SummaryStandbyOff(s)))
				continue;
			if (standby && Follow(feeds[i], (PositionKind) k, s, cxt))
			{
				any = *following = true;
				continue;
			}
			if (!standby && CatchUpWanted(s, &gen))
			{
				any = true;
				if (!InTransaction(CatchUp, feeds[i], (PositionKind) k, s, gen, cxt))
					SummaryReset(s);	/* a pass rebuilds it */
				continue;
			}
			if (SummaryStateOf(s, NULL) == SUMMARY_BUILDING)
				any = true;
			if (!SummaryPassBegin(s, &gen))
				continue;
			pass_unreadable = false;
			RunPassSafely(feeds[i], (PositionKind) k, s, gen, cxt);
			/* a table not tracked (yet) is no work: the wave that finds it EMPTY asks again */
			any |= !pass_unreadable;
		}
	return any;
}

void
xip83_summary_main(Datum main_arg)
{
	MemoryContext cxt;
	TimestampTz last_work;
	bool		following = false;

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
		if (StopWanted())
			proc_exit(0);
		if (PassesWanted(cxt, &following))
			last_work = GetCurrentTimestamp();
		else if (TimestampDifferenceExceeds(last_work, GetCurrentTimestamp(), BUILDER_IDLE_MS))
			proc_exit(0);
		MemoryContextReset(cxt);
		/* replay wakes nobody: a follower looks again every few milliseconds */
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 following ? FOLLOW_POLL_MS : 200, PG_WAIT_EXTENSION);
	}
}
