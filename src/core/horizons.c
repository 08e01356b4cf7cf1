/*
 * horizons.c: horizons as the registry yields them (registry.h has the
 * model), and the late ring as readers see it.
 *
 * Computing. Every high first, a full barrier, then every slot of the
 * database: a line's horizon is min(high, lowest pin - 1), held at the
 * published value for originator lines while any slot is frozen, and never
 * below the published value. All under the registry lock in shared mode.
 *
 * Durability. A horizon that moves past the published value depends on
 * commits that raised the highs; their WAL is flushed (XLogFlush up to the
 * newest such commit's end) before the new value is published. So no
 * horizon handed out is above what a crash restart loads: with
 * synchronous_commit = off, too, and whatever became of aborted transactions
 * that drew ids. The flush is a no-op when the commits were synchronous.
 *
 * A standby computes nothing: its horizons are what replay published
 * (registry_wal.c).
 */
#include "postgres.h"

#include "access/transam.h"
#include "access/xlog.h"
#include "storage/proc.h"
#include "utils/snapmgr.h"

#include "core.h"
#include "registry.h"

/*
 * The lowest pin on each of lines [0, nlines) of a feed (LOW_NONE: none),
 * with the slot (process number) that holds it when holder is not NULL;
 * returns a slot whose freeze is set, or -1. Registry lock held.
 */
static int
LowestPins(RegistryDb *db, int nlines, uint64 *lowest, int *holder)
{
	int			frozen = -1;
	int			entry = RegistryEntryIndex(db);

	for (int l = 0; l < nlines; l++)
		lowest[l] = LOW_NONE;
	for (int s = 0; s < Reg->n_slots; s++)
	{
		RegistrySlot *slot = &Reg->slots[s];

		if (slot->dboid != db->dboid)
			continue;
		if (pg_atomic_read_u32(&slot->freeze) != 0)
			frozen = s;
		for (int i = 0; i < SLOT_PINS; i++)
		{
			uint64		v = pg_atomic_read_u64(&slot->low[i]);
			uint32		key;
			uint32		line;

			if (v == LOW_NONE)
				continue;
			pg_read_barrier();
			key = slot->line[i];
			line = key & 0xFFFF;
			if (key == PIN_KEY(entry, line) && line < (uint32) nlines && v < lowest[line])
			{
				lowest[line] = v;
				if (holder != NULL)
					holder[line] = s;
			}
		}
	}
	return frozen;
}

/*
 * Computes and publishes the horizons of lines [0, nlines) of a database
 * into out (see the header of this file).
 */
static void
ComputeLines(RegistryDb *db, int nlines, uint64 *out)
{
	uint64	   *high = palloc(sizeof(uint64) * nlines);
	uint64	   *lowest = palloc(sizeof(uint64) * nlines);
	bool		frozen;
	bool		moves = false;

	LWLockAcquire(Reg->lock, LW_SHARED);
	for (int l = 0; l < nlines; l++)
		high[l] = pg_atomic_read_u64(&db->lines[l].high);
	pg_memory_barrier();
	frozen = LowestPins(db, nlines, lowest, NULL) >= 0;
	for (int l = 0; l < nlines; l++)
	{
		uint64		published = pg_atomic_read_u64(&db->lines[l].published);
		uint64		h = high[l];

		if (lowest[l] != LOW_NONE && lowest[l] - 1 < h)
			h = lowest[l] - 1;
		if (frozen)
			h = Min(h, published);
		out[l] = h;
		if (h > published)
			moves = true;
	}
	/* the commits behind a higher horizon reach the disk before it goes out */
	if (moves)
	{
		uint64		lsn = pg_atomic_read_u64(&db->commit_lsn);

		if (lsn != 0)
			XLogFlush((XLogRecPtr) lsn);
	}
	for (int l = 0; l < nlines; l++)
	{
		uint64		cur = pg_atomic_read_u64(&db->lines[l].published);

		while (cur < out[l] &&
			   !pg_atomic_compare_exchange_u64(&db->lines[l].published, &cur, out[l]))
			;
		out[l] = Max(cur, out[l]);
	}
	LWLockRelease(Reg->lock);
	pfree(high);
	pfree(lowest);
}

void
RegistryInFlight(RegistryDb *db, int nlines, RegistryHold *out)
{
	uint64	   *lowest = palloc(sizeof(uint64) * Max(nlines, 1));
	int		   *holder = palloc(sizeof(int) * Max(nlines, 1));
	int			frozen;

	LWLockAcquire(Reg->lock, LW_SHARED);
	frozen = LowestPins(db, nlines, lowest, holder);
	for (int l = 0; l < nlines; l++)
	{
		uint64		published = pg_atomic_read_u64(&db->lines[l].published);

		/* a frozen slot holds the line at its published horizon */
		if (frozen >= 0 && published + 1 < lowest[l])
		{
			lowest[l] = published + 1;
			holder[l] = frozen;
		}
		out[l].position = lowest[l] == LOW_NONE ? 0 : (int64) lowest[l];
		out[l].pid = lowest[l] == LOW_NONE ? 0 : GetPGProcByNumber(holder[l])->pid;
	}
	LWLockRelease(Reg->lock);
	pfree(lowest);
	pfree(holder);
}


void
RegistryHorizons(RegistryDb *db, int nlines, uint64 *out)
{
	if (!RecoveryInProgress())
	{
		ComputeLines(db, nlines, out);
		return;
	}
	LWLockAcquire(Reg->lock, LW_SHARED);
	for (int l = 0; l < nlines; l++)
		out[l] = pg_atomic_read_u64(&db->lines[l].published);
	LWLockRelease(Reg->lock);
}

int
RegistryLineCount(RegistryDb *db)
{
	int			n = (int) pg_atomic_read_u32(&db->n_lines);

	pg_read_barrier();
	return n;
}

int32
RegistryLineNode(RegistryDb *db, int line)
{
	return db->lines[line].node;
}

uint64
RegistryLateHead(RegistryDb *db)
{
	uint64		head;

	LWLockAcquire(Reg->lock, LW_SHARED);
	head = db->late_next - 1;
	LWLockRelease(Reg->lock);
	return head;
}

uint64
RegistryLateWrites(RegistryDb *db)
{
	return pg_atomic_read_u64(&db->late_writes);
}

/*
 * Sequence numbers are consecutive within a server's life and jump ahead at a
 * start, so the entries after a recent cursor are read off their slots by
 * number, and after an old one by a scan of the whole ring.
 */
uint64
RegistryLateSince(RegistryDb *db, PositionKind kind, uint64 after,
				  LateEntry **entries, int *n, bool *lost)
{
	uint64		head;

	*n = 0;
	*entries = NULL;
	LWLockAcquire(Reg->lock, LW_SHARED);
	head = db->late_next - 1;
	*lost = after < db->late_evicted || after + 1 < db->late_first;
	if (head > after)
	{
		uint64		span = head - after;

		*entries = palloc(sizeof(LateEntry) * Min(span, (uint64) Reg->ring_size));
		for (uint64 i = 0; i < (uint64) Reg->ring_size && i < span; i++)
		{
			uint64		s = span <= (uint64) Reg->ring_size ? after + 1 + i : i;
			LateEntry  *e = &db->ring[s % Reg->ring_size];

			if (e->seq > after && e->kind == (int32) kind &&
				(span > (uint64) Reg->ring_size || e->seq == s))
				(*entries)[(*n)++] = *e;
		}
	}
	LWLockRelease(Reg->lock);
	return head;
}

uint64
RegistryLateWriters(RegistryDb *db, TransactionId *xids, int *n)
{
	uint64		head;

	*n = 0;
	LWLockAcquire(Reg->lock, LW_SHARED);
	head = db->late_next - 1;
	for (int i = 0; i < Reg->ring_size; i++)
	{
		const LateEntry *e = &db->ring[i];

		if (e->seq != 0 && e->seq <= head && TransactionIdIsNormal(e->xid) &&
			!TransactionIdPrecedes(e->xid, RecentXmin))
			xids[(*n)++] = e->xid;
	}
	LWLockRelease(Reg->lock);
	return head;
}
