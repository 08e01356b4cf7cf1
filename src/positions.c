/*
 * positions.c: the write path of the registry (registry.h has the model):
 * the id defaults, the row trigger that registers every written position and
 * notes its topic in the recent-writes table (recent.h) before the row can be
 * seen, the TRUNCATE trigger, and the transaction hooks that raise a line's
 * high at commit and clear this backend's pins when its transaction ends.
 *
 * Who may call what. The id defaults draw only from the sequence of the table
 * they were installed for, the triggers act only on xip83's own tables, and
 * every column is found by name and type: a caller cannot point them at a
 * table or sequence of its own. Nothing runs as another role: moving a
 * sequence up to an explicit id is a setval by the writer itself, which
 * needs UPDATE on the sequence.
 *
 * Commit order. Slots are cleared at XACT_EVENT_COMMIT / ABORT, which
 * PostgreSQL calls after the transaction's end is visible in the proc array.
 * At commit the lines a transaction wrote are raised to its highest position
 * first, with the commit's WAL end recorded before (horizon.c flushes up to
 * it before a horizon that depends on it goes out). A transaction that
 * registered a position may not PREPARE: nothing would hold its positions
 * once another backend commits it or the server restarts.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/sysattr.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/namespace.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "commands/sequence.h"
#include "commands/trigger.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "args.h"
#include "notifier.h"
#include "recent.h"
#include "registry.h"

PG_FUNCTION_INFO_V1(next_group_id);
PG_FUNCTION_INFO_V1(next_welcome_id);
PG_FUNCTION_INFO_V1(register_position);
PG_FUNCTION_INFO_V1(reset_positions);

/*
 * A line this transaction wrote, at one subtransaction level, and the
 * highest position written there; line TOUCH_LATE counts late writes.
 */
typedef struct TouchedLine
{
	int			line;
	int			level;			/* GetCurrentTransactionNestLevel() of the write */
	uint64		max;
} TouchedLine;

#define TOUCH_LATE (-1)

/* An originator line this transaction counted itself a writer of. */
typedef struct CountedLine
{
	int32		node;
	int			line;
} CountedLine;

static RegistryDb *XactDb = NULL;	/* entry the open transaction wrote in */
static int	PinOf[SLOT_PINS];	/* line held by each pin of our slot, -1 none */
static bool Frozen = false;		/* our slot's freeze is set */
static TouchedLine *Touched = NULL;
static int	NTouched = 0;
static int	TouchedCap = 0;
static CountedLine *Counted = NULL;
static int	NCounted = 0;
static int	CountedCap = 0;
static bool PendingReset[3];	/* per PositionKind: TRUNCATEd or dropped here */
static bool LocalInit = false;
static bool NotifierEnsured = false;	/* this transaction asked for a notifier */
static int64 LastDrawn[2];		/* the id each default drew last: already registered */
static object_access_hook_type prev_object_access_hook = NULL;

static const char *const KindSequence[2] = {"group_messages_id_seq", "welcome_messages_id_seq"};

static void
InitLocal(void)
{
	if (LocalInit)
		return;
	for (int i = 0; i < SLOT_PINS; i++)
		PinOf[i] = -1;
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
Touch(int line, uint64 x)
{
	int			level = GetCurrentTransactionNestLevel();

	for (int i = 0; i < NTouched; i++)
		if (Touched[i].line == line && Touched[i].level == level)
		{
			Touched[i].max = line == TOUCH_LATE ? Touched[i].max + 1 : Max(Touched[i].max, x);
			return;
		}
	Touched = Grow(Touched, NTouched, &TouchedCap, sizeof(TouchedLine));
	Touched[NTouched].line = line;
	Touched[NTouched].level = level;
	Touched[NTouched].max = line == TOUCH_LATE ? 1 : x;
	NTouched++;
}

/*
 * The line of an originator for this transaction: counted as written by it
 * on first use, so that it is never reused for another originator meanwhile.
 */
static int
OriginatorLine(RegistryDb *db, int32 node)
{
	int			line;

	for (int i = 0; i < NCounted; i++)
		if (Counted[i].node == node)
			return Counted[i].line;
	line = RegistryOriginatorLine(db, node);
	XactDb = db;
	Counted = Grow(Counted, NCounted, &CountedCap, sizeof(CountedLine));
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
	uint64		h;

	InitLocal();
	/* a transaction's first write makes sure a notifier will hear of its end */
	if (!NotifierEnsured)
	{
		NotifierEnsureRunning();
		NotifierEnsured = true;
	}
	XactDb = db;
	/* pins 0 and 1 are the v3 lines', the rest go to originators in turn */
	if (line < LINE_FIRST_ORIGINATOR)
		pin = line;
	else
	{
		for (int i = LINE_FIRST_ORIGINATOR; i < SLOT_PINS; i++)
		{
			if (PinOf[i] == line)
				return i;
			if (PinOf[i] < 0 && pin < 0)
				pin = i;
		}
		if (pin < 0)
		{
			if (!Frozen)
			{
				pg_atomic_write_u32(&slot->freeze, 1);
				pg_memory_barrier();
				Frozen = true;
			}
			return -1;
		}
	}
	if (PinOf[pin] == line)
		return pin;
	PinOf[pin] = line;
	slot->line[pin] = (uint32) line;
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

/*
 * Registers a position this transaction is about to write. Below its pin
 * (or on a frozen line) the position is checked against the published
 * horizon: at or below it the write is late and goes into the late ring.
 */
static void
RegisterPosition(RegistryDb *db, int line, PositionKind kind, int32 node, uint64 x)
{
	RegistrySlot *slot = RegistryMySlot();
	int			pin = PinLine(db, slot, line);

	Touch(line, x);
	if (pin >= 0)
	{
		uint64		low = pg_atomic_read_u64(&slot->low[pin]);

		if (x >= low)
			return;
		pg_atomic_write_u64(&slot->low[pin], x);
		pg_memory_barrier();
		if (!AtOrBelowPublished(db, line, x))
			return;
		/* consumers passed x already: the old bound holds everything else */
		pg_atomic_write_u64(&slot->low[pin], low);
	}
	else if (!AtOrBelowPublished(db, line, x))
		return;
	(void) RegistryAddLate(db, kind, node, (int64) x, GetCurrentTransactionId());
	Touch(TOUCH_LATE, 0);
}

/* Moves a kind's sequence up to an explicit id above it, as the writer. */
static void
SequenceCatchUp(PositionKind kind, uint64 x)
{
	Oid			seq = RegistryOwnRelation(KindSequence[kind]);

	if (!OidIsValid(seq) || (int64) x <= RegistrySequenceLastValue(seq))
		return;
	(void) DirectFunctionCall2(setval_oid, ObjectIdGetDatum(seq), Int64GetDatum((int64) x));
}

/* Draws the next id of a kind, registered before any reader can see it. */
static Datum
NextId(FunctionCallInfo fcinfo, PositionKind kind)
{
	static Oid	known[2];
	RegistryDb *db;
	Oid			seq;
	int64		id;
	int			line = kind == KIND_GROUP ? LINE_GROUP : LINE_WELCOME;

	ArgRequire(fcinfo, 0, "seq");
	seq = PG_GETARG_OID(0);
	if (!OidIsValid(seq) || seq != known[kind])
	{
		known[kind] = RegistryOwnRelation(KindSequence[kind]);
		if (seq != known[kind])
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%s draws only from xip83.%s",
							kind == KIND_GROUP ? "next_group_id" : "next_welcome_id",
							KindSequence[kind]),
					 errdetail("It is the id default of xip83.%s, and registers every id it hands out.",
							   RegistryKindTable[kind])));
	}
	if (Reg == NULL)
		PG_RETURN_INT64(nextval_internal(seq, true));
	db = RegistryAttach();
	(void) PinLine(db, RegistryMySlot(), line);
	id = nextval_internal(seq, true);
	if (id <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("message ids must be positive, the sequence returned " INT64_FORMAT, id)));
	RegisterPosition(db, line, kind, 0, (uint64) id);
	LastDrawn[kind] = id;
	PG_RETURN_INT64(id);
}

/* xip83.next_group_id(seq regclass): the id default of xip83.group_messages. */
Datum
next_group_id(PG_FUNCTION_ARGS)
{
	return NextId(fcinfo, KIND_GROUP);
}

/* xip83.next_welcome_id(seq regclass): the id default of xip83.welcome_messages. */
Datum
next_welcome_id(PG_FUNCTION_ARGS)
{
	return NextId(fcinfo, KIND_WELCOME);
}

static void
TriggerMisuse(const char *fn, const char *what)
{
	ereport(ERROR,
			(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
			 errmsg("%s %s", fn, what),
			 errhint("It is installed by CREATE EXTENSION xip83 on xip83's own tables only.")));
}

/*
 * The kind named by the trigger's argument, for a trigger on the xip83 table
 * of that kind; anything else is refused.
 */
static PositionKind
TriggerKind(TriggerData *trigdata, const char *fn)
{
	const char *arg;
	PositionKind kind;

	if (trigdata->tg_trigger->tgnargs != 1)
		TriggerMisuse(fn, "needs one argument: group, welcome or envelope");
	arg = trigdata->tg_trigger->tgargs[0];
	if (strcmp(arg, "group") == 0)
		kind = KIND_GROUP;
	else if (strcmp(arg, "welcome") == 0)
		kind = KIND_WELCOME;
	else if (strcmp(arg, "envelope") == 0)
		kind = KIND_ENVELOPE;
	else
	{
		TriggerMisuse(fn, "needs one argument: group, welcome or envelope");
		kind = KIND_GROUP;		/* keep compiler quiet */
	}
	if (RelationGetRelid(trigdata->tg_relation) != RegistryOwnRelation(RegistryKindTable[kind]))
		TriggerMisuse(fn, psprintf("only acts on xip83.%s", RegistryKindTable[kind]));
	return kind;
}

/* A position column of a row, by name and type. */
static int64
RowPosition(HeapTuple tuple, TupleDesc desc, const char *column, Oid type)
{
	bool		isnull;
	Datum		d;

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (att->attisdropped || strcmp(NameStr(att->attname), column) != 0)
			continue;
		if (att->atttypid != type)
			break;
		d = heap_getattr(tuple, i + 1, desc, &isnull);
		if (isnull)
			ereport(ERROR,
					(errcode(ERRCODE_NOT_NULL_VIOLATION),
					 errmsg("xip83 positions must not be null"),
					 errdetail("Column \"%s\" is null.", column)));
		return type == INT4OID ? DatumGetInt32(d) : DatumGetInt64(d);
	}
	ereport(ERROR,
			(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
			 errmsg("register_position needs a column \"%s\" of type %s", column,
					format_type_be(type))));
	return 0;					/* keep compiler quiet */
}

/* The topic column of each kind, by PositionKind. */
static const char *const KindTopic[3] = {"group_id", "installation_key", "topic"};

/*
 * Notes a row's topic and position in the kind's recent-writes table before
 * the row can be seen, so that a wave never skips it (recent.h).
 */
static void
NoteRecent(RegistryDb *db, PositionKind kind, HeapTuple tuple, TupleDesc desc, int32 node,
		   uint64 position)
{
	RecentTable *table = RecentTableOf(db, kind);

	if (table == NULL)
		return;					/* xip83.recent_entries = 0 */
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		bool		isnull;
		Datum		d;
		bytea	   *topic;

		if (att->attisdropped || att->atttypid != BYTEAOID ||
			strcmp(NameStr(att->attname), KindTopic[kind]) != 0)
			continue;
		d = heap_getattr(tuple, i + 1, desc, &isnull);
		if (isnull)
			return;				/* the table's NOT NULL refuses the row */
		topic = DatumGetByteaPP(d);
		RecentNote(table, RecentKey(VARDATA_ANY(topic), VARSIZE_ANY_EXHDR(topic), node), position);
		return;
	}
	ereport(ERROR,
			(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
			 errmsg("register_position needs a column \"%s\" of type bytea", KindTopic[kind])));
}

/*
 * Whether an UPDATE sets a position column of the kind. One that only moves
 * a row to another topic is noted for waves, not registered as a write.
 */
static bool
SetsPosition(TriggerData *trigdata, TupleDesc desc, PositionKind kind)
{
	static const char *const group_cols[] = {"id", NULL};
	static const char *const envelope_cols[] = {"originator_node_id", "originator_sequence_id", NULL};
	const char *const *cols = kind == KIND_ENVELOPE ? envelope_cols : group_cols;

	if (!TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event))
		return true;
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (att->attisdropped)
			continue;
		for (int c = 0; cols[c] != NULL; c++)
			if (strcmp(NameStr(att->attname), cols[c]) == 0 &&
				bms_is_member(att->attnum - FirstLowInvalidHeapAttributeNumber,
							  trigdata->tg_updatedcols))
				return true;
	}
	return false;
}

/*
 * register_position(): BEFORE INSERT OR UPDATE row trigger of the xip83
 * tables. Notes the row's topic and position for waves, then registers the
 * position: ids from the default are already pinned (no lock); explicit ones
 * below the pin are checked against the published horizon, and late ones go
 * into the late ring. An UPDATE that sets no position column (a row moved to
 * another topic) is only noted.
 */
Datum
register_position(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	HeapTuple	tuple;
	TupleDesc	desc;
	RegistryDb *db;
	PositionKind kind;

	if (!CALLED_AS_TRIGGER(fcinfo))
		TriggerMisuse("register_position", "must be called as a trigger");
	if (!TRIGGER_FIRED_BEFORE(trigdata->tg_event) || !TRIGGER_FIRED_FOR_ROW(trigdata->tg_event) ||
		!(TRIGGER_FIRED_BY_INSERT(trigdata->tg_event) || TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event)))
		TriggerMisuse("register_position", "must be a BEFORE INSERT OR UPDATE row trigger");
	kind = TriggerKind(trigdata, "register_position");
	tuple = TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event)
		? trigdata->tg_newtuple : trigdata->tg_trigtuple;
	desc = RelationGetDescr(trigdata->tg_relation);
	if (Reg == NULL)
		return PointerGetDatum(tuple);

	if (kind == KIND_ENVELOPE)
	{
		int32		node = (int32) RowPosition(tuple, desc, "originator_node_id", INT4OID);
		int64		seq = RowPosition(tuple, desc, "originator_sequence_id", INT8OID);

		/* the table's CHECK refuses sequence ids below 1 after this trigger */
		if (seq <= 0)
			return PointerGetDatum(tuple);
		db = RegistryAttach();
		NoteRecent(db, kind, tuple, desc, node, (uint64) seq);
		if (!SetsPosition(trigdata, desc, kind))
			return PointerGetDatum(tuple);
		RegisterPosition(db, OriginatorLine(db, node), kind, node, (uint64) seq);
	}
	else
	{
		int64		id = RowPosition(tuple, desc, "id", INT8OID);

		if (id <= 0)
			ereport(ERROR,
					(errcode(ERRCODE_CHECK_VIOLATION),
					 errmsg("message ids must be positive")));
		db = RegistryAttach();
		NoteRecent(db, kind, tuple, desc, 0, (uint64) id);
		if (!SetsPosition(trigdata, desc, kind))
			return PointerGetDatum(tuple);
		if (id == LastDrawn[kind] && TRIGGER_FIRED_BY_INSERT(trigdata->tg_event))
		{
			LastDrawn[kind] = 0;	/* drawn by the default just now: registered */
			return PointerGetDatum(tuple);
		}
		RegisterPosition(db, kind == KIND_GROUP ? LINE_GROUP : LINE_WELCOME, kind, 0,
						 (uint64) id);
		SequenceCatchUp(kind, (uint64) id);
	}
	return PointerGetDatum(tuple);
}

/*
 * reset_positions(): AFTER TRUNCATE trigger of the xip83 tables. When the
 * TRUNCATE commits, the table's lines start over at 0 (TRUNCATE ... RESTART
 * IDENTITY reuses ids, so live consumers must reset their cursors too).
 */
Datum
reset_positions(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	PositionKind kind;

	if (!CALLED_AS_TRIGGER(fcinfo) || !TRIGGER_FIRED_BY_TRUNCATE(trigdata->tg_event))
		TriggerMisuse("reset_positions", "must be an AFTER TRUNCATE trigger");
	kind = TriggerKind(trigdata, "reset_positions");
	if (Reg != NULL)
	{
		InitLocal();
		XactDb = RegistryAttach();
		PendingReset[kind] = true;
	}
	return PointerGetDatum(NULL);
}

static bool
AnyPendingReset(void)
{
	return PendingReset[0] || PendingReset[1] || PendingReset[2];
}

/* Applies committed TRUNCATEs and drops; their ACCESS EXCLUSIVE locks are still held. */
static void
ApplyResets(void)
{
	if (!AnyPendingReset())
		return;
	if (XactDb != NULL && XactDb->dboid == MyDatabaseId)
	{
		LWLockAcquire(Reg->lock, LW_EXCLUSIVE);
		for (int k = 0; k < 3; k++)
			if (PendingReset[k])
				RegistryResetKindLocked(XactDb, (PositionKind) k, NCounted > 0);
		LWLockRelease(Reg->lock);
	}
}

/*
 * After the highs are raised: a reset kind's recent-writes table starts
 * empty, low at what this transaction wrote after its TRUNCATE (the only rows
 * left, all noted by nobody else while the lock is held).
 */
static void
ApplyRecentResets(void)
{
	if (!AnyPendingReset())
		return;
	if (XactDb != NULL && XactDb->dboid == MyDatabaseId)
		for (int k = 0; k < 3; k++)
			if (PendingReset[k])
				RecentResetKind(XactDb, (PositionKind) k);
	memset(PendingReset, 0, sizeof(PendingReset));
}

/* Raises every line this transaction wrote to its highest position (commit only). */
static void
RaiseHighs(void)
{
	RegistryDb *db = XactDb;
	uint64		lsn = (uint64) XactLastCommitEnd;
	uint64		cur;

	uint64		late = 0;

	if (db == NULL || NTouched == 0 || db->dboid != MyDatabaseId)
		return;
	/* the commit's WAL end first: a reader that sees a raised high flushes up to it */
	cur = pg_atomic_read_u64(&db->commit_lsn);
	while (cur < lsn && !pg_atomic_compare_exchange_u64(&db->commit_lsn, &cur, lsn))
		;
	pg_write_barrier();
	for (int i = 0; i < NTouched; i++)
	{
		PositionLine *line;

		if (Touched[i].line == TOUCH_LATE)
		{
			late += Touched[i].max;
			continue;
		}
		line = &db->lines[Touched[i].line];
		cur = pg_atomic_read_u64(&line->high);
		while (cur < Touched[i].max &&
			   !pg_atomic_compare_exchange_u64(&line->high, &cur, Touched[i].max))
			;
	}
	if (late > 0)
		pg_atomic_fetch_add_u64(&db->late_writes, late);
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
			if (PinOf[i] >= 0)
			{
				pg_atomic_write_u64(&slot->low[i], LOW_NONE);
				PinOf[i] = -1;
			}
		if (Frozen)
			pg_atomic_write_u32(&slot->freeze, 0);
	}
	/* the lines' highs are raised (or the writes gone): they may be reused */
	for (int i = 0; i < NCounted && XactDb != NULL; i++)
		RegistryLineDone(XactDb, Counted[i].line);
	Frozen = false;
	NotifierEnsured = false;
	NTouched = 0;
	NCounted = 0;
	XactDb = NULL;
	if (any && registry_wake != NULL)
		registry_wake();
}

/* Raises highs at commit, clears pins at every end, refuses PREPARE. */
static void
PositionsXactCallback(XactEvent event, void *arg)
{
	if (!LocalInit)
		return;
	switch (event)
	{
		case XACT_EVENT_PRE_PREPARE:
			if (NTouched > 0 || NCounted > 0 || Frozen || AnyPendingReset())
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
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			memset(PendingReset, 0, sizeof(PendingReset));
			ClearPins();
			break;
		default:
			break;
	}
}

/* A subtransaction's writes go to its parent on commit, away on abort. */
static void
PositionsSubXactCallback(SubXactEvent event, SubTransactionId mySubid,
						 SubTransactionId parentSubid, void *arg)
{
	int			level = GetCurrentTransactionNestLevel();
	int			kept = 0;

	if (NTouched == 0)
		return;
	if (event == SUBXACT_EVENT_COMMIT_SUB)
	{
		for (int i = 0; i < NTouched; i++)
			if (Touched[i].level >= level)
				Touched[i].level = level - 1;
	}
	else if (event == SUBXACT_EVENT_ABORT_SUB)
	{
		for (int i = 0; i < NTouched; i++)
			if (Touched[i].level < level)
				Touched[kept++] = Touched[i];
		NTouched = kept;
	}
}

/*
 * Dropping one of the tables (DROP EXTENSION, DROP TABLE) starts its lines
 * over when the drop commits, as a TRUNCATE does: a re-created table's
 * sequence starts at 1 again.
 */
static void
PositionsObjectAccess(ObjectAccessType access, Oid classId, Oid objectId, int subId, void *arg)
{
	RegistryDb *db;

	if (prev_object_access_hook)
		prev_object_access_hook(access, classId, objectId, subId, arg);
	if (access != OAT_DROP || classId != RelationRelationId || subId != 0 || Reg == NULL)
		return;
	if (get_rel_relkind(objectId) != RELKIND_RELATION)
		return;
	db = RegistryLookupMine();
	if (db == NULL)
		return;
	for (int k = 0; k < 3; k++)
		if (objectId == RegistryOwnRelation(RegistryKindTable[k]))
		{
			InitLocal();
			XactDb = db;
			PendingReset[k] = true;
		}
}

void
PositionsInstallHooks(void)
{
	RegisterXactCallback(PositionsXactCallback, NULL);
	RegisterSubXactCallback(PositionsSubXactCallback, NULL);
	prev_object_access_hook = object_access_hook;
	object_access_hook = PositionsObjectAccess;
}
