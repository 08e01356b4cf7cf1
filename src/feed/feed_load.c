/*
 * feed_load.c: loading a feed after a start, for the registry
 * (registry_load_feed): a v3 line's high becomes the larger of its sequence's
 * last value and the highest committed id; each stored originator's high its
 * highest committed sequence id (a loose scan of the primary key). The reads
 * are direct index and buffer reads under a new MVCC snapshot: no SQL runs,
 * and nothing runs as another role.
 *
 * This runs on a feed's first attach, which read paths make too (a horizon
 * read is the first use of a feed after a start): docs/design.md says why
 * that side effect stays.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/relscan.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_sequence.h"
#include "catalog/pg_type.h"
#include "commands/sequence.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "base/base.h"
#include "core/core.h"
#include "rel/rel.h"
#include "feed_internal.h"

/* A sequence's last value, read off its page (no privilege check: bookkeeping). */
int64
FeedSequenceLastValue(Oid seqid)
{
	Relation	rel;
	Buffer		buf;
	Page		page;
	HeapTupleHeader td;
	Form_pg_sequence_data seq;
	int64		v;

	if (!OidIsValid(seqid))
		return 0;
	rel = relation_open(seqid, AccessShareLock);
	buf = ReadBuffer(rel, 0);
	LockBuffer(buf, BUFFER_LOCK_SHARE);
	page = BufferGetPage(buf);
	td = (HeapTupleHeader) PageGetItem(page, PageGetItemId(page, FirstOffsetNumber));
	seq = (Form_pg_sequence_data) ((char *) td + td->t_hoff);
	v = seq->is_called ? seq->last_value : seq->last_value - 1;
	UnlockReleaseBuffer(buf);
	relation_close(rel, AccessShareLock);
	return Max(v, 0);
}

/*
 * The first (or last) primary-key entry of a table matching the keys, under
 * the snapshot: column `col` of it in *out. False when none.
 */
static bool
ProbeKey(Relation heap, Relation index, Snapshot snapshot, ScanKey keys, int nkeys,
		 ScanDirection dir, AttrNumber col, int64 *out)
{
	IndexScanDesc scan = xip83_index_beginscan(heap, index, snapshot, nkeys, 0);
	TupleTableSlot *slot = table_slot_create(heap, NULL);
	bool		found = false;
	bool		isnull;

	index_rescan(scan, keys, nkeys, NULL, 0);
	if (index_getnext_slot(scan, dir, slot))
	{
		Datum		d = slot_getattr(slot, col, &isnull);

		if (!isnull)
		{
			*out = TupleDescAttr(slot->tts_tupleDescriptor, col - 1)->atttypid == INT4OID
				? DatumGetInt32(d) : DatumGetInt64(d);
			found = true;
		}
	}
	index_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);
	return found;
}

/* Opens a table and its primary key; false when there is none. */
static bool
OpenWithKey(Oid relid, Relation *heap, Relation *index)
{
	Oid			pk;

	if (!OidIsValid(relid) || get_rel_relkind(relid) != RELKIND_RELATION)
		return false;
	*heap = table_open(relid, AccessShareLock);
	pk = xip83_primary_key_index(*heap);
	if (!OidIsValid(pk))
	{
		table_close(*heap, AccessShareLock);
		return false;
	}
	*index = index_open(pk, AccessShareLock);
	return true;
}

static void
CloseWithKey(Relation heap, Relation index)
{
	index_close(index, AccessShareLock);
	table_close(heap, AccessShareLock);
}

/* The highest committed id of a v3 table, or its sequence's last value if higher. */
static int64
LoadV3High(Oid table, Oid sequence, Snapshot snapshot)
{
	Relation	heap;
	Relation	index;
	int64		high = FeedSequenceLastValue(sequence);
	int64		max;
	AttrNumber	id_col = get_attnum(table, "id");

	if (id_col == InvalidAttrNumber || !OpenWithKey(table, &heap, &index))
		return high;
	if (ProbeKey(heap, index, snapshot, NULL, 0, BackwardScanDirection, id_col, &max))
		high = Max(high, max);
	CloseWithKey(heap, index);
	return high;
}

/*
 * Every originator stored in one table (a leaf of a partitioned one) with its
 * highest committed sequence id: a loose scan of the primary key.
 */
static void
LoadOriginators(RegistryDb *db, Oid relid, Snapshot snapshot)
{
	Relation	heap;
	Relation	index;
	ScanKeyData key;
	int64		node;
	bool		first = true;
	int32		last = 0;

	AttrNumber	node_col = get_attnum(relid, "originator_node_id");
	AttrNumber	seq_col = get_attnum(relid, "originator_sequence_id");

	if (node_col == InvalidAttrNumber || seq_col == InvalidAttrNumber ||
		!OpenWithKey(relid, &heap, &index))
		return;
	for (;;)
	{
		int64		high = 0;

		CHECK_FOR_INTERRUPTS();
		ScanKeyInit(&key, 1, BTGreaterStrategyNumber, F_INT4GT, Int32GetDatum(last));
		if (!ProbeKey(heap, index, snapshot, first ? NULL : &key, first ? 0 : 1,
					  ForwardScanDirection, node_col, &node))
			break;
		first = false;
		last = (int32) node;
		ScanKeyInit(&key, 1, BTEqualStrategyNumber, F_INT4EQ, Int32GetDatum(last));
		(void) ProbeKey(heap, index, snapshot, &key, 1, BackwardScanDirection, seq_col, &high);
		RegistryLoadOriginator(db, last, (uint64) Max(high, 0));
		if (last == PG_INT32_MAX)
			break;
	}
	CloseWithKey(heap, index);
}

/*
 * registry_load_feed: a fresh entry's highs from the sequences and tables
 * (first use after a start): xip83's own three tables, or the tracked table
 * of a feed with every leaf.
 */
static void
FeedLoad(RegistryDb *db, Oid relid, int64 *group_high, int64 *welcome_high)
{
	Snapshot	snapshot = RegisterSnapshot(GetLatestSnapshot());
	TrackedSource t;

	if (!OidIsValid(relid))
	{
		*group_high = LoadV3High(SourceOwnRelation("group_messages"),
								SourceOwnRelation("group_messages_id_seq"), snapshot);
		*welcome_high = LoadV3High(SourceOwnRelation("welcome_messages"),
								  SourceOwnRelation("welcome_messages_id_seq"), snapshot);
		LoadOriginators(db, SourceOwnRelation("envelopes"), snapshot);
	}
	else if (TrackedFind(relid, &t) && t.source == relid)
	{
		if (t.kind == KIND_GROUP)
			*group_high = LoadV3High(t.source, t.sequence, snapshot);
		else if (t.kind == KIND_WELCOME)
			*welcome_high = LoadV3High(t.source, t.sequence, snapshot);
		else
		{
			List	   *leaves = find_all_inheritors(t.source, AccessShareLock, NULL);
			ListCell   *lc;

			foreach(lc, leaves)
				LoadOriginators(db, lfirst_oid(lc), snapshot);
		}
	}
	UnregisterSnapshot(snapshot);
	/* the rows stored so far are for the summary's pass (summary_build.c) */
	SummaryBuilderEnsureRunning();
}

void
FeedLoadInstall(void)
{
	registry_load_feed = FeedLoad;
}
