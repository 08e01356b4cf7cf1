/*
 * registry.h: the in-flight registry in shared memory, shared by the write
 * path (positions.c) and the read path (horizon.c), and by the recent-writes
 * tables (recent.h) that hang off each database entry. Nothing else includes it.
 *
 * Feeds. An entry (RegistryDb) is one feed of one database: xip83's own
 * tables (relid InvalidOid), or one table a node had xip83 track (relid = the
 * tracked table; xip83.tracked_sources, track.c), with its partitions and
 * blob table. Entries are keyed by (dboid, relid).
 *
 * Position lines. Each feed has lines of positions: group message ids
 * (line 0), welcome ids (line 1), and one line per originator (its sequence
 * ids); a tracked table uses the lines of its kind. Per line the entry keeps
 *   high       the highest position of a COMMITTED write (raised by the
 *              writer at commit, before its pins are cleared), and
 *   published  the highest horizon ever handed out; it never goes back.
 * A write that aborts never raises a line, so the horizon never passes a
 * position that may still be written by a retry.
 *
 * Per backend a slot holds up to SLOT_PINS pins (entry and line, low): low is
 * a lower bound of every position its open transaction writes on that line;
 * what an aborted subtransaction pinned or lowered is given back. A
 * transaction that writes more lines than that sets `freeze`, which holds
 * every line of every feed of its database at its published horizon until it
 * ends (correct, only slower to advance).
 *
 * Horizon of a line = min(high, min over pins of low - 1), raised to
 * published. Invariant: while a pin with low L is set, published < L, or the
 * write below L is a late write (see below). Pinning stores L = high + 1,
 * issues a full barrier and re-reads high until it holds still; readers read
 * every high, a full barrier, then the slots. A position below the pin is
 * checked against published under the exclusive lock; readers hold the lock
 * shared while they compute and publish, so the check cannot interleave.
 *
 * Late writes. A position at or below the published horizon (an originator
 * writing out of order, an explicit id below the horizon, a deleted row
 * written again) is stored, never refused: it goes into the database's late
 * ring as (kind, originator, position, the writing (sub)transaction's xid)
 * before the row is inserted. Live fetch (live.c) reads the ring after taking
 * its snapshot and delivers late rows to consumers whose cursor passed them.
 *
 * Locking: `lock` (one LWLock) is taken shared by readers while computing and
 * publishing and while reading the late ring; exclusive by the slow path, by
 * entry set-up, originator registration, late-ring appends and a committed
 * TRUNCATE's reset. The fast path of a writer takes no lock.
 */
#ifndef XIP83_REGISTRY_H
#define XIP83_REGISTRY_H

#include "postgres.h"

#include "port/atomics.h"
#include "storage/lwlock.h"
#include "utils/relcache.h"
#include "utils/timestamp.h"

#define LINE_GROUP		0
#define LINE_WELCOME	1
#define LINE_FIRST_ORIGINATOR 2
#define SLOT_PINS		8
#define LOW_NONE		PG_UINT64_MAX

/* The kinds a late entry or a trigger names. */
typedef enum PositionKind
{
	KIND_GROUP = 0,
	KIND_WELCOME = 1,
	KIND_ENVELOPE = 2
} PositionKind;

/* xip83's own table of each kind, by PositionKind. */
extern const char *const RegistryKindTable[3];

/* Whether a line belongs to a kind: v3 kinds have one line, envelopes the originators'. */
static inline bool
RegistryLineOfKind(uint32 line, PositionKind kind)
{
	return kind == KIND_ENVELOPE ? line >= LINE_FIRST_ORIGINATOR
		: line == (kind == KIND_GROUP ? LINE_GROUP : LINE_WELCOME);
}

/* A pin names an entry (its index in Registry.dbs) and a line of it. */
#define PIN_KEY(entry, line)	(((uint32) (entry) << 16) | (uint32) (line))
#define PIN_NONE				PG_UINT32_MAX

/* The two counters of one position line, and the originator it follows. */
typedef struct PositionLine
{
	pg_atomic_uint64 high;		/* highest committed position */
	pg_atomic_uint64 published; /* highest horizon handed out */
	pg_atomic_uint32 writers;	/* open transactions that wrote here: not reusable */
	int32		node;			/* originator lines: the node id */
} PositionLine;

/* One late write, in the order writers registered them. */
typedef struct LateEntry
{
	uint64		seq;			/* ascending; 0 in a slot never written */
	int32		kind;			/* PositionKind */
	int32		node;			/* envelopes: the originator */
	int64		position;		/* id, or sequence id */
	TransactionId xid;			/* the row's xmin */
} LateEntry;

/* One feed's lines and late ring. */
typedef struct RegistryDb
{
	Oid			dboid;			/* InvalidOid: free (changes under lock) */
	Oid			relid;			/* the tracked table, InvalidOid: xip83's own tables */
	bool		ready;			/* loaded from the tables (under lock) */
	bool		restored;		/* read back from the file of a clean shutdown */
	bool		replayed;		/* late entries replayed from WAL by crash recovery */
	bool		ring_logged;	/* a copy of the ring is in WAL since the start */
	bool		horizons_replayed;	/* standby: every line replayed (standby.c) */
	pg_atomic_uint32 n_lines;	/* lines in use: 2 + originators */
	pg_atomic_uint64 commit_lsn;	/* end of the newest commit that raised a high */
	pg_atomic_uint64 late_writes;	/* late writes committed since start */
	pg_atomic_uint64 registered;	/* positions registered by commits since start */
	pg_atomic_uint64 last_use_ms;	/* last attach, for reclaiming idle entries */
	uint64		late_next;		/* seq of the next late entry (under lock) */
	uint64		late_first;		/* entries from this seq on are all known (under lock) */
	uint64		late_evicted;	/* highest seq overwritten in the ring (under lock) */
	LateEntry  *ring;			/* xip83.late_ring_size entries */
	PositionLine *lines;		/* 2 + xip83.max_originators lines */
} RegistryDb;

/* One backend's pins, on lines of its database. */
typedef struct RegistrySlot
{
	Oid			dboid;			/* database of the owner, set before any pin */
	pg_atomic_uint32 freeze;	/* 1: holds every originator line at published */
	uint32		line[SLOT_PINS];	/* PIN_KEY, written before its low */
	pg_atomic_uint64 low[SLOT_PINS];	/* LOW_NONE when unused */
} RegistrySlot;

typedef struct Registry
{
	LWLock	   *lock;
	int			n_slots;
	int			n_dbs;			/* entries: max_databases + max_tracked_tables */
	int			n_lines;		/* per entry */
	int			ring_size;
	RegistryDb *dbs;
	RegistrySlot *slots;
} Registry;

extern Registry *Reg;

/* Capacities (PGC_POSTMASTER settings, src/xip83.c). */
extern int	xip83_max_databases;
extern int	xip83_max_tracked_tables;
extern int	xip83_max_originators;
extern int	xip83_late_ring_size;

/* Called when a slot's pins are cleared: a horizon may have moved. */
typedef void (*RegistryWakeFn) (void);
extern RegistryWakeFn registry_wake;

/* Shared memory, from _PG_init and the shmem hooks while preloading. */
extern Size RegistryShmemSize(void);
extern void RegistryShmemRequest(void);
extern void RegistryShmemInit(void);

/* The late ring in WAL (registry_wal.c). */
extern void RegistryRegisterRmgr(void);
extern void RegistryLogLate(const RegistryDb *db, const LateEntry *entry);
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
/* The entry of a feed for WAL replay, made fresh when new; lock held exclusive. */
extern RegistryDb *RegistryEntryForRedoLocked(Oid dboid, Oid relid);
/* An originator's line with at least that high, added when new, or -1; lock held exclusive. */
extern int	RegistryAddOriginatorLocked(RegistryDb *db, int32 node, uint64 high);
/* Registry entries in all: xip83.max_databases + xip83.max_tracked_tables. */
extern int	RegistryEntries(void);

/* Reads back what a clean shutdown saved (registry_file.c); postmaster only. */
extern void RegistryRestore(void);

extern void RegistryRequirePreload(void);
/*
 * A feed of the current database, loaded, with this backend's slot set up;
 * during recovery the replayed entry, read-only (StandbyFeed). relid: a tracked table, or InvalidOid for xip83's
 * own tables (RegistryAttach).
 */
extern RegistryDb *RegistryAttachFeed(Oid relid);
#define RegistryAttach() RegistryAttachFeed(InvalidOid)
extern RegistrySlot *RegistryMySlot(void);
/* The existing entry of a feed of the current database without attaching, or NULL. */
extern RegistryDb *RegistryLookupFeed(Oid relid);
#define RegistryLookupMine() RegistryLookupFeed(InvalidOid)
/* The loaded feeds of a database (at most max), for the notifier; returns how many. */
extern int	RegistryFeedsOf(Oid dboid, RegistryDb **out, int max);
/* Starts a feed over, unloaded (track and untrack; no writer can hold a pin). */
extern void RegistryForgetFeed(Oid relid);
/* An entry's index, as pins name it. */
#define RegistryEntryIndex(db) ((int) ((db) - Reg->dbs))
/* Index of an originator's line, or -1; no lock needed. */
extern int	RegistryFindOriginator(RegistryDb *db, int32 node);
/*
 * The line of an originator, adding it when new, counted as written by the
 * caller's transaction (writers + 1) so that it is not reused for another
 * originator until RegistryLineDone. Takes the lock.
 */
extern int	RegistryOriginatorLine(RegistryDb *db, int32 node);
extern void RegistryLineDone(RegistryDb *db, int line);
/*
 * Stores a late entry in its ring slot (seq modulo the ring's size), noting
 * what it overwrites; lock held exclusive.
 */
extern void RegistryRingPutLocked(RegistryDb *db, const LateEntry *e);
/* Appends a late entry (takes the lock exclusive); returns its seq. */
extern uint64 RegistryAddLate(RegistryDb *db, PositionKind kind, int32 node, int64 position,
							  TransactionId xid);
/* The xip83 relation of that name, or InvalidOid (no error: bookkeeping). */
extern Oid	RegistryOwnRelation(const char *name);
/* A sequence's last value, read off its page (bookkeeping: no privilege check). */
extern int64 RegistrySequenceLastValue(Oid seqid);
/* The write path's transaction and object-access hooks (positions.c). */
extern void PositionsInstallHooks(void);
/*
 * A new row of a tracked table, from its xip83_track index (track_am.c):
 * values are the index's columns, positions first and then the topic (none
 * on a blob table). A table no longer tracked is left alone.
 */
extern void PositionsIndexInsert(Relation heap, Relation index, Datum *values, bool *isnull);
/* Whether such an insert may be an UPDATE's new row version (false: surely a new row). */
extern bool PositionsInsertMayBeUpdate(Relation heap);
/* Starts a database's lines over at 0 (a committed TRUNCATE); lock held exclusive. */
extern void RegistryResetKindLocked(RegistryDb *db, PositionKind kind, bool keep_lines);

#endif							/* XIP83_REGISTRY_H */
