/*
 * wave_d14n.c: a d14n wave as a row iterator (WaveRun, scan.h):
 * xip83.envelope_wave_scan (src/sql/waves.c) returns one page of it, or with
 * row_limit NULL all of it past the scan cursor, one row per call
 * (envelope_wave_stream puts that in a target list, for cursors).
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
 * Both read through one WaveRun, whose merge carries over from row to row (and
 * from call to call for the stream, ended by an expression-context callback
 * when the reader stops early).
 *
 * Memory: entries and streams follow the wave's size; each row's values live
 * in a context reset per row; merges and probes run in contexts of their own
 * and are ended on every normal path (on ERROR the resource owner and the
 * memory context tree release them). Locking: AccessShareLock on every
 * relation read, through source.c, held to transaction end. All reads use one
 * snapshot taken when the wave starts, after its arguments (the ceilings
 * among them) were evaluated: HorizonReadSnapshot, see feed.h.
 */
#include "postgres.h"

#include "access/stratnum.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "port/pg_bswap.h"
#include "utils/fmgroids.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/tuplestore.h"

#include "base/base.h"
#include "core/core.h"
#include "rel/rel.h"
#include "feed/feed.h"
#include "merge.h"
#include "scan.h"
#include "wave_d14n.h"

/* Columns of the meta source, in spec order (the key columns first). */
#define META_COL_TOPIC			2
#define META_COL_GATEWAY_TIME	3
#define META_COL_ENVELOPE		4
/* Columns of the blob source. */
#define BLOB_COL_ENVELOPE		2

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
	bool		bands;			/* the leaves are disjoint ascending bands */
} OriginatorMerge;

/*
 * A wave being read: the state that carries from row to row, for one call
 * (a page) or across the calls of a value-per-call set (a stream).
 */
struct WaveRun
{
	MemoryContext cxt;			/* lives as long as the run: merges, scans */
	MemoryContext row_cxt;		/* one row's values, reset per row */
	WaveEntry  *entries;
	int			nentries;
	WaveCeiling *ceilings;
	int			nceilings;
	int32		scan_node;
	int64		scan_sequence;
	Source	   *meta;
	Source	   *blob;			/* NULL: the payload is in meta */
	KeyProbes  *blob_probes;
	Snapshot	snapshot;
	RecentTable *recent;		/* over xip83.envelopes: skips quiet (topic, originator)s */
	Summary    *summary;		/* the same, for every (topic, originator) once READY */
	RegistryDb *summary_db;		/* its feed */
	int64		remaining;		/* rows still wanted; -1: all */
	bool		ended;

	/* the originator being merged */
	int			next_start;		/* first entry of the next originator */
	int			next_ceiling;	/* search position in ceilings */
	OriginatorMerge om;
	MergeScan  *merge;			/* NULL between merges */
	int64		ceiling;
	int64		after;			/* the last sequence its merges produced */
	int64		goal;			/* the current merge's row goal; 0: none */
	int64		produced;		/* rows the current merge produced */
};

/* Orders entries by originator, then topic bytes. */
static inline int
CompareEntryKeys(const WaveEntry *x, const WaveEntry *y)
{
	int			xl,
				yl,
				c;

	if (x->originator != y->originator)
		return x->originator < y->originator ? -1 : 1;
	xl = VARSIZE_ANY_EXHDR(DatumGetPointer(x->topic));
	yl = VARSIZE_ANY_EXHDR(DatumGetPointer(y->topic));
	if (xl >= 8 && yl >= 8)
	{
		uint64		xw,
					yw;

		/* topics are hashes: their first 8 bytes, in byte order, nearly always decide */
		memcpy(&xw, VARDATA_ANY(DatumGetPointer(x->topic)), 8);
		memcpy(&yw, VARDATA_ANY(DatumGetPointer(y->topic)), 8);
		if (xw != yw)
			return pg_ntoh64(xw) < pg_ntoh64(yw) ? -1 : 1;
	}
	c = memcmp(VARDATA_ANY(DatumGetPointer(x->topic)),
			   VARDATA_ANY(DatumGetPointer(y->topic)), Min(xl, yl));
	if (c != 0)
		return c;
	return xl < yl ? -1 : xl > yl ? 1 : 0;
}

/* qsort's CompareEntryKeys. */
static int
CompareEntries(const void *a, const void *b)
{
	return CompareEntryKeys((const WaveEntry *) a, (const WaveEntry *) b);
}

/*
 * Merges a repeated (topic, originator) of entries[0..*n) into one with its
 * lowest floor, while they come in order; true with *n the entries kept, or
 * false at the first out of order, with *n the entries still there (all of
 * them, repeats merged).
 */
static bool
KeepSorted(WaveEntry *entries, int *n)
{
	int			kept = 0;

	for (int i = 0; i < *n; i++)
	{
		int			c = kept > 0 ? CompareEntryKeys(&entries[kept - 1], &entries[i]) : -1;

		if (c > 0)
		{
			memmove(&entries[kept], &entries[i], sizeof(WaveEntry) * (*n - i));
			*n = kept + *n - i;
			return false;
		}
		if (c == 0)
			entries[kept - 1].floor = Min(entries[kept - 1].floor, entries[i].floor);
		else
			entries[kept++] = entries[i];
	}
	*n = kept;
	return true;
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

/*
 * Builds the wave's entries: sorted, a repeated (topic, originator) once with
 * its lowest floor. Clients list their topics in order, so one pass usually
 * finds them sorted; else they are sorted, and that pass merges repeats.
 */
static WaveEntry *
BuildEntries(const ArgArray *topics, const ArgArray *nodes, const ArgArray *floors, int *n)
{
	WaveEntry  *entries = palloc(sizeof(WaveEntry) * Max(topics->n, 1));

	for (int i = 0; i < topics->n; i++)
	{
		entries[i].topic = topics->values[i];
		entries[i].originator = DatumGetInt32(nodes->values[i]);
		entries[i].floor = DatumGetInt64(floors->values[i]);
	}
	*n = topics->n;
	if (!KeepSorted(entries, n))
	{
		qsort(entries, *n, sizeof(WaveEntry), CompareEntries);
		(void) KeepSorted(entries, n);
	}
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
FetchBlob(WaveRun *run, int32 originator, int64 sequence, Datum *envelope, bool *isnull)
{
	SourceLeaf *leaf;
	TupleTableSlot *slot = KeyProbeExact(run->blob_probes, originator, sequence, &leaf);

	if (slot == NULL)
		return false;
	*envelope = slot_getattr(slot, leaf->attnos[BLOB_COL_ENVELOPE], isnull);
	if (!*isnull)
		*envelope = PointerGetDatum(PG_DETOAST_DATUM_PACKED(*envelope));
	return true;
}

/*
 * The output values of a merged row, with its payload; false when it has
 * none (a meta row without a blob row). Valid until the next row.
 */
static bool
FillRow(WaveRun *run, const MergeRow *row, Datum *values, bool *nulls)
{
	const WaveEntry *entry = &run->om.entries[run->om.stream_entry[row->stream]];
	bool		found = true;
	MemoryContext old;

	MemoryContextReset(run->row_cxt);
	old = MemoryContextSwitchTo(run->row_cxt);
	memset(nulls, 0, sizeof(bool) * 5);
	values[0] = Int32GetDatum(row->originator);
	values[1] = Int64GetDatum(row->position);
	values[2] = slot_getattr(row->slot, row->leaf->attnos[META_COL_GATEWAY_TIME], &nulls[2]);
	values[3] = entry->topic;
	if (run->blob)
		found = FetchBlob(run, row->originator, row->position, &values[4], &nulls[4]);
	else
	{
		values[4] = slot_getattr(row->slot, row->leaf->attnos[META_COL_ENVELOPE], &nulls[4]);
		if (!nulls[4])
			values[4] = PointerGetDatum(PG_DETOAST_DATUM_PACKED(values[4]));
	}
	MemoryContextSwitchTo(old);
	return found;
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
 * Marks the current originator's entries whose (topic, originator) has no
 * write above its floor (raised past run->after) registered so far, asked of
 * the recent-writes table and the topic summary in one batch after the
 * snapshot was taken.
 */
static void
AskRecent(WaveRun *run, int32 originator, bool *skip)
{
	OriginatorMerge *om = &run->om;
	uint32	   *keys = palloc(sizeof(uint32) * om->nentries);
	uint64	   *floors = palloc(sizeof(uint64) * om->nentries);
	int		   *entry = palloc(sizeof(int) * om->nentries);
	bool	   *may = palloc(sizeof(bool) * om->nentries);
	int			n = 0;

	for (int i = 0; i < om->nentries; i++)
	{
		int64		floor = Max(om->entries[i].floor, run->after);
		bytea	   *topic;

		if (floor < 0 || floor >= run->ceiling)
			continue;
		topic = DatumGetByteaPP(om->entries[i].topic);
		keys[n] = RecentKey(VARDATA_ANY(topic), VARSIZE_ANY_EXHDR(topic), originator);
		floors[n] = (uint64) floor;
		entry[n++] = i;
	}
	if (run->recent != NULL)
		(void) RecentMayHaveMany(run->recent, n, keys, floors, may);
	else
		memset(may, true, sizeof(bool) * n);
	/* either one's "no" suffices */
	if (run->summary != NULL)
		(void) SummaryMayHaveMany(run->summary, run->summary_db, originator, run->ceiling,
								  n, keys, floors, may);
	for (int j = 0; j < n; j++)
		skip[entry[j]] = !may[j];
	pfree(keys);
	pfree(floors);
	pfree(entry);
	pfree(may);
}

/*
 * Starts a merge of the current originator's streams past run->after (per
 * entry, the higher of it and the entry's floor) up to its ceiling, with a
 * row goal of what the run still wants.
 */
static void
StartMerge(WaveRun *run)
{
	OriginatorMerge *om = &run->om;
	int32		originator = om->entries[0].originator;
	bool		bands = om->bands;
	MemoryContext old = MemoryContextSwitchTo(run->cxt);

	bool	   *skip = palloc0(sizeof(bool) * om->nentries);

	run->goal = Max(run->remaining, 0);
	run->produced = 0;
	run->merge = MergeBegin(2, run->snapshot, MERGE_STRATEGY_AUTO, run->goal);
	if (run->recent != NULL || run->summary != NULL)
		AskRecent(run, originator, skip);
	/* topics the table knows exactly are fetched by key, not descended */
	if (run->recent != NULL)
		MergeSetRecent(run->merge, run->recent);
	for (int i = 0; i < om->nentries; i++)
	{
		const WaveEntry *e = &om->entries[i];
		int64		floor = Max(e->floor, run->after);

		om->entry_stream[i] = -1;
		if (skip[i])
			continue;
		for (int l = 0; l < (bands ? 1 : om->nleaves); l++)
		{
			int			sno = bands
				? MergeAddStream(run->merge, e->topic, originator, floor, run->ceiling,
								 om->leaves, om->nleaves)
				: MergeAddStream(run->merge, e->topic, originator, floor, run->ceiling,
								 &om->leaves[l], 1);

			if (sno >= 0)
			{
				om->stream_entry[sno] = i;
				om->entry_stream[i] = sno;
			}
		}
	}
	/* the dense walk maps a row to its topic's one stream: bands only */
	if (bands)
		MergeSetDenseWalk(run->merge, om->leaves, om->nleaves, originator, ClassifyRow, om);
	pfree(skip);
	MemoryContextSwitchTo(old);
}

/*
 * Moves to the next originator that can contribute (at or past the scan
 * cursor's, with a ceiling and a leaf that may hold it) and starts its merge;
 * false when none is left.
 */
static bool
StartNextOriginator(WaveRun *run)
{
	OriginatorMerge *om = &run->om;

	while (run->next_start < run->nentries)
	{
		int			start = run->next_start;
		int32		originator = run->entries[start].originator;
		int			end = start;
		MemoryContext old;

		while (end < run->nentries && run->entries[end].originator == originator)
			end++;
		run->next_start = end;
		while (run->next_ceiling < run->nceilings &&
			   run->ceilings[run->next_ceiling].originator < originator)
			run->next_ceiling++;
		if (originator < run->scan_node || run->next_ceiling >= run->nceilings ||
			run->ceilings[run->next_ceiling].originator != originator)
			continue;

		old = MemoryContextSwitchTo(run->cxt);
		if (om->leaves != NULL)
		{
			pfree(om->leaves);
			pfree(om->entry_stream);
			pfree(om->stream_entry);
		}
		om->entries = &run->entries[start];
		om->nentries = end - start;
		om->leaves = palloc(sizeof(SourceLeaf *) * Max(run->meta->nleaves, 1));
		om->nleaves = 0;
		for (int l = 0; l < run->meta->nleaves; l++)
			if (SourceLeafMayHoldOriginator(&run->meta->leaves[l], originator))
				om->leaves[om->nleaves++] = &run->meta->leaves[l];
		om->bands = LeavesAreBands(om->leaves, om->nleaves);
		om->entry_stream = palloc(sizeof(int) * om->nentries);
		/* one stream per entry over bands, else one per (entry, leaf) */
		om->stream_entry = palloc_extended(sizeof(int) * (Size) om->nentries *
										   (om->bands ? 1 : Max(om->nleaves, 1)),
										   MCXT_ALLOC_HUGE);
		MemoryContextSwitchTo(old);
		if (om->nleaves == 0)
			continue;

		run->ceiling = run->ceilings[run->next_ceiling].ceiling;
		run->after = originator == run->scan_node ? run->scan_sequence : PG_INT64_MIN;
		StartMerge(run);
		return true;
	}
	return false;
}

/*
 * The next row of the wave in (originator, sequence) order, false at its end
 * or when the run has produced what it wanted. A merge stopped at its row goal
 * while rows were left out for want of a blob row is run again past its last
 * row.
 */
bool
WaveRunNext(WaveRun *run, Datum *values, bool *nulls)
{
	while (run->remaining != 0)
	{
		MergeRow	row;
		bool		got;
		MemoryContext old;

		if (run->merge == NULL && !StartNextOriginator(run))
			return false;
		/* the merge's scans allocate as they read: in the run's context */
		old = MemoryContextSwitchTo(run->cxt);
		got = MergeNext(run->merge, &row);
		MemoryContextSwitchTo(old);
		if (!got)
		{
			bool		stopped_at_goal = run->goal > 0 && run->produced == run->goal;

			MergeEnd(run->merge);
			run->merge = NULL;
			if (stopped_at_goal)
				StartMerge(run);
			continue;
		}
		run->produced++;
		run->after = row.position;
		if (FillRow(run, &row, values, nulls))
		{
			if (run->remaining > 0)
				run->remaining--;
			return true;
		}
	}
	return false;
}

/*
 * Reads and checks the arguments of a wave and opens its sources: a run
 * that returns at most `limit` rows (-1: all). Everything it keeps lives in
 * a child of the current memory context.
 */
WaveRun *
WaveRunBegin(FunctionCallInfo fcinfo, int64 limit, int source_arg)
{
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext, "envelope wave",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(cxt);
	WaveRun    *run = palloc0(sizeof(WaveRun));
	ArgArray	topics = ArgGetArray(fcinfo, 0, "cursor_topics", BYTEAOID);
	ArgArray	nodes = ArgGetArray(fcinfo, 1, "cursor_node_ids", INT4OID);
	ArgArray	floors = ArgGetArray(fcinfo, 2, "cursor_sequence_ids", INT8OID);
	ArgArray	ceiling_nodes = ArgGetArray(fcinfo, 3, "ceiling_node_ids", INT4OID);
	ArgArray	ceiling_values = ArgGetArray(fcinfo, 4, "ceiling_sequence_ids", INT8OID);

	ArgRequireSameLength(&topics, &nodes);
	ArgRequireSameLength(&topics, &floors);
	ArgRequireSameLength(&ceiling_nodes, &ceiling_values);
	ArgRequire(fcinfo, 5, "scan_node_id");
	ArgRequire(fcinfo, 6, "scan_sequence_id");
	ArgRequire(fcinfo, source_arg, "source");

	run->cxt = cxt;
	run->row_cxt = AllocSetContextCreate(cxt, "envelope wave row", ALLOCSET_SMALL_SIZES);
	run->scan_node = PG_GETARG_INT32(5);
	run->scan_sequence = PG_GETARG_INT64(6);
	run->remaining = limit;
	run->entries = BuildEntries(&topics, &nodes, &floors, &run->nentries);
	run->ceilings = BuildCeilings(&ceiling_nodes, &ceiling_values, &run->nceilings);
	run->snapshot = RegisterSnapshot(HorizonReadSnapshot());
	run->meta = SourceOpen(PG_GETARG_OID(source_arg),
						   PG_ARGISNULL(source_arg + 1) ? WaveD14nSpecs[0] : WaveD14nSpecs[1]);
	/* asked after the snapshot: no write registered so far means no row it sees */
	run->recent = RecentForSource(PG_GETARG_OID(source_arg), KIND_ENVELOPE);
	run->summary = SummaryForSource(PG_GETARG_OID(source_arg), KIND_ENVELOPE, &run->summary_db);
	if (!PG_ARGISNULL(source_arg + 1))
	{
		run->blob = SourceOpen(PG_GETARG_OID(source_arg + 1), WaveD14nSpecs[2]);
		run->blob_probes = KeyProbesBegin(run->blob, run->snapshot, 2);
	}
	MemoryContextSwitchTo(old);
	return run;
}

/* Ends a run's merge and probes, closes its sources and frees its memory. */
void
WaveRunEnd(WaveRun *run)
{
	if (run->ended)
		return;
	run->ended = true;
	if (run->merge != NULL)
		MergeEnd(run->merge);
	if (run->blob != NULL)
	{
		KeyProbesEnd(run->blob_probes);
		SourceClose(run->blob);
	}
	SourceClose(run->meta);
	UnregisterSnapshot(run->snapshot);
	MemoryContextDelete(run->cxt);
}
