/*
 * recent.h: the recent-writes table of each database and kind (recent.c).
 *
 * Per registry entry and PositionKind a bounded hash in shared memory of
 * (topic key, the RECENT_KEEP highest distinct positions written) entries.
 * The write path notes every row's topic and position before the row can be
 * seen (register_position); a wave over xip83's own table asks it whether a
 * topic may hold a row above its floor, and skips the index descent when
 * not; a topic the merge reaches asks for its exact candidates, fetched by
 * position instead of descending the topic's index (RecentExact).
 *
 * Invariant, per partition: every registered write (key, p) with p > low has
 * an entry of that key with max >= p. So a topic whose floor is at or above
 * low and that has no entry above its floor has no row above its floor that
 * was registered before the question. Entries are never false negatives;
 * hash collisions and stale maxima are false positives (the topic descends).
 * Beyond the max, every registered write (key, p) with p > low is retained
 * or lies below the entry's RECENT_KEEP-th retained position (a position is
 * dropped only when RECENT_KEEP higher ones are retained).
 *
 * A full partition evicts its older half and raises low to the highest
 * position evicted. A fresh entry (server start, entry reuse) and a committed
 * TRUNCATE start empty with low at the line's high: every row then present is
 * at or below it.
 *
 * Concurrency: writers take their partition's LWLock exclusive. Readers take
 * no lock: an entry's max is written before its key, only grows, and keys
 * leave only by eviction or reset, which bump the partition's seq around the
 * change (odd while it runs); a reader that sees seq move answers "may have".
 * Changes to an entry's retained positions bump the entry's version around
 * them (odd meanwhile); an exact reader copies them between two reads of it.
 *
 * Every registry entry (xip83's own tables of a database, or one tracked
 * table) has a table per kind; a tracked table uses its kind's.
 */
#ifndef XIP83_RECENT_H
#define XIP83_RECENT_H

#include "postgres.h"

#include "registry.h"

typedef struct RecentTable RecentTable;

/* Positions retained per entry: its max and as many below it as fit. */
#define RECENT_KEEP		12

/* Entries per database and kind (PGC_POSTMASTER, src/xip83.c). */
extern int	xip83_recent_entries;

extern Size RecentShmemSize(void);
extern void RecentShmemRequest(void);
extern void RecentShmemInit(void);

/* The table of a database entry and kind. */
extern RecentTable *RecentTableOf(const RegistryDb *db, PositionKind kind);

/* Folds 8 bytes into a topic's hash: one multiply, so words chain quickly. */
static inline uint64
RecentFold(uint64 h, uint64 w)
{
	return (h ^ w) * UINT64CONST(0x9fb21c651e98df25);
}

/* 8 and 4 bytes of a topic, unaligned. */
static inline uint64
RecentLoad8(const unsigned char *p)
{
	uint64		w;

	memcpy(&w, p, 8);
	return w;
}

static inline uint64
RecentLoad4(const unsigned char *p)
{
	uint32		w;

	memcpy(&w, p, 4);
	return w;
}

/*
 * The key of a topic (and originator: 0 for v3); never 0. A v3 topic's key
 * is also a good hash of its bytes (wave_v3.c hashes its topics with it).
 *
 * Inline and short: a wave asks about every topic it is given and a writer
 * about every row, and a caught-up wave must cost little more than reading
 * its arguments. The length and originator seed the hash; a topic of 4 to
 * 16 bytes is two (overlapping) words read without a loop, a longer one its
 * 16-byte blocks and then its last 16 bytes, each word one multiply, then
 * one final mix (the high half of a product depends on every bit below it).
 * Keys only meet keys made by the same binary: byte order does not matter.
 */
static inline uint32
RecentKey(const void *topic, Size len, int32 node)
{
	const unsigned char *p = (const unsigned char *) topic;
	uint64		h = UINT64CONST(0x9e3779b97f4a7c15) ^ ((uint64) len << 32) ^ (uint32) node;
	uint64		a,
				b;
	uint32		key;

	if (likely(len >= 8 && len <= 16))
	{
		a = RecentLoad8(p);
		b = RecentLoad8(p + len - 8);
	}
	else if (len > 16)
	{
		const unsigned char *end = p + len;

		for (; end - p > 16; p += 16)
			h = RecentFold(RecentFold(h, RecentLoad8(p)), RecentLoad8(p + 8));
		a = RecentLoad8(end - 16);
		b = RecentLoad8(end - 8);
	}
	else if (len >= 4)
	{
		a = RecentLoad4(p);
		b = RecentLoad4(p + len - 4);
	}
	else
	{
		a = len == 0 ? 0 : p[0] | (uint64) p[len >> 1] << 8 | (uint64) p[len - 1] << 16;
		b = 0;
	}
	h = RecentFold(RecentFold(h, a), b);
	h ^= h >> 32;
	h *= UINT64CONST(0xd6e8feb86659fd93);
	key = (uint32) (h >> 32);
	return key != 0 ? key : 1;
}

/*
 * The table a wave over relid may skip descents with: relid must be xip83's
 * own table of the kind or a table tracked as that kind, the registry
 * loaded, the server a primary; else NULL.
 */
extern RecentTable *RecentForSource(Oid relid, PositionKind kind);

/* Writer: position was registered for the key (partition lock taken). */
extern void RecentNote(RecentTable *t, uint32 key, uint64 position);

/* Empties the table, low at the given position (every row is at or below it). */
extern void RecentReset(RecentTable *t, uint64 low);
/* Empties a kind's table, low at the highest high of its lines (load, TRUNCATE). */
extern void RecentResetKind(RegistryDb *db, PositionKind kind);

/* Partitions per table at most (one bit each in RecentAsk.moved). */
#define RECENT_MAX_PARTS	64

/*
 * A batch of may-have questions to one table, each answered inline from its
 * slots: a caught-up wave asks one per topic, and a call per question would
 * cost as much as the answer. Begin reads every partition's seq and low;
 * after the last question, RecentAskMoved names the partitions that changed
 * meanwhile, whose answers must then be taken as "may have".
 */
typedef struct RecentAsk
{
	pg_atomic_uint32 *keys;		/* the table's slots (recent.c) */
	pg_atomic_uint64 *maxes;
	uint32		part_mask;		/* a key's partition: key & part_mask */
	uint32		home_mask;		/* its home slot: (key >> 6) & home_mask */
	int			part_shift;		/* log2 of slots per partition */
	uint64		low_max;		/* the highest low of a partition */
	const RecentTable *table;
	uint64		seq[RECENT_MAX_PARTS];
	uint64		low[RECENT_MAX_PARTS];
} RecentAsk;

/* Reader, after taking the snapshot it reads with: starts a batch. */
extern void RecentAskBegin(const RecentTable *t, RecentAsk *ask);
/* The max of a key found away from its home slot, 0 when absent. */
extern uint64 RecentAskFar(const RecentAsk *ask, uint32 part, uint32 key);
/* The partitions (bit per partition) that changed since RecentAskBegin. */
extern uint64 RecentAskMoved(const RecentAsk *ask);

/*
 * False only when no write of the key above floor (at or above 0) was
 * registered before the batch began, if the key's partition is not among
 * those RecentAskMoved names afterwards.
 */
static inline bool
RecentAskMay(const RecentAsk *ask, uint32 key, uint64 floor)
{
	uint32		part = key & ask->part_mask;
	uint32		slot = (part << ask->part_shift) | ((key >> 6) & ask->home_mask);
	uint32		k = pg_atomic_read_u32(&ask->keys[slot]);

	/* below a partition's low an absent write may have been evicted */
	if (unlikely(floor < ask->low_max) && floor < ask->low[part])
		return true;
	if (likely(k == key))
	{
		/* the max was written before the key */
		pg_read_barrier();
		return pg_atomic_read_u64(&ask->maxes[slot]) > floor;
	}
	if (k == 0)
		return false;
	return RecentAskFar(ask, part, key) > floor;
}

/*
 * Starts loading a key's home slot: a wave hashes a run of topics, loading
 * each one's slot, then asks about them, so that the cache misses overlap.
 * Always inlined: gcc takes a function that only prefetches for one without
 * effects and deletes the calls.
 */
static pg_attribute_always_inline void
RecentAskPrefetch(const RecentAsk *ask, uint32 key)
{
#ifdef __GNUC__
	uint32		slot = ((key & ask->part_mask) << ask->part_shift) | ((key >> 6) & ask->home_mask);

	__builtin_prefetch(&ask->keys[slot]);
	__builtin_prefetch(&ask->maxes[slot]);
#endif
}

/* Whether a key's partition is among moved (RecentAskMoved). */
static inline bool
RecentAskInMoved(const RecentAsk *ask, uint64 moved, uint32 key)
{
	return ((moved >> (key & ask->part_mask)) & 1) != 0;
}

/*
 * RecentAskMay for n questions at once: may[i] for (keys[i], floors[i]),
 * already corrected for partitions that moved; returns how many may have.
 */
extern int	RecentMayHaveMany(const RecentTable *t, int n, const uint32 *keys,
							  const uint64 *floors, bool *may);

/*
 * Reader, after taking the snapshot it reads with, for a floor at or above 0:
 * when every write of the key above floor registered before this call is
 * among the positions retained, those positions above floor, ascending, into
 * positions[RECENT_KEEP], and their count; -1 when not known exactly (floor
 * below the partition's low, the RECENT_KEEP-th retained position above
 * floor, or a writer changing the entry or partition meanwhile). Positions
 * of other keys with the same hash may be among them; the caller checks each
 * row's topic.
 */
extern int	RecentExact(const RecentTable *t, uint32 key, int64 floor, uint64 *positions);

/*
 * For feed_status: per kind of the current database, the highest low of a
 * partition and the entries in use; false when its entry is not loaded.
 */
extern bool RecentStatsMine(int64 low[3], int64 used[3]);
/* The same for any feed's entry. */
extern bool RecentStatsOf(const RegistryDb *db, int64 low[3], int64 used[3]);

#endif							/* XIP83_RECENT_H */
