/*
 * horizon.c: the read path of the registry (registry.h has the model):
 * computing and publishing horizons, the snapshot to read rows up to one,
 * the late ring as readers see it, and the SQL horizon functions.
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
 * Who may read. A horizon is a fact about a table: group_horizon() needs
 * SELECT on xip83.group_messages, welcome_horizon() on
 * xip83.welcome_messages, envelope_horizons() on xip83.envelopes (42501).
 * Reading a horizon does not start the notifier: the SQL entry points do.
 */
#include "postgres.h"

#include "access/parallel.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/namespace.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/latch.h"
#include "storage/lmgr.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "catalog/pg_type.h"
#include "utils/regproc.h"
#include "utils/lsyscache.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"

#include "args.h"
#include "horizon.h"
#include "notifier.h"
#include "source.h"
#include "track.h"

PG_FUNCTION_INFO_V1(group_horizon);
PG_FUNCTION_INFO_V1(welcome_horizon);
PG_FUNCTION_INFO_V1(envelope_horizons);
PG_FUNCTION_INFO_V1(late_cursor);

static void ForgetReads(bool unregister);

void
HorizonRequirePreload(void)
{
	RegistryRequirePreload();
}

/* Horizons are read in the backend that runs the statement, never in parallel. */
static void
RequireNotParallel(void)
{
	if (IsInParallelMode())
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TRANSACTION_STATE),
				 errmsg("xip83 horizons cannot be read during a parallel operation"),
				 errdetail("A horizon must be read before a new snapshot is taken, which a parallel query cannot do."),
				 errhint("The xip83 horizon, ceiling and live functions are PARALLEL UNSAFE; do not call them from functions marked PARALLEL SAFE or RESTRICTED.")));
}

/* ------------------------------------------------------ read snapshots */

/*
 * The snapshot that was active when this backend last read a horizon, by
 * content. Rows committed after that snapshot was taken but before the
 * horizon was computed are at or below the horizon yet invisible to it.
 */
static struct
{
	bool		valid;
	TransactionId xmin;
	TransactionId xmax;
	uint32		xcnt;
	int32		subxcnt;
	uint64		xip_hash;
} ReadUnder;

/* A digest of the transactions a snapshot sees as running. */
static uint64
XipHash(Snapshot s)
{
	uint64		h = 1469598103934665603ULL;

	for (uint32 i = 0; i < s->xcnt; i++)
		h = (h ^ s->xip[i]) * 1099511628211ULL;
	return h;
}

/*
 * A snapshot taken right after the last horizon read of this transaction: it
 * sees every row at or below that horizon. Registered on the top transaction's
 * resource owner; dropped before commit or prepare, released by abort.
 */
static Snapshot ReadAfter = NULL;

/* Drops the read snapshots: at transaction end, or before a newer read. */
static void
ForgetReads(bool unregister)
{
	if (ReadAfter != NULL && unregister)
		UnregisterSnapshotFromOwner(ReadAfter, TopTransactionResourceOwner);
	ReadAfter = NULL;
	ReadUnder.valid = false;
}

/* Remembers the active snapshot as the one a horizon is being read under. */
static void
NoteReadUnder(void)
{
	Snapshot	s;

	ForgetReads(true);
	if (!ActiveSnapshotSet())
		return;
	ReadUnder.valid = true;
	s = GetActiveSnapshot();
	ReadUnder.xmin = s->xmin;
	ReadUnder.xmax = s->xmax;
	ReadUnder.xcnt = s->xcnt;
	ReadUnder.subxcnt = s->subxcnt;
	ReadUnder.xip_hash = XipHash(s);
}

Snapshot
HorizonReadSnapshot(void)
{
	Snapshot	active = GetActiveSnapshot();

	if (IsParallelWorker())
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TRANSACTION_STATE),
				 errmsg("xip83 scans cannot run in a parallel worker"),
				 errdetail("A wave pinned to a horizon must read with a snapshot taken after that horizon.")));

	/*
	 * Equal content: the active snapshot may be the very one the last horizon
	 * was read under, taken before that horizon was computed, so use the one
	 * taken right after it. (If the active one is a later snapshot after all,
	 * no transaction ended in between and both see the same rows.) A snapshot
	 * that differs was taken after that read, the next statement's in READ
	 * COMMITTED, and is kept, so a wave stays consistent with its statement.
	 */
	if (ReadUnder.valid && ReadAfter != NULL &&
		active->xmin == ReadUnder.xmin && active->xmax == ReadUnder.xmax &&
		active->xcnt == ReadUnder.xcnt && active->subxcnt == ReadUnder.subxcnt &&
		XipHash(active) == ReadUnder.xip_hash)
	{
		if (IsolationIsSerializable())
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("xip83 cannot read up to a horizon inside a SERIALIZABLE transaction"),
					 errdetail("Rows at or below the horizon may have committed after the transaction's snapshot; reading them would step outside serializable isolation."),
					 errhint("Read horizons, ceilings and live rows in READ COMMITTED (autocommit) or REPEATABLE READ.")));
		return ReadAfter;
	}
	return active;
}

/* ---------------------------------------------------------------- readers */

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

/* Horizons of a feed's first n lines (all: -1), and the snapshot to read after them. */
static void
ReadLines(RegistryDb *db, int *nlines, uint64 **out)
{
	RequireNotParallel();
	if (*nlines < 0)
		*nlines = (int) pg_atomic_read_u32(&db->n_lines);
	pg_read_barrier();
	*out = palloc(sizeof(uint64) * Max(*nlines, 1));
	NoteReadUnder();
	if (RecoveryInProgress())
	{
		/* a standby's horizons are what replay published (standby.c) */
		LWLockAcquire(Reg->lock, LW_SHARED);
		for (int l = 0; l < *nlines; l++)
			(*out)[l] = pg_atomic_read_u64(&db->lines[l].published);
		LWLockRelease(Reg->lock);
	}
	else
		ComputeLines(db, *nlines, *out);
	if (ReadUnder.valid)
		ReadAfter = RegisterSnapshotOnOwner(GetLatestSnapshot(), TopTransactionResourceOwner);
}

int64
HorizonOfLine(RegistryDb *db, int line)
{
	int			n = line + 1;
	uint64	   *h;

	ReadLines(db, &n, &h);
	return (int64) h[line];
}

RegistryDb *
HorizonFeedFor(Oid relid, PositionKind kind)
{
	TrackedSource t;

	if (HorizonCoversTable(relid, RegistryKindTable[kind]))
		return RegistryAttach();
	if (TrackedFind(relid, &t) && t.source == relid && t.kind == kind)
		return RegistryAttachFeed(relid);
	return NULL;
}

/* Orders originator horizons by node id. */
static int
CompareNodes(const void *a, const void *b)
{
	int64		x = ((const int64 *) a)[0];
	int64		y = ((const int64 *) b)[0];

	return (x > y) - (x < y);
}

bool
HorizonCoversTable(Oid relid, const char *table)
{
	Oid			nsp = get_namespace_oid("xip83", true);

	return OidIsValid(nsp) && get_relname_relid(table, nsp) == relid;
}

void
HorizonCollectFeed(RegistryDb *db, HorizonSet *out)
{
	int			n = -1;
	uint64	   *h;
	int			k = 0;
	int64	   *pairs;

	ReadLines(db, &n, &h);
	pairs = palloc(sizeof(int64) * 2 * Max(n, 1));
	out->group = (int64) h[LINE_GROUP];
	out->welcome = (int64) h[LINE_WELCOME];
	for (int l = LINE_FIRST_ORIGINATOR; l < n; l++)
	{
		pairs[2 * k] = db->lines[l].node;
		pairs[2 * k + 1] = (int64) h[l];
		k++;
	}
	qsort(pairs, k, sizeof(int64) * 2, CompareNodes);
	out->n_originators = k;
	out->originator_node_ids = palloc(sizeof(int32) * Max(k, 1));
	out->originator_horizons = palloc(sizeof(int64) * Max(k, 1));
	for (int i = 0; i < k; i++)
	{
		out->originator_node_ids[i] = (int32) pairs[2 * i];
		out->originator_horizons[i] = pairs[2 * i + 1];
	}
	LWLockAcquire(Reg->lock, LW_SHARED);
	out->late_head = db->late_next - 1;
	LWLockRelease(Reg->lock);
	out->late_writes = pg_atomic_read_u64(&db->late_writes);
}

void
HorizonInFlight(RegistryDb *db, int nlines, HorizonHold *out)
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
HorizonHoldRow(RegistryDb *db, const HorizonSet *set, HorizonHold *v3, Datum *positions,
			   Datum *pids)
{
	int			nlines = (int) pg_atomic_read_u32(&db->n_lines);
	HorizonHold *hold = palloc(sizeof(HorizonHold) * Max(nlines, LINE_FIRST_ORIGINATOR));
	int			n = set->n_originators;
	Datum	   *pos = palloc(sizeof(Datum) * Max(n, 1));
	Datum	   *pid = palloc(sizeof(Datum) * Max(n, 1));
	bool	   *none = palloc(sizeof(bool) * Max(n, 1));
	int			dims[1] = {n};
	int			lbs[1] = {1};

	pg_read_barrier();
	memset(hold, 0, sizeof(HorizonHold) * Max(nlines, LINE_FIRST_ORIGINATOR));
	HorizonInFlight(db, nlines, hold);
	v3[0] = hold[LINE_GROUP];
	v3[1] = hold[LINE_WELCOME];
	for (int i = 0; i < n; i++)
	{
		int			line = RegistryFindOriginator(db, set->originator_node_ids[i]);

		none[i] = line < 0 || line >= nlines || hold[line].pid == 0;
		pos[i] = Int64GetDatum(none[i] ? 0 : hold[line].position);
		pid[i] = Int32GetDatum(none[i] ? 0 : hold[line].pid);
	}
	*positions = PointerGetDatum(construct_md_array(pos, none, 1, dims, lbs, INT8OID, sizeof(int64),
													FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	*pids = PointerGetDatum(construct_md_array(pid, none, 1, dims, lbs, INT4OID, sizeof(int32),
											   true, TYPALIGN_INT));
}

static int
CompareLateSeq(const void *a, const void *b)
{
	uint64		x = ((const LateEntry *) a)->seq;
	uint64		y = ((const LateEntry *) b)->seq;

	return (x > y) - (x < y);
}

/*
 * Sequence numbers are consecutive within a server's life and jump ahead at a
 * start, so the entries after a recent cursor are read off their slots by
 * number, and after an old one by a scan of the whole ring.
 */
void
HorizonLateSince(RegistryDb *db, PositionKind kind, uint64 after, LateBatch *out)
{
	out->n = 0;
	out->entries = NULL;
	LWLockAcquire(Reg->lock, LW_SHARED);
	out->head = db->late_next - 1;
	out->lost = after < db->late_evicted || after + 1 < db->late_first;
	if (out->head > after)
	{
		uint64		span = out->head - after;

		out->entries = palloc(sizeof(LateEntry) * Min(span, (uint64) Reg->ring_size));
		for (uint64 i = 0; i < (uint64) Reg->ring_size && i < span; i++)
		{
			uint64		s = span <= (uint64) Reg->ring_size ? after + 1 + i : i;
			LateEntry  *e = &db->ring[s % Reg->ring_size];

			if (e->seq > after && e->kind == (int32) kind &&
				(span > (uint64) Reg->ring_size || e->seq == s))
				out->entries[out->n++] = *e;
		}
	}
	LWLockRelease(Reg->lock);
	if (out->n > 1)
		qsort(out->entries, out->n, sizeof(LateEntry), CompareLateSeq);
}

/*
 * Waits for the writer of a late entry: on a primary on its transaction lock
 * (deadlocks detected, timeouts honored), on a standby, where no such lock is
 * replayed, by polling what replay knows.
 */
static void
WaitForLateWriter(TransactionId xid)
{
	if (!RecoveryInProgress())
	{
		XactLockTableWait(xid, NULL, NULL, XLTW_None);
		return;
	}
	while (TransactionIdIsInProgress(xid))
	{
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 1,
						 PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

/*
 * The late cursor a consumer that starts "from now" passes to its first live
 * fetch: the ring's newest entry, once every late write up to it has ended.
 * A late write still running would otherwise be lost to that consumer: its
 * row is not in the snapshot the consumer then reads its wave (or first
 * rows) with, and its entry is not after the cursor. Late writes are rare
 * (a position written again after its horizon was published), so the wait
 * is usually none; entries of transactions that ended before this
 * statement's snapshot are not even looked up.
 */
uint64
HorizonLateStart(RegistryDb *db)
{
	uint64		head;
	TransactionId *xids = palloc(sizeof(TransactionId) * Reg->ring_size);
	int			n = 0;

	LWLockAcquire(Reg->lock, LW_SHARED);
	head = db->late_next - 1;
	for (int i = 0; i < Reg->ring_size; i++)
	{
		const LateEntry *e = &db->ring[i];

		if (e->seq != 0 && e->seq <= head && TransactionIdIsNormal(e->xid) &&
			!TransactionIdPrecedes(e->xid, RecentXmin))
			xids[n++] = e->xid;
	}
	LWLockRelease(Reg->lock);
	for (int i = 0; i < n; i++)
		if (!TransactionIdIsCurrentTransactionId(xids[i]) && TransactionIdIsInProgress(xids[i]))
			WaitForLateWriter(xids[i]);
	pfree(xids);
	return head;
}

/* ------------------------------------------------------------ SQL */

/*
 * The feed a horizon function's source argument names: xip83's own table of
 * the kind or a table tracked as that kind, which the caller may read
 * (42501); any other table has no horizon (55000).
 */
RegistryDb *
HorizonFeedArg(FunctionCallInfo fcinfo, int argno, PositionKind kind)
{
	static const char *const KindWord[3] = {"group", "welcome", "envelope"};
	Oid			relid;
	RegistryDb *db;
	char	   *name;

	/* a call through 0.1.0's SQL definitions, without the argument: xip83's own table */
	if (argno >= PG_NARGS())
		relid = SourceOwnTable(RegistryKindTable[kind]);
	else
	{
		ArgRequire(fcinfo, argno, "source");
		relid = PG_GETARG_OID(argno);
	}
	if (get_rel_name(relid) == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	name = DatumGetCString(DirectFunctionCall1(regclassout, ObjectIdGetDatum(relid)));
	SourceRequireReadable(relid, name);
	RequireNotParallel();
	db = HorizonFeedFor(relid, kind);
	if (db == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table %s is not followed by xip83 as a %s table", name, KindWord[kind]),
				 errdetail("Horizons exist for xip83's own tables and for tables xip83.track follows."),
				 errhint("Run SELECT xip83.track('%s', '%s'%s) as the table's owner.", name,
						 KindWord[kind], kind == KIND_ENVELOPE ? ", blob_source" : "")));
	return db;
}

/* xip83.group_horizon(source): every group message id at or below it is committed or never will be. */
Datum
group_horizon(PG_FUNCTION_ARGS)
{
	RegistryDb *db = HorizonFeedArg(fcinfo, 0, KIND_GROUP);

	NotifierEnsureRunning();
	PG_RETURN_INT64(HorizonOfLine(db, LINE_GROUP));
}

/* xip83.welcome_horizon(source): the same for welcome ids. */
Datum
welcome_horizon(PG_FUNCTION_ARGS)
{
	RegistryDb *db = HorizonFeedArg(fcinfo, 0, KIND_WELCOME);

	NotifierEnsureRunning();
	PG_RETURN_INT64(HorizonOfLine(db, LINE_WELCOME));
}

/* xip83.envelope_horizons(source): one row per originator known to the registry, by node id. */
Datum
envelope_horizons(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	RegistryDb *db = HorizonFeedArg(fcinfo, 0, KIND_ENVELOPE);
	HorizonSet	set;

	NotifierEnsureRunning();
	HorizonCollectFeed(db, &set);
	InitMaterializedSRF(fcinfo, 0);
	for (int i = 0; i < set.n_originators; i++)
	{
		Datum		values[2];
		bool		nulls[2] = {false, false};

		values[0] = Int32GetDatum(set.originator_node_ids[i]);
		values[1] = Int64GetDatum(set.originator_horizons[i]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/*
 * xip83.late_cursor(source DEFAULT NULL): the newest entry of a feed's late
 * ring (NULL: xip83's own tables), the late cursor a consumer that starts
 * "from now" passes to its first live fetch.
 */
Datum
late_cursor(PG_FUNCTION_ARGS)
{
	RegistryDb *db;
	uint64		head;
	TrackedSource t;

	RequireNotParallel();
	if (PG_NARGS() > 0 && !PG_ARGISNULL(0) &&
		!HorizonCoversTable(PG_GETARG_OID(0), "group_messages") &&
		!HorizonCoversTable(PG_GETARG_OID(0), "welcome_messages") &&
		!HorizonCoversTable(PG_GETARG_OID(0), "envelopes"))
	{
		if (!TrackedFind(PG_GETARG_OID(0), &t) || t.source != PG_GETARG_OID(0))
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("table %s is not followed by xip83",
							DatumGetCString(DirectFunctionCall1(regclassout, PG_GETARG_DATUM(0)))),
					 errhint("Run xip83.track on it first.")));
		db = RegistryAttachFeed(t.source);
	}
	else
		db = RegistryAttach();
	head = HorizonLateStart(db);
	PG_RETURN_INT64((int64) head);
}

/* Drops the read snapshots at every transaction end. */
static void
HorizonXactCallback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
		case XACT_EVENT_PARALLEL_PRE_COMMIT:
		case XACT_EVENT_PRE_PREPARE:
			ForgetReads(true);
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			ForgetReads(false);
			break;
		default:
			break;
	}
}

void
HorizonInstallHooks(void)
{
	RegisterXactCallback(HorizonXactCallback, NULL);
}
