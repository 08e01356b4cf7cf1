/*
 * horizon.c: the in-flight registry, id assignment and the horizon
 * computation. The only file that touches the registry's shared memory.
 *
 * Position lines. Each database has lines of positions: group message ids,
 * welcome ids, and one line per originator (its sequence ids). Per line the
 * database entry keeps `high`, the highest position ever registered, and
 * `published`, the highest horizon ever handed out. Per backend a slot keeps,
 * per line, `low`: a lower bound of every position its open transaction may
 * write (NONE when it writes none).
 *
 * The horizon of a line is min(high, min over slots of low - 1), raised to
 * `published` (so it never goes back) and stored there.
 *
 * Invariant: while a slot's low L is set, published < L. It is established by
 * pinning: a writer stores L = high + 1 in its slot, issues a full barrier and
 * re-reads high, repeating until high did not move. A reader reads every high,
 * issues a full barrier, then reads the slots. A reader that misses the
 * writer's store read a high no greater than the writer's last read, so its
 * horizon stays below L; a reader that sees it stays below L by construction.
 *
 * Registering position x (every row written, by the id default or the row
 * trigger) on a pinned line: if x >= L, x is safe with no lock; sequence ids
 * drawn after pinning always are, since a sequence without cache hands out ids
 * above every id already registered. If x < L (an explicit id below the
 * high-water mark, an originator writing out of order, a sequence set back),
 * the slot is lowered to x and, under the registry lock in exclusive mode,
 * `published` is checked: below x the row is safe; otherwise consumers may
 * already be past x and the write is refused unless the row exists (then it
 * conflicts as it would anyway). Finally high = max(high, x).
 *
 * Slots are cleared at XACT_EVENT_COMMIT / ABORT, which PostgreSQL calls after
 * the transaction's end is visible in the proc array, and at backend exit;
 * then the notifier is woken. A transaction that registered a position may
 * not PREPARE: nothing would hold its positions once another backend commits
 * it or the server restarts.
 *
 * Locking: `lock` (one LWLock) is taken shared by readers while computing and
 * publishing, exclusive by the slow path above, by database entry set-up and
 * originator registration, and by a committed TRUNCATE's reset. Writers on
 * the fast path take no lock: a few atomic reads and writes on their own slot
 * and the line's high, no catalog access.
 *
 * After a server start (or crash restart) shared memory is empty. A database's
 * entry is loaded on first use, before anything registers in it: high becomes
 * the sequence's last value (or the highest stored id, if above it) and each
 * stored originator's highest sequence, found by a loose index scan. Nothing
 * can be in flight across a restart, so that is exact.
 */
#include "postgres.h"

#include <limits.h>

#include "access/htup_details.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/namespace.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "commands/sequence.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "args.h"
#include "horizon.h"
#include "xip83.h"

PG_FUNCTION_INFO_V1(next_group_id);
PG_FUNCTION_INFO_V1(next_welcome_id);
PG_FUNCTION_INFO_V1(register_position);
PG_FUNCTION_INFO_V1(reset_positions);
PG_FUNCTION_INFO_V1(group_horizon);
PG_FUNCTION_INFO_V1(welcome_horizon);
PG_FUNCTION_INFO_V1(envelope_horizons);

static void ForgetReads(bool unregister);

#define HORIZON_MAX_DATABASES 64
#define LINE_GROUP		0
#define LINE_WELCOME	1
#define LINE_FIRST_ORIGINATOR 2
#define N_LINES			(LINE_FIRST_ORIGINATOR + HORIZON_MAX_ORIGINATORS)
#define LOW_NONE		PG_UINT64_MAX

/* The two counters of one position line. */
typedef struct PositionLine
{
	pg_atomic_uint64 high;		/* highest position registered */
	pg_atomic_uint64 published; /* highest horizon handed out */
} PositionLine;

/* One database's lines. */
typedef struct HorizonDb
{
	Oid			dboid;			/* InvalidOid: free (changes under lock) */
	bool		ready;			/* loaded from the tables (under lock) */
	pg_atomic_uint32 n_originators;	/* entries of originator_node_ids in use */
	int32		originator_node_ids[HORIZON_MAX_ORIGINATORS];	/* arrival order */
	PositionLine lines[N_LINES];
} HorizonDb;

/* One backend's lower bounds, per line of its database. */
typedef struct HorizonSlot
{
	Oid			dboid;			/* database of the owner, set before any low */
	pg_atomic_uint64 low[N_LINES];
} HorizonSlot;

typedef struct HorizonRegistry
{
	LWLock	   *lock;
	int			n_slots;
	HorizonDb	dbs[HORIZON_MAX_DATABASES];
	HorizonSlot slots[FLEXIBLE_ARRAY_MEMBER];
} HorizonRegistry;

static HorizonRegistry *Registry = NULL;

/* Backend-local state. */
static HorizonSlot *MySlot = NULL;
static HorizonDb *MyDb = NULL;
static bool Touched[N_LINES];
static bool AnyTouched = false;
static bool PendingReset[3];	/* group, welcome, envelopes: TRUNCATEd here */
static bool ExitCallbackSet = false;
static object_access_hook_type prev_object_access_hook = NULL;

/* Kinds the row trigger and the TRUNCATE trigger are told about. */
typedef enum PositionKind
{
	KIND_GROUP,
	KIND_WELCOME,
	KIND_ENVELOPE
} PositionKind;

/* Slots cover every regular backend and background worker. */
static int
SlotCount(void)
{
	return MaxBackends;
}

Size
HorizonShmemSize(void)
{
	return add_size(offsetof(HorizonRegistry, slots),
					mul_size(SlotCount(), sizeof(HorizonSlot)));
}

/* Asks for the registry's memory and lock (shmem_request_hook). */
void
HorizonShmemRequest(void)
{
	RequestAddinShmemSpace(HorizonShmemSize());
	RequestNamedLWLockTranche("xip83_horizon", 1);
}

/* Creates or attaches the registry (shmem_startup_hook, AddinShmemInitLock held). */
void
HorizonShmemInit(void)
{
	bool		found;

	Registry = ShmemInitStruct("xip83 horizon registry", HorizonShmemSize(), &found);
	if (found)
		return;
	Registry->lock = &(GetNamedLWLockTranche("xip83_horizon"))->lock;
	Registry->n_slots = SlotCount();
	for (int d = 0; d < HORIZON_MAX_DATABASES; d++)
	{
		HorizonDb  *db = &Registry->dbs[d];

		db->dboid = InvalidOid;
		db->ready = false;
		pg_atomic_init_u32(&db->n_originators, 0);
		for (int l = 0; l < N_LINES; l++)
		{
			pg_atomic_init_u64(&db->lines[l].high, 0);
			pg_atomic_init_u64(&db->lines[l].published, 0);
		}
	}
	for (int s = 0; s < Registry->n_slots; s++)
	{
		Registry->slots[s].dboid = InvalidOid;
		for (int l = 0; l < N_LINES; l++)
			pg_atomic_init_u64(&Registry->slots[s].low[l], LOW_NONE);
	}
}

bool
HorizonPreloaded(void)
{
	return Registry != NULL;
}

void
HorizonRequirePreload(void)
{
	if (Registry == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("xip83 horizons need the library loaded at server start"),
				 errhint("Add xip83 to shared_preload_libraries in postgresql.conf and restart the server.")));
}

/* ---------------------------------------------------------------- entries */

/* The entry of a database, or NULL; lock held by the caller. */
static HorizonDb *
LookupDbLocked(Oid dboid)
{
	for (int d = 0; d < HORIZON_MAX_DATABASES; d++)
		if (Registry->dbs[d].dboid == dboid)
			return &Registry->dbs[d];
	return NULL;
}

/* Whether any backend of a database may still hold a low in it. */
static bool
DbHasLowsLocked(Oid dboid)
{
	for (int s = 0; s < Registry->n_slots; s++)
	{
		HorizonSlot *slot = &Registry->slots[s];

		if (slot->dboid != dboid)
			continue;
		for (int l = 0; l < N_LINES; l++)
			if (pg_atomic_read_u64(&slot->low[l]) != LOW_NONE)
				return true;
	}
	return false;
}

/* Clears an entry for reuse; lock held exclusive. */
static void
ResetDbLocked(HorizonDb *db, Oid dboid)
{
	db->dboid = dboid;
	db->ready = false;
	pg_atomic_write_u32(&db->n_originators, 0);
	for (int l = 0; l < N_LINES; l++)
	{
		pg_atomic_write_u64(&db->lines[l].high, 0);
		pg_atomic_write_u64(&db->lines[l].published, 0);
	}
}

/* Finds or creates the current database's entry; entries of dropped databases are reused. */
static HorizonDb *
AcquireDb(void)
{
	HorizonDb  *db;
	Oid			stale[HORIZON_MAX_DATABASES];
	int			n_stale = 0;

	LWLockAcquire(Registry->lock, LW_SHARED);
	db = LookupDbLocked(MyDatabaseId);
	LWLockRelease(Registry->lock);
	if (db != NULL)
		return db;

	/* Databases that no longer exist, looked up before taking the lock. */
	for (int d = 0; d < HORIZON_MAX_DATABASES; d++)
	{
		Oid			o = Registry->dbs[d].dboid;

		if (OidIsValid(o) && o != MyDatabaseId &&
			!SearchSysCacheExists1(DATABASEOID, ObjectIdGetDatum(o)))
			stale[n_stale++] = o;
	}

	LWLockAcquire(Registry->lock, LW_EXCLUSIVE);
	db = LookupDbLocked(MyDatabaseId);
	if (db == NULL)
		db = LookupDbLocked(InvalidOid);
	for (int i = 0; db == NULL && i < n_stale; i++)
	{
		HorizonDb  *old = LookupDbLocked(stale[i]);

		if (old != NULL && !DbHasLowsLocked(stale[i]))
			db = old;
	}
	if (db != NULL && db->dboid != MyDatabaseId)
		ResetDbLocked(db, MyDatabaseId);
	LWLockRelease(Registry->lock);

	if (db == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("xip83 horizons serve at most %d databases", HORIZON_MAX_DATABASES),
				 errhint("Drop the extension from databases that do not use it, or restart the server.")));
	return db;
}

/* Index of an originator's line in the current database, or -1. */
static int
FindOriginator(HorizonDb *db, int32 node)
{
	uint32		n = pg_atomic_read_u32(&db->n_originators);

	pg_read_barrier();
	for (uint32 i = 0; i < n; i++)
		if (db->originator_node_ids[i] == node)
			return (int) i;
	return -1;
}

/* Adds an originator with the given high; lock held exclusive. */
static int
AddOriginatorLocked(HorizonDb *db, int32 node, uint64 high)
{
	uint32		n = pg_atomic_read_u32(&db->n_originators);
	int			i = FindOriginator(db, node);

	if (i >= 0)
		return i;
	if (n >= HORIZON_MAX_ORIGINATORS)
	{
		LWLockRelease(Registry->lock);
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("xip83 horizons follow at most %d originators per database",
						HORIZON_MAX_ORIGINATORS),
				 errdetail("Originator %d would be one too many.", node)));
	}
	db->originator_node_ids[n] = node;
	pg_atomic_write_u64(&db->lines[LINE_FIRST_ORIGINATOR + n].high, high);
	pg_atomic_write_u64(&db->lines[LINE_FIRST_ORIGINATOR + n].published, 0);
	pg_write_barrier();
	pg_atomic_write_u32(&db->n_originators, n + 1);
	return (int) n;
}

/* The line of an originator, registering it (with high 0) when new. */
static int
OriginatorLine(HorizonDb *db, int32 node)
{
	int			i = FindOriginator(db, node);

	if (i < 0)
	{
		LWLockAcquire(Registry->lock, LW_EXCLUSIVE);
		i = AddOriginatorLocked(db, node, 0);
		LWLockRelease(Registry->lock);
	}
	return LINE_FIRST_ORIGINATOR + i;
}

/* Runs SQL as the bootstrap superuser: loading must not depend on the caller's grants. */
static void
RunPrivileged(const char *sql, int nargs, Oid *types, Datum *values)
{
	Oid			save_user;
	int			save_sec;
	int			nest;
	int			rc;

	GetUserIdAndSecContext(&save_user, &save_sec);
	SetUserIdAndSecContext(BOOTSTRAP_SUPERUSERID,
						   save_sec | SECURITY_LOCAL_USERID_CHANGE | SECURITY_RESTRICTED_OPERATION);
	/* functions and operators resolve in pg_catalog only, never in a caller's schema */
	nest = NewGUCNestLevel();
	(void) set_config_option("search_path", "pg_catalog, pg_temp", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	PG_TRY();
	{
		rc = SPI_execute_with_args(sql, nargs, types, values, NULL, false, 0);
		if (rc != SPI_OK_SELECT)
			elog(ERROR, "xip83 horizon query failed: %s", SPI_result_code_string(rc));
	}
	PG_FINALLY();
	{
		AtEOXact_GUC(true, nest);
		SetUserIdAndSecContext(save_user, save_sec);
	}
	PG_END_TRY();
}

/* An int8 column of an SPI result row, 0 when NULL. */
static int64
SpiInt64(int row, int col)
{
	bool		isnull;
	Datum		d = SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, col, &isnull);

	return isnull ? 0 : DatumGetInt64(d);
}

/* Loads a fresh entry from the sequences and tables (first use after a start). */
static void
LoadDb(HorizonDb *db)
{
	int64		group_high;
	int64		welcome_high;
	int			n;
	int32		nodes[HORIZON_MAX_ORIGINATORS];
	int64		highs[HORIZON_MAX_ORIGINATORS];

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	RunPrivileged("SELECT greatest(pg_catalog.pg_sequence_last_value('xip83.group_messages_id_seq'),"
				  "                (SELECT max(id) FROM xip83.group_messages), 0),"
				  "       greatest(pg_catalog.pg_sequence_last_value('xip83.welcome_messages_id_seq'),"
				  "                (SELECT max(id) FROM xip83.welcome_messages), 0)",
				  0, NULL, NULL);
	group_high = SpiInt64(0, 1);
	welcome_high = SpiInt64(0, 2);
	/* one probe per originator: a loose index scan of the primary key */
	RunPrivileged("WITH RECURSIVE o(n) AS ("
				  "  SELECT min(originator_node_id) FROM xip83.envelopes"
				  "  UNION ALL"
				  "  SELECT (SELECT min(e.originator_node_id) FROM xip83.envelopes e"
				  "           WHERE e.originator_node_id > o.n)"
				  "    FROM o WHERE o.n IS NOT NULL)"
				  "SELECT n::int8, (SELECT max(e.originator_sequence_id) FROM xip83.envelopes e"
				  "                  WHERE e.originator_node_id = o.n)"
				  "  FROM o WHERE n IS NOT NULL",
				  0, NULL, NULL);
	n = (int) SPI_processed;
	if (n > HORIZON_MAX_ORIGINATORS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("xip83 horizons follow at most %d originators per database",
						HORIZON_MAX_ORIGINATORS),
				 errdetail("xip83.envelopes holds %d originators.", n)));
	for (int i = 0; i < n; i++)
	{
		nodes[i] = (int32) SpiInt64(i, 1);
		highs[i] = SpiInt64(i, 2);
	}
	SPI_finish();

	LWLockAcquire(Registry->lock, LW_EXCLUSIVE);
	if (!db->ready && db->dboid == MyDatabaseId)
	{
		pg_atomic_write_u64(&db->lines[LINE_GROUP].high, (uint64) group_high);
		pg_atomic_write_u64(&db->lines[LINE_WELCOME].high, (uint64) welcome_high);
		for (int i = 0; i < n; i++)
			AddOriginatorLocked(db, nodes[i], (uint64) highs[i]);
		db->ready = true;
	}
	LWLockRelease(Registry->lock);
}

/* Clears every low of this backend's slot and wakes the notifier if any was set. */
static void
ClearSlot(void)
{
	if (!AnyTouched || MySlot == NULL)
		return;
	for (int l = 0; l < N_LINES; l++)
		if (Touched[l])
		{
			pg_atomic_write_u64(&MySlot->low[l], LOW_NONE);
			Touched[l] = false;
		}
	AnyTouched = false;
	NotifierWake();
}

/* Backend exit: nothing of ours may stay pinned. */
static void
ClearSlotAtExit(int code, Datum arg)
{
	ClearSlot();
}

/* Makes the current database's entry ready and this backend's slot ours. */
static HorizonDb *
Attach(void)
{
	HorizonRequirePreload();
	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("xip83 horizons are only known on the primary"),
				 errdetail("The in-flight registry lives in the memory of the server that takes the writes."),
				 errhint("Read horizons and follow the live feed on the primary.")));
	if (MySlot == NULL)
	{
#if PG_VERSION_NUM >= 170000
		int			procno = MyProcNumber;
#else
		int			procno = MyProc->pgprocno;
#endif

		if (procno < 0 || procno >= Registry->n_slots)
			elog(ERROR, "xip83: process number %d outside the horizon registry", procno);
		if (MyDb == NULL)
			MyDb = AcquireDb();
		MySlot = &Registry->slots[procno];
		if (MySlot->dboid != MyDatabaseId)
		{
			for (int l = 0; l < N_LINES; l++)
				pg_atomic_write_u64(&MySlot->low[l], LOW_NONE);
			pg_write_barrier();
			MySlot->dboid = MyDatabaseId;
			pg_memory_barrier();
		}
		if (!ExitCallbackSet)
		{
			before_shmem_exit(ClearSlotAtExit, (Datum) 0);
			ExitCallbackSet = true;
		}
	}
	if (!MyDb->ready)
		LoadDb(MyDb);
	return MyDb;
}

/* ---------------------------------------------------------------- writers */

/* Raises a line's high to x. */
static void
AdvanceHigh(PositionLine *line, uint64 x)
{
	uint64		cur = pg_atomic_read_u64(&line->high);

	while (cur < x && !pg_atomic_compare_exchange_u64(&line->high, &cur, x))
		;
}

/* Publishes this backend's low bound on a line before it writes there (see the header). */
static void
PinLine(HorizonDb *db, int line)
{
	uint64		h;

	if (pg_atomic_read_u64(&MySlot->low[line]) != LOW_NONE)
		return;
	if (!AnyTouched)
		NotifierEnsureRunning();
	Touched[line] = true;
	AnyTouched = true;
	h = pg_atomic_read_u64(&db->lines[line].high);
	for (;;)
	{
		uint64		again;

		pg_atomic_write_u64(&MySlot->low[line], h + 1);
		pg_memory_barrier();
		again = pg_atomic_read_u64(&db->lines[line].high);
		if (again == h)
			break;
		h = again;
	}
}

/* Whether the row at a position is stored (committed, or written by this transaction). */
static bool
PositionExists(HorizonDb *db, int line, uint64 x)
{
	Oid			types[2] = {INT8OID, INT4OID};
	Datum		values[2];
	bool		exists;
	const char *sql;

	values[0] = Int64GetDatum((int64) x);
	if (line == LINE_GROUP)
		sql = "SELECT 1 FROM xip83.group_messages WHERE id = $1";
	else if (line == LINE_WELCOME)
		sql = "SELECT 1 FROM xip83.welcome_messages WHERE id = $1";
	else
	{
		sql = "SELECT 1 FROM xip83.envelopes"
			" WHERE originator_sequence_id = $1 AND originator_node_id = $2";
		values[1] = Int32GetDatum(db->originator_node_ids[line - LINE_FIRST_ORIGINATOR]);
	}
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	RunPrivileged(sql, line >= LINE_FIRST_ORIGINATOR ? 2 : 1, types, values);
	exists = SPI_processed > 0;
	SPI_finish();
	return exists;
}

/*
 * An explicit id above every registered one: move the kind's sequence up to
 * it (like nextval, whatever becomes of the transaction), so the default
 * never hands out an id the horizon has already passed. This keeps COPY of
 * dumped rows, and explicit ids in general, from trapping later inserts.
 */
static void
SequenceCatchUp(int line, uint64 x)
{
	Oid			types[1] = {INT8OID};
	Datum		values[1];

	values[0] = Int64GetDatum((int64) x);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	RunPrivileged(line == LINE_GROUP
				  ? "SELECT pg_catalog.setval('xip83.group_messages_id_seq', $1)"
				  "  WHERE coalesce(pg_catalog.pg_sequence_last_value('xip83.group_messages_id_seq'), 0) < $1"
				  : "SELECT pg_catalog.setval('xip83.welcome_messages_id_seq', $1)"
				  "  WHERE coalesce(pg_catalog.pg_sequence_last_value('xip83.welcome_messages_id_seq'), 0) < $1",
				  1, types, values);
	SPI_finish();
}

/* Registers a position this transaction is about to write (see the header). */
static void
RegisterPosition(HorizonDb *db, int line, uint64 x, bool drawn)
{
	PinLine(db, line);
	if (x < pg_atomic_read_u64(&MySlot->low[line]))
	{
		uint64		published;

		pg_atomic_write_u64(&MySlot->low[line], x);
		pg_memory_barrier();
		LWLockAcquire(Registry->lock, LW_EXCLUSIVE);
		published = pg_atomic_read_u64(&db->lines[line].published);
		LWLockRelease(Registry->lock);
		if (x <= published && !PositionExists(db, line, x))
		{
			if (line >= LINE_FIRST_ORIGINATOR)
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("envelope (%d, " UINT64_FORMAT ") is at or below its originator's horizon " UINT64_FORMAT,
								db->originator_node_ids[line - LINE_FIRST_ORIGINATOR], x, published),
						 errdetail("Live consumers may already have read past this sequence id, so they would never see the envelope."),
						 errhint("Insert each originator's envelopes in ascending sequence order.")));
			else
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("%s id " UINT64_FORMAT " is at or below the horizon " UINT64_FORMAT,
								line == LINE_GROUP ? "group message" : "welcome message",
								x, published),
						 errdetail("Live consumers may already have read past this id, so they would never see the row."),
						 errhint("Leave the id column to its default, or use ids above every stored id.")));
		}
	}
	if (!drawn && line < LINE_FIRST_ORIGINATOR && x > pg_atomic_read_u64(&db->lines[line].high))
		SequenceCatchUp(line, x);
	AdvanceHigh(&db->lines[line], x);
}

/* Draws the next id of a kind, registered before any reader can see it. */
static Datum
NextId(FunctionCallInfo fcinfo, int line)
{
	HorizonDb  *db;
	int64		id;

	ArgRequire(fcinfo, 0, "seq");
	if (Registry == NULL)
		PG_RETURN_INT64(nextval_internal(PG_GETARG_OID(0), true));
	db = Attach();
	PinLine(db, line);
	id = nextval_internal(PG_GETARG_OID(0), true);
	if (id <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("message ids must be positive, the sequence returned " INT64_FORMAT, id)));
	RegisterPosition(db, line, (uint64) id, true);
	PG_RETURN_INT64(id);
}

/* xip83.next_group_id(seq regclass): the id default of xip83.group_messages. */
Datum
next_group_id(PG_FUNCTION_ARGS)
{
	return NextId(fcinfo, LINE_GROUP);
}

/* xip83.next_welcome_id(seq regclass): the id default of xip83.welcome_messages. */
Datum
next_welcome_id(PG_FUNCTION_ARGS)
{
	return NextId(fcinfo, LINE_WELCOME);
}

/* The trigger argument naming the table's kind. */
static PositionKind
TriggerKind(TriggerData *trigdata)
{
	const char *arg;

	if (trigdata->tg_trigger->tgnargs != 1)
		elog(ERROR, "xip83 position trigger needs one argument");
	arg = trigdata->tg_trigger->tgargs[0];
	if (strcmp(arg, "group") == 0)
		return KIND_GROUP;
	if (strcmp(arg, "welcome") == 0)
		return KIND_WELCOME;
	if (strcmp(arg, "envelope") == 0)
		return KIND_ENVELOPE;
	elog(ERROR, "xip83 position trigger: unknown kind \"%s\"", arg);
	return KIND_GROUP;			/* keep compiler quiet */
}

/* An int column of a row, which the table's constraints make non-NULL. */
static int64
RowInt(HeapTuple tuple, TupleDesc desc, int attno)
{
	bool		isnull;
	Datum		d = heap_getattr(tuple, attno, desc, &isnull);

	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_NOT_NULL_VIOLATION),
				 errmsg("xip83 positions must not be null")));
	return TupleDescAttr(desc, attno - 1)->atttypid == INT4OID
		? DatumGetInt32(d) : DatumGetInt64(d);
}

/*
 * register_position(): BEFORE INSERT OR UPDATE row trigger of the xip83
 * tables. Registers the row's position: ids from the default are already
 * pinned (no lock), explicit ones are checked against the horizon.
 */
Datum
register_position(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	HeapTuple	tuple;
	TupleDesc	desc;
	HorizonDb  *db;

	if (!CALLED_AS_TRIGGER(fcinfo) || !TRIGGER_FIRED_BEFORE(trigdata->tg_event) ||
		!TRIGGER_FIRED_FOR_ROW(trigdata->tg_event))
		elog(ERROR, "register_position must be a BEFORE ROW trigger");
	tuple = TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event)
		? trigdata->tg_newtuple : trigdata->tg_trigtuple;
	desc = RelationGetDescr(trigdata->tg_relation);
	if (Registry == NULL)
		return PointerGetDatum(tuple);

	db = Attach();
	if (TriggerKind(trigdata) == KIND_ENVELOPE)
	{
		int32		node = (int32) RowInt(tuple, desc, 1);
		int64		seq = RowInt(tuple, desc, 2);

		/* the table's CHECK refuses sequence ids below 1 after this trigger */
		if (seq <= 0)
			return PointerGetDatum(tuple);
		RegisterPosition(db, OriginatorLine(db, node), (uint64) seq, false);
	}
	else
	{
		int64		id = RowInt(tuple, desc, 1);

		if (id <= 0)
			ereport(ERROR,
					(errcode(ERRCODE_CHECK_VIOLATION),
					 errmsg("message ids must be positive")));
		RegisterPosition(db, TriggerKind(trigdata) == KIND_GROUP ? LINE_GROUP : LINE_WELCOME,
						 (uint64) id, false);
	}
	return PointerGetDatum(tuple);
}

/*
 * reset_positions(): AFTER TRUNCATE trigger. When the TRUNCATE commits, the
 * table's lines start over at 0 (TRUNCATE ... RESTART IDENTITY reuses ids, so
 * live consumers must reset their cursors too).
 */
Datum
reset_positions(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;

	if (!CALLED_AS_TRIGGER(fcinfo) || !TRIGGER_FIRED_BY_TRUNCATE(trigdata->tg_event))
		elog(ERROR, "reset_positions must be a TRUNCATE trigger");
	if (Registry != NULL)
	{
		Attach();
		PendingReset[TriggerKind(trigdata)] = true;
	}
	return PointerGetDatum(NULL);
}

/* Applies committed TRUNCATEs; their ACCESS EXCLUSIVE locks are still held. */
static void
ApplyResets(void)
{
	if (!PendingReset[0] && !PendingReset[1] && !PendingReset[2])
		return;
	if (MyDb != NULL)
	{
		LWLockAcquire(Registry->lock, LW_EXCLUSIVE);
		for (int l = 0; l < N_LINES; l++)
		{
			int			kind = l == LINE_GROUP ? 0 : l == LINE_WELCOME ? 1 : 2;

			if (!PendingReset[kind])
				continue;
			pg_atomic_write_u64(&MyDb->lines[l].high, 0);
			pg_atomic_write_u64(&MyDb->lines[l].published, 0);
		}
		/* an emptied envelope table has no originators left to follow */
		if (PendingReset[KIND_ENVELOPE])
			pg_atomic_write_u32(&MyDb->n_originators, 0);
		LWLockRelease(Registry->lock);
	}
	memset(PendingReset, 0, sizeof(PendingReset));
}

/* Clears the slot once the transaction's end is visible; refuses PREPARE. */
static void
HorizonXactCallback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
		case XACT_EVENT_PARALLEL_PRE_COMMIT:
			ForgetReads(true);
			break;
		case XACT_EVENT_PRE_PREPARE:
			ForgetReads(true);
			if (AnyTouched || PendingReset[0] || PendingReset[1] || PendingReset[2])
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot prepare a transaction that wrote xip83 messages"),
						 errdetail("Horizons cannot follow a prepared transaction's rows until COMMIT PREPARED, in another session or after a restart."),
						 errhint("Commit the transaction with COMMIT instead of PREPARE TRANSACTION.")));
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
			ApplyResets();
			ClearSlot();
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			ForgetReads(false);
			memset(PendingReset, 0, sizeof(PendingReset));
			ClearSlot();
			break;
		default:
			break;
	}
}

/*
 * Dropping one of the tables (DROP EXTENSION, DROP TABLE) starts its lines
 * over when the drop commits, as a TRUNCATE does: a re-created table's
 * sequence starts at 1 again.
 */
static void
HorizonObjectAccess(ObjectAccessType access, Oid classId, Oid objectId, int subId, void *arg)
{
	const char *name;

	if (prev_object_access_hook)
		prev_object_access_hook(access, classId, objectId, subId, arg);
	if (access != OAT_DROP || classId != RelationRelationId || subId != 0 ||
		Registry == NULL)
		return;
	if (MyDb == NULL)
	{
		/* a backend that never used the registry: only an existing entry needs resetting */
		LWLockAcquire(Registry->lock, LW_SHARED);
		MyDb = LookupDbLocked(MyDatabaseId);
		LWLockRelease(Registry->lock);
		if (MyDb == NULL)
			return;
	}
	name = get_rel_name(objectId);
	if (name == NULL || get_rel_namespace(objectId) != get_namespace_oid("xip83", true))
		return;
	if (strcmp(name, "group_messages") == 0)
		PendingReset[KIND_GROUP] = true;
	else if (strcmp(name, "welcome_messages") == 0)
		PendingReset[KIND_WELCOME] = true;
	else if (strcmp(name, "envelopes") == 0)
		PendingReset[KIND_ENVELOPE] = true;
}

void
HorizonInstallHooks(void)
{
	RegisterXactCallback(HorizonXactCallback, NULL);
	prev_object_access_hook = object_access_hook;
	object_access_hook = HorizonObjectAccess;
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

	/*
	 * Equal content: the active snapshot may be the very one the last horizon
	 * was read under, taken before that horizon was computed, so use the one
	 * taken right after it. (If the active one is a later snapshot after all,
	 * no transaction ended in between and both see the same rows.) A snapshot that differs
	 * was taken after that read, the next statement's in READ COMMITTED, and
	 * is kept, so a wave stays consistent with its statement.
	 */
	if (ReadUnder.valid && ReadAfter != NULL &&
		active->xmin == ReadUnder.xmin && active->xmax == ReadUnder.xmax &&
		active->xcnt == ReadUnder.xcnt && active->subxcnt == ReadUnder.subxcnt &&
		XipHash(active) == ReadUnder.xip_hash)
		return ReadAfter;
	return active;
}

/* ---------------------------------------------------------------- readers */

/*
 * Computes and publishes the horizons of lines [0, nlines) of a database:
 * every high first, a full barrier, then the slots (see the header).
 */
static void
ComputeLines(HorizonDb *db, int nlines, uint64 *out)
{
	uint64		high[N_LINES];
	uint64		lowest[N_LINES];

	LWLockAcquire(Registry->lock, LW_SHARED);
	for (int l = 0; l < nlines; l++)
	{
		high[l] = pg_atomic_read_u64(&db->lines[l].high);
		lowest[l] = LOW_NONE;
	}
	pg_memory_barrier();
	for (int s = 0; s < Registry->n_slots; s++)
	{
		HorizonSlot *slot = &Registry->slots[s];

		if (slot->dboid != db->dboid)
			continue;
		for (int l = 0; l < nlines; l++)
		{
			uint64		v = pg_atomic_read_u64(&slot->low[l]);

			if (v < lowest[l])
				lowest[l] = v;
		}
	}
	for (int l = 0; l < nlines; l++)
	{
		uint64		h = high[l];
		uint64		cur;

		if (lowest[l] != LOW_NONE && lowest[l] - 1 < h)
			h = lowest[l] - 1;
		cur = pg_atomic_read_u64(&db->lines[l].published);
		while (cur < h && !pg_atomic_compare_exchange_u64(&db->lines[l].published, &cur, h))
			;
		out[l] = Max(cur, h);
	}
	LWLockRelease(Registry->lock);
}

/* Horizons of the current database's first n lines, starting its notifier. */
static HorizonDb *
ReadLines(int nlines, uint64 *out)
{
	HorizonDb  *db = Attach();

	NotifierEnsureRunning();
	NoteReadUnder();
	ComputeLines(db, nlines, out);
	/* a parallel query's leader may not take new snapshots: it keeps its own */
	if (ReadUnder.valid && !IsInParallelMode())
		ReadAfter = RegisterSnapshotOnOwner(GetLatestSnapshot(), TopTransactionResourceOwner);
	return db;
}

int64
HorizonOfGroups(void)
{
	uint64		h[1];

	ReadLines(1, h);
	return (int64) h[LINE_GROUP];
}

int64
HorizonOfWelcomes(void)
{
	uint64		h[2];

	ReadLines(2, h);
	return (int64) h[LINE_WELCOME];
}

int64
HorizonOfOriginator(int32 originator_node_id)
{
	uint64		h[N_LINES];
	HorizonDb  *db = Attach();
	int			i = FindOriginator(db, originator_node_id);

	if (i < 0)
		return 0;
	ReadLines(LINE_FIRST_ORIGINATOR + i + 1, h);
	return (int64) h[LINE_FIRST_ORIGINATOR + i];
}

/* Orders originator horizons by node id. */
static int
CompareNodes(const void *a, const void *b)
{
	int32		x = ((const int32 *) a)[0];
	int32		y = ((const int32 *) b)[0];

	return (x > y) - (x < y);
}

bool
HorizonCoversTable(Oid relid, const char *table)
{
	Oid			nsp = get_namespace_oid("xip83", true);

	return OidIsValid(nsp) && get_relname_relid(table, nsp) == relid;
}

void
HorizonCollect(HorizonSet *out)
{
	uint64		h[N_LINES];
	HorizonDb  *db = Attach();
	int			n = (int) pg_atomic_read_u32(&db->n_originators);
	struct
	{
		int32		node;
		int64		horizon;
	}			pairs[HORIZON_MAX_ORIGINATORS];

	pg_read_barrier();
	ReadLines(LINE_FIRST_ORIGINATOR + n, h);
	out->group = (int64) h[LINE_GROUP];
	out->welcome = (int64) h[LINE_WELCOME];
	for (int i = 0; i < n; i++)
	{
		pairs[i].node = db->originator_node_ids[i];
		pairs[i].horizon = (int64) h[LINE_FIRST_ORIGINATOR + i];
	}
	qsort(pairs, n, sizeof(pairs[0]), CompareNodes);
	out->n_originators = n;
	for (int i = 0; i < n; i++)
	{
		out->originator_node_ids[i] = pairs[i].node;
		out->originator_horizons[i] = pairs[i].horizon;
	}
}

/* xip83.group_horizon(): every group message id at or below it is committed or never will be. */
Datum
group_horizon(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT64(HorizonOfGroups());
}

/* xip83.welcome_horizon(): the same for welcome ids. */
Datum
welcome_horizon(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT64(HorizonOfWelcomes());
}

/* xip83.envelope_horizons(): one row per originator known to the registry, by node id. */
Datum
envelope_horizons(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	HorizonSet	set;

	HorizonCollect(&set);
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
