/*
 * registry.c: the registry's shared memory (see registry.h for the model):
 * sizing from the capacity settings, database entries and their loading after
 * a start, originator lines and the late ring.
 *
 * Loading. After a server start (or crash restart) shared memory is empty. A
 * database's entry is loaded on first use, before anything registers in it,
 * through registry_load_feed: the feed layer reads the highs off the
 * sequences and tables (src/feed/feed_load.c) and this file raises the lines
 * to them. Published horizons before a crash never exceed what was durable
 * (horizons.c flushes the commits behind a horizon before handing it out),
 * so a loaded line is never below a horizon consumers saw, with one
 * exception the README states: rows deleted at the top of an originator's
 * line before a restart.
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "utils/memutils.h"
#include "utils/syscache.h"

#include "base/base.h"
#include "core.h"
#include "registry.h"

Registry   *Reg = NULL;
RegistryWakeFn registry_wake = NULL;
RegistryWakeFn registry_first_write = NULL;
RegistryLoadFn registry_load_feed = NULL;

int			xip83_max_databases = 16;
int			xip83_max_tracked_tables = 8;
int			xip83_max_originators = 1024;
int			xip83_late_ring_size = 4096;

/* An entry whose database has been idle this long may be given to another. */
#define REGISTRY_IDLE_RECLAIM_MS 60000

const char *const RegistryKindTable[3] = {"group_messages", "welcome_messages", "envelopes"};

static RegistrySlot *MySlot = NULL;
static bool ExitCallbackSet = false;

/* The feeds this backend attached, by relid: entries keep their key while in use. */
#define MY_FEEDS 8
static RegistryDb *MyFeeds[MY_FEEDS];
static int	MyFeedsNext = 0;

int
RegistryEntries(void)
{
	return xip83_max_databases + xip83_max_tracked_tables;
}

static Size
LinesSize(void)
{
	return mul_size(sizeof(PositionLine), LINE_FIRST_ORIGINATOR + xip83_max_originators);
}

static Size
RingSize(void)
{
	return mul_size(sizeof(LateEntry), xip83_late_ring_size);
}

Size
RegistryShmemSize(void)
{
	Size		size = MAXALIGN(sizeof(Registry));

	size = add_size(size, MAXALIGN(mul_size(sizeof(RegistryDb), RegistryEntries())));
	size = add_size(size, mul_size(MAXALIGN(LinesSize()), RegistryEntries()));
	size = add_size(size, mul_size(MAXALIGN(RingSize()), RegistryEntries()));
	size = add_size(size, mul_size(sizeof(RegistrySlot), MaxBackends));
	return size;
}

void
RegistryShmemRequest(void)
{
	RequestAddinShmemSpace(RegistryShmemSize());
	RequestNamedLWLockTranche("xip83_registry", 1);
}

/* Creates or attaches the registry (shmem_startup_hook, AddinShmemInitLock held). */
void
RegistryShmemInit(void)
{
	bool		found;
	char	   *p;

	p = ShmemInitStruct("xip83 registry", RegistryShmemSize(), &found);
	Reg = (Registry *) p;
	if (found)
		return;
	memset(p, 0, RegistryShmemSize());
	Reg->lock = &(GetNamedLWLockTranche("xip83_registry"))->lock;
	Reg->n_slots = MaxBackends;
	Reg->n_dbs = RegistryEntries();
	Reg->n_lines = LINE_FIRST_ORIGINATOR + xip83_max_originators;
	Reg->ring_size = xip83_late_ring_size;
	p += MAXALIGN(sizeof(Registry));
	Reg->dbs = (RegistryDb *) p;
	p += MAXALIGN(mul_size(sizeof(RegistryDb), Reg->n_dbs));
	for (int d = 0; d < Reg->n_dbs; d++)
	{
		RegistryDb *db = &Reg->dbs[d];

		db->lines = (PositionLine *) p;
		p += MAXALIGN(LinesSize());
		db->ring = (LateEntry *) p;
		p += MAXALIGN(RingSize());
		pg_atomic_init_u32(&db->n_lines, LINE_FIRST_ORIGINATOR);
		pg_atomic_init_u64(&db->commit_lsn, 0);
		pg_atomic_init_u64(&db->late_writes, 0);
		pg_atomic_init_u64(&db->registered, 0);
		pg_atomic_init_u64(&db->last_use_ms, 0);
		for (int l = 0; l < Reg->n_lines; l++)
		{
			pg_atomic_init_u64(&db->lines[l].high, 0);
			pg_atomic_init_u64(&db->lines[l].published, 0);
			pg_atomic_init_u64(&db->lines[l].summary_covered, 0);
			pg_atomic_init_u32(&db->lines[l].writers, 0);
		}
	}
	Reg->slots = (RegistrySlot *) p;
	for (int s = 0; s < Reg->n_slots; s++)
	{
		pg_atomic_init_u32(&Reg->slots[s].freeze, 0);
		for (int i = 0; i < SLOT_PINS; i++)
			pg_atomic_init_u64(&Reg->slots[s].low[i], LOW_NONE);
	}
	RegistryRestore();
}

void
RegistryRequirePreload(void)
{
	if (Reg == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("xip83 horizons need the library loaded at server start"),
				 errhint("Add xip83 to shared_preload_libraries in postgresql.conf and restart the server.")));
}

/* ---------------------------------------------------------------- entries */

static uint64
NowMs(void)
{
	return (uint64) (GetCurrentTimestamp() / 1000);
}

static RegistryDb *
LookupDbLocked(Oid dboid, Oid relid)
{
	for (int d = 0; d < Reg->n_dbs; d++)
		if (Reg->dbs[d].dboid == dboid && (!OidIsValid(dboid) || Reg->dbs[d].relid == relid))
			return &Reg->dbs[d];
	return NULL;
}

/* A feed this backend attached before, if its entry still has that key. */
static RegistryDb *
MyFeed(Oid relid)
{
	for (int i = 0; i < MY_FEEDS; i++)
		if (MyFeeds[i] != NULL && MyFeeds[i]->dboid == MyDatabaseId && MyFeeds[i]->relid == relid)
			return MyFeeds[i];
	return NULL;
}

RegistryDb *
RegistryLookupFeed(Oid relid)
{
	RegistryDb *db;

	if (Reg == NULL)
		return NULL;
	if ((db = MyFeed(relid)) != NULL)
		return db;
	LWLockAcquire(Reg->lock, LW_SHARED);
	db = LookupDbLocked(MyDatabaseId, relid);
	LWLockRelease(Reg->lock);
	return db;
}

int
RegistryFeedsOf(Oid dboid, RegistryDb **out, int max)
{
	int			n = 0;

	LWLockAcquire(Reg->lock, LW_SHARED);
	for (int d = 0; d < Reg->n_dbs && n < max; d++)
		if (Reg->dbs[d].dboid == dboid && (Reg->dbs[d].ready ||
										  (Reg->dbs[d].horizons_replayed && RecoveryInProgress())))
			out[n++] = &Reg->dbs[d];
	LWLockRelease(Reg->lock);
	return n;
}

/* Whether any backend of a database holds a pin or a freeze; lock held. */
static bool
RegistryDbHasPinsLocked(Oid dboid)
{
	for (int s = 0; s < Reg->n_slots; s++)
	{
		RegistrySlot *slot = &Reg->slots[s];

		if (slot->dboid != dboid)
			continue;
		if (pg_atomic_read_u32(&slot->freeze) != 0)
			return true;
		for (int i = 0; i < SLOT_PINS; i++)
			if (pg_atomic_read_u64(&slot->low[i]) != LOW_NONE)
				return true;
	}
	return false;
}

/* Clears an entry for a feed; lock held exclusive. */
static void
ResetDbLocked(RegistryDb *db, Oid dboid, Oid relid)
{
	db->dboid = dboid;
	db->relid = relid;
	db->ready = false;
	db->restored = false;
	db->replayed = false;
	db->ring_logged = false;
	db->horizons_replayed = false;
	/*
	 * Late sequence numbers start at the clock in microseconds, so they keep
	 * ascending across restarts (late writes are far rarer than one a
	 * microsecond) and a consumer's late cursor from before is recognised.
	 */
	db->late_first = db->late_next = (uint64) GetCurrentTimestamp();
	db->late_evicted = 0;
	pg_atomic_write_u32(&db->n_lines, LINE_FIRST_ORIGINATOR);
	pg_atomic_write_u64(&db->commit_lsn, 0);
	pg_atomic_write_u64(&db->late_writes, 0);
	pg_atomic_write_u64(&db->registered, 0);
	pg_atomic_write_u64(&db->last_use_ms, NowMs());
	for (int l = 0; l < Reg->n_lines; l++)
	{
		pg_atomic_write_u64(&db->lines[l].high, 0);
		pg_atomic_write_u64(&db->lines[l].published, 0);
		pg_atomic_write_u32(&db->lines[l].writers, 0);
		db->lines[l].node = 0;
	}
	memset(db->ring, 0, RingSize());
}

/*
 * Finds or creates the entry of a feed of the current database. A free entry
 * (a tracked table's is freed when its drop or untrack commits), one of a
 * dropped database, or one idle for a minute with no pins is taken,
 * from the pool of its sort: the first xip83.max_databases entries are
 * databases' own feeds, the rest tracked tables', so tracking tables never
 * takes a database's place.
 */
static RegistryDb *
AcquireDb(Oid relid)
{
	RegistryDb *db = RegistryLookupFeed(relid);
	Oid		   *stale;
	int			n_stale = 0;
	uint64		now = NowMs();
	/* databases and tracked tables draw from pools of their own */
	int			first = OidIsValid(relid) ? xip83_max_databases : 0;
	int			end = OidIsValid(relid) ? Reg->n_dbs : xip83_max_databases;

	if (db != NULL)
		return db;
	/* databases that no longer exist, looked up before taking the lock */
	stale = palloc(sizeof(Oid) * Reg->n_dbs);
	for (int d = 0; d < Reg->n_dbs; d++)
	{
		Oid			o = Reg->dbs[d].dboid;

		if (OidIsValid(o) && o != MyDatabaseId &&
			!SearchSysCacheExists1(DATABASEOID, ObjectIdGetDatum(o)))
			stale[n_stale++] = o;
	}

	LWLockAcquire(Reg->lock, LW_EXCLUSIVE);
	db = LookupDbLocked(MyDatabaseId, relid);
	for (int d = first; db == NULL && d < end; d++)
		if (!OidIsValid(Reg->dbs[d].dboid))
			db = &Reg->dbs[d];
	for (int d = first; db == NULL && d < end; d++)
	{
		RegistryDb *old = &Reg->dbs[d];

		for (int i = 0; i < n_stale; i++)
			if (old->dboid == stale[i] && !RegistryDbHasPinsLocked(stale[i]))
				db = old;
	}
	for (int d = first; db == NULL && d < end; d++)
	{
		RegistryDb *old = &Reg->dbs[d];

		if (now - pg_atomic_read_u64(&old->last_use_ms) > REGISTRY_IDLE_RECLAIM_MS &&
			!RegistryDbHasPinsLocked(old->dboid))
			db = old;
	}
	if (db != NULL && (db->dboid != MyDatabaseId || db->relid != relid))
		ResetDbLocked(db, MyDatabaseId, relid);
	LWLockRelease(Reg->lock);
	pfree(stale);

	if (db == NULL && !OidIsValid(relid))
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("xip83 horizons serve at most %d databases at once", end - first),
				 errdetail("Every entry belongs to a database used within the last %d seconds.",
						   REGISTRY_IDLE_RECLAIM_MS / 1000),
				 errhint("Raise xip83.max_databases and restart the server.")));
	if (db == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("xip83 horizons follow at most %d tracked tables at once", end - first),
				 errdetail("Every entry belongs to a tracked table used within the last %d seconds.",
						   REGISTRY_IDLE_RECLAIM_MS / 1000),
				 errhint("Raise xip83.max_tracked_tables and restart the server.")));
	return db;
}

void
RegistryForgetFeed(Oid relid)
{
	RegistryDb *db;

	if (Reg == NULL)
		return;
	LWLockAcquire(Reg->lock, LW_EXCLUSIVE);
	db = LookupDbLocked(MyDatabaseId, relid);
	if (db != NULL)
		ResetDbLocked(db, MyDatabaseId, relid);
	LWLockRelease(Reg->lock);
	/*
	 * A standby's summaries of the feed start over before the track commits
	 * there: rows written while it was not tracked were never registered.
	 */
	RegistryLogSummaryResetFeed(MyDatabaseId, relid);
}

/* Tables whose feeds end with this transaction, and the nesting level that ended each. */
typedef struct PendingRelease
{
	Oid			relid;
	int			level;
} PendingRelease;

static PendingRelease *Releases = NULL;
static int	NReleases = 0;
static int	MaxReleases = 0;

void
RegistryReleaseAtCommit(Oid relid)
{
	int			level = GetCurrentTransactionNestLevel();

	if (Reg == NULL || !OidIsValid(relid))
		return;
	for (int i = 0; i < NReleases; i++)
		if (Releases[i].relid == relid && Releases[i].level <= level)
			return;
	if (NReleases == MaxReleases)
	{
		MaxReleases = Max(8, MaxReleases * 2);
		Releases = Releases == NULL
			? MemoryContextAlloc(TopMemoryContext, sizeof(PendingRelease) * MaxReleases)
			: repalloc(Releases, sizeof(PendingRelease) * MaxReleases);
	}
	Releases[NReleases].relid = relid;
	Releases[NReleases].level = level;
	NReleases++;
}

/* Whether a pin of any backend names the entry; lock held. */
static bool
EntryPinnedLocked(int entry)
{
	for (int s = 0; s < Reg->n_slots; s++)
		for (int i = 0; i < SLOT_PINS; i++)
			if (pg_atomic_read_u64(&Reg->slots[s].low[i]) != LOW_NONE &&
				(int) (Reg->slots[s].line[i] >> 16) == entry)
				return true;
	return false;
}

/*
 * At commit the ended feeds' entries become free at once. No other backend
 * can be writing there: the drop or untrack holds the table's ACCESS
 * EXCLUSIVE lock until after this, and this backend's own pins are cleared
 * before. A pin found all the same keeps the entry for the idle reclaim.
 */
void
RegistryReleaseXactEnd(bool commit)
{
	if (NReleases == 0)
		return;
	if (commit && Reg != NULL)
	{
		LWLockAcquire(Reg->lock, LW_EXCLUSIVE);
		for (int i = 0; i < NReleases; i++)
		{
			RegistryDb *db = LookupDbLocked(MyDatabaseId, Releases[i].relid);

			if (db != NULL && !EntryPinnedLocked(RegistryEntryIndex(db)))
				ResetDbLocked(db, InvalidOid, InvalidOid);
		}
		LWLockRelease(Reg->lock);
	}
	NReleases = 0;
}

void
RegistryReleaseSubXactEnd(bool commit)
{
	int			level = GetCurrentTransactionNestLevel();
	int			kept = 0;

	for (int i = 0; i < NReleases; i++)
	{
		if (Releases[i].level < level)
			Releases[kept++] = Releases[i];
		else if (commit)
		{
			Releases[i].level = level - 1;
			Releases[kept++] = Releases[i];
		}
	}
	NReleases = kept;
}

int
RegistryFindOriginator(RegistryDb *db, int32 node)
{
	uint32		n = pg_atomic_read_u32(&db->n_lines);

	pg_read_barrier();
	for (uint32 l = LINE_FIRST_ORIGINATOR; l < n; l++)
		if (db->lines[l].node == node)
			return (int) l;
	return -1;
}

/* Raises a line's high to at least x. */
static void
RaiseHigh(PositionLine *line, uint64 x)
{
	uint64		cur = pg_atomic_read_u64(&line->high);

	while (cur < x && !pg_atomic_compare_exchange_u64(&line->high, &cur, x))
		;
}

/*
 * Adds an originator's line with the given high (or raises an existing one), reusing a line that never
 * committed anything and that no pin holds; lock held exclusive. Returns -1
 * when every line is taken (the caller reports it after releasing the lock).
 */
int
RegistryAddOriginatorLocked(RegistryDb *db, int32 node, uint64 high)
{
	uint32		n = pg_atomic_read_u32(&db->n_lines);
	int			l = RegistryFindOriginator(db, node);

	if (l >= 0)
	{
		RaiseHigh(&db->lines[l], high);
		return l;
	}
	if (n < (uint32) Reg->n_lines)
	{
		db->lines[n].node = node;
		pg_atomic_write_u64(&db->lines[n].high, high);
		pg_atomic_write_u64(&db->lines[n].published, 0);
		pg_atomic_write_u64(&db->lines[n].summary_covered, 0);
		pg_write_barrier();
		pg_atomic_write_u32(&db->n_lines, n + 1);
		return (int) n;
	}
	/*
	 * Full: a line whose every write aborted holds nothing worth keeping,
	 * once no open transaction wrote there (writers only rise under the lock).
	 */
	for (uint32 c = LINE_FIRST_ORIGINATOR; c < n; c++)
	{
		if (pg_atomic_read_u64(&db->lines[c].high) != 0 ||
			pg_atomic_read_u64(&db->lines[c].published) != 0 ||
			pg_atomic_read_u32(&db->lines[c].writers) != 0)
			continue;
		/* a summary's cover of the old node is no cover of the new one */
		pg_atomic_write_u64(&db->lines[c].summary_covered, 0);
		pg_write_barrier();
		db->lines[c].node = node;
		pg_atomic_write_u64(&db->lines[c].high, high);
		pg_write_barrier();
		return (int) c;
	}
	return -1;
}

static void
TooManyOriginators(int32 node)
{
	ereport(ERROR,
			(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
			 errmsg("xip83 horizons follow at most %d originators per database",
					xip83_max_originators),
			 errdetail("Originator %d would be one too many.", node),
			 errhint("Raise xip83.max_originators and restart the server.")));
}

int
RegistryOriginatorLine(RegistryDb *db, int32 node)
{
	int			l;

	LWLockAcquire(Reg->lock, LW_SHARED);
	l = RegistryFindOriginator(db, node);
	if (l >= 0)
		pg_atomic_fetch_add_u32(&db->lines[l].writers, 1);
	LWLockRelease(Reg->lock);
	if (l >= 0)
		return l;
	LWLockAcquire(Reg->lock, LW_EXCLUSIVE);
	l = RegistryAddOriginatorLocked(db, node, 0);
	if (l >= 0)
		pg_atomic_fetch_add_u32(&db->lines[l].writers, 1);
	LWLockRelease(Reg->lock);
	if (l < 0)
		TooManyOriginators(node);
	return l;
}

void
RegistryLineDone(RegistryDb *db, int line)
{
	pg_atomic_fetch_sub_u32(&db->lines[line].writers, 1);
}

uint64
RegistryAddLate(RegistryDb *db, PositionKind kind, int32 node, int64 position,
				TransactionId xid)
{
	uint64		seq;
	LateEntry	e;

	LWLockAcquire(Reg->lock, LW_EXCLUSIVE);
	seq = db->late_next++;
	e.seq = seq;
	e.kind = kind;
	e.node = node;
	e.position = position;
	e.xid = xid;
	RegistryRingPutLocked(db, &e);
	/* in WAL order = sequence order; the writer's commit flushes it */
	RegistryLogLate(db, &e);
	LWLockRelease(Reg->lock);
	return seq;
}

void
RegistryRingPutLocked(RegistryDb *db, const LateEntry *e)
{
	LateEntry  *slot = &db->ring[e->seq % Reg->ring_size];

	if (slot->seq != 0 && slot->seq != e->seq)
		db->late_evicted = Max(db->late_evicted, slot->seq);
	*slot = *e;
}

RegistryDb *
RegistryEntryForRedoLocked(Oid dboid, Oid relid)
{
	RegistryDb *db = LookupDbLocked(dboid, relid);
	int			first = OidIsValid(relid) ? xip83_max_databases : 0;
	int			end = OidIsValid(relid) ? Reg->n_dbs : xip83_max_databases;

	for (int d = first; db == NULL && d < end; d++)
		if (!OidIsValid(Reg->dbs[d].dboid))
		{
			db = &Reg->dbs[d];
			ResetDbLocked(db, dboid, relid);
			/* what another feed left there is not this one's */
			for (int k = 0; k < 3; k++)
				SummaryResetKind(db, (PositionKind) k);
		}
	return db;
}

void
RegistryResetKindLocked(RegistryDb *db, PositionKind kind, bool keep_lines)
{
	uint32		n = pg_atomic_read_u32(&db->n_lines);

	for (uint32 l = 0; l < n; l++)
	{
		if (!RegistryLineOfKind(l, kind))
			continue;
		pg_atomic_write_u64(&db->lines[l].high, 0);
		pg_atomic_write_u64(&db->lines[l].published, 0);
	}
	/*
	 * An emptied envelope table has no originators left to follow, unless the
	 * truncating transaction wrote envelopes: its lines are raised right after.
	 */
	if (kind == KIND_ENVELOPE && !keep_lines)
		pg_atomic_write_u32(&db->n_lines, LINE_FIRST_ORIGINATOR);
}

/* ---------------------------------------------------------------- loading */

/* registry_load_feed reports each stored originator here. */
void
RegistryLoadOriginator(RegistryDb *db, int32 node, uint64 high)
{
	int			l;

	LWLockAcquire(Reg->lock, LW_EXCLUSIVE);
	l = RegistryAddOriginatorLocked(db, node, high);
	LWLockRelease(Reg->lock);
	if (l < 0)
		TooManyOriginators(node);
}

/*
 * Whether a feed's summary of a kind stays valid through this load: the
 * first attach after a promotion, of an entry replay made (horizons_replayed;
 * a reuse of the entry or a track clears it), whose summary the standby's
 * worker made READY and no TRUNCATE or drop turned off. Recovery has ended
 * and writers may not PREPARE, so no transaction from before the promotion
 * is open: every row stored is one the standby had, at or below what the
 * summary covers (its pass and follower read those, RAISE records raised the
 * rest) or above it, which the new primary's worker reads before the
 * summary covers every position (summary_build.c, CatchUp). A crash
 * recovery's summaries are never READY (no worker runs during it). Anything
 * else starts over.
 */
static bool
KeepsAfterPromotion(RegistryDb *db, PositionKind kind)
{
	Summary    *s = SummaryOf(db, kind);

	return s != NULL && db->horizons_replayed && !SummaryStandbyOff(s) &&
		SummaryStateOf(s, NULL) == SUMMARY_READY;
}

/*
 * Loads a fresh entry (first use after a start) through registry_load_feed,
 * which reads the sequences and tables: xip83's own three tables, or the
 * tracked table of a feed with every leaf.
 */
static void
LoadDb(RegistryDb *db)
{
	int64		group_high = 0;
	int64		welcome_high = 0;

	if (registry_load_feed != NULL)
		registry_load_feed(db, db->relid, &group_high, &welcome_high);
	LWLockAcquire(Reg->lock, LW_EXCLUSIVE);
	if (!db->ready && db->dboid == MyDatabaseId)
	{
		/* a line restored from a clean shutdown keeps what it had published */
		RaiseHigh(&db->lines[LINE_GROUP], (uint64) group_high);
		RaiseHigh(&db->lines[LINE_WELCOME], (uint64) welcome_high);
		/* every row present is at or below its line's high: nothing to remember yet */
		for (int k = 0; k < 3; k++)
			RecentResetKind(db, (PositionKind) k);
		/*
		 * rows stored before now are for the summary's pass to read; no
		 * writer yet. A standby starts over too: rows written while the feed
		 * was not loaded (untracked) were never registered. A promoted
		 * standby's summary a pass made READY stays: KeepsAfterPromotion.
		 */
		for (int k = 0; k < 3; k++)
		{
			if (!KeepsAfterPromotion(db, (PositionKind) k))
				SummaryResetKind(db, (PositionKind) k);
			RegistryLogSummaryReset(db, (PositionKind) k, false);
		}
		db->ready = true;
	}
	LWLockRelease(Reg->lock);
}

/* Backend exit: nothing of ours may stay pinned. */
static void
ClearSlotAtExit(int code, Datum arg)
{
	if (MySlot == NULL)
		return;
	for (int i = 0; i < SLOT_PINS; i++)
		pg_atomic_write_u64(&MySlot->low[i], LOW_NONE);
	pg_atomic_write_u32(&MySlot->freeze, 0);
}

RegistrySlot *
RegistryMySlot(void)
{
	return MySlot;
}

RegistryDb *
RegistryAttachFeed(Oid relid)
{
	uint64		now;
	RegistryDb *db;

	RegistryRequirePreload();
	/* a standby reads what replay put there: no slot, no loading, no pins */
	if (RecoveryInProgress())
		return RegistryReplayedFeed(relid);
	if ((db = MyFeed(relid)) == NULL)
	{
		db = AcquireDb(relid);
		MyFeeds[MyFeedsNext] = db;
		MyFeedsNext = (MyFeedsNext + 1) % MY_FEEDS;
	}
	if (MySlot == NULL)
	{
		int			procno = xip83_my_proc_number();

		if (procno < 0 || procno >= Reg->n_slots)
			elog(ERROR, "xip83: process number %d outside the registry", procno);
		MySlot = &Reg->slots[procno];
		for (int i = 0; i < SLOT_PINS; i++)
			pg_atomic_write_u64(&MySlot->low[i], LOW_NONE);
		pg_atomic_write_u32(&MySlot->freeze, 0);
		pg_write_barrier();
		MySlot->dboid = MyDatabaseId;
		pg_memory_barrier();
		if (!ExitCallbackSet)
		{
			before_shmem_exit(ClearSlotAtExit, (Datum) 0);
			ExitCallbackSet = true;
		}
	}
	/* at most every 100 ms: every writer of the database shares this line */
	now = NowMs();
	if (!AmBackgroundWorkerProcess() && now - pg_atomic_read_u64(&db->last_use_ms) >= 100)
		pg_atomic_write_u64(&db->last_use_ms, now);
	if (!db->ready)
		LoadDb(db);
	/* a ring restored from the shutdown file goes to WAL at once */
	if (db->restored && !db->ring_logged)
		RegistryLogRing(db);
	return db;
}

/* ------------------------------------------------------------- standby */

/*
 * A standby reads what replay put there (registry_wal.c): no slot, no
 * loading, no pins.
 */
RegistryDb *
RegistryReplayedFeed(Oid relid)
{
	RegistryDb *db = NULL;

	RegistryRequirePreload();
	LWLockAcquire(Reg->lock, LW_SHARED);
	for (int d = 0; d < Reg->n_dbs && db == NULL; d++)
		if (Reg->dbs[d].dboid == MyDatabaseId && Reg->dbs[d].relid == relid &&
			Reg->dbs[d].horizons_replayed)
			db = &Reg->dbs[d];
	LWLockRelease(Reg->lock);
	if (db == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("this standby has not replayed the primary's xip83 horizons of that feed yet"),
				 errdetail("A standby learns a feed's horizons from the records the primary's notifier writes after every checkpoint and whenever they move."),
				 errhint("Retry shortly; the primary's notifier runs while its feed is used.")));
	return db;
}

/* -------------------------------------------------------------- accessors */

bool
RegistryReady(void)
{
	return Reg != NULL;
}

Oid
RegistryFeedRelid(const RegistryDb *db)
{
	return db->relid;
}

bool
RegistryFeedHorizonsReplayed(RegistryDb *db)
{
	bool		r;

	LWLockAcquire(Reg->lock, LW_SHARED);
	r = db->horizons_replayed;
	LWLockRelease(Reg->lock);
	return r;
}

XLogRecPtr
RegistryFeedCommitLsn(RegistryDb *db)
{
	pg_read_barrier();
	return (XLogRecPtr) pg_atomic_read_u64(&db->commit_lsn);
}

uint64
RegistryFeedRegistered(RegistryDb *db)
{
	return pg_atomic_read_u64(&db->registered);
}

uint64
RegistryFeedLastUseMs(RegistryDb *db)
{
	return pg_atomic_read_u64(&db->last_use_ms);
}
