/*
 * pins.c: what a writing transaction holds in the registry (registry.h has
 * the model): its pins, the lines it wrote and how high, its late writes,
 * the TRUNCATEs and drops it will apply, and the transaction hooks that
 * raise a line's high at commit and clear this backend's pins when its
 * transaction ends. The write path (src/feed) finds the feed and the
 * position of a row; this file registers it.
 *
 * Commit order. Slots are cleared at XACT_EVENT_COMMIT / ABORT, which
 * PostgreSQL calls after the transaction's end is visible in the proc array;
 * a subtransaction's pins at SUBXACT_EVENT_ABORT_SUB (cleared, or put back to
 * its parent's bound) and kept by its parent at SUBXACT_EVENT_COMMIT_SUB.
 * At commit the lines a transaction wrote are raised to its highest position
 * first, with the commit's WAL end recorded before (horizons.c flushes up to
 * it before a horizon that depends on it goes out). A transaction that
 * registered a position may not PREPARE: nothing would hold its positions
 * once another backend commits it or the server restarts.
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "miscadmin.h"
#include "utils/memutils.h"

#include "core.h"
#include "registry.h"

/*
 * A line this transaction wrote, at one subtransaction level, and the
 * highest position written there; line TOUCH_LATE counts late writes.
 */
typedef struct TouchedLine
{
	RegistryDb *db;
	int			line;
	int			level;			/* GetCurrentTransactionNestLevel() of the write */
	uint64		max;
	uint64		count;			/* positions registered */
} TouchedLine;

#define TOUCH_LATE (-1)

/* An originator line this transaction counted itself a writer of. */
typedef struct CountedLine
{
	RegistryDb *db;
	int32		node;
	int			line;
} CountedLine;

/* A kind of a feed this transaction TRUNCATEd or dropped. */
typedef struct PendingReset
{
	RegistryDb *db;
	PositionKind kind;
} PendingReset;

#define MAX_RESETS 16

static uint32 PinOf[SLOT_PINS];	/* PIN_KEY held by each pin of our slot, or PIN_NONE */
static int	PinLevel[SLOT_PINS];	/* nesting level of the (sub)transaction that set it */
static bool Frozen = false;		/* our slot's freeze is set */
static int	FrozenLevel = 0;	/* ... by a (sub)transaction of that nesting level */

/*
 * A pin that a subtransaction lowered below the bound an enclosing level
 * gave it, and that bound: put back when the subtransaction aborts. One per
 * pin and level, the first lowering's (each later one lowers further).
 */
typedef struct PinLowered
{
	int			pin;
	int			level;
	uint64		prev;
} PinLowered;

static PinLowered *Lowered = NULL;
static int	NLowered = 0;
static int	LoweredCap = 0;
static TouchedLine *Touched = NULL;
static int	NTouched = 0;
static int	TouchedCap = 0;
static CountedLine *Counted = NULL;
static int	NCounted = 0;
static int	CountedCap = 0;
static PendingReset Resets[MAX_RESETS];
static int	NResets = 0;
static bool LocalInit = false;
static bool FirstWriteSeen = false;	/* registry_first_write ran for this transaction */

static void
InitLocal(void)
{
	if (LocalInit)
		return;
	for (int i = 0; i < SLOT_PINS; i++)
		PinOf[i] = PIN_NONE;
	LocalInit = true;
}

/* Room for one more element of a backend-lifetime array. */
static void *
Grow(void *array, int n, int *cap, Size elem)
{
	if (n < *cap)
		return array;
	*cap = *cap == 0 ? 16 : *cap * 2;
	return array == NULL ? MemoryContextAlloc(TopMemoryContext, elem * *cap)
		: repalloc(array, elem * *cap);
}

/*
 * Records that this (sub)transaction wrote position x on a line (or, with
 * TOUCH_LATE, one more late write). A subtransaction's records go to its
 * parent when it commits and are dropped when it aborts, so only what the
 * top transaction commits raises a line.
 */
static void
Touch(RegistryDb *db, int line, uint64 x)
{
	int			level = GetCurrentTransactionNestLevel();

	/* newest first: the current level's records are at the end */
	for (int i = NTouched - 1; i >= 0; i--)
		if (Touched[i].db == db && Touched[i].line == line && Touched[i].level == level)
		{
			Touched[i].count++;
			Touched[i].max = line == TOUCH_LATE ? Touched[i].max + 1 : Max(Touched[i].max, x);
			return;
		}
	Touched = Grow(Touched, NTouched, &TouchedCap, sizeof(TouchedLine));
	Touched[NTouched].db = db;
	Touched[NTouched].line = line;
	Touched[NTouched].level = level;
	Touched[NTouched].max = line == TOUCH_LATE ? 1 : x;
	Touched[NTouched].count = 1;
	NTouched++;
}

/*
 * The line of an originator for this transaction: counted as written by it
 * on first use, so that it is never reused for another originator meanwhile.
 */
int
PinsOriginatorLine(RegistryDb *db, int32 node)
{
	int			line;

	for (int i = 0; i < NCounted; i++)
		if (Counted[i].db == db && Counted[i].node == node)
			return Counted[i].line;
	line = RegistryOriginatorLine(db, node);
	Counted = Grow(Counted, NCounted, &CountedCap, sizeof(CountedLine));
	Counted[NCounted].db = db;
	Counted[NCounted].node = node;
	Counted[NCounted].line = line;
	NCounted++;
	return line;
}

/*
 * Pins a line before this transaction writes there (see registry.h).
 * Returns the pin's index, or -1 when the slot is full and the transaction
 * holds every originator line through `freeze` instead.
 */
static int
PinLine(RegistryDb *db, RegistrySlot *slot, int line)
{
	int			pin = -1;
	uint32		key = PIN_KEY(RegistryEntryIndex(db), line);
	uint64		h;

	InitLocal();
	/* a transaction's first write makes sure a notifier will hear of its end */
	if (!FirstWriteSeen)
	{
		if (registry_first_write != NULL)
			registry_first_write();
		FirstWriteSeen = true;
	}
	for (int i = 0; i < SLOT_PINS; i++)
	{
		if (PinOf[i] == key)
			return i;
		if (PinOf[i] == PIN_NONE && pin < 0)
			pin = i;
	}
	if (pin < 0)
	{
		if (!Frozen)
		{
			pg_atomic_write_u32(&slot->freeze, 1);
			pg_memory_barrier();
			Frozen = true;
			FrozenLevel = GetCurrentTransactionNestLevel();
		}
		return -1;
	}
	PinOf[pin] = key;
	PinLevel[pin] = GetCurrentTransactionNestLevel();
	slot->line[pin] = key;
	pg_write_barrier();
	h = pg_atomic_read_u64(&db->lines[line].high);
	for (;;)
	{
		uint64		again;

		pg_atomic_write_u64(&slot->low[pin], h + 1);
		pg_memory_barrier();
		again = pg_atomic_read_u64(&db->lines[line].high);
		if (again == h)
			break;
		h = again;
	}
	return pin;
}

/* Whether x is at or below the line's published horizon; checked under the lock. */
static bool
AtOrBelowPublished(RegistryDb *db, int line, uint64 x)
{
	uint64		published;

	LWLockAcquire(Reg->lock, LW_EXCLUSIVE);
	published = pg_atomic_read_u64(&db->lines[line].published);
	LWLockRelease(Reg->lock);
	return x <= published;
}

/* A late position this transaction registered, with the (sub)transaction that wrote it. */
typedef struct LateNoted
{
	const RegistryDb *db;
	int			line;
	uint64		x;
	TransactionId xid;
} LateNoted;

static LateNoted *Lates = NULL;
static int	NLates = 0;
static int	LatesCap = 0;

/*
 * Whether this (sub)transaction registered that late position already: an
 * envelope's meta and blob rows register the same position, and the ring
 * needs it once.
 */
static bool
AlreadyLate(const RegistryDb *db, int line, uint64 x)
{
	TransactionId xid = GetCurrentTransactionId();

	for (int i = 0; i < NLates; i++)
		if (Lates[i].db == db && Lates[i].line == line && Lates[i].x == x &&
			TransactionIdEquals(Lates[i].xid, xid))
			return true;
	return false;
}

static void
NoteLate(RegistryDb *db, int line, uint64 x)
{
	Lates = Grow(Lates, NLates, &LatesCap, sizeof(LateNoted));
	Lates[NLates].db = db;
	Lates[NLates].line = line;
	Lates[NLates].x = x;
	Lates[NLates].xid = GetCurrentTransactionId();
	NLates++;
}

/*
 * Remembers the bound a pin had before this subtransaction lowers it, when
 * an enclosing level set that bound; called before the pin is lowered.
 */
static void
NoteLowered(int pin, uint64 prev)
{
	int			level = GetCurrentTransactionNestLevel();

	if (PinLevel[pin] >= level)
		return;					/* this level's abort clears the whole pin */
	for (int i = NLowered - 1; i >= 0 && Lowered[i].level == level; i--)
		if (Lowered[i].pin == pin)
			return;
	Lowered = Grow(Lowered, NLowered, &LoweredCap, sizeof(PinLowered));
	Lowered[NLowered].pin = pin;
	Lowered[NLowered].level = level;
	Lowered[NLowered].prev = prev;
	NLowered++;
}

/*
 * Registers a position this transaction is about to write. Below its pin
 * (or on a frozen line) the position is checked against the published
 * horizon: at or below it the write is late and goes into the late ring.
 */
bool
PinsRegister(RegistryDb *db, int line, PositionKind kind, int32 node, uint64 x)
{
	RegistrySlot *slot = RegistryMySlot();
	int			pin = PinLine(db, slot, line);

	Touch(db, line, x);
	if (pin >= 0)
	{
		uint64		low = pg_atomic_read_u64(&slot->low[pin]);

		if (x >= low)
			return false;
		NoteLowered(pin, low);
		pg_atomic_write_u64(&slot->low[pin], x);
		pg_memory_barrier();
		if (!AtOrBelowPublished(db, line, x))
			return false;
		/* consumers passed x already: the old bound holds everything else */
		pg_atomic_write_u64(&slot->low[pin], low);
	}
	else if (!AtOrBelowPublished(db, line, x))
		return false;
	if (AlreadyLate(db, line, x))
		return true;
	(void) RegistryAddLate(db, kind, node, (int64) x, GetCurrentTransactionId());
	Touch(db, TOUCH_LATE, 0);
	NoteLate(db, line, x);
	return true;
}

void
PinsResetAtCommit(RegistryDb *db, PositionKind kind)
{
	InitLocal();
	for (int i = 0; i < NResets; i++)
		if (Resets[i].db == db && Resets[i].kind == kind)
			return;
	if (NResets == MAX_RESETS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("one transaction may empty at most %d followed xip83 tables", MAX_RESETS)));
	Resets[NResets].db = db;
	Resets[NResets].kind = kind;
	NResets++;
}


/* Applies committed TRUNCATEs and drops; their ACCESS EXCLUSIVE locks are still held. */
static void
ApplyResets(void)
{
	if (NResets == 0)
		return;
	LWLockAcquire(Reg->lock, LW_EXCLUSIVE);
	for (int i = 0; i < NResets; i++)
	{
		bool		keep = false;

		for (int c = 0; c < NCounted; c++)
			keep |= Counted[c].db == Resets[i].db;
		if (Resets[i].db->dboid == MyDatabaseId)
			RegistryResetKindLocked(Resets[i].db, Resets[i].kind, keep);
	}
	LWLockRelease(Reg->lock);
}

/*
 * After the highs are raised: a reset kind's recent-writes table starts
 * empty, low at what this transaction wrote after its TRUNCATE (the only rows
 * left, all noted by nobody else while the lock is held).
 */
static void
ApplyRecentResets(void)
{
	for (int i = 0; i < NResets; i++)
		if (Resets[i].db->dboid == MyDatabaseId)
		{
			RecentResetKind(Resets[i].db, Resets[i].kind);
			/* what is left is for a new pass to read; no other writer holds the table */
			SummaryResetKind(Resets[i].db, Resets[i].kind);
		}
	NResets = 0;
}

/* Raises a counter to at least v. */
static void
RaiseTo(pg_atomic_uint64 *counter, uint64 v)
{
	uint64		cur = pg_atomic_read_u64(counter);

	while (cur < v && !pg_atomic_compare_exchange_u64(counter, &cur, v))
		;
}

/* Raises every line this transaction wrote to its highest position (commit only). */
static void
RaiseHighs(void)
{
	uint64		lsn = (uint64) XactLastCommitEnd;

	/* the commit's WAL end first: a reader that sees a raised high flushes up to it */
	for (int i = 0; i < NTouched; i++)
		if (Touched[i].db->dboid == MyDatabaseId)
			RaiseTo(&Touched[i].db->commit_lsn, lsn);
	pg_write_barrier();
	for (int i = 0; i < NTouched; i++)
	{
		RegistryDb *db = Touched[i].db;

		if (db->dboid != MyDatabaseId)
			continue;
		if (Touched[i].line == TOUCH_LATE)
			pg_atomic_fetch_add_u64(&db->late_writes, Touched[i].max);
		else
		{
			RaiseTo(&db->lines[Touched[i].line].high, Touched[i].max);
			pg_atomic_fetch_add_u64(&db->registered, Touched[i].count);
		}
	}
}

/* Clears every pin of this backend's slot and wakes the notifier if any was set. */
static void
ClearPins(void)
{
	RegistrySlot *slot = RegistryMySlot();
	bool		any = Frozen || NTouched > 0 || NCounted > 0;

	if (slot != NULL)
	{
		pg_write_barrier();
		for (int i = 0; i < SLOT_PINS; i++)
			if (PinOf[i] != PIN_NONE)
			{
				pg_atomic_write_u64(&slot->low[i], LOW_NONE);
				PinOf[i] = PIN_NONE;
			}
		if (Frozen)
			pg_atomic_write_u32(&slot->freeze, 0);
	}
	/* the lines' highs are raised (or the writes gone): they may be reused */
	for (int i = 0; i < NCounted; i++)
		RegistryLineDone(Counted[i].db, Counted[i].line);
	Frozen = false;
	FrozenLevel = 0;
	NLowered = 0;
	FirstWriteSeen = false;
	NTouched = 0;
	NCounted = 0;
	NLates = 0;
	if (any && registry_wake != NULL)
		registry_wake();
}

/* Raises highs at commit, clears pins at every end, refuses PREPARE. */
static void
PinsXactCallback(XactEvent event, void *arg)
{
	if (!LocalInit)
	{
		/* no pins to clear first */
		if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_PARALLEL_COMMIT ||
			event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT ||
			event == XACT_EVENT_PREPARE)
			RegistryReleaseXactEnd(event == XACT_EVENT_COMMIT);
		return;
	}
	switch (event)
	{
		case XACT_EVENT_PRE_PREPARE:
			if (NTouched > 0 || NCounted > 0 || Frozen || NResets > 0)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot prepare a transaction that wrote xip83 messages"),
						 errdetail("Horizons cannot follow a prepared transaction's rows until COMMIT PREPARED, in another session or after a restart."),
						 errhint("Commit the transaction with COMMIT instead of PREPARE TRANSACTION.")));
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
			ApplyResets();
			RaiseHighs();
			ApplyRecentResets();
			ClearPins();
			RegistryReleaseXactEnd(event == XACT_EVENT_COMMIT);
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			NResets = 0;
			ClearPins();
			RegistryReleaseXactEnd(false);
			break;
		default:
			break;
	}
}

/*
 * A subtransaction that aborts gives back what it reserved: the pins it set
 * are cleared, the pins it lowered go back to their enclosing level's bound
 * and its freeze is lifted, so the horizon moves on while the enclosing
 * transaction stays open. Its rows will never be seen, so no horizon can pass
 * a position they hold. Every write path pins through PinLine (the id
 * defaults, the trigger, the tracking index), so this covers them all.
 */
static void
ReleaseSubXactPins(int level)
{
	RegistrySlot *slot = RegistryMySlot();
	bool		any = false;

	if (slot == NULL)
		return;
	/* whatever this subtransaction did is known aborted before a horizon can pass it */
	pg_memory_barrier();
	while (NLowered > 0 && Lowered[NLowered - 1].level >= level)
	{
		PinLowered *l = &Lowered[--NLowered];

		pg_atomic_write_u64(&slot->low[l->pin], l->prev);
		any = true;
	}
	for (int i = 0; i < SLOT_PINS; i++)
		if (PinOf[i] != PIN_NONE && PinLevel[i] >= level)
		{
			pg_atomic_write_u64(&slot->low[i], LOW_NONE);
			PinOf[i] = PIN_NONE;
			any = true;
		}
	if (Frozen && FrozenLevel >= level)
	{
		pg_atomic_write_u32(&slot->freeze, 0);
		Frozen = false;
		any = true;
	}
	if (any && registry_wake != NULL)
		registry_wake();
}

/* What a subtransaction reserved goes to its parent when it commits. */
static void
KeepSubXactPins(int level)
{
	int			kept = 0;

	for (int i = 0; i < SLOT_PINS; i++)
		if (PinOf[i] != PIN_NONE && PinLevel[i] >= level)
			PinLevel[i] = level - 1;
	if (Frozen && FrozenLevel >= level)
		FrozenLevel = level - 1;
	/* a lowering the parent already recorded, or of a pin the parent set, needs no record */
	for (int i = 0; i < NLowered; i++)
	{
		bool		known = false;

		if (Lowered[i].level >= level)
			Lowered[i].level = level - 1;
		for (int j = 0; j < kept && !known; j++)
			known = Lowered[j].pin == Lowered[i].pin && Lowered[j].level == Lowered[i].level;
		if (!known && PinLevel[Lowered[i].pin] < Lowered[i].level)
			Lowered[kept++] = Lowered[i];
	}
	NLowered = kept;
}

/*
 * A subtransaction's writes and reservations go to its parent on commit, and
 * away on abort.
 */
static void
PinsSubXactCallback(SubXactEvent event, SubTransactionId mySubid,
					SubTransactionId parentSubid, void *arg)
{
	int			level = GetCurrentTransactionNestLevel();
	int			kept = 0;

	if (event == SUBXACT_EVENT_COMMIT_SUB || event == SUBXACT_EVENT_ABORT_SUB)
		RegistryReleaseSubXactEnd(event == SUBXACT_EVENT_COMMIT_SUB);
	if (!LocalInit)
		return;
	if (event == SUBXACT_EVENT_COMMIT_SUB)
	{
		KeepSubXactPins(level);

		/*
		 * Down to the parent, merged with the parent's record of the same
		 * line: a transaction of many subtransactions (PL/pgSQL exception
		 * blocks) keeps one record per line, not one per subtransaction.
		 */
		for (int i = 0; i < NTouched; i++)
		{
			int			into = -1;

			if (Touched[i].level >= level)
				Touched[i].level = level - 1;
			for (int j = 0; j < kept && into < 0; j++)
				if (Touched[j].db == Touched[i].db && Touched[j].line == Touched[i].line &&
					Touched[j].level == Touched[i].level)
					into = j;
			if (into < 0)
				Touched[kept++] = Touched[i];
			else
			{
				Touched[into].max = Touched[i].line == TOUCH_LATE
					? Touched[into].max + Touched[i].max : Max(Touched[into].max, Touched[i].max);
				Touched[into].count += Touched[i].count;
			}
		}
		NTouched = kept;
	}
	else if (event == SUBXACT_EVENT_ABORT_SUB)
	{
		for (int i = 0; i < NTouched; i++)
			if (Touched[i].level < level)
				Touched[kept++] = Touched[i];
		NTouched = kept;
		ReleaseSubXactPins(level);
	}
}

/*
 * Pins a line before drawing a position from a sequence there, so that no
 * horizon passes the position while the draw is in flight.
 */
void
PinsBeforeDraw(RegistryDb *db, int line)
{
	(void) PinLine(db, RegistryMySlot(), line);
}

void
PinsInstallHooks(void)
{
	RegisterXactCallback(PinsXactCallback, NULL);
	RegisterSubXactCallback(PinsSubXactCallback, NULL);
}
