/*
 * registry.h: the layout of the in-flight registry in shared memory, private
 * to src/core: the write side (pins.c), the horizons (horizons.c), the WAL
 * and file (registry_wal.c, registry_file.c) and the recent-writes tables
 * (recent.c) that hang off each database entry. Everything else goes
 * through core.h.
 *
 * Feeds. An entry (RegistryDb) is one feed of one database: xip83's own
 * tables (relid InvalidOid), or one table a node had xip83 track (relid = the
 * tracked table; xip83.tracked_sources, src/feed/track.c), with its partitions and
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
 * before the row is inserted. Live fetch (src/scan/live.c) reads the ring after taking
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
#include "utils/timestamp.h"

#include "core.h"

#define SLOT_PINS		8
#define LOW_NONE		PG_UINT64_MAX


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
	/* standby, originator lines: what the envelope summary vouches for (core.h) */
	pg_atomic_uint64 summary_covered;
} PositionLine;


/* One feed's lines and late ring. */
struct RegistryDb
{
	Oid			dboid;			/* InvalidOid: free (changes under lock) */
	Oid			relid;			/* the tracked table, InvalidOid: xip83's own tables */
	bool		ready;			/* loaded from the tables (under lock) */
	bool		restored;		/* read back from the file of a clean shutdown */
	bool		replayed;		/* late entries replayed from WAL by crash recovery */
	bool		ring_logged;	/* a copy of the ring is in WAL since the start */
	bool		horizons_replayed;	/* standby: every line replayed (src/feed/standby.c) */
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
};

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

extern XLogRecPtr RegistryLogLate(const RegistryDb *db, const LateEntry *entry);
/* The entry of a feed for WAL replay, made fresh when new; lock held exclusive. */
extern RegistryDb *RegistryEntryForRedoLocked(Oid dboid, Oid relid);
/* An originator's line with at least that high, added when new, or -1; lock held exclusive. */
extern int	RegistryAddOriginatorLocked(RegistryDb *db, int32 node, uint64 high);
/* Registry entries in all: xip83.max_databases + xip83.max_tracked_tables. */
extern int	RegistryEntries(void);

/* Reads back what a clean shutdown saved (registry_file.c); postmaster only. */
extern void RegistryRestore(void);

extern RegistrySlot *RegistryMySlot(void);
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
/* Starts a database's lines over at 0 (a committed TRUNCATE); lock held exclusive. */
extern void RegistryResetKindLocked(RegistryDb *db, PositionKind kind, bool keep_lines);

#endif							/* XIP83_REGISTRY_H */
