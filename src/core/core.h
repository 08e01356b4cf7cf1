/*
 * core.h: the API of src/core, the registry in shared memory: position
 * lines, feeds, pins and the late ring (registry.h has the model), their WAL
 * and file (registry_wal.c, registry_file.c), horizons as computed from them
 * (horizons.c), what a writing transaction holds (pins.c) and the
 * recent-writes tables (recent.c).
 *
 * Core knows positions, never tables or SQL: what it needs from the floors
 * above (loading a fresh feed from its tables, starting the notifier,
 * waking it) arrives through the hooks below, set once at start by the feed
 * layer. Entries (RegistryDb) are opaque here; their layout is private to
 * src/core (registry.h).
 */
#ifndef XIP83_CORE_H
#define XIP83_CORE_H

#include "postgres.h"

#include "access/xlogdefs.h"
#include "port/atomics.h"

#define LINE_GROUP		0
#define LINE_WELCOME	1
#define LINE_FIRST_ORIGINATOR 2

/* The kinds a late entry or a trigger names. */
typedef enum PositionKind
{
	KIND_GROUP = 0,
	KIND_WELCOME = 1,
	KIND_ENVELOPE = 2
} PositionKind;

/* xip83's own table of each kind, by PositionKind. */
extern const char *const RegistryKindTable[3];

/* One feed's lines and late ring (registry.h). */
typedef struct RegistryDb RegistryDb;

/* One late write, in the order writers registered them. */
typedef struct LateEntry
{
	uint64		seq;			/* ascending; 0 in a slot never written */
	int32		kind;			/* PositionKind */
	int32		node;			/* envelopes: the originator */
	int64		position;		/* id, or sequence id */
	TransactionId xid;			/* the row's xmin */
} LateEntry;

/* Capacities (PGC_POSTMASTER settings, src/sql/xip83.c). */
extern int	xip83_max_databases;
extern int	xip83_max_tracked_tables;
extern int	xip83_max_originators;
extern int	xip83_late_ring_size;

/* ---------------------------------------------------------------- hooks */

/* Called when a slot's pins are cleared: a horizon may have moved. */
typedef void (*RegistryWakeFn) (void);
extern RegistryWakeFn registry_wake;
/* Called at a transaction's first pin: someone must hear of its end. */
extern RegistryWakeFn registry_first_write;
/*
 * Loads a fresh feed of the current database from its tables (relid: the
 * tracked table, InvalidOid: xip83's own): the v3 lines' highs into *group
 * and *welcome, each stored originator through RegistryLoadOriginator.
 */
typedef void (*RegistryLoadFn) (RegistryDb *db, Oid relid, int64 *group, int64 *welcome);
extern RegistryLoadFn registry_load_feed;

/* ------------------------------------------------------------- registry */

/* Shared memory, from _PG_init and the shmem hooks while preloading. */
extern Size RegistryShmemSize(void);
extern void RegistryShmemRequest(void);
extern void RegistryShmemInit(void);
/* The late ring's and the horizons' WAL resource manager (registry_wal.c). */
extern void RegistryRegisterRmgr(void);

/* Whether the registry is in shared memory (xip83 preloaded). */
extern bool RegistryReady(void);
/* Refuses with 55000 and a hint when xip83 was not preloaded. */
extern void RegistryRequirePreload(void);
/*
 * A feed of the current database, loaded, with this backend's slot set up;
 * during recovery the replayed entry, read-only (RegistryReplayedFeed).
 * relid: a tracked table, or InvalidOid for xip83's own tables
 * (RegistryAttach).
 */
extern RegistryDb *RegistryAttachFeed(Oid relid);
#define RegistryAttach() RegistryAttachFeed(InvalidOid)
/* A standby's replayed feed of the current database; errors when none was replayed. */
extern RegistryDb *RegistryReplayedFeed(Oid relid);
/* The existing entry of a feed of the current database without attaching, or NULL. */
extern RegistryDb *RegistryLookupFeed(Oid relid);
#define RegistryLookupMine() RegistryLookupFeed(InvalidOid)
/*
 * The loaded feeds of a database (at most max), for the notifier and the
 * summary worker (during recovery: the replayed ones); returns how many.
 */
extern int	RegistryFeedsOf(Oid dboid, RegistryDb **out, int max);
/* Starts a feed over, unloaded (track and untrack; no writer can hold a pin). */
extern void RegistryForgetFeed(Oid relid);
/*
 * A tracked table's feed ends (untrack, or a drop of the table or its blob
 * table): its entry is freed when the transaction commits, for any other
 * tracked table to take, and kept when it (or the subtransaction) aborts.
 */
extern void RegistryReleaseAtCommit(Oid relid);
/* Transaction and subtransaction ends, after the pins are cleared (pins.c). */
extern void RegistryReleaseXactEnd(bool commit);
extern void RegistryReleaseSubXactEnd(bool commit);
/* registry_load_feed: an originator stored with that highest sequence id. */
extern void RegistryLoadOriginator(RegistryDb *db, int32 node, uint64 high);

/* A feed's tracked table (InvalidOid: xip83's own tables). */
extern Oid	RegistryFeedRelid(const RegistryDb *db);
/* Standby: whether replay brought every line of the feed (a full horizon record). */
extern bool RegistryFeedHorizonsReplayed(RegistryDb *db);
/* The end of the newest commit that raised one of its highs (0: none yet). */
extern XLogRecPtr RegistryFeedCommitLsn(RegistryDb *db);
/* Positions registered by commits since start. */
extern uint64 RegistryFeedRegistered(RegistryDb *db);
/* When a backend last attached it, in ms since the epoch of timestamps. */
extern uint64 RegistryFeedLastUseMs(RegistryDb *db);

/* Copies the late ring into WAL (the notifier, once per start). */
extern void RegistryLogRing(RegistryDb *db);
/* One line of a horizon record: LINE_GROUP, LINE_WELCOME, or an originator's. */
typedef struct RegistryHorizonLine
{
	int32		line;			/* LINE_FIRST_ORIGINATOR: the originator node */
	int32		node;
	int64		horizon;
} RegistryHorizonLine;
/* Logs published horizons for standbys (full: every line of the feed). */
extern void RegistryLogHorizons(const RegistryDb *db, const RegistryHorizonLine *lines, int n,
								bool full);
/*
 * For standbys' topic summaries (see the summary below): a non-fresh write
 * of a key at a position, logged before the row is written; and a kind
 * whose summary must be reset (a load) or turned off (TRUNCATE, drop).
 */
extern void RegistryLogSummaryRaise(const RegistryDb *db, PositionKind kind, uint32 key,
									uint64 position);
extern void RegistryLogSummaryReset(const RegistryDb *db, PositionKind kind, bool off);
/* A reset of every kind of a feed, whether or not this server has its entry. */
extern void RegistryLogSummaryResetFeed(Oid dboid, Oid relid);

/* ------------------------------------------------------------- horizons */

/* Lines in use (2 + originators), read before their horizons. */
extern int	RegistryLineCount(RegistryDb *db);
/* The node id of an originator line. */
extern int32 RegistryLineNode(RegistryDb *db, int line);
/*
 * Computes and publishes the horizons of lines [0, nlines) into out
 * (horizons.c); on a standby, what replay published.
 */
extern void RegistryHorizons(RegistryDb *db, int nlines, uint64 *out);
/*
 * Who holds a line's horizon: the lowest position an open transaction may
 * still write there (its pin, or the published horizon + 1 for a transaction
 * that holds every line) and that backend's pid; 0 and 0 when none.
 */
typedef struct RegistryHold
{
	int64		position;
	int32		pid;
} RegistryHold;
/* Who holds each of lines [0, nlines) of a feed now (for status; publishes nothing). */
extern void RegistryInFlight(RegistryDb *db, int nlines, RegistryHold *out);
/* The newest late entry's seq, and late writes committed since start. */
extern uint64 RegistryLateHead(RegistryDb *db);
extern uint64 RegistryLateWrites(RegistryDb *db);
/*
 * Copies the late entries of a kind after a cursor into a palloc'd array in
 * ring order, *n of them; *lost when some after it were overwritten. Returns
 * the newest entry's seq.
 */
extern uint64 RegistryLateSince(RegistryDb *db, PositionKind kind, uint64 after,
								LateEntry **entries, int *n, bool *lost);
/*
 * The newest late entry's seq, and into xids (room for xip83.late_ring_size)
 * the writers up to it that may still run (not before RecentXmin), *n of them.
 */
extern uint64 RegistryLateWriters(RegistryDb *db, TransactionId *xids, int *n);

/* ----------------------------------------------------------------- pins */

/* The transaction hooks that raise highs at commit and clear pins (pins.c). */
extern void PinsInstallHooks(void);
/*
 * Registers a position this transaction is about to write on a line: below
 * its pin and at or below the published horizon it is a late write, put in
 * the late ring (and WAL) before the row is inserted. Returns whether the
 * write is late.
 */
extern bool PinsRegister(RegistryDb *db, int line, PositionKind kind, int32 node, uint64 x);
/* Pins a line before a position is drawn from a sequence there. */
extern void PinsBeforeDraw(RegistryDb *db, int line);
/* An originator's line, counted as written by this transaction until it ends. */
extern int	PinsOriginatorLine(RegistryDb *db, int32 node);
/* A kind of a feed starts over when this transaction commits (TRUNCATE, drop). */
extern void PinsResetAtCommit(RegistryDb *db, PositionKind kind);

/* --------------------------------------------------------------- recent */

/*
 * The recent-writes table of each database and kind (recent.c).
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
typedef struct RecentTable RecentTable;

/* Positions retained per entry: its max and as many below it as fit. */
#define RECENT_KEEP		12

/* Entries per database and kind (PGC_POSTMASTER, src/sql/xip83.c). */
extern int	xip83_recent_entries;

extern Size RecentShmemSize(void);
extern void RecentShmemRequest(void);
extern void RecentShmemInit(void);

/* The table of a database entry and kind. */
extern RecentTable *RecentTableOf(const RegistryDb *db, PositionKind kind);
/* Whether the tables are in shared memory (preloaded, xip83.recent_entries > 0). */
extern bool RecentReady(void);

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

/* -------------------------------------------------------------- summary */

/*
 * The topic summary of each feed and kind (summary.c): "may this topic have
 * a row above floor F?" for every topic of the feed, whatever its age, in a
 * fixed size (xip83.summary_memory per feed and kind).
 *
 * A table of keys (RecentKey: a topic, and an originator for envelopes)
 * with their highest position, in blocks of one cache line that never give a
 * slot back, so a wave's "no" is exact for every key that found a slot. A
 * key's block has 7 slots, each a tag (16 bits of the key) and a position,
 * claimed in order, and an overflow word. A writer raises the first slot
 * with its tag, or claims the first empty one; when the 7 hold other tags it
 * raises the overflow word instead. A key has no row above F when its slot
 * holds F or less, or when it has no slot and the block is not full (slots
 * fill in order and stay: a key noted before the question has its slot, or
 * found all 7 taken, and they still are), or, block full, the overflow word
 * is at or below F. Keys sharing a block and tag share a slot, and a full
 * block answers with its overflow: both only raise the answer, so a summary
 * smaller than the topics answers "may" more often and never "no" wrongly.
 * A position above SUMMARY_POSITION_MAX is kept as that value, which means
 * "any position".

 * Invariant, once READY: every row the feed holds, visible to a snapshot
 * taken before the question, raised its key's slot (or the overflow) to its
 * position. Two paths keep it. Writers (positions.c) raise it with an atomic max
 * where they note recent writes, before the row can be seen, from the
 * moment a feed is loaded; and after each load (server start, crash
 * restart, entry reuse) or committed TRUNCATE (SummaryReset, which empties
 * it) a pass of the builder worker (src/feed/summary_build.c) reads every
 * row stored under one snapshot taken after every writer that could have
 * written before the load has ended. A row is either visible to that
 * snapshot (the pass raised it) or committed after it (its writer did).
 * Until the pass is done (READY) the summary answers nothing and waves read
 * as they would without it.
 *
 * Readers take their snapshot, then SummaryAskBegin, ask, and discard every
 * "no" unless SummaryAskStillValid: a reset between the two moved the state.
 *
 * Covered position. A summary vouches for the rows at or below its covered
 * position: every position after a primary's pass (SUMMARY_COVERS_ALL). On
 * a hot standby nothing writes, so its worker builds the v3 kinds' summaries
 * from the standby's own rows and follows replay (src/feed/summary_build.c):
 * covered is a horizon the standby replayed, and a wave trusts a "no" only
 * for a ceiling at or below it (SummaryAskCovers). The rows a standby cannot
 * find by position come with records of their own: a non-fresh write (late,
 * or a row moved to another topic) is raised by the replay of a RAISE record
 * its writer logged before the row (RegistryLogSummaryRaise); a committed
 * TRUNCATE or drop starts positions over below what the standby follows, so
 * its record turns the standby's summary off (standby_off) until the server
 * leaves recovery; a load of the feed on the primary resets it.
 */
#define SUMMARY_COVERS_ALL PG_UINT64_MAX
/*
 * A standby's envelope summary: a horizon per originator, so what it vouches
 * for is kept per originator line (SummaryLineCovered), not in one number.
 */
#define SUMMARY_COVERS_LINES (PG_UINT64_MAX - 1)
typedef struct Summary Summary;

typedef enum SummaryState
{
	SUMMARY_EMPTY = 0,			/* loaded or reset: a pass is wanted */
	SUMMARY_BUILDING = 1,		/* a pass runs */
	SUMMARY_READY = 2,			/* answers */
	SUMMARY_RESETTING = 3		/* being emptied */
} SummaryState;

/* Words per block: SUMMARY_SLOTS slots, then the overflow word. */
#define SUMMARY_WORDS_PER_BLOCK 8
#define SUMMARY_SLOTS 7
#define SUMMARY_TAG_SHIFT 48
/* The highest position a slot holds; it stands for every higher one. */
#define SUMMARY_POSITION_MAX ((UINT64CONST(1) << SUMMARY_TAG_SHIFT) - 1)

/* kB per feed and kind (PGC_POSTMASTER, src/sql/xip83.c); 0: no summaries. */
extern int	xip83_summary_kb;

extern Size SummaryShmemSize(void);
extern void SummaryShmemRequest(void);
extern void SummaryShmemInit(void);
/* Whether the summaries are in shared memory (preloaded, xip83.summary_memory > 0). */
extern bool SummaryReady(void);
/* The summary of a feed and kind, NULL when there are none. */
extern Summary *SummaryOf(const RegistryDb *db, PositionKind kind);

/* A key's block, of nblocks: multiply-shift, any count. */
static inline uint64
SummaryBlock(uint32 key, uint64 nblocks)
{
	return ((uint64) key * nblocks) >> 32;
}

/* A key's slot tag, never 0 (an empty slot), in place above the position. */
static inline uint64
SummaryTag(uint32 key)
{
	uint32		t = (key * 0x2545f491u) >> 16;

	return (uint64) (t != 0 ? t : 1) << SUMMARY_TAG_SHIFT;
}

/* Writer: a row of the key at position is about to be written (before it can be seen). */
extern void SummaryNote(Summary *s, uint32 key, uint64 position);

/* The state, and its generation (bumped by each reset) into *gen when not NULL. */
extern SummaryState SummaryStateOf(const Summary *s, uint64 *gen);
/* Empties a summary: EMPTY, a pass wanted (load, committed TRUNCATE). */
extern void SummaryReset(Summary *s);
extern void SummaryResetKind(RegistryDb *db, PositionKind kind);

/* The builder: claims an EMPTY summary for a pass (its generation into *gen). */
extern bool SummaryPassBegin(Summary *s, uint64 *gen);
/* Rows the pass read, for status. */
extern void SummaryPassProgress(Summary *s, uint64 rows);
/*
 * Ends a pass: READY when done and no reset came meanwhile, otherwise back to
 * EMPTY (another pass is wanted); returns whether it became READY.
 */
extern bool SummaryPassEnd(Summary *s, uint64 gen, bool done, uint64 covered);
/*
 * A standby's follower: the rows up to covered are raised (only rises, and
 * only while the summary is READY in generation gen).
 */
extern void SummaryAdvance(Summary *s, uint64 gen, uint64 covered);
extern uint64 SummaryCoveredOf(const Summary *s);
/*
 * Standby, envelopes: the sequence up to which the summary vouches for the
 * rows of an originator line (0: none; zeroed when the line is made or
 * given to another node). The follower sets it after raising those rows.
 */
extern void SummaryCoverLine(RegistryDb *db, int line, uint64 covered);
extern uint64 SummaryLineCovered(RegistryDb *db, int line);
/* A standby cannot follow this summary any more (replay of a TRUNCATE or drop). */
extern void SummarySetStandbyOff(Summary *s);
extern bool SummaryStandbyOff(const Summary *s);

/* A batch of questions, begun after the reader's snapshot was taken. */
typedef struct SummaryAsk
{
	const Summary *summary;
	const pg_atomic_uint64 *blocks;	/* nblocks * SUMMARY_WORDS_PER_BLOCK */
	uint64		nblocks;
	uint64		word;			/* the state word at the start */
	uint64		covered;		/* the covered position at the start */
} SummaryAsk;

/* Starts a batch; false when the summary cannot answer (not READY, or NULL). */
extern bool SummaryAskBegin(const Summary *s, SummaryAsk *ask);
/* After the last question: false when a reset voids every "no" of the batch. */
extern bool SummaryAskStillValid(const SummaryAsk *ask);

/* Whether its "no"s hold for rows up to ceiling (every one on a primary). */
static inline bool
SummaryAskCovers(const SummaryAsk *ask, int64 ceiling)
{
	return ceiling <= 0 || ask->covered >= (uint64) ceiling;
}

/* False only when the key has no row above floor (see the model above). */
static inline bool
SummaryAskMay(const SummaryAsk *ask, uint32 key, uint64 floor)
{
	const pg_atomic_uint64 *block = &ask->blocks[SummaryBlock(key, ask->nblocks) *
												 SUMMARY_WORDS_PER_BLOCK];
	uint64		tag = SummaryTag(key);
	uint64		mine = 0;
	bool		full = true;

	/*
	 * One slot has the tag, or none, so OR picks it without a branch per
	 * slot; a reset racing a writer may leave two, and their OR is still at
	 * least each one.
	 */
	for (int i = 0; i < SUMMARY_SLOTS; i++)
	{
		uint64		w = pg_atomic_read_u64((pg_atomic_uint64 *) &block[i]);

		mine |= (w & ~SUMMARY_POSITION_MAX) == tag ? w : 0;
		full &= w != 0;
	}
	if (mine != 0)
		return (mine & SUMMARY_POSITION_MAX) > Min(floor, SUMMARY_POSITION_MAX - 1);
	return full && pg_atomic_read_u64((pg_atomic_uint64 *) &block[SUMMARY_SLOTS]) > floor;
}

static pg_attribute_always_inline void
SummaryAskPrefetch(const SummaryAsk *ask, uint32 key)
{
#ifdef __GNUC__
	__builtin_prefetch(&ask->blocks[SummaryBlock(key, ask->nblocks) * SUMMARY_WORDS_PER_BLOCK]);
#endif
}

/*
 * may[i] &&= the summary's answer for (keys[i], floors[i]), when it can
 * answer for rows up to ceiling (on a standby's envelope summary: of the
 * originator node of the feed db) and no reset came meanwhile; returns how
 * many may have.
 */
extern int	SummaryMayHaveMany(const Summary *s, RegistryDb *db, int32 node, int64 ceiling,
							   int n, const uint32 *keys, const uint64 *floors, bool *may);

/* For status: a feed's summary of a kind; false when there is none or the feed is not loaded. */
extern bool SummaryStatsOf(const RegistryDb *db, PositionKind kind, SummaryState *state,
						   int64 *scanned, int64 *pass_ms);

#endif							/* XIP83_CORE_H */
