/*
 * wave_d14n.c: xip83.envelope_wave_scan, one page of a d14n wave.
 *
 * A page is the envelopes after each (topic, originator) floor, up to the
 * originator's ceiling and past the scan cursor, in (originator, sequence)
 * order (the definition is tests/wave_d14n_reference.sql). Originators are
 * visited one at a time in ascending order; each gets one merge (merge.c) over
 * its (topic, originator) streams by sequence, with a row goal of what the
 * page still needs, so a page only reads the originators it returns rows of.
 * A partitioned source gives a stream all of the originator's leaves in band
 * order (source.c lists leaves in bound order); leaves that are not disjoint
 * ascending bands get one stream per (topic, leaf). The merge may also walk the
 * originator's (originator_node_id, originator_sequence_id) index and keep the
 * wave's topics, when that is cheaper than descending every topic.
 *
 * The payload comes from the meta row, or with blob_source from a key probe of
 * the blob table (ceilings_d14n.c); a meta row without a blob row is left out,
 * as the join in the definition leaves it out, and the merge is run again past
 * it when the page still needs rows.
 *
 * Memory: entries and streams follow the wave's size; each row's values live
 * in a context reset per row; merges and probes run in contexts of their own
 * and are ended on every normal path (on ERROR the resource owner and the
 * memory context tree release them). Locking: AccessShareLock on every
 * relation read, through source.c, held to transaction end. All reads use the
 * statement's active snapshot.
 */
#include "postgres.h"

#include "access/stratnum.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/fmgroids.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/tuplestore.h"

#include "args.h"
#include "merge.h"
#include "source.h"
#include "wave_d14n.h"
#include "xip83.h"

PG_FUNCTION_INFO_V1(envelope_wave_scan);

/* Columns of the meta source, in spec order (the key columns first). */
#define META_COL_TOPIC			2
#define META_COL_GATEWAY_TIME	3
#define META_COL_ENVELOPE		4
/* Columns of the blob source. */
#define BLOB_COL_ENVELOPE		2

static const SourceColumn meta_columns[] = {
	{"originator_node_id", INT4OID},
	{"originator_sequence_id", INT8OID},
	{"topic", BYTEAOID},
	{"gateway_time", TIMESTAMPOID},
	{"originator_envelope", BYTEAOID},	/* only without blob_source */
};
static const SourceColumn blob_columns[] = {
	{"originator_node_id", INT4OID},
	{"originator_sequence_id", INT8OID},
	{"originator_envelope", BYTEAOID},
};
static const char *const topic_key[] = {"topic", "originator_node_id", "originator_sequence_id"};
static const char *const envelope_key[] = {"originator_node_id", "originator_sequence_id"};

/* A source holding the payload, and a meta source whose payload is elsewhere. */
static const SourceSpec meta_spec = {
	.argname = "source", .columns = meta_columns, .ncolumns = 5,
	.key_columns = topic_key, .nkeys = 3, .walk_columns = envelope_key, .nwalk = 2,
	.position_column = "originator_sequence_id", .originator_column = "originator_node_id",
};
static const SourceSpec meta_only_spec = {
	.argname = "source", .columns = meta_columns, .ncolumns = 4,
	.key_columns = topic_key, .nkeys = 3, .walk_columns = envelope_key, .nwalk = 2,
	.position_column = "originator_sequence_id", .originator_column = "originator_node_id",
};
static const SourceSpec blob_spec = {
	.argname = "blob_source", .columns = blob_columns, .ncolumns = 3,
	.key_columns = envelope_key, .nkeys = 2,
	.position_column = "originator_sequence_id", .originator_column = "originator_node_id",
};

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

/* One originator's part of the wave, as its merges see it. */
typedef struct OriginatorMerge
{
	const WaveEntry *entries;	/* the originator's entries, sorted by topic */
	int			nentries;
	int		   *entry_stream;	/* per entry: its stream (bands), or -1 */
	int		   *stream_entry;	/* per stream: its entry */
	SourceLeaf **leaves;		/* meta leaves that may hold the originator */
	int			nleaves;
} OriginatorMerge;

/* The state of one call. */
typedef struct WaveScan
{
	Source	   *meta;
	Source	   *blob;			/* NULL: the payload is in meta */
	KeyProbes  *blob_probes;
	Snapshot	snapshot;
	Tuplestorestate *out;
	TupleDesc	out_desc;
	MemoryContext row_cxt;
	int64		remaining;		/* rows the page may still return */
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

/* Orders a topic datum against an entry's topic: bytes, then length. */
static int
CompareTopic(const char *data, int len, Datum topic)
{
	int			tl = VARSIZE_ANY_EXHDR(DatumGetPointer(topic));
	int			c = memcmp(data, VARDATA_ANY(DatumGetPointer(topic)), Min(len, tl));

	if (c != 0)
		return c;
	return len < tl ? -1 : len > tl ? 1 : 0;
}

/*
 * The dense walk's classifier: the stream of a row of the originator's key
 * index, found by binary search of the originator's entries (sorted by
 * topic), or -1 when its topic is not in the wave.
 */
static int
ClassifyRow(void *arg, const SourceLeaf *leaf, TupleTableSlot *slot)
{
	OriginatorMerge *om = (OriginatorMerge *) arg;
	bool		isnull;
	Datum		topic = slot_getattr(slot, leaf->attnos[META_COL_TOPIC], &isnull);
	const char *data;
	int			len,
				lo = 0,
				hi = om->nentries - 1;

	if (isnull)
		return -1;
	topic = PointerGetDatum(PG_DETOAST_DATUM_PACKED(topic));
	data = VARDATA_ANY(DatumGetPointer(topic));
	len = VARSIZE_ANY_EXHDR(DatumGetPointer(topic));
	while (lo <= hi)
	{
		int			mid = lo + (hi - lo) / 2;
		int			c = CompareTopic(data, len, om->entries[mid].topic);

		if (c == 0)
			return om->entry_stream[mid];
		if (c < 0)
			hi = mid - 1;
		else
			lo = mid + 1;
	}
	return -1;
}

/* Finds a row's payload in the blob source; false when it has none. */
static bool
FetchBlob(WaveScan *ws, int32 originator, int64 sequence, Datum *envelope, bool *isnull)
{
	for (int i = 0; i < ws->blob->nleaves; i++)
	{
		SourceLeaf *leaf = &ws->blob->leaves[i];
		TupleTableSlot *slot;
		ScanKeyData keys[2];

		if (!LeafMayHoldKey(leaf, originator, sequence))
			continue;
		ScanKeyInit(&keys[0], 1, BTEqualStrategyNumber, F_INT4EQ, Int32GetDatum(originator));
		ScanKeyInit(&keys[1], 2, BTEqualStrategyNumber, F_INT8EQ, Int64GetDatum(sequence));
		slot = KeyProbeFirst(ws->blob_probes, leaf, keys, ForwardScanDirection);
		if (slot != NULL)
		{
			*envelope = slot_getattr(slot, leaf->attnos[BLOB_COL_ENVELOPE], isnull);
			if (!*isnull)
				*envelope = PointerGetDatum(PG_DETOAST_DATUM_PACKED(*envelope));
			return true;
		}
	}
	return false;
}

/* Adds a merged row to the page, with its payload; a row without one is left out. */
static void
EmitRow(WaveScan *ws, const MergeRow *row, Datum topic)
{
	Datum		values[5];
	bool		nulls[5] = {false, false, false, false, false};
	bool		found = true;
	MemoryContext old;

	MemoryContextReset(ws->row_cxt);
	old = MemoryContextSwitchTo(ws->row_cxt);
	values[0] = Int32GetDatum(row->originator);
	values[1] = Int64GetDatum(row->position);
	values[2] = slot_getattr(row->slot, row->leaf->attnos[META_COL_GATEWAY_TIME], &nulls[2]);
	values[3] = topic;
	if (ws->blob)
		found = FetchBlob(ws, row->originator, row->position, &values[4], &nulls[4]);
	else
	{
		values[4] = slot_getattr(row->slot, row->leaf->attnos[META_COL_ENVELOPE], &nulls[4]);
		if (!nulls[4])
			values[4] = PointerGetDatum(PG_DETOAST_DATUM_PACKED(values[4]));
	}
	if (found)
	{
		tuplestore_putvalues(ws->out, ws->out_desc, values, nulls);
		ws->remaining--;
	}
	MemoryContextSwitchTo(old);
}

/*
 * Whether the leaves of one originator hold disjoint, ascending sequence
 * ranges (RANGE bands), so one stream per topic can read them in turn.
 */
static bool
LeavesAreBands(SourceLeaf **leaves, int nleaves)
{
	for (int i = 1; i < nleaves; i++)
		if (leaves[i - 1]->position_hi > leaves[i]->position_lo)
			return false;
	return true;
}

/*
 * Merges one originator's entries by sequence into the page, from past
 * `after` (per entry, the higher of it and the entry's floor) up to the
 * ceiling. Returns the last sequence the merge produced, or `after`.
 * Returns with *goal_reached when the merge stopped at its row goal.
 */
static int64
MergeOriginator(WaveScan *ws, OriginatorMerge *om, int64 after, int64 ceiling,
				bool *goal_reached)
{
	int32		originator = om->entries[0].originator;
	int64		goal = ws->remaining;
	int64		produced = 0;
	MergeScan  *merge = MergeBegin(2, ws->snapshot, MERGE_STRATEGY_AUTO, goal);
	bool		bands = LeavesAreBands(om->leaves, om->nleaves);
	MergeRow	row;

	for (int i = 0; i < om->nentries; i++)
	{
		const WaveEntry *e = &om->entries[i];
		int64		floor = Max(e->floor, after);

		if (bands)
		{
			int			sno = MergeAddStream(merge, e->topic, originator, floor, ceiling,
											 om->leaves, om->nleaves);

			om->entry_stream[i] = sno;
			if (sno >= 0)
				om->stream_entry[sno] = i;
		}
		else
			for (int l = 0; l < om->nleaves; l++)
			{
				int			sno = MergeAddStream(merge, e->topic, originator, floor, ceiling,
												 &om->leaves[l], 1);

				if (sno >= 0)
					om->stream_entry[sno] = i;
			}
	}
	/* the dense walk maps a row to its topic's one stream: bands only */
	if (bands)
		MergeSetDenseWalk(merge, om->leaves, om->nleaves, originator, ClassifyRow, om);

	while (ws->remaining > 0 && MergeNext(merge, &row))
	{
		CHECK_FOR_INTERRUPTS();
		EmitRow(ws, &row, om->entries[om->stream_entry[row.stream]].topic);
		after = row.position;
		produced++;
	}
	*goal_reached = produced == goal;
	MergeEnd(merge);
	return after;
}

/*
 * Adds one originator's rows to the page. The merge stops at the rows the
 * page still needs; when meta rows without a blob row were left out, it runs
 * again from the last sequence it produced.
 */
static void
ScanOriginator(WaveScan *ws, const WaveEntry *entries, int nentries, int64 after,
			   int64 ceiling)
{
	int32		originator = entries[0].originator;
	OriginatorMerge om;
	bool		goal_reached = true;

	om.entries = entries;
	om.nentries = nentries;
	om.leaves = palloc(sizeof(SourceLeaf *) * Max(ws->meta->nleaves, 1));
	om.nleaves = 0;
	for (int l = 0; l < ws->meta->nleaves; l++)
		if (SourceLeafMayHoldOriginator(&ws->meta->leaves[l], originator))
			om.leaves[om.nleaves++] = &ws->meta->leaves[l];
	if (om.nleaves == 0)
	{
		pfree(om.leaves);
		return;
	}
	om.entry_stream = palloc(sizeof(int) * nentries);
	om.stream_entry = palloc_extended(sizeof(int) * (Size) nentries * om.nleaves,
									  MCXT_ALLOC_HUGE);

	while (ws->remaining > 0 && goal_reached)
		after = MergeOriginator(ws, &om, after, ceiling, &goal_reached);
	pfree(om.entry_stream);
	pfree(om.stream_entry);
	pfree(om.leaves);
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

	ws.snapshot = GetActiveSnapshot();
	ws.meta = SourceOpen(PG_GETARG_OID(8), PG_ARGISNULL(9) ? &meta_spec : &meta_only_spec);
	ws.blob = PG_ARGISNULL(9) ? NULL : SourceOpen(PG_GETARG_OID(9), &blob_spec);
	ws.blob_probes = ws.blob ? KeyProbesBegin(ws.blob, ws.snapshot, 2) : NULL;
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
	{
		KeyProbesEnd(ws.blob_probes);
		SourceClose(ws.blob);
	}
	SourceClose(ws.meta);
	return (Datum) 0;
}
