/*
 * recent.c: the recent-writes tables (core.h has the model).
 *
 * Layout: per database entry (Reg->dbs index) and kind one table of
 * NParts partitions; a partition is an open-addressing (linear probing)
 * table of PartSlots slots, its LWLock, seq and low. A key picks its
 * partition with its low bits and its home slot with the bits above.
 * Partitions fill to 1/2 at most, so a probe always ends on an empty slot
 * and most keys sit in their home slot. A slot's key, max and entry number
 * live in three arrays: a probe runs along 16 keys per cache line, then reads
 * one max (a may-have question) or the slot's entry (an exact one). Entries
 * hold the rest of the retained positions; a partition has one for each of
 * the keys it may hold (half its slots), numbered densely in placement order
 * and renumbered by an eviction: entries for half the slots, not all.
 *
 * An entry: a version (odd while a writer changes the slot's max or entry,
 * under the partition lock), then RECENT_KEEP - 1 distances below max,
 * ascending, 0 where none: the positions next below max that were noted. A
 * distance that does not fit is kept as RECENT_FAR, which stands for some
 * position at or below max - RECENT_FAR: it takes a place like a position but
 * is never a candidate, so a floor below it is not exact.
 */
#include "postgres.h"

#include "access/xlog.h"
#include "port/pg_bitutils.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/memutils.h"

#include "core.h"
#include "registry.h"

#define RECENT_MIN_PART_SLOTS 16
#define RECENT_REST		RECENT_KEEP	/* words per entry: version, distances */
#define RECENT_FAR		PG_UINT32_MAX

int			xip83_recent_entries = 2048;

typedef struct RecentPart
{
	LWLock	   *lock;
	pg_atomic_uint64 seq;		/* odd while an eviction or reset runs */
	pg_atomic_uint64 low;
	int			used;			/* under lock */
} RecentPart;

struct RecentTable
{
	RecentPart	parts[RECENT_MAX_PARTS];
	pg_atomic_uint32 *keys;		/* NParts * PartSlots; 0: empty */
	pg_atomic_uint64 *maxes;	/* a slot's max: written before its key, only
								 * grows while the key stays */
	pg_atomic_uint32 *entry;	/* a slot's entry in its partition: written
								 * before its key */
	pg_atomic_uint32 *rest;		/* RECENT_REST words per entry: version, then
								 * distances below max (file header) */
};

/* One slot's key, max and distances copied out by an eviction. */
typedef struct RecentPair
{
	uint32		key;
	uint64		max;
	uint32		dist[RECENT_KEEP - 1];
} RecentPair;

static RecentTable *Tables = NULL;	/* Reg->n_dbs * 3 */
static int	NParts;
static int	PartSlots;
static RecentPair *Scratch = NULL;	/* this backend's eviction buffer */

/* Sizes follow the setting: slots for twice it, a power of two. */
static void
ComputeShape(void)
{
	uint64		want = (uint64) xip83_recent_entries * 2;
	uint64		total = pg_nextpower2_64(Max(want, RECENT_MIN_PART_SLOTS));

	NParts = (int) Min((uint64) RECENT_MAX_PARTS, total / RECENT_MIN_PART_SLOTS);
	PartSlots = (int) (total / NParts);
}

/* 0 entries: no tables, waves descend every topic (as before the tables). */
static int
NTables(void)
{
	return xip83_recent_entries > 0 ? RegistryEntries() * 3 : 0;
}

Size
RecentShmemSize(void)
{
	Size		per;

	ComputeShape();
	per = add_size(MAXALIGN(sizeof(RecentTable)),
				   add_size(MAXALIGN(mul_size(sizeof(pg_atomic_uint32), mul_size(NParts, PartSlots))),
							MAXALIGN(mul_size(sizeof(pg_atomic_uint64), mul_size(NParts, PartSlots)))));
	per = add_size(per, MAXALIGN(mul_size(sizeof(pg_atomic_uint32), mul_size(NParts, PartSlots))));
	per = add_size(per, MAXALIGN(mul_size(sizeof(pg_atomic_uint32) * RECENT_REST,
										  mul_size(NParts, PartSlots / 2))));
	return mul_size(per, NTables());
}

void
RecentShmemRequest(void)
{
	if (NTables() == 0)
		return;
	RequestAddinShmemSpace(RecentShmemSize());
	ComputeShape();
	RequestNamedLWLockTranche("xip83_recent", NTables() * NParts);
}

/* Creates or attaches the tables (shmem_startup_hook, AddinShmemInitLock held). */
void
RecentShmemInit(void)
{
	bool		found;
	char	   *p;
	LWLockPadded *locks;

	if (NTables() == 0)
		return;
	ComputeShape();
	p = ShmemInitStruct("xip83 recent", RecentShmemSize(), &found);
	Tables = (RecentTable *) p;
	if (found)
		return;
	memset(p, 0, RecentShmemSize());
	locks = GetNamedLWLockTranche("xip83_recent");
	Tables = (RecentTable *) p;
	p += MAXALIGN(sizeof(RecentTable)) * NTables();
	for (int t = 0; t < NTables(); t++)
	{
		RecentTable *table = &Tables[t];

		table->keys = (pg_atomic_uint32 *) p;
		p += MAXALIGN(mul_size(sizeof(pg_atomic_uint32), mul_size(NParts, PartSlots)));
		table->maxes = (pg_atomic_uint64 *) p;
		p += MAXALIGN(mul_size(sizeof(pg_atomic_uint64), mul_size(NParts, PartSlots)));
		table->entry = (pg_atomic_uint32 *) p;
		p += MAXALIGN(mul_size(sizeof(pg_atomic_uint32), mul_size(NParts, PartSlots)));
		table->rest = (pg_atomic_uint32 *) p;
		p += MAXALIGN(mul_size(sizeof(pg_atomic_uint32) * RECENT_REST, mul_size(NParts, PartSlots / 2)));
		for (int i = 0; i < NParts; i++)
		{
			table->parts[i].lock = &locks[t * NParts + i].lock;
			pg_atomic_init_u64(&table->parts[i].seq, 0);
			pg_atomic_init_u64(&table->parts[i].low, 0);
		}
		for (int s = 0; s < NParts * PartSlots; s++)
		{
			pg_atomic_init_u32(&table->keys[s], 0);
			pg_atomic_init_u64(&table->maxes[s], 0);
			pg_atomic_init_u32(&table->entry[s], 0);
		}
		for (int s = 0; s < NParts * PartSlots / 2 * RECENT_REST; s++)
			pg_atomic_init_u32(&table->rest[s], 0);
	}
}

RecentTable *
RecentTableOf(const RegistryDb *db, PositionKind kind)
{
	if (Tables == NULL)
		return NULL;
	return &Tables[(db - Reg->dbs) * 3 + (int) kind];
}

bool
RecentReady(void)
{
	return Reg != NULL && Tables != NULL;
}

static inline int
PartOf(uint32 key)
{
	return (int) (key & (uint32) (NParts - 1));
}

/* The first key and max of a partition. */
static inline pg_atomic_uint32 *
KeysOf(const RecentTable *t, int part)
{
	return &t->keys[part * PartSlots];
}

static inline pg_atomic_uint64 *
MaxesOf(const RecentTable *t, int part)
{
	return &t->maxes[part * PartSlots];
}

/* The words of entry e of a partition. */
static inline pg_atomic_uint32 *
EntryWords(const RecentTable *t, int part, uint32 e)
{
	return &t->rest[((Size) part * (PartSlots / 2) + e) * RECENT_REST];
}

/* The entry words of slot i of a partition (its key read before, with a barrier). */
static inline pg_atomic_uint32 *
RestOf(const RecentTable *t, int part, int i)
{
	return EntryWords(t, part, pg_atomic_read_u32(&t->entry[(Size) part * PartSlots + i]));
}

static inline int
Home(uint32 key)
{
	return (int) ((key >> 6) & (uint32) (PartSlots - 1));
}

/*
 * Places a key known absent into the first empty slot from its home, with
 * entry e (unused: e is the partition's count of keys); lock held.
 */
static void
PlaceLocked(const RecentTable *t, int part, uint32 key, uint64 max, const uint32 *dist,
			uint32 e)
{
	pg_atomic_uint32 *keys = KeysOf(t, part);
	int			i = Home(key);
	pg_atomic_uint32 *rest = EntryWords(t, part, e);

	while (pg_atomic_read_u32(&keys[i]) != 0)
		i = (i + 1) & (PartSlots - 1);
	/* no reader looks at the slot's entry before its key is there */
	for (int j = 0; j < RECENT_KEEP - 1; j++)
		pg_atomic_write_u32(&rest[1 + j], dist != NULL ? dist[j] : 0);
	pg_atomic_write_u32(&t->entry[(Size) part * PartSlots + i], e);
	pg_atomic_write_u64(&MaxesOf(t, part)[i], max);
	pg_write_barrier();
	pg_atomic_write_u32(&keys[i], key);
}

static int
ComparePairMax(const void *a, const void *b)
{
	uint64		x = ((const RecentPair *) a)->max;
	uint64		y = ((const RecentPair *) b)->max;

	return x < y ? -1 : x > y ? 1 : 0;
}

/*
 * Drops the older half of a full partition and raises its low to the highest
 * position dropped; readers see seq odd meanwhile. Lock held exclusive.
 */
static void
EvictLocked(const RecentTable *t, int p)
{
	RecentPart *part = (RecentPart *) &t->parts[p];
	pg_atomic_uint32 *keys = KeysOf(t, p);
	int			n = 0;
	int			kept = 0;
	uint64		cut;

	for (int i = 0; i < PartSlots; i++)
	{
		uint32		key = pg_atomic_read_u32(&keys[i]);
		pg_atomic_uint32 *rest;

		if (key == 0)
			continue;
		rest = RestOf(t, p, i);
		Scratch[n].key = key;
		Scratch[n].max = pg_atomic_read_u64(&MaxesOf(t, p)[i]);
		for (int j = 0; j < RECENT_KEEP - 1; j++)
			Scratch[n].dist[j] = pg_atomic_read_u32(&rest[1 + j]);
		n++;
	}
	qsort(Scratch, n, sizeof(RecentPair), ComparePairMax);
	cut = Max(Scratch[n / 2].max, pg_atomic_read_u64(&part->low));

	pg_atomic_fetch_add_u64(&part->seq, 1);
	pg_write_barrier();
	pg_atomic_write_u64(&part->low, cut);
	for (int i = 0; i < PartSlots; i++)
		pg_atomic_write_u32(&keys[i], 0);
	for (int i = 0; i < n; i++)
		if (Scratch[i].max > cut)
		{
			PlaceLocked(t, p, Scratch[i].key, Scratch[i].max, Scratch[i].dist, (uint32) kept);
			kept++;
		}
	part->used = kept;
	pg_write_barrier();
	pg_atomic_fetch_add_u64(&part->seq, 1);
}

/*
 * The distances of a slot's retained positions once position joins them:
 * false when it changes nothing (noted already, or below a full list: then
 * it is below the lowest retained, as a dropped position must be). A
 * distance that no longer fits becomes RECENT_FAR and ends the list.
 */
static bool
RetainPosition(uint64 *max, uint32 *dist, uint64 position)
{
	uint64		d;
	int			j;

	if (position > *max)
	{
		uint64		delta = position - *max;
		uint32		was[RECENT_KEEP - 1];
		int			n = 0;

		memcpy(was, dist, sizeof(was));
		memset(dist, 0, sizeof(was));
		/* the old max and its list move down by delta */
		dist[n++] = delta < RECENT_FAR ? (uint32) delta : RECENT_FAR;
		for (j = 0; j < RECENT_KEEP - 2 && was[j] != 0 && dist[n - 1] != RECENT_FAR; j++)
		{
			d = (uint64) was[j] + delta;
			dist[n++] = d < RECENT_FAR ? (uint32) d : RECENT_FAR;
		}
		*max = position;
		return true;
	}
	if (position == *max)
		return false;
	d = *max - position;
	if (d > RECENT_FAR)
		d = RECENT_FAR;
	for (j = 0; j < RECENT_KEEP - 1 && dist[j] != 0 && dist[j] < d; j++)
		;
	if (j == RECENT_KEEP - 1 || dist[j] == d)
		return false;
	memmove(&dist[j + 1], &dist[j], sizeof(uint32) * (RECENT_KEEP - 2 - j));
	dist[j] = (uint32) d;
	return true;
}

/* Adds position to the slot of its key at i; readers see its version odd meanwhile. */
static void
RetainLocked(const RecentTable *t, int p, int i, uint64 position)
{
	pg_atomic_uint32 *rest = RestOf(t, p, i);
	pg_atomic_uint64 *maxp = &MaxesOf(t, p)[i];
	uint64		max = pg_atomic_read_u64(maxp);
	uint32		dist[RECENT_KEEP - 1];
	uint32		version;

	for (int j = 0; j < RECENT_KEEP - 1; j++)
		dist[j] = pg_atomic_read_u32(&rest[1 + j]);
	if (!RetainPosition(&max, dist, position))
		return;
	/* the lock makes us the only writer: plain stores, no locked instructions */
	version = pg_atomic_read_u32(&rest[0]);
	pg_atomic_write_u32(&rest[0], version + 1);
	pg_write_barrier();
	for (int j = 0; j < RECENT_KEEP - 1; j++)
		pg_atomic_write_u32(&rest[1 + j], dist[j]);
	pg_atomic_write_u64(maxp, max);
	pg_write_barrier();
	pg_atomic_write_u32(&rest[0], version + 2);
}

/* The slot of a key in partition p, or -1 when absent (probed from its home). */
static inline int
SlotOf(const RecentTable *t, int p, uint32 key)
{
	const pg_atomic_uint32 *keys = KeysOf(t, p);
	int			i = Home(key);

	for (int n = 0; n < PartSlots; n++)
	{
		uint32		k = pg_atomic_read_u32((pg_atomic_uint32 *) &keys[i]);

		if (k == key)
			return i;
		if (k == 0)
			return -1;
		i = (i + 1) & (PartSlots - 1);
	}
	return -1;
}

void
RecentNote(RecentTable *t, uint32 key, uint64 position)
{
	int			p = PartOf(key);
	RecentPart *part = &t->parts[p];
	int			i;

	/* allocated before the lock: an eviction under it must not fail */
	if (Scratch == NULL)
		Scratch = MemoryContextAlloc(TopMemoryContext, sizeof(RecentPair) * PartSlots);
	LWLockAcquire(part->lock, LW_EXCLUSIVE);
	/* at or below low nothing needs remembering: no exact floor is below it */
	if (position <= pg_atomic_read_u64(&part->low))
	{
		LWLockRelease(part->lock);
		return;
	}
	i = SlotOf(t, p, key);
	if (i >= 0)
	{
		RetainLocked(t, p, i, position);
		LWLockRelease(part->lock);
		return;
	}
	if ((part->used + 1) * 2 > PartSlots)
	{
		EvictLocked(t, p);
		if (position <= pg_atomic_read_u64(&part->low))
		{
			LWLockRelease(part->lock);
			return;
		}
	}
	PlaceLocked(t, p, key, position, NULL, (uint32) part->used);
	part->used++;
	LWLockRelease(part->lock);
}

void
RecentReset(RecentTable *t, uint64 low)
{
	for (int p = 0; p < NParts; p++)
	{
		RecentPart *part = &t->parts[p];
		pg_atomic_uint32 *keys = KeysOf(t, p);

		LWLockAcquire(part->lock, LW_EXCLUSIVE);
		pg_atomic_fetch_add_u64(&part->seq, 1);
		pg_write_barrier();
		pg_atomic_write_u64(&part->low, low);
		for (int i = 0; i < PartSlots; i++)
			pg_atomic_write_u32(&keys[i], 0);
		part->used = 0;
		pg_write_barrier();
		pg_atomic_fetch_add_u64(&part->seq, 1);
		LWLockRelease(part->lock);
	}
}

void
RecentResetKind(RegistryDb *db, PositionKind kind)
{
	uint64		high = 0;

	if (Tables == NULL)
		return;

	/*
	 * Every line, not only those in use: a TRUNCATE of envelopes drops the
	 * lines in use, then the lines its own transaction wrote are raised.
	 */
	for (uint32 l = 0; l < (uint32) Reg->n_lines; l++)
		if (RegistryLineOfKind(l, kind))
			high = Max(high, pg_atomic_read_u64(&db->lines[l].high));
	RecentReset(RecentTableOf(db, kind), high);
}

/* The highest position noted of a key in partition p, 0 when absent. */
static inline uint64
MaxOf(const RecentTable *t, int p, uint32 key)
{
	int			i = SlotOf(t, p, key);

	if (i < 0)
		return 0;
	pg_read_barrier();
	return pg_atomic_read_u64(&MaxesOf(t, p)[i]);
}

/*
 * The copy of a slot's retained positions a reader makes: true when it is
 * whole (the slot's version even and unchanged around it).
 */
static inline bool
CopySlot(const RecentTable *t, int p, int i, uint64 *max, uint32 *dist)
{
	pg_atomic_uint32 *rest = RestOf(t, p, i);
	uint32		version = pg_atomic_read_u32(rest);

	if (version & 1)
		return false;
	pg_read_barrier();
	*max = pg_atomic_read_u64(&MaxesOf(t, p)[i]);
	for (int j = 0; j < RECENT_KEEP - 1; j++)
		dist[j] = pg_atomic_read_u32(&rest[1 + j]);
	pg_read_barrier();
	return pg_atomic_read_u32(rest) == version;
}

int
RecentExact(const RecentTable *t, uint32 key, int64 floor, uint64 *positions)
{
	int			p = PartOf(key);
	RecentPart *part = (RecentPart *) &t->parts[p];
	uint64		seq = pg_atomic_read_u64(&part->seq);
	uint64		max = 0;
	uint32		dist[RECENT_KEEP - 1] = {0};
	int			i;
	int			n = 0;
	int			retained = 1;

	if (seq & 1)
		return -1;
	pg_read_barrier();
	if (floor < 0 || (uint64) floor < pg_atomic_read_u64(&part->low))
		return -1;
	i = SlotOf(t, p, key);
	if (i >= 0)
	{
		pg_read_barrier();
		if (!CopySlot(t, p, i, &max, dist))
			return -1;
	}
	pg_read_barrier();
	if (pg_atomic_read_u64(&part->seq) != seq)
		return -1;
	if (max <= (uint64) floor)
		return 0;				/* absent, or nothing above the floor */
	for (int j = 0; j < RECENT_KEEP - 1 && dist[j] != 0; j++)
		retained++;
	/* a dropped position lies below the last of a full list: at or below floor? */
	if (retained == RECENT_KEEP && max - dist[RECENT_KEEP - 2] > (uint64) floor)
		return -1;
	for (int j = retained - 2; j >= 0; j--)
	{
		if (max - dist[j] <= (uint64) floor)
			continue;
		/* a position that did not fit may lie above the floor */
		if (dist[j] == RECENT_FAR)
			return -1;
		positions[n++] = max - dist[j];
	}
	positions[n++] = max;
	return n;
}

void
RecentAskBegin(const RecentTable *t, RecentAsk *ask)
{
	ask->table = t;
	ask->keys = t->keys;
	ask->maxes = t->maxes;
	ask->part_mask = (uint32) (NParts - 1);
	ask->home_mask = (uint32) (PartSlots - 1);
	ask->part_shift = pg_leftmost_one_pos32((uint32) PartSlots);
	ask->low_max = 0;
	for (int p = 0; p < NParts; p++)
		ask->seq[p] = pg_atomic_read_u64((pg_atomic_uint64 *) &t->parts[p].seq);
	pg_read_barrier();
	for (int p = 0; p < NParts; p++)
	{
		ask->low[p] = pg_atomic_read_u64((pg_atomic_uint64 *) &t->parts[p].low);
		/* mid-change: every answer of the partition is "may have" */
		if (ask->seq[p] & 1)
			ask->low[p] = PG_UINT64_MAX;
		ask->low_max = Max(ask->low_max, ask->low[p]);
	}
}

uint64
RecentAskFar(const RecentAsk *ask, uint32 part, uint32 key)
{
	return MaxOf(ask->table, (int) part, key);
}

uint64
RecentAskMoved(const RecentAsk *ask)
{
	uint64		moved = 0;

	pg_read_barrier();
	for (int p = 0; p < NParts; p++)
		if (pg_atomic_read_u64((pg_atomic_uint64 *) &ask->table->parts[p].seq) != ask->seq[p])
			moved |= UINT64CONST(1) << p;
	return moved;
}

/* Questions whose slots RecentMayHaveMany loads before it asks them. */
#define ASK_AHEAD 256

int
RecentMayHaveMany(const RecentTable *t, int n, const uint32 *keys, const uint64 *floors,
				  bool *may)
{
	RecentAsk	ask;
	uint64		moved;
	int			count = 0;

	RecentAskBegin(t, &ask);
	for (int start = 0; start < n; start += ASK_AHEAD)
	{
		int			end = Min(n, start + ASK_AHEAD);

		for (int i = start; i < end; i++)
			RecentAskPrefetch(&ask, keys[i]);
		for (int i = start; i < end; i++)
			count += may[i] = RecentAskMay(&ask, keys[i], floors[i]);
	}
	moved = RecentAskMoved(&ask);
	if (moved != 0)
	{
		/* a partition changed under the questions: its keys may have */
		count = 0;
		for (int i = 0; i < n; i++)
		{
			may[i] |= RecentAskInMoved(&ask, moved, keys[i]);
			count += may[i];
		}
	}
	return count;
}

bool
RecentStatsOf(const RegistryDb *db, int64 low[3], int64 used[3])
{
	if (Tables == NULL || db == NULL || !db->ready)
		return false;
	for (int k = 0; k < 3; k++)
	{
		RecentTable *t = RecentTableOf(db, (PositionKind) k);

		low[k] = 0;
		used[k] = 0;
		for (int p = 0; p < NParts; p++)
		{
			low[k] = Max(low[k], (int64) pg_atomic_read_u64(&t->parts[p].low));
			used[k] += t->parts[p].used;
		}
	}
	return true;
}

bool
RecentStatsMine(int64 low[3], int64 used[3])
{
	return RecentStatsOf(Tables != NULL ? RegistryLookupMine() : NULL, low, used);
}
