/*
 * recent.c: the recent-writes tables (recent.h has the model).
 *
 * Layout: per database entry (Reg->dbs index) and kind one table of
 * n_parts partitions; a partition is an open-addressing (linear probing)
 * array of part_slots slots, its LWLock, seq and low. A key picks its
 * partition with its low bits and its home slot with the bits above.
 * Partitions fill to 3/4 at most, so a probe always ends on an empty slot.
 */
#include "postgres.h"

#include "access/xlog.h"
#include "common/hashfn.h"
#include "port/pg_bitutils.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/memutils.h"

#include "recent.h"
#include "track.h"

#define RECENT_MAX_PARTS	64
#define RECENT_MIN_PART_SLOTS 16

int			xip83_recent_entries = 12288;

typedef struct RecentSlot
{
	pg_atomic_uint32 key;		/* 0: empty */
	pg_atomic_uint64 max;		/* written before key; only grows while key stays */
} RecentSlot;

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
	RecentSlot *slots;			/* n_parts * part_slots */
};

/* One (key, max) pair copied out by an eviction. */
typedef struct RecentPair
{
	uint32		key;
	uint64		max;
} RecentPair;

static RecentTable *Tables = NULL;	/* Reg->n_dbs * 3 */
static int	NParts;
static int	PartSlots;
static RecentPair *Scratch = NULL;	/* this backend's eviction buffer */

/* Sizes follow the setting: slots for 4/3 of it, a power of two. */
static void
ComputeShape(void)
{
	uint64		want = ((uint64) xip83_recent_entries * 4 + 2) / 3;
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
				   MAXALIGN(mul_size(sizeof(RecentSlot), mul_size(NParts, PartSlots))));
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

		table->slots = (RecentSlot *) p;
		p += MAXALIGN(mul_size(sizeof(RecentSlot), mul_size(NParts, PartSlots)));
		for (int i = 0; i < NParts; i++)
		{
			table->parts[i].lock = &locks[t * NParts + i].lock;
			pg_atomic_init_u64(&table->parts[i].seq, 0);
			pg_atomic_init_u64(&table->parts[i].low, 0);
		}
		for (int s = 0; s < NParts * PartSlots; s++)
		{
			pg_atomic_init_u32(&table->slots[s].key, 0);
			pg_atomic_init_u64(&table->slots[s].max, 0);
		}
	}
}

RecentTable *
RecentTableOf(const RegistryDb *db, PositionKind kind)
{
	if (Tables == NULL)
		return NULL;
	return &Tables[(db - Reg->dbs) * 3 + (int) kind];
}

uint32
RecentKey(const void *topic, Size len, int32 node)
{
	uint32		h = hash_bytes((const unsigned char *) topic, (int) len);

	if (node != 0)
		h = hash_combine(h, murmurhash32((uint32) node));
	return RecentKeyOfHash(h);
}

RecentTable *
RecentForSource(Oid relid, PositionKind kind)
{
	TrackedSource t;

	if (Reg == NULL || Tables == NULL || RecoveryInProgress())
		return NULL;
	if (relid == RegistryOwnRelation(RegistryKindTable[kind]))
		return RecentTableOf(RegistryAttach(), kind);
	if (TrackedFind(relid, &t) && t.source == relid && t.kind == kind)
		return RecentTableOf(RegistryAttachFeed(relid), kind);
	return NULL;
}

static inline int
PartOf(uint32 key)
{
	return (int) (key & (uint32) (NParts - 1));
}

static inline RecentSlot *
PartSlotsOf(const RecentTable *t, int part)
{
	return &t->slots[part * PartSlots];
}

static inline int
Home(uint32 key)
{
	return (int) ((key >> 6) & (uint32) (PartSlots - 1));
}

/* Places a key known absent into the first empty slot from its home; lock held. */
static void
PlaceLocked(RecentSlot *slots, uint32 key, uint64 max)
{
	int			i = Home(key);

	while (pg_atomic_read_u32(&slots[i].key) != 0)
		i = (i + 1) & (PartSlots - 1);
	pg_atomic_write_u64(&slots[i].max, max);
	pg_write_barrier();
	pg_atomic_write_u32(&slots[i].key, key);
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
EvictLocked(RecentPart *part, RecentSlot *slots)
{
	int			n = 0;
	int			kept = 0;
	uint64		cut;

	for (int i = 0; i < PartSlots; i++)
	{
		uint32		key = pg_atomic_read_u32(&slots[i].key);

		if (key == 0)
			continue;
		Scratch[n].key = key;
		Scratch[n].max = pg_atomic_read_u64(&slots[i].max);
		n++;
	}
	qsort(Scratch, n, sizeof(RecentPair), ComparePairMax);
	cut = Max(Scratch[n / 2].max, pg_atomic_read_u64(&part->low));

	pg_atomic_fetch_add_u64(&part->seq, 1);
	pg_write_barrier();
	pg_atomic_write_u64(&part->low, cut);
	for (int i = 0; i < PartSlots; i++)
		pg_atomic_write_u32(&slots[i].key, 0);
	for (int i = 0; i < n; i++)
		if (Scratch[i].max > cut)
		{
			PlaceLocked(slots, Scratch[i].key, Scratch[i].max);
			kept++;
		}
	part->used = kept;
	pg_write_barrier();
	pg_atomic_fetch_add_u64(&part->seq, 1);
}

void
RecentNote(RecentTable *t, uint32 key, uint64 position)
{
	int			p = PartOf(key);
	RecentPart *part = &t->parts[p];
	RecentSlot *slots = PartSlotsOf(t, p);
	int			i = Home(key);

	/* allocated before the lock: an eviction under it must not fail */
	if (Scratch == NULL)
		Scratch = MemoryContextAlloc(TopMemoryContext, sizeof(RecentPair) * PartSlots);
	LWLockAcquire(part->lock, LW_EXCLUSIVE);
	/* at or below low nothing needs remembering: no skipping floor is below it */
	if (position <= pg_atomic_read_u64(&part->low))
	{
		LWLockRelease(part->lock);
		return;
	}
	for (;;)
	{
		uint32		k = pg_atomic_read_u32(&slots[i].key);

		if (k == key)
		{
			if (pg_atomic_read_u64(&slots[i].max) < position)
				pg_atomic_write_u64(&slots[i].max, position);
			LWLockRelease(part->lock);
			return;
		}
		if (k == 0)
			break;
		i = (i + 1) & (PartSlots - 1);
	}
	if ((part->used + 1) * 4 > PartSlots * 3)
	{
		EvictLocked(part, slots);
		if (position <= pg_atomic_read_u64(&part->low))
		{
			LWLockRelease(part->lock);
			return;
		}
	}
	PlaceLocked(slots, key, position);
	part->used++;
	LWLockRelease(part->lock);
}

void
RecentReset(RecentTable *t, uint64 low)
{
	for (int p = 0; p < NParts; p++)
	{
		RecentPart *part = &t->parts[p];
		RecentSlot *slots = PartSlotsOf(t, p);

		LWLockAcquire(part->lock, LW_EXCLUSIVE);
		pg_atomic_fetch_add_u64(&part->seq, 1);
		pg_write_barrier();
		pg_atomic_write_u64(&part->low, low);
		for (int i = 0; i < PartSlots; i++)
			pg_atomic_write_u32(&slots[i].key, 0);
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

bool
RecentMayHave(const RecentTable *t, uint32 key, uint64 floor)
{
	int			p = PartOf(key);
	RecentPart *part = (RecentPart *) &t->parts[p];
	const RecentSlot *slots = PartSlotsOf(t, p);
	uint64		seq = pg_atomic_read_u64(&part->seq);
	uint64		max = 0;
	int			i = Home(key);

	if (seq & 1)
		return true;
	pg_read_barrier();
	if (floor < pg_atomic_read_u64(&part->low))
		return true;
	for (int n = 0; n < PartSlots; n++)
	{
		uint32		k = pg_atomic_read_u32((pg_atomic_uint32 *) &slots[i].key);

		if (k == key)
		{
			pg_read_barrier();
			max = pg_atomic_read_u64((pg_atomic_uint64 *) &slots[i].max);
			break;
		}
		if (k == 0)
			break;
		i = (i + 1) & (PartSlots - 1);
	}
	pg_read_barrier();
	if (pg_atomic_read_u64(&part->seq) != seq)
		return true;
	return max > floor;
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
