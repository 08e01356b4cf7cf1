/*
 * wave_d14n.c: xip83.envelope_wave_scan, one page of a d14n wave.
 *
 * A page is the envelopes after each (topic, originator) floor, up to the
 * originator's ceiling and past the scan cursor, in (originator, sequence)
 * order. Originators are visited one at a time in ascending order; within one
 * originator a k-way merge by sequence runs over one topic cursor per
 * (topic, originator) entry and leaf (a partitioned source has several leaves
 * per originator, one per sequence band). The merge is lazy: a cursor enters
 * the heap with a lower bound on its next sequence (its floor, or its band's
 * start) and descends its index only when that bound reaches the top, so a
 * page reads only the index entries it returns plus one probe per topic that
 * could still contribute, and never a topic or band beyond the page's end.
 *
 * Cursors read their rows in small batches (sequence and TID only, growing to
 * CURSOR_BATCH_MAX) through one index scan per leaf that is rescanned for each
 * read, so memory is a few bytes per wave entry plus one scan per leaf,
 * whatever the wave's size. Rows are fetched again by TID when returned; the
 * payload comes from the same row or, with blob_source, from a primary-key
 * probe of the blob table (a meta row without a blob row is left out, as the
 * join in the SQL definition leaves it out).
 *
 * Locking: AccessShareLock on every relation read, held to transaction end
 * (see wave_d14n_source.c). All reads use the statement's active snapshot, so
 * a page is consistent with a plain SELECT in the same statement.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/stratnum.h"
#include "access/tableam.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "lib/binaryheap.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/tuplestore.h"

#include "args.h"
#include "wave_d14n.h"
#include "xip83.h"

PG_FUNCTION_INFO_V1(envelope_wave_scan);

#define CURSOR_BATCH_FIRST	4
#define CURSOR_BATCH_MAX	64

/* One (topic, originator) entry of the wave with its floor. */
typedef struct WaveEntry
{
	Datum		topic;			/* bytea */
	int32		originator;
	int64		floor;
} WaveEntry;

/* One originator's pinned ceiling. */
typedef struct WaveCeiling
{
	int32		originator;
	int64		ceiling;
} WaveCeiling;

/* The rows of one wave entry in one leaf, read in batches. */
typedef struct TopicCursor
{
	const WaveEntry *entry;
	EnvelopeLeaf *leaf;
	int64		after;			/* the next read returns sequences > after */
	bool		exhausted;		/* nothing left in the leaf past `after` */
	int			batch;			/* rows the next read asks for */
	int			pos;			/* next buffered row */
	int			n;				/* buffered rows */
	int64	   *sequences;
	ItemPointerData *tids;
} TopicCursor;

/* The state of one call. */
typedef struct WaveScan
{
	EnvelopeSource *meta;
	EnvelopeSource *blob;		/* NULL: the payload is in meta */
	Tuplestorestate *out;
	TupleDesc	out_desc;
	MemoryContext row_cxt;
	int			remaining;		/* rows the page may still return */
} WaveScan;

/* Orders entries by originator, then topic bytes, then floor. */
static int
CompareEntries(const void *a, const void *b)
{
	const WaveEntry *x = a;
	const WaveEntry *y = b;
	int			xl,
				yl,
				c;

	if (x->originator != y->originator)
		return x->originator < y->originator ? -1 : 1;
	xl = VARSIZE_ANY_EXHDR(DatumGetPointer(x->topic));
	yl = VARSIZE_ANY_EXHDR(DatumGetPointer(y->topic));
	c = memcmp(VARDATA_ANY(DatumGetPointer(x->topic)),
			   VARDATA_ANY(DatumGetPointer(y->topic)), Min(xl, yl));
	if (c != 0)
		return c;
	if (xl != yl)
		return xl < yl ? -1 : 1;
	if (x->floor != y->floor)
		return x->floor < y->floor ? -1 : 1;
	return 0;
}

/* Orders ceilings by originator, then ceiling. */
static int
CompareCeilings(const void *a, const void *b)
{
	const WaveCeiling *x = a;
	const WaveCeiling *y = b;

	if (x->originator != y->originator)
		return x->originator < y->originator ? -1 : 1;
	if (x->ceiling != y->ceiling)
		return x->ceiling < y->ceiling ? -1 : 1;
	return 0;
}

/* Builds the wave's entries: sorted, a repeated (topic, originator) once with its lowest floor. */
static WaveEntry *
BuildEntries(const ArgArray *topics, const ArgArray *nodes, const ArgArray *floors, int *n)
{
	WaveEntry  *entries = palloc(sizeof(WaveEntry) * Max(topics->n, 1));
	int			kept = 0;

	for (int i = 0; i < topics->n; i++)
	{
		entries[i].topic = topics->values[i];
		entries[i].originator = DatumGetInt32(nodes->values[i]);
		entries[i].floor = DatumGetInt64(floors->values[i]);
	}
	qsort(entries, topics->n, sizeof(WaveEntry), CompareEntries);
	for (int i = 0; i < topics->n; i++)
	{
		WaveEntry	probe = entries[i];

		/* equal but for the floor: a repeat of the entry just kept */
		if (kept > 0)
		{
			probe.floor = entries[kept - 1].floor;
			if (CompareEntries(&probe, &entries[kept - 1]) == 0)
				continue;
		}
		entries[kept++] = entries[i];
	}
	*n = kept;
	return entries;
}

/* Builds the ceilings: sorted, a repeated originator once with its lowest ceiling. */
static WaveCeiling *
BuildCeilings(const ArgArray *nodes, const ArgArray *ceilings, int *n)
{
	WaveCeiling *result = palloc(sizeof(WaveCeiling) * Max(nodes->n, 1));
	int			kept = 0;

	for (int i = 0; i < nodes->n; i++)
	{
		result[i].originator = DatumGetInt32(nodes->values[i]);
		result[i].ceiling = DatumGetInt64(ceilings->values[i]);
	}
	qsort(result, nodes->n, sizeof(WaveCeiling), CompareCeilings);
	for (int i = 0; i < nodes->n; i++)
		if (kept == 0 || result[kept - 1].originator != result[i].originator)
			result[kept++] = result[i];
	*n = kept;
	return result;
}

/* The merge key of a cursor: its next sequence, or a lower bound on it. */
static inline int64
CursorKey(const TopicCursor *c)
{
	if (c->pos < c->n)
		return c->sequences[c->pos];
	return Max(c->after + 1, c->leaf->sequence_lo);
}

/* binaryheap order: the cursor with the lowest key on top. */
static int
CursorHeapCompare(Datum a, Datum b, void *arg)
{
	int64		ka = CursorKey((const TopicCursor *) DatumGetPointer(a));
	int64		kb = CursorKey((const TopicCursor *) DatumGetPointer(b));

	return ka < kb ? 1 : ka > kb ? -1 : 0;
}

/* Reads the cursor's next batch of (sequence, TID) from its leaf's topic index. */
static void
CursorRead(TopicCursor *c, int64 ceiling)
{
	EnvelopeLeaf *leaf = c->leaf;
	ScanKeyData keys[4];

	CHECK_FOR_INTERRUPTS();
	ScanKeyInit(&keys[0], 1, BTEqualStrategyNumber, F_BYTEAEQ, c->entry->topic);
	ScanKeyInit(&keys[1], 2, BTEqualStrategyNumber, F_INT4EQ,
				Int32GetDatum(c->entry->originator));
	ScanKeyInit(&keys[2], 3, BTGreaterStrategyNumber, F_INT8GT, Int64GetDatum(c->after));
	ScanKeyInit(&keys[3], 3, BTLessEqualStrategyNumber, F_INT8LE, Int64GetDatum(ceiling));
	EnvelopeLeafScan(leaf, keys, 4);

	if (c->sequences == NULL)
	{
		c->sequences = palloc(sizeof(int64) * CURSOR_BATCH_MAX);
		c->tids = palloc(sizeof(ItemPointerData) * CURSOR_BATCH_MAX);
	}
	c->pos = c->n = 0;
	while (c->n < c->batch &&
		   EnvelopeLeafNext(leaf, ForwardScanDirection))
	{
		bool		isnull;

		c->sequences[c->n] = DatumGetInt64(slot_getattr(leaf->slot, leaf->sequence_att,
														&isnull));
		c->tids[c->n] = leaf->slot->tts_tid;
		c->n++;
	}
	ExecClearTuple(leaf->slot);
	if (c->n < c->batch)
		c->exhausted = true;
	if (c->n > 0)
		c->after = c->sequences[c->n - 1];
	c->batch = Min(c->batch * 2, CURSOR_BATCH_MAX);
}

/* Finds a row's payload in the blob source; false when it has none. */
static bool
FetchBlob(WaveScan *ws, int32 originator, int64 sequence, Datum *envelope, bool *isnull)
{
	for (int i = 0; i < ws->blob->nleaves; i++)
	{
		EnvelopeLeaf *leaf = &ws->blob->leaves[i];
		ScanKeyData keys[2];
	
		if (!EnvelopeLeafMayHold(leaf, originator, sequence - 1, sequence))
			continue;
		ScanKeyInit(&keys[0], 1, BTEqualStrategyNumber, F_INT4EQ, Int32GetDatum(originator));
		ScanKeyInit(&keys[1], 2, BTEqualStrategyNumber, F_INT8EQ, Int64GetDatum(sequence));
		EnvelopeLeafScan(leaf, keys, 2);
		if (EnvelopeLeafNext(leaf, ForwardScanDirection))
		{
			*envelope = slot_getattr(leaf->slot, leaf->envelope_att, isnull);
			if (!*isnull)
				*envelope = PointerGetDatum(PG_DETOAST_DATUM_PACKED(*envelope));
			return true;
		}
	}
	return false;
}

/* Returns the cursor's next buffered row as an output row, when it still exists. */
static void
EmitRow(WaveScan *ws, TopicCursor *c)
{
	EnvelopeLeaf *leaf = c->leaf;
	int64		sequence = c->sequences[c->pos];
	Datum		values[5];
	bool		nulls[5] = {false, false, false, false, false};
	MemoryContext old;

	MemoryContextReset(ws->row_cxt);
	old = MemoryContextSwitchTo(ws->row_cxt);
	if (table_tuple_fetch_row_version(leaf->heap, &c->tids[c->pos], ws->meta->snapshot,
									  leaf->fetch_slot))
	{
		bool		found = true;

		values[0] = Int32GetDatum(c->entry->originator);
		values[1] = Int64GetDatum(sequence);
		values[2] = slot_getattr(leaf->fetch_slot, leaf->gateway_time_att, &nulls[2]);
		values[3] = c->entry->topic;
		if (ws->blob)
			found = FetchBlob(ws, c->entry->originator, sequence, &values[4], &nulls[4]);
		else
		{
			values[4] = slot_getattr(leaf->fetch_slot, leaf->envelope_att, &nulls[4]);
			if (!nulls[4])
				values[4] = PointerGetDatum(PG_DETOAST_DATUM_PACKED(values[4]));
		}
		if (found)
		{
			tuplestore_putvalues(ws->out, ws->out_desc, values, nulls);
			ws->remaining--;
		}
		ExecClearTuple(leaf->fetch_slot);
		if (ws->blob)
			for (int i = 0; i < ws->blob->nleaves; i++)
				ExecClearTuple(ws->blob->leaves[i].slot);
	}
	MemoryContextSwitchTo(old);
	c->pos++;
}

/*
 * Merges one originator's cursors by sequence into the page, from past `after`
 * (per entry, the higher of it and the entry's floor) up to the ceiling.
 */
static void
ScanOriginator(WaveScan *ws, const WaveEntry *entries, int nentries, int64 after,
			   int64 ceiling)
{
	int32		originator = entries[0].originator;
	int			ncursors = 0;
	TopicCursor *cursors;
	binaryheap *heap;

	for (int i = 0; i < nentries; i++)
		for (int l = 0; l < ws->meta->nleaves; l++)
			if (EnvelopeLeafMayHold(&ws->meta->leaves[l], originator,
									Max(entries[i].floor, after), ceiling))
				ncursors++;
	if (ncursors == 0)
		return;

	cursors = palloc0(sizeof(TopicCursor) * ncursors);
	heap = binaryheap_allocate(ncursors, CursorHeapCompare, NULL);
	ncursors = 0;
	for (int i = 0; i < nentries; i++)
	{
		int64		from = Max(entries[i].floor, after);

		if (from >= ceiling)
			continue;
		for (int l = 0; l < ws->meta->nleaves; l++)
		{
			TopicCursor *c = &cursors[ncursors];

			if (!EnvelopeLeafMayHold(&ws->meta->leaves[l], originator, from, ceiling))
				continue;
			c->entry = &entries[i];
			c->leaf = &ws->meta->leaves[l];
			c->after = from;
			c->batch = CURSOR_BATCH_FIRST;
			binaryheap_add_unordered(heap, PointerGetDatum(c));
			ncursors++;
		}
	}
	binaryheap_build(heap);

	while (ws->remaining > 0 && !binaryheap_empty(heap))
	{
		TopicCursor *c = (TopicCursor *) DatumGetPointer(binaryheap_first(heap));

		CHECK_FOR_INTERRUPTS();
		if (c->pos < c->n)
			EmitRow(ws, c);
		else if (!c->exhausted)
			CursorRead(c, ceiling);

		if (c->pos >= c->n && c->exhausted)
			(void) binaryheap_remove_first(heap);
		else
			binaryheap_replace_first(heap, PointerGetDatum(c));
	}
	binaryheap_free(heap);
	for (int i = 0; i < ncursors; i++)
		if (cursors[i].sequences)
		{
			pfree(cursors[i].sequences);
			pfree(cursors[i].tids);
		}
	pfree(cursors);
}

/*
 * envelope_wave_scan(cursor_topics, cursor_node_ids, cursor_sequence_ids,
 *                    ceiling_node_ids, ceiling_sequence_ids, scan_node_id,
 *                    scan_sequence_id, row_limit, source, blob_source)
 * One page of a d14n wave; see the file header for the semantics.
 */
Datum
envelope_wave_scan(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ArgArray	topics = ArgGetArray(fcinfo, 0, "cursor_topics", BYTEAOID);
	ArgArray	nodes = ArgGetArray(fcinfo, 1, "cursor_node_ids", INT4OID);
	ArgArray	floors = ArgGetArray(fcinfo, 2, "cursor_sequence_ids", INT8OID);
	ArgArray	ceiling_nodes = ArgGetArray(fcinfo, 3, "ceiling_node_ids", INT4OID);
	ArgArray	ceiling_values = ArgGetArray(fcinfo, 4, "ceiling_sequence_ids", INT8OID);
	int32		scan_node;
	int64		scan_sequence;
	int32		row_limit;
	WaveEntry  *entries;
	WaveCeiling *ceilings;
	int			nentries,
				nceilings,
				next_ceiling = 0;
	WaveScan	ws;

	ArgRequireSameLength(&topics, &nodes);
	ArgRequireSameLength(&topics, &floors);
	ArgRequireSameLength(&ceiling_nodes, &ceiling_values);
	ArgRequireNonEmptyTopics(&topics);
	ArgRequire(fcinfo, 5, "scan_node_id");
	ArgRequire(fcinfo, 6, "scan_sequence_id");
	ArgRequire(fcinfo, 7, "row_limit");
	ArgRequire(fcinfo, 8, "source");
	scan_node = PG_GETARG_INT32(5);
	scan_sequence = PG_GETARG_INT64(6);
	row_limit = PG_GETARG_INT32(7);
	if (row_limit < 1 || row_limit > xip83_max_page_limit)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"row_limit\" must be between 1 and %d", xip83_max_page_limit),
				 errdetail("It is %d.", row_limit),
				 errhint("Raise xip83.max_page_limit for larger pages.")));

	InitMaterializedSRF(fcinfo, 0);
	entries = BuildEntries(&topics, &nodes, &floors, &nentries);
	ceilings = BuildCeilings(&ceiling_nodes, &ceiling_values, &nceilings);

	ws.meta = EnvelopeSourceOpen(PG_GETARG_OID(8), "source",
								 ENVELOPE_NEED_META |
								 (PG_ARGISNULL(9) ? ENVELOPE_NEED_BLOB : 0),
								 ENVELOPE_TOPIC_INDEX);
	ws.blob = PG_ARGISNULL(9) ? NULL
		: EnvelopeSourceOpen(PG_GETARG_OID(9), "blob_source", ENVELOPE_NEED_BLOB,
							 ENVELOPE_KEY_INDEX);
	ws.out = rsinfo->setResult;
	ws.out_desc = rsinfo->setDesc;
	ws.remaining = row_limit;
	ws.row_cxt = AllocSetContextCreate(CurrentMemoryContext, "envelope wave row",
									   ALLOCSET_SMALL_SIZES);

	/* originators in ascending order, each one merged by sequence */
	for (int start = 0; start < nentries && ws.remaining > 0;)
	{
		int32		originator = entries[start].originator;
		int			end = start;

		while (end < nentries && entries[end].originator == originator)
			end++;
		while (next_ceiling < nceilings && ceilings[next_ceiling].originator < originator)
			next_ceiling++;
		if (originator >= scan_node && next_ceiling < nceilings &&
			ceilings[next_ceiling].originator == originator)
			ScanOriginator(&ws, &entries[start], end - start,
						   originator == scan_node ? scan_sequence : PG_INT64_MIN,
						   ceilings[next_ceiling].ceiling);
		start = end;
	}

	MemoryContextDelete(ws.row_cxt);
	if (ws.blob)
		EnvelopeSourceClose(ws.blob);
	EnvelopeSourceClose(ws.meta);
	return (Datum) 0;
}
