/*
 * live.c: live fetch, the rows a live consumer reads after a notice: late
 * rows it has passed, then (cursor, horizon] of one position line, straight
 * off the primary key. The SQL functions (live_group_messages,
 * live_welcome_messages, live_envelopes) are in src/sql/live.c, which reads
 * the arguments, resolves the feed, starts the notifier and waits for a
 * standby's fence before calling in here.
 *
 * Order of operations is the whole point: the horizon is read FIRST, then a
 * new snapshot S is taken (HorizonReadSnapshot), then the late ring is read,
 * then the primary key is scanned up to the horizon in S. Every row at or
 * below a horizon is committed before the horizon is computed (or is a late
 * write), so S sees it; rows past the horizon are left for the next fetch.
 *
 * Late writes (registry.h). A consumer keeps a late cursor besides its
 * position cursor; every returned row carries the late cursor to pass next
 * once the consumer has taken it (a late row: up to its own entry).
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
 * On a standby (src/feed/standby.c) the same order holds with replay in place of
 * time: given the horizons a consumer read on the primary (up_to) and their
 * fence, a fetch waits until replay passed the fence, then takes S; without
 * them it reads up to the horizons the standby replayed. The late ring is
 * the replayed one: an entry's record precedes its row in WAL.
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
#include "access/xlog.h"
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

#include "xip83/errcodes.h"

#include "base/base.h"
#include "rel/rel.h"
#include "feed/feed.h"
#include "scan.h"
#include "wave_d14n.h"

#define LIVE_MAX_COLUMNS 8

/* A leaf of the table read: its slot and where each output column is. */
typedef struct LiveLeaf
{
	TupleTableSlot *slot;		/* made on first use */
	AttrNumber	attnos[LIVE_MAX_COLUMNS];	/* 0: the column comes from the blob table */
} LiveLeaf;

/* One live fetch: the table's leaves, its blob table, and the output being filled. */
typedef struct LiveFetch
{
	RegistryDb *feed;			/* whose horizons and late ring */
	Oid			feed_relid;		/* the table read */
	Source	   *source;			/* its leaves, each with its primary key */
	LiveLeaf   *leaves;
	Source	   *blob;			/* envelopes: the payload's table, or NULL */
	KeyProbes  *blob_probes;
	int			cur;			/* leaf of the row being looked at */
	TupleTableSlot *slot;		/* the row being looked at */
	TupleTableSlot *blob_slot;	/* its blob row, with a blob table */
	SourceLeaf *blob_leaf;
	Snapshot	snapshot;
	ReturnSetInfo *rsinfo;
	MemoryContext row_cxt;
	int			n_out;			/* table columns returned, then late_cursor */
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
	return OidIsValid(RegistryFeedRelid(feed)) ? RegistryFeedRelid(feed) : SourceOwnTable(RegistryKindTable[kind]);
}

/*
 * Opens the table (every leaf, with the privilege, RLS and layout checks of
 * the scans) and its blob table, takes the snapshot (after the caller read
 * the horizon), and finds the output columns by name on every leaf; the
 * payload of envelopes with a blob table comes from there.
 */
static void
LiveFetchBegin(LiveFetch *f, FunctionCallInfo fcinfo, const SourceSpec *spec, Oid blob,
			   const char *const *columns, int n_columns, int limit)
{
	f->source = SourceOpen(f->feed_relid, spec);
	f->blob = OidIsValid(blob) ? SourceOpen(blob, WaveD14nSpecs[2]) : NULL;
	/* a standby's reads come after its replay passed what they read up to */
	f->snapshot = RegisterSnapshot(RecoveryInProgress() ? GetLatestSnapshot()
								   : HorizonReadSnapshot());
	f->blob_probes = f->blob != NULL ? KeyProbesBegin(f->blob, f->snapshot, 2) : NULL;
	f->leaves = palloc0(sizeof(LiveLeaf) * Max(f->source->nleaves, 1));
	f->n_out = n_columns;
	f->envelopes = spec != &WaveV3GroupSource && spec != &WaveV3WelcomeSource;
	for (int l = 0; l < f->source->nleaves; l++)
	{
		SourceLeaf *leaf = &f->source->leaves[l];
		Oid			leafid = RelationGetRelid(leaf->heap);

		if (leaf->walk_index == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("relation %s has no unique index on its positions",
							RelationGetRelationName(leaf->heap)),
					 errhint("Live fetch reads by the primary key: (id), or (originator_node_id, originator_sequence_id).")));
		for (int i = 0; i < n_columns; i++)
		{
			bool		from_blob = f->blob != NULL && strcmp(columns[i], "originator_envelope") == 0;

			f->leaves[l].attnos[i] = from_blob ? 0 : get_attnum(leafid, columns[i]);
			if (!from_blob && f->leaves[l].attnos[i] == InvalidAttrNumber)
				ereport(ERROR,
						(errcode(ERRCODE_UNDEFINED_COLUMN),
						 errmsg("column \"%s\" of relation %s does not exist",
								columns[i], RelationGetRelationName(leaf->heap))));
		}
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
	const AttrNumber *attnos = f->leaves[f->cur].attnos;

	if (!f->envelopes)
	{
		*node = 0;
		return DatumGetInt64(slot_getattr(f->slot, attnos[0], &isnull));
	}
	*node = DatumGetInt32(slot_getattr(f->slot, attnos[0], &isnull));
	return DatumGetInt64(slot_getattr(f->slot, attnos[1], &isnull));
}

static TransactionId
XminOf(TupleTableSlot *slot)
{
	bool		isnull;

	return DatumGetTransactionId(slot_getsysattr(slot, MinTransactionIdAttributeNumber, &isnull));
}

/*
 * Whether the row in the slot was written by (sub)transaction xid: its meta
 * row or, with a blob table, its blob row (either may be the late one).
 */
static bool
SlotWrittenBy(LiveFetch *f, TransactionId xid)
{
	return TransactionIdEquals(XminOf(f->slot), xid) ||
		(f->blob_slot != NULL && TransactionIdEquals(XminOf(f->blob_slot), xid));
}

/* Whether the row in the slot is a late row still owed through the late lane. */
static bool
Excluded(LiveFetch *f)
{
	int32		node;
	int64		position;

	if (f->n_excluded == 0)
		return false;
	position = SlotPosition(f, &node);
	for (int i = 0; i < f->n_excluded; i++)
		if (f->excluded[i].position == position && f->excluded[i].node == node &&
			SlotWrittenBy(f, f->excluded[i].xid))
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
	const AttrNumber *attnos = f->leaves[f->cur].attnos;

	for (int i = 0; i < f->n_out; i++)
	{
		TupleTableSlot *slot = attnos[i] != 0 ? f->slot : f->blob_slot;
		AttrNumber	attno = attnos[i] != 0 ? attnos[i]
			: f->blob_leaf->attnos[ENVELOPE_COL_BLOB_PAYLOAD];
		Form_pg_attribute att = TupleDescAttr(slot->tts_tupleDescriptor, attno - 1);

		values[i] = slot_getattr(slot, attno, &nulls[i]);
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
 * Scans the primary key of every leaf that may hold positions in
 * (lower, upper] of the originator (envelopes) for them, in key order; emit
 * decides what to do with each visible row and returns false to stop. With
 * a blob table, a row whose blob row is not visible is not servable yet and
 * is passed over (its blob's write registers it, as a late write if need be).
 */
static void
LiveFetchScan(LiveFetch *f, int32 originator, int64 lower, int64 upper,
			  bool (*emit) (LiveFetch *f, void *arg), void *arg)
{
	ScanKeyData keys[3];
	int			nkeys = 0;
	int			keycol = f->envelopes ? 2 : 1;
	bool		go = true;

	if (upper <= lower)
		return;
	if (f->envelopes)
		ScanKeyInit(&keys[nkeys++], 1, BTEqualStrategyNumber, F_INT4EQ,
					Int32GetDatum(originator));
	ScanKeyInit(&keys[nkeys++], keycol, BTGreaterStrategyNumber, F_INT8GT,
				Int64GetDatum(lower));
	ScanKeyInit(&keys[nkeys++], keycol, BTLessEqualStrategyNumber, F_INT8LE,
				Int64GetDatum(upper));

	for (int l = 0; go && l < f->source->nleaves; l++)
	{
		SourceLeaf *leaf = &f->source->leaves[l];
		IndexScanDesc scan;

		if (leaf->position_hi <= lower + 1 || leaf->position_lo > upper ||
			(f->envelopes && !SourceLeafMayHoldOriginator(leaf, originator)))
			continue;
		if (f->leaves[l].slot == NULL)
			f->leaves[l].slot = table_slot_create(leaf->heap, NULL);
		f->cur = l;
		f->slot = f->leaves[l].slot;
		scan = xip83_index_beginscan(leaf->heap, leaf->walk_index, f->snapshot, nkeys, 0);
		index_rescan(scan, keys, nkeys, NULL, 0);
		while (go && index_getnext_slot(scan, ForwardScanDirection, f->slot))
		{
			CHECK_FOR_INTERRUPTS();
			f->blob_slot = NULL;
			if (f->blob != NULL)
			{
				int32		node;
				int64		position = SlotPosition(f, &node);

				f->blob_slot = KeyProbeExact(f->blob_probes, node, position, &f->blob_leaf);
				if (f->blob_slot == NULL)
					continue;
			}
			go = emit(f, arg);
		}
		index_endscan(scan);
	}
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

	if (SlotWrittenBy(f, e->xid))
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
	int64		next_cursor;

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
				 errdetail_plural("The late ring keeps the newest %d late write of the database, in memory since the server started.",
								  "The late ring keeps the newest %d late writes of the database, in memory since the server started.",
								  xip83_late_ring_size, xip83_late_ring_size),
				 errhint("Resynchronize: replay the consumer's topics up to the current horizon as a wave, then follow from xip83.late_cursor(); raise xip83.late_ring_size to make overflows rarer.")));
	next_cursor = late_after;
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
			next_cursor = (int64) e->seq;
	}
	if (!blocked)
		next_cursor = (int64) late.head;

	/*
	 * A late row carries the cursor of its own entry, not the fetch's: a
	 * client that takes rows one by one and loses the rest of the result (a
	 * dropped connection, a LIMIT over the call) must not pass the late rows
	 * it never received. Range rows carry the whole fetch's cursor: the
	 * entries it passes are delivered, dead, or in the range itself, before
	 * any range row a client could stop at or beyond its position.
	 */
	for (int i = 0; i < n_deliver; i++)
	{
		f->late_cursor = (int64) deliver[i].seq;
		LiveFetchScan(f, deliver[i].node, deliver[i].position - 1, deliver[i].position,
					  EmitLateRow, NULL);
	}
	f->late_cursor = next_cursor;
}

/* Releases the scan's resources (an ERROR releases them through the resource owner). */
static void
LiveFetchEnd(LiveFetch *f)
{
	for (int l = 0; l < f->source->nleaves; l++)
		if (f->leaves[l].slot != NULL)
			ExecDropSingleTupleTableSlot(f->leaves[l].slot);
	if (f->blob != NULL)
	{
		KeyProbesEnd(f->blob_probes);
		SourceClose(f->blob);
	}
	UnregisterSnapshot(f->snapshot);
	SourceClose(f->source);
	MemoryContextDelete(f->row_cxt);
}

/* A v3 consumer's cursor: one for the whole kind. */
static int64
V3Cursor(const LateEntry *e, void *arg)
{
	return *(const int64 *) arg;
}

/*
 * The rows of xip83.live_group_messages or live_welcome_messages (kind) into
 * the materialized result of the SQL call whose fcinfo it is given: late
 * rows, then (after, horizon] by id, at most limit rows. The caller resolved
 * the feed and, with up_to given, waited for its fence on a standby.
 */
void
LiveFetchMessages(FunctionCallInfo fcinfo, PositionKind kind, RegistryDb *feed, int64 after,
				  int limit, int64 late_after, bool up_to_given, int64 up_to)
{
	static const char *const group_columns[] = {
		"id", "created_at", "group_id", "data", "is_commit", "sender_hmac", "should_push"
	};
	static const char *const welcome_columns[] = {
		"id", "created_at", "installation_key", "data", "hpke_public_key",
		"wrapper_algorithm", "welcome_metadata", "message_type"
	};
	LiveFetch	f;
	int64		horizon;

	f.feed = feed;
	f.feed_relid = FeedTable(f.feed, kind);
	if (up_to_given)
	{
		/* on the primary, never past what it vouches for now */
		horizon = RecoveryInProgress() ? up_to
			: Min(up_to, HorizonOfLine(f.feed, kind == KIND_WELCOME ? LINE_WELCOME : LINE_GROUP));
	}
	else
		horizon = HorizonOfLine(f.feed, kind == KIND_WELCOME ? LINE_WELCOME : LINE_GROUP);
	if (kind == KIND_GROUP)
		LiveFetchBegin(&f, fcinfo, &WaveV3GroupSource, InvalidOid, group_columns,
					   lengthof(group_columns), limit);
	else
		LiveFetchBegin(&f, fcinfo, &WaveV3WelcomeSource, InvalidOid, welcome_columns,
					   lengthof(welcome_columns), limit);
	LiveFetchLate(&f, kind, late_after, V3Cursor, &after, after > 0);
	LiveFetchScan(&f, 0, after, horizon, EmitRangeRow, NULL);
	LiveFetchEnd(&f);
}

/* A requested originator and its cursor. */
typedef struct OriginatorCursor
{
	int32		node;
	int64		after;
	int64		up_to;			/* -1: none given */
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
 * A tracked envelope table is read with the blob table it was tracked with,
 * and no other (22023): the blob's writes are the ones registered.
 */
void
LiveRequireFeedBlob(RegistryDb *feed, Oid blob)
{
	TrackedSource t;
	Oid			want = InvalidOid;

	if (OidIsValid(RegistryFeedRelid(feed)) && TrackedFind(RegistryFeedRelid(feed), &t))
		want = t.blob;
	if (blob != want)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("blob_source must be the blob table the source is followed with"),
				 errdetail(OidIsValid(want) ? "The source was tracked with blob table %s."
						   : "The source was tracked without a blob table.",
						   OidIsValid(want) ? get_rel_name(want) : "")));
}

/*
 * The rows of xip83.live_envelopes into the materialized result of the SQL
 * call whose fcinfo it is given: late envelopes of listed originators
 * (nodes), then per listed originator envelopes in (after, its horizon],
 * ordered (originator, sequence), at most limit rows. An originator listed
 * twice counts once, with its lowest cursor. afters and, when not NULL,
 * up_tos are as long as nodes. The caller resolved the feed, checked its
 * blob table (LiveRequireFeedBlob) and, with up_tos given, waited for their
 * fence on a standby.
 */
void
LiveFetchEnvelopes(FunctionCallInfo fcinfo, RegistryDb *feed, Oid blob, const ArgArray *nodes,
				   const ArgArray *afters, const ArgArray *up_tos, int limit,
				   int64 late_after)
{
	static const char *const columns[] = {
		"originator_node_id", "originator_sequence_id", "gateway_time", "topic",
		"originator_envelope"
	};
	OriginatorCursors cs;
	int64	   *horizons;
	bool		any_set = false;
	bool		given = up_tos != NULL;
	HorizonSet	set;
	LiveFetch	f;
	int			j = 0;

	cs.c = palloc(sizeof(OriginatorCursor) * (nodes->n + 1));
	cs.n = 0;
	for (int i = 0; i < nodes->n; i++)
	{
		cs.c[i].node = DatumGetInt32(nodes->values[i]);
		cs.c[i].after = DatumGetInt64(afters->values[i]);
		cs.c[i].up_to = given ? DatumGetInt64(up_tos->values[i]) : -1;
		any_set |= cs.c[i].after > 0;
	}
	qsort(cs.c, nodes->n, sizeof(OriginatorCursor), CompareCursors);
	for (int i = 0; i < nodes->n; i++)
		if (i == 0 || cs.c[i].node != cs.c[cs.n - 1].node)
			cs.c[cs.n++] = cs.c[i];

	/* every horizon before the snapshot; an originator without envelopes has 0 */
	f.feed = feed;
	f.feed_relid = FeedTable(f.feed, KIND_ENVELOPE);
	if (given && RecoveryInProgress())
	{
		set.n_originators = 0;
		set.originator_node_ids = NULL;
		set.originator_horizons = NULL;
	}
	else
		HorizonCollectFeed(f.feed, &set);
	horizons = palloc(sizeof(int64) * (cs.n + 1));
	for (int i = 0; i < cs.n; i++)
	{
		while (j < set.n_originators && set.originator_node_ids[j] < cs.c[i].node)
			j++;
		horizons[i] = j < set.n_originators && set.originator_node_ids[j] == cs.c[i].node
			? set.originator_horizons[j] : 0;
		/* a standby reads up to what it was given; the primary never past its own */
		if (given)
			horizons[i] = RecoveryInProgress() ? cs.c[i].up_to : Min(horizons[i], cs.c[i].up_to);
	}

	LiveFetchBegin(&f, fcinfo, WaveD14nSpecs[OidIsValid(blob) ? 1 : 0], blob, columns,
				   lengthof(columns), limit);
	LiveFetchLate(&f, KIND_ENVELOPE, late_after, EnvelopeCursor, &cs, any_set);
	for (int i = 0; i < cs.n && f.rows < f.limit; i++)
		LiveFetchScan(&f, cs.c[i].node, cs.c[i].after, horizons[i], EmitRangeRow, NULL);
	LiveFetchEnd(&f);
}
