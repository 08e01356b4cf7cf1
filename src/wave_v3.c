/*
 * wave_v3.c: the v3 wave scans, group and welcome messages, as SQL functions.
 *
 *   *_wave_scan   one stateless page: the rows m of source with, for some i,
 *                 m.topic = topics[i] and m.id > floors[i], and m.id > scan_cursor
 *                 and m.id <= ceiling; ascending id; at most page_limit rows.
 *   *_wave_rows   the same rows without a page limit, one per call (value per
 *                 call), for a cursor: the SQL wrapper *_wave_stream puts it in
 *                 a target list so FETCH n reads n rows and no more.
 *
 * Invariants: a topic listed twice is one stream with its lowest floor; a
 * topic whose floor (raised to the scan cursor) is at or above the ceiling is
 * never read, so a caught-up wave touches no index. The merge engine does the
 * reading; this file only turns arguments into streams and rows into tuples.
 *
 * Visibility: a wave reads with one snapshot taken after its arguments (the
 * ceiling among them) were evaluated, HorizonReadSnapshot (horizon.h), so a
 * ceiling pinned from the horizon in the same statement, or inside a
 * REPEATABLE READ transaction, still finds every row at or below it.
 *
 * Resources: a page opens, scans and closes within one call. A stream keeps
 * its source, merge and a registered snapshot across calls and releases them
 * when the rows run out or when its expression context shuts down (cursor
 * closed, query ended early); on ERROR the resource owner releases them.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "executor/executor.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"

#include "args.h"
#include "horizon.h"
#include "merge.h"
#include "recent.h"
#include "source.h"
#include "wave_v3.h"
#include "xip83.h"

PG_FUNCTION_INFO_V1(group_wave_scan);
PG_FUNCTION_INFO_V1(welcome_wave_scan);
PG_FUNCTION_INFO_V1(group_wave_rows);
PG_FUNCTION_INFO_V1(welcome_wave_rows);

static const char *const V3GroupKey[] = {"group_id", "id"};
static const char *const V3WelcomeKey[] = {"installation_key", "id"};
static const char *const V3Walk[] = {"id"};

static const SourceColumn V3GroupColumns[] = {
	{"id", INT8OID}, {"created_at", TIMESTAMPOID}, {"group_id", BYTEAOID},
	{"data", BYTEAOID}, {"is_commit", BOOLOID}, {"sender_hmac", BYTEAOID},
	{"should_push", BOOLOID}
};

static const SourceColumn V3WelcomeColumns[] = {
	{"id", INT8OID}, {"created_at", TIMESTAMPOID}, {"installation_key", BYTEAOID},
	{"data", BYTEAOID}, {"hpke_public_key", BYTEAOID}, {"wrapper_algorithm", INT2OID},
	{"welcome_metadata", BYTEAOID}, {"message_type", INT2OID}
};

const SourceSpec WaveV3GroupSource = {
	.argname = "source",
	.columns = V3GroupColumns, .ncolumns = lengthof(V3GroupColumns),
	.key_columns = V3GroupKey, .nkeys = 2,
	.walk_columns = V3Walk, .nwalk = 1,
	.position_column = "id",
};

const SourceSpec WaveV3WelcomeSource = {
	.argname = "source",
	.columns = V3WelcomeColumns, .ncolumns = lengthof(V3WelcomeColumns),
	.key_columns = V3WelcomeKey, .nkeys = 2,
	.walk_columns = V3Walk, .nwalk = 1,
	.position_column = "id",
};

/* A distinct topic of the wave: its lowest floor and the stream reading it. */
typedef struct WaveTopic
{
	bytea	   *topic;
	uint32		hash;
	char		status;
	int32		stream;			/* -1: nothing to read */
	int64		floor;
} WaveTopic;

/* Hash of a topic's bytes. */
static inline uint32
TopicHash(const bytea *topic)
{
	return hash_bytes((const unsigned char *) VARDATA_ANY(topic), VARSIZE_ANY_EXHDR(topic));
}

/* Whether two topics have the same bytes. */
static inline bool
TopicEqual(const bytea *a, const bytea *b)
{
	return VARSIZE_ANY_EXHDR(a) == VARSIZE_ANY_EXHDR(b) &&
		memcmp(VARDATA_ANY(a), VARDATA_ANY(b), VARSIZE_ANY_EXHDR(a)) == 0;
}

#define SH_PREFIX		wavetopics
#define SH_ELEMENT_TYPE	WaveTopic
#define SH_KEY_TYPE		bytea *
#define SH_KEY			topic
#define SH_HASH_KEY(tb, key)	TopicHash(key)
#define SH_EQUAL(tb, a, b)		TopicEqual(a, b)
#define SH_STORE_HASH
#define SH_GET_HASH(tb, a)		((a)->hash)
#define SH_SCOPE		static inline
#define SH_DECLARE
#define SH_DEFINE
#include "lib/simplehash.h"

/* One wave being read: its source, its topics and the merge over them. */
struct Wave
{
	const SourceSpec *spec;
	Source	   *source;
	SourceLeaf **leaves;		/* the source's leaves, as the merge takes them */
	wavetopics_hash *topics;
	MergeScan  *merge;
	Snapshot	snapshot;
	ResourceOwner owner;		/* holds the snapshot registration, when one */
};

/* Whether the leaves hold disjoint id ranges in ascending order. */
static bool
LeavesInIdOrder(const Source *source)
{
	for (int i = 1; i < source->nleaves; i++)
		if (source->leaves[i - 1].position_hi > source->leaves[i].position_lo)
			return false;
	return true;
}

/* Maps a tuple met by the dense walk to the stream of its topic, or -1. */
static int
ClassifyByTopic(void *arg, const SourceLeaf *leaf, TupleTableSlot *slot)
{
	Wave	   *wave = (Wave *) arg;
	bool		isnull;
	Datum		d = slot_getattr(slot, leaf->attnos[V3_COL_TOPIC], &isnull);
	bytea	   *topic;
	WaveTopic  *entry;

	if (isnull)
		return -1;
	topic = (bytea *) PG_DETOAST_DATUM_PACKED(d);
	entry = wavetopics_lookup(wave->topics, topic);
	if ((Pointer) topic != DatumGetPointer(d))
		pfree(topic);
	return entry != NULL ? entry->stream : -1;
}

/* Collapses the topics to distinct ones with their lowest floor, raised to the cursor. */
static wavetopics_hash *
DistinctTopics(const ArgArray *topics, const ArgArray *floors, int64 scan_cursor)
{
	wavetopics_hash *hash = wavetopics_create(CurrentMemoryContext, Max(topics->n, 16), NULL);

	for (int i = 0; i < topics->n; i++)
	{
		bytea	   *topic = DatumGetByteaPP(topics->values[i]);
		int64		floor = Max(DatumGetInt64(floors->values[i]), scan_cursor);
		bool		found;
		WaveTopic  *entry;

		if ((i % 4096) == 0)
			CHECK_FOR_INTERRUPTS();
		entry = wavetopics_insert(hash, topic, &found);
		if (!found || floor < entry->floor)
			entry->floor = floor;
		entry->stream = -1;
	}
	return hash;
}

/* Whether some floor, raised to the scan cursor, is below the ceiling. */
static bool
AnyTopicBelow(const ArgArray *floors, int64 scan_cursor, int64 ceiling)
{
	if (scan_cursor >= ceiling)
		return false;
	for (int i = 0; i < floors->n; i++)
		if (DatumGetInt64(floors->values[i]) < ceiling)
			return true;
	return false;
}

/*
 * Whether some topic, its floor raised to the scan cursor and below the
 * ceiling, may hold a row above its floor by the recent-writes table. Each
 * listing is asked with its own floor: a topic listed twice is skipped only
 * when every listing is, so its lowest floor is.
 */
static bool
AnyTopicMayHave(const RecentTable *recent, const ArgArray *topics, const ArgArray *floors,
				int64 scan_cursor, int64 ceiling)
{
	for (int i = 0; i < topics->n; i++)
	{
		int64		floor = Max(DatumGetInt64(floors->values[i]), scan_cursor);
		bytea	   *topic;

		if (floor >= ceiling)
			continue;
		if (floor < 0)
			return true;
		topic = DatumGetByteaPP(topics->values[i]);
		if (RecentMayHave(recent, RecentKey(VARDATA_ANY(topic), VARSIZE_ANY_EXHDR(topic), 0),
						  (uint64) floor))
			return true;
	}
	return false;
}

/*
 * Reads the wave arguments (topics, floors, scan_cursor, ceiling at 0..3 and
 * the source at source_arg), opens the source and sets up the merge.
 */
static Wave *
WaveOpenOn(FunctionCallInfo fcinfo, const SourceSpec *spec, int source_arg, int64 row_goal,
		   Snapshot snapshot)
{
	Wave	   *wave = palloc0(sizeof(Wave));
	ArgArray	topics = ArgGetArray(fcinfo, 0, "topics", BYTEAOID);
	ArgArray	floors = ArgGetArray(fcinfo, 1, "floors", INT8OID);
	int64		scan_cursor;
	int64		ceiling;
	bool		in_order;
	wavetopics_iterator it;
	WaveTopic  *entry;
	RecentTable *recent;

	ArgRequireSameLength(&topics, &floors);
	ArgRequire(fcinfo, 2, "scan_cursor");
	ArgRequire(fcinfo, 3, "ceiling");
	ArgRequire(fcinfo, source_arg, "source");
	scan_cursor = PG_GETARG_INT64(2);
	ceiling = PG_GETARG_INT64(3);

	wave->spec = spec;
	wave->snapshot = snapshot;
	if (!AnyTopicBelow(&floors, scan_cursor, ceiling))
	{
		/* caught up: refuse whom SQL would refuse, then read nothing */
		(void) SourceCheckReadable(PG_GETARG_OID(source_arg), spec);
		return wave;
	}

	/*
	 * Over xip83's own table, asked after the snapshot was taken: a topic with
	 * no write above its floor registered so far has no row this snapshot sees.
	 */
	recent = RecentForSource(PG_GETARG_OID(source_arg),
							 spec == &WaveV3GroupSource ? KIND_GROUP : KIND_WELCOME);
	if (recent != NULL &&
		!AnyTopicMayHave(recent, &topics, &floors, scan_cursor, ceiling))
	{
		(void) SourceCheckReadable(PG_GETARG_OID(source_arg), spec);
		return wave;
	}
	wave->source = SourceOpen(PG_GETARG_OID(source_arg), spec);
	wave->topics = DistinctTopics(&topics, &floors, scan_cursor);
	wave->leaves = palloc(sizeof(SourceLeaf *) * Max(wave->source->nleaves, 1));
	for (int i = 0; i < wave->source->nleaves; i++)
		wave->leaves[i] = &wave->source->leaves[i];

	/*
	 * Leaves in id order make one stream per topic and allow the dense walk;
	 * otherwise each (topic, leaf) is a stream of its own.
	 */
	in_order = LeavesInIdOrder(wave->source);
	wave->merge = MergeBegin(1, snapshot, (MergeStrategy) xip83_wave_strategy, row_goal);
	wavetopics_start_iterate(wave->topics, &it);
	while ((entry = wavetopics_iterate(wave->topics, &it)) != NULL)
	{
		if (entry->floor >= ceiling ||
			(recent != NULL && entry->floor >= 0 &&
			 !RecentMayHave(recent, RecentKeyOfHash(entry->hash), (uint64) entry->floor)))
			continue;
		if (in_order)
			entry->stream = MergeAddStream(wave->merge, PointerGetDatum(entry->topic), 0,
										   entry->floor, ceiling, wave->leaves,
										   wave->source->nleaves);
		else
			for (int i = 0; i < wave->source->nleaves; i++)
				(void) MergeAddStream(wave->merge, PointerGetDatum(entry->topic), 0,
									  entry->floor, ceiling, &wave->leaves[i], 1);
	}
	if (in_order)
		MergeSetDenseWalk(wave->merge, wave->leaves, wave->source->nleaves, 0,
						  ClassifyByTopic, wave);
	return wave;
}

/*
 * Opens a wave read with its own snapshot, registered on the current resource
 * owner (which must outlive the wave): the row iterator the scans, the streams
 * and the frame encoders (frames.c) share. See WaveOpenOn for the arguments.
 */
Wave *
WaveOpen(FunctionCallInfo fcinfo, const SourceSpec *spec, int source_arg, int64 row_goal)
{
	Snapshot	snapshot = RegisterSnapshotOnOwner(HorizonReadSnapshot(), CurrentResourceOwner);
	Wave	   *wave = WaveOpenOn(fcinfo, spec, source_arg, row_goal, snapshot);

	wave->owner = CurrentResourceOwner;
	return wave;
}

/* Projects the wave's next row into values/nulls; false at its end. */
bool
WaveNext(Wave *wave, Datum *values, bool *nulls)
{
	MergeRow	row;

	if (wave->merge == NULL || !MergeNext(wave->merge, &row))
		return false;
	for (int i = 0; i < wave->spec->ncolumns; i++)
		values[i] = slot_getattr(row.slot, row.leaf->attnos[i], &nulls[i]);
	return true;
}

/* Ends the merge, closes the source and drops the snapshot registration. */
void
WaveClose(Wave *wave)
{
	if (wave->merge != NULL)
		MergeEnd(wave->merge);
	wave->merge = NULL;
	if (wave->source != NULL)
		SourceClose(wave->source);
	wave->source = NULL;
	if (wave->owner != NULL)
		UnregisterSnapshotFromOwner(wave->snapshot, wave->owner);
	wave->owner = NULL;
}

/* One stateless page of a wave into the caller's tuplestore. */
static Datum
WaveScanPage(FunctionCallInfo fcinfo, const SourceSpec *spec)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int32		limit = ArgGetPageLimit(fcinfo, 4, "page_limit");
	Datum		values[8];
	bool		nulls[8];
	Wave	   *wave;

	Assert(spec->ncolumns <= lengthof(values));
	InitMaterializedSRF(fcinfo, 0);
	wave = WaveOpen(fcinfo, spec, 5, limit);
	while (WaveNext(wave, values, nulls))
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	WaveClose(wave);
	return (Datum) 0;
}

/* Releases a stream's wave when its query ends before the rows do. */
static void
WaveShutdown(Datum arg)
{
	WaveClose((Wave *) DatumGetPointer(arg));
}

/*
 * The first call of a value-per-call function returning rows of a wave (or
 * frames of one): checks the caller takes a set, sets up the call context and
 * its row type, and switches to multi_call_memory_ctx (*old: the context to
 * switch back to).
 */
FuncCallContext *
WaveRowsFirstCall(FunctionCallInfo fcinfo, MemoryContext *old)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	FuncCallContext *funcctx;
	TupleDesc	tupdesc;

	if (rsinfo == NULL || !IsA(rsinfo, ReturnSetInfo))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("set-valued function called in context that cannot accept a set")));
	funcctx = SRF_FIRSTCALL_INIT();
	*old = MemoryContextSwitchTo(funcctx->multi_call_memory_ctx);
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	funcctx->tuple_desc = BlessTupleDesc(tupdesc);
	return funcctx;
}

/* The rows of a wave one per call, for a cursor (value-per-call SRF). */
static Datum
WaveRows(FunctionCallInfo fcinfo, const SourceSpec *spec)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	FuncCallContext *funcctx;
	Wave	   *wave;
	Datum		values[8];
	bool		nulls[8];

	if (SRF_IS_FIRSTCALL())
	{
		MemoryContext old;

		funcctx = WaveRowsFirstCall(fcinfo, &old);
		/* the rows come over many calls: the wave keeps its snapshot registered */
		wave = WaveOpen(fcinfo, spec, 4, 0);
		funcctx->user_fctx = wave;
		RegisterExprContextCallback(rsinfo->econtext, WaveShutdown, PointerGetDatum(wave));
		MemoryContextSwitchTo(old);
	}
	funcctx = SRF_PERCALL_SETUP();
	wave = (Wave *) funcctx->user_fctx;
	if (WaveNext(wave, values, nulls))
		SRF_RETURN_NEXT(funcctx,
						HeapTupleGetDatum(heap_form_tuple(funcctx->tuple_desc, values, nulls)));
	UnregisterExprContextCallback(rsinfo->econtext, WaveShutdown, PointerGetDatum(wave));
	WaveClose(wave);
	SRF_RETURN_DONE(funcctx);
}

/* xip83.group_wave_scan: one page of a group-message wave. */
Datum
group_wave_scan(PG_FUNCTION_ARGS)
{
	return WaveScanPage(fcinfo, &WaveV3GroupSource);
}

/* xip83.welcome_wave_scan: one page of a welcome wave. */
Datum
welcome_wave_scan(PG_FUNCTION_ARGS)
{
	return WaveScanPage(fcinfo, &WaveV3WelcomeSource);
}

/* xip83.group_wave_rows: a whole group-message wave, one row per call. */
Datum
group_wave_rows(PG_FUNCTION_ARGS)
{
	return WaveRows(fcinfo, &WaveV3GroupSource);
}

/* xip83.welcome_wave_rows: a whole welcome wave, one row per call. */
Datum
welcome_wave_rows(PG_FUNCTION_ARGS)
{
	return WaveRows(fcinfo, &WaveV3WelcomeSource);
}
