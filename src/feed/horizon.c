/*
 * horizon.c: the read path of the registry (feed.h has the contract): the
 * feed a table or an argument names, horizons as readers get them (computed
 * and published by src/core/horizons.c), the snapshot to read rows up to
 * one, and the late ring in the order readers need it.
 *
 * Who may read. A horizon is a fact about a table: group_horizon() needs
 * SELECT on xip83.group_messages, welcome_horizon() on
 * xip83.welcome_messages, envelope_horizons() on xip83.envelopes (42501).
 * Reading a horizon does not start the notifier: the SQL entry points
 * (src/sql/horizons.c) do.
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
#include "storage/procarray.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "catalog/pg_type.h"
#include "utils/regproc.h"
#include "utils/lsyscache.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"

#include "base/base.h"
#include "rel/rel.h"
#include "feed_internal.h"

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

/* Horizons of a feed's first n lines (all: -1), and the snapshot to read after them. */
static void
ReadLines(RegistryDb *db, int *nlines, uint64 **out)
{
	RequireNotParallel();
	if (*nlines < 0)
		*nlines = RegistryLineCount(db);
	*out = palloc(sizeof(uint64) * Max(*nlines, 1));
	NoteReadUnder();
	RegistryHorizons(db, *nlines, *out);
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

RecentTable *
RecentForSource(Oid relid, PositionKind kind)
{
	TrackedSource t;

	if (!RecentReady() || RecoveryInProgress())
		return NULL;
	if (relid == SourceOwnRelation(RegistryKindTable[kind]))
		return RecentTableOf(RegistryAttach(), kind);
	if (TrackedFind(relid, &t) && t.source == relid && t.kind == kind)
		return RecentTableOf(RegistryAttachFeed(relid), kind);
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
		pairs[2 * k] = RegistryLineNode(db, l);
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
	out->late_head = RegistryLateHead(db);
	out->late_writes = RegistryLateWrites(db);
}

static int
CompareLateSeq(const void *a, const void *b)
{
	uint64		x = ((const LateEntry *) a)->seq;
	uint64		y = ((const LateEntry *) b)->seq;

	return (x > y) - (x < y);
}

/* The late entries of a kind after a cursor, in the order writers registered them. */
void
HorizonLateSince(RegistryDb *db, PositionKind kind, uint64 after, LateBatch *out)
{
	out->head = RegistryLateSince(db, kind, after, &out->entries, &out->n, &out->lost);
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
	TransactionId *xids = palloc(sizeof(TransactionId) * xip83_late_ring_size);
	int			n;
	uint64		head = RegistryLateWriters(db, xids, &n);

	for (int i = 0; i < n; i++)
		if (!TransactionIdIsCurrentTransactionId(xids[i]) && TransactionIdIsInProgress(xids[i]))
			WaitForLateWriter(xids[i]);
	pfree(xids);
	return head;
}

/* ------------------------------------------------------ for SQL callers */

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
				 errhint("Run SELECT xip83.track('%s', '%s'%s) as the table's owner, "
						 "once an administrator has granted it EXECUTE on xip83.track.", name,
						 KindWord[kind], kind == KIND_ENVELOPE ? ", blob_source" : "")));
	return db;
}

/*
 * The feed a late cursor is read from: xip83's own tables (InvalidOid, or one
 * of them) or a tracked table; 55000 for any other table.
 */
RegistryDb *
HorizonLateFeed(Oid relid)
{
	TrackedSource t;

	RequireNotParallel();
	if (!OidIsValid(relid) ||
		HorizonCoversTable(relid, "group_messages") ||
		HorizonCoversTable(relid, "welcome_messages") ||
		HorizonCoversTable(relid, "envelopes"))
		return RegistryAttach();
	if (!TrackedFind(relid, &t) || t.source != relid)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table %s is not followed by xip83",
						DatumGetCString(DirectFunctionCall1(regclassout, ObjectIdGetDatum(relid)))),
				 errhint("Run xip83.track on it first.")));
	/* as the horizons: a role that may not read the table takes no entry for it */
	SourceRequireReadable(t.source,
						  DatumGetCString(DirectFunctionCall1(regclassout, ObjectIdGetDatum(relid))));
	return RegistryAttachFeed(t.source);
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
