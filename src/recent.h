/*
 * recent.h: the recent-writes table of each database and kind (recent.c).
 *
 * Per registry entry and PositionKind a bounded hash in shared memory of
 * (topic key, highest position written) entries. The write path notes every
 * row's topic and position before the row can be seen (register_position);
 * a wave over xip83's own table asks it whether a topic may hold a row above
 * its floor, and skips the index descent when not.
 *
 * Invariant, per partition: every registered write (key, p) with p > low has
 * an entry of that key with max >= p. So a topic whose floor is at or above
 * low and that has no entry above its floor has no row above its floor that
 * was registered before the question. Entries are never false negatives;
 * hash collisions and stale maxima are false positives (the topic descends).
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
 *
 * Every registry entry (xip83's own tables of a database, or one tracked
 * table) has a table per kind; a tracked table uses its kind's.
 */
#ifndef XIP83_RECENT_H
#define XIP83_RECENT_H

#include "postgres.h"

#include "registry.h"

typedef struct RecentTable RecentTable;

/* Entries per database and kind (PGC_POSTMASTER, src/xip83.c). */
extern int	xip83_recent_entries;

extern Size RecentShmemSize(void);
extern void RecentShmemRequest(void);
extern void RecentShmemInit(void);

/* The table of a database entry and kind. */
extern RecentTable *RecentTableOf(const RegistryDb *db, PositionKind kind);

/* The key of a topic (and originator: 0 for v3); never 0. */
#define RecentKeyOfHash(h) ((h) != 0 ? (uint32) (h) : (uint32) 1)
extern uint32 RecentKey(const void *topic, Size len, int32 node);

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

/*
 * Reader, after taking the snapshot it reads with: false only when no write
 * of the key above floor was registered before this call.
 */
extern bool RecentMayHave(const RecentTable *t, uint32 key, uint64 floor);

/*
 * For feed_status: per kind of the current database, the highest low of a
 * partition and the entries in use; false when its entry is not loaded.
 */
extern bool RecentStatsMine(int64 low[3], int64 used[3]);
/* The same for any feed's entry. */
extern bool RecentStatsOf(const RegistryDb *db, int64 low[3], int64 used[3]);

#endif							/* XIP83_RECENT_H */
