/*
 * wave_v3.c: the v3 wave scans, group and welcome messages, as a row
 * iterator (Wave, scan.h); src/sql/waves.c serves it as SQL functions:
 *
 *   *_wave_scan   one stateless page: the rows m of source with, for some i,
 *                 m.topic = topics[i] and m.id > floors[i], and m.id > scan_cursor
 *                 and m.id <= ceiling; ascending id; at most page_limit rows.
 *                 With page_limit NULL: the same rows without a limit, one per
 *                 call (value per call), for a cursor: the SQL wrapper
 *                 *_wave_stream puts it in a target list so FETCH n reads n
 *                 rows and no more.
 *
 * Invariants: a topic listed twice is one stream with its lowest floor; a
 * topic whose floor (raised to the scan cursor) is at or above the ceiling is
 * never read, so a caught-up wave touches no index. The merge engine does the
 * reading; this file only turns arguments into streams and rows into tuples.
 *
 * Visibility: a wave reads with one snapshot taken after its arguments (the
 * ceiling among them) were evaluated, HorizonReadSnapshot (feed.h), so a
 * ceiling pinned from the horizon in the same statement, or inside a
 * REPEATABLE READ transaction, still finds every row at or below it.
 *
 * Resources: a page opens, scans and closes within one call. A stream keeps
 * its source, merge and a registered snapshot across calls and releases them
 * when the rows run out or when its expression context shuts down (cursor
 * closed, query ended early: src/sql/waves.c registers the callback); on
 * ERROR the resource owner releases them.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"

#include "base/base.h"
#include "core/core.h"
#include "rel/rel.h"
#include "feed/feed.h"
#include "merge.h"
#include "scan.h"

/* A distinct topic of the wave and its stream (the first of them, per leaf). */
typedef struct WaveTopic
{
	bytea	   *topic;
	int32		stream;			/* -1: nothing to read */
	char		status;
} WaveTopic;

/* Hash of a topic's bytes: its recent-writes key (one hash function for both). */
static inline uint32
TopicHash(const bytea *topic)
{
	return RecentKey(VARDATA_ANY(topic), VARSIZE_ANY_EXHDR(topic), 0);
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
	wavetopics_hash *topics;	/* the topics of the streams admitted so far */
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

/*
 * Admits a stream the merge has reached (in floor order) into the topic set:
 * false when its topic is already there, from a listing with a floor at or
 * below this one, whose stream reads every row this one would.
 */
static bool
AdmitTopic(void *arg, int stream)
{
	Wave	   *wave = (Wave *) arg;
	bool		found;
	WaveTopic  *entry = wavetopics_insert(wave->topics,
										  (bytea *) DatumGetPointer(MergeStreamTopic(wave->merge,
																					 stream)),
										  &found);

	if (found)
		return false;
	entry->stream = stream;
	return true;
}

/* Listings walked and asked about at a time, on the stack. */
#define ASK_CHUNK 256
/* Questions whose lines are loaded ahead of the one asked. */
#define ASK_AHEAD 16

/* The recent-writes key of a topic element, read in place. */
static inline uint32
ElementKey(Datum element)
{
	const char *p = DatumGetPointer(element);
	bytea	   *topic;

	if (likely(VARATT_IS_4B_U(p)))
	{
		Size		len = VARSIZE(p) - VARHDRSZ;

		/* the common topic sizes get a copy of the hash with the length fixed */
		if (likely(len == 16))
			return RecentKey(VARDATA(p), 16, 0);
		if (len == 32)
			return RecentKey(VARDATA(p), 32, 0);
		return RecentKey(VARDATA(p), len, 0);
	}
	topic = DatumGetByteaPP(element);
	return RecentKey(VARDATA_ANY(topic), VARSIZE_ANY_EXHDR(topic), 0);
}

/*
 * Starts loading what the question about a key will read, ASK_AHEAD
 * questions before it: enough to overlap the misses, few enough that the
 * loads do not queue behind each other. The summary rules out nearly every
 * caught-up topic, so when there is one the table's line is left alone.
 */
static pg_attribute_always_inline void
AskPrefetch(const RecentAsk *recent, const SummaryAsk *summary, uint32 key)
{
	if (summary != NULL)
		SummaryAskPrefetch(summary, key);
	else if (recent != NULL)
		RecentAskPrefetch(recent, key);
}

/* Marks listing i of topics->n read: allocates *read with the first. */
static inline void
MarkRead(bool **read, int n, int i, int *count)
{
	if (*read == NULL)
		*read = palloc0(sizeof(bool) * n);
	*count += !(*read)[i];
	(*read)[i] = true;
}

/*
 * Decides per listing whether the wave reads it (*read, allocated with the
 * first listing read; NULL when none is); returns how many. A listing is
 * read when its floor, raised to the scan cursor, is below the ceiling and,
 * over a table with recent writes, a write of its topic above that floor
 * may be registered (asked after the snapshot was taken: a topic with no
 * such write has no row the snapshot sees above its floor). A topic listed
 * twice is then read from the lowest floor among its listings that are
 * read: rows between a lower floor whose answer was "no" and that one were
 * registered after the question, so after the snapshot.
 *
 * This is the whole cost of a caught-up reconnect, so it walks the topics in
 * place (no deconstruct_array), a chunk at a time: hashes them, loading each
 * one's slot, then asks; it allocates nothing unless a listing is read. A
 * partition that changed under the questions (rare: an eviction) is found
 * at the end, and its topics are walked again and read.
 */
static int
ChooseListings(const RecentTable *recent, const SummaryAsk *summary, const ArgArray *topics,
			   const ArgArray *floors, int64 scan_cursor, int64 ceiling, bool **read)
{
	Datum		chunk_topics[ASK_CHUNK];
	uint32		chunk_keys[ASK_CHUNK];
	int64		chunk_floors[ASK_CHUNK];
	int			chunk_listing[ASK_CHUNK];
	int			count = 0;
	ArgWalk		walk = ArgWalkBegin(topics);
	RecentAsk	ask;
	uint64		moved;

	*read = NULL;
	if (recent != NULL)
		RecentAskBegin(recent, &ask);
	for (int start = 0; start < topics->n; start += ASK_CHUNK)
	{
		int			end = start + ArgNextVarlenas(topics, &walk, ASK_CHUNK, chunk_topics);
		int			n = 0;

		CHECK_FOR_INTERRUPTS();
		for (int i = start; i < end; i++)
		{
			int64		floor = Max(DatumGetInt64(floors->values[i]), scan_cursor);

			if (floor >= ceiling)
				continue;
			chunk_keys[n] = ElementKey(chunk_topics[i - start]);
			if (n < ASK_AHEAD)
				AskPrefetch(recent != NULL ? &ask : NULL, summary, chunk_keys[n]);
			chunk_floors[n] = floor;
			chunk_listing[n++] = i;
		}
		for (int j = 0; j < n; j++)
		{
			if (j + ASK_AHEAD < n)
				AskPrefetch(recent != NULL ? &ask : NULL, summary, chunk_keys[j + ASK_AHEAD]);
			/* below position 0 neither answers: read; either one's "no" suffices */
			if (chunk_floors[j] < 0 ||
				((summary == NULL || SummaryAskMay(summary, chunk_keys[j], (uint64) chunk_floors[j])) &&
				 (recent == NULL || RecentAskMay(&ask, chunk_keys[j], (uint64) chunk_floors[j]))))
				MarkRead(read, topics->n, chunk_listing[j], &count);
		}
	}
	moved = recent != NULL ? RecentAskMoved(&ask) : 0;
	if (moved != 0)
	{
		/* a partition changed under the questions: its topics may have */
		walk = ArgWalkBegin(topics);
		for (int start = 0; start < topics->n; start += ASK_CHUNK)
		{
			int			end = start + ArgNextVarlenas(topics, &walk, ASK_CHUNK, chunk_topics);

			for (int i = start; i < end; i++)
			{
				int64		floor = Max(DatumGetInt64(floors->values[i]), scan_cursor);
				uint32		key = ElementKey(chunk_topics[i - start]);

				/* the summary's "no" still holds for them */
				if (floor < ceiling && RecentAskInMoved(&ask, moved, key) &&
					(summary == NULL || floor < 0 || SummaryAskMay(summary, key, (uint64) floor)))
					MarkRead(read, topics->n, i, &count);
			}
		}
	}
	return count;
}

/*
 * Adds the streams of the listings read, a topic listed twice once with its
 * lowest floor (raised to the cursor). Over leaves in id order, one stream per
 * listing, each admitted into the topic set (what the dense walk classifies
 * rows with) only when the merge reaches it, a repeated topic's later
 * listings dropped then (AdmitTopic): a page sets up the topics it gets to.
 * Otherwise one stream per (topic, leaf), consecutive, set up here.
 */
static void
AddStreams(Wave *wave, ArgArray *topics, const ArgArray *floors, int64 scan_cursor,
		   int64 ceiling, const bool *read, int nread, bool in_order)
{
	int			nleaves = wave->source->nleaves;
	Datum	   *values = ArgValues(topics);

	/* lazily admitted topics grow the set as the merge reaches them */
	wave->topics = wavetopics_create(CurrentMemoryContext,
									 in_order ? Min(nread, 256) : Max(nread, 16), NULL);
	MergeReserveStreams(wave->merge, nread);
	for (int i = 0; i < topics->n; i++)
	{
		int64		floor = Max(DatumGetInt64(floors->values[i]), scan_cursor);
		bool		found;
		WaveTopic  *entry;

		if ((i % 4096) == 0)
			CHECK_FOR_INTERRUPTS();
		if (!read[i])
			continue;
		if (in_order)
		{
			(void) MergeAddStream(wave->merge, PointerGetDatum(DatumGetByteaPP(values[i])),
								  0, floor, ceiling, wave->leaves, nleaves);
			continue;
		}
		entry = wavetopics_insert(wave->topics, DatumGetByteaPP(values[i]), &found);
		if (found)
		{
			for (int l = 0; entry->stream >= 0 && l < nleaves; l++)
				MergeLowerFloor(wave->merge, entry->stream + l, floor);
			continue;
		}
		entry->stream = -1;
		for (int l = 0; l < nleaves; l++)
		{
			int			sno = MergeAddStream(wave->merge, PointerGetDatum(entry->topic), 0,
											 floor, ceiling, &wave->leaves[l], 1);

			if (l == 0)
				entry->stream = sno;
		}
	}
	if (in_order)
		MergeSetAdmit(wave->merge, AdmitTopic, wave);
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
 * Reads the wave arguments (topics, floors, scan_cursor, ceiling at 0..3 and
 * the source at source_arg), opens the source and sets up the merge.
 */
static Wave *
WaveOpenOn(FunctionCallInfo fcinfo, const SourceSpec *spec, int source_arg, int64 row_goal,
		   Snapshot snapshot)
{
	Wave	   *wave = palloc0(sizeof(Wave));
	ArgArray	topics = ArgGetVarlenaArray(fcinfo, 0, "topics", BYTEAOID);
	ArgArray	floors = ArgGetArray(fcinfo, 1, "floors", INT8OID);
	int64		scan_cursor;
	int64		ceiling;
	bool		in_order;
	RecentTable *recent;
	SummaryAsk	summary;
	bool		use_summary;
	bool	   *read;
	int			nread;

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

	recent = RecentForSource(PG_GETARG_OID(source_arg),
							 spec == &WaveV3GroupSource ? KIND_GROUP : KIND_WELCOME);
	/* asked after the snapshot, as the recent-writes table is */
	use_summary = SummaryAskBegin(SummaryForSource(PG_GETARG_OID(source_arg),
												   spec == &WaveV3GroupSource ? KIND_GROUP : KIND_WELCOME,
												   NULL),
								  &summary) &&
		/* a standby's summary vouches for rows up to what it followed */
		SummaryAskCovers(&summary, ceiling);
	nread = ChooseListings(recent, use_summary ? &summary : NULL, &topics, &floors, scan_cursor,
						   ceiling, &read);
	if (use_summary && !SummaryAskStillValid(&summary))
	{
		/* reset under the questions (a TRUNCATE committed): its answers are void */
		if (read != NULL)
			pfree(read);
		nread = ChooseListings(recent, NULL, &topics, &floors, scan_cursor, ceiling, &read);
	}
	if (nread == 0)
	{
		/* nothing new: the same as caught up */
		(void) SourceCheckReadable(PG_GETARG_OID(source_arg), spec);
		return wave;
	}
	wave->source = SourceOpen(PG_GETARG_OID(source_arg), spec);
	wave->leaves = palloc(sizeof(SourceLeaf *) * Max(wave->source->nleaves, 1));
	for (int i = 0; i < wave->source->nleaves; i++)
		wave->leaves[i] = &wave->source->leaves[i];

	/*
	 * Leaves in id order make one stream per topic and allow the dense walk;
	 * otherwise each (topic, leaf) is a stream of its own.
	 */
	in_order = LeavesInIdOrder(wave->source);
	wave->merge = MergeBegin(1, snapshot, (MergeStrategy) xip83_wave_strategy, row_goal);
	/* topics the table knows exactly are fetched by id, not descended */
	if (recent != NULL)
		MergeSetRecent(wave->merge, recent);
	AddStreams(wave, &topics, &floors, scan_cursor, ceiling, read, nread, in_order);
	pfree(read);
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
