/*
 * positions.c: the write path of the registry (registry.h has the model):
 * the id defaults, the row trigger (and, for a tracked table's inserts, the
 * tracking index of track_am.c) that registers every written position and
 * notes its topic in the recent-writes table (recent.h) before the row can be
 * seen, the TRUNCATE trigger, and the transaction hooks that raise a line's
 * high at commit and clear this backend's pins when its transaction ends.
 *
 * Who may call what. The id defaults draw only from the sequence of the table
 * they were installed for, the triggers act only on xip83's own tables, and
 * every column is found by name and type: a caller cannot point them at a
 * table or sequence of its own. Nothing runs as another role: moving a
 * sequence up to an explicit id is a setval by the writer itself, which
 * needs UPDATE on the sequence. Every check that can refuse a caller runs
 * before the position is pinned: a pin outlives the error that follows it
 * until its (sub)transaction ends.
 *
 * Commit order. Slots are cleared at XACT_EVENT_COMMIT / ABORT, which
 * PostgreSQL calls after the transaction's end is visible in the proc array;
 * a subtransaction's pins at SUBXACT_EVENT_ABORT_SUB (cleared, or put back to
 * its parent's bound) and kept by its parent at SUBXACT_EVENT_COMMIT_SUB.
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
#include "catalog/pg_trigger.h"
#include "catalog/pg_type.h"
#include "commands/sequence.h"
#include "commands/trigger.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/regproc.h"
#include "utils/rel.h"

#include "args.h"
#include "notifier.h"
#include "recent.h"
#include "registry.h"
#include "track.h"

PG_FUNCTION_INFO_V1(next_group_id);
PG_FUNCTION_INFO_V1(next_welcome_id);
PG_FUNCTION_INFO_V1(next_id);
PG_FUNCTION_INFO_V1(register_position);
PG_FUNCTION_INFO_V1(reset_positions);

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
static bool NotifierEnsured = false;	/* this transaction asked for a notifier */
static int64 LastDrawn[2];		/* the id each default drew last: already registered */
static RegistryDb *LastDrawnDb[2];	/* ... and in which feed */
static object_access_hook_type prev_object_access_hook = NULL;

static const char *const KindSequence[2] = {"group_messages_id_seq", "welcome_messages_id_seq"};

/*
 * Whether register_position fired for an UPDATE in this transaction: until
 * it has, a tracking-index insert can be taken for a new row without reading
 * the row (PositionsInsertMayBeUpdate).
 */
static bool UpdateFired = false;

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
static int
OriginatorLine(RegistryDb *db, int32 node)
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
	if (!NotifierEnsured)
	{
		NotifierEnsureRunning();
		NotifierEnsured = true;
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
static void
RegisterPosition(RegistryDb *db, int line, PositionKind kind, int32 node, uint64 x)
{
	RegistrySlot *slot = RegistryMySlot();
	int			pin = PinLine(db, slot, line);

	Touch(db, line, x);
	if (pin >= 0)
	{
		uint64		low = pg_atomic_read_u64(&slot->low[pin]);

		if (x >= low)
			return;
		NoteLowered(pin, low);
		pg_atomic_write_u64(&slot->low[pin], x);
		pg_memory_barrier();
		if (!AtOrBelowPublished(db, line, x))
			return;
		/* consumers passed x already: the old bound holds everything else */
		pg_atomic_write_u64(&slot->low[pin], low);
	}
	else if (!AtOrBelowPublished(db, line, x))
		return;
	if (AlreadyLate(db, line, x))
		return;
	(void) RegistryAddLate(db, kind, node, (int64) x, GetCurrentTransactionId());
	Touch(db, TOUCH_LATE, 0);
	NoteLate(db, line, x);
}

/* Moves a v3 table's sequence up to an explicit id above it, as the writer. */
static void
SequenceCatchUp(Oid seq, uint64 x)
{
	if (!OidIsValid(seq) || (int64) x <= RegistrySequenceLastValue(seq))
		return;
	(void) DirectFunctionCall2(setval_oid, ObjectIdGetDatum(seq), Int64GetDatum((int64) x));
}

/* The line of a v3 kind. */
#define V3_LINE(kind) ((kind) == KIND_GROUP ? LINE_GROUP : LINE_WELCOME)

/*
 * Refuses a caller who may not write the table an id default serves, or draw
 * from its sequence, before anything is pinned: a pin held by a call that
 * then fails would hold the table's horizon until the caller's transaction
 * ends, and a role that cannot write a table must not be able to hold its
 * horizon at all. The table: INSERT or UPDATE on it or on any of its columns
 * (what lets a statement evaluate the default; an INSERT that leaves id to
 * its default needs no privilege on id itself). The sequence: what nextval
 * checks, in the same order.
 */
static Oid	OwnTable(PositionKind kind);

static void
RequireDrawRights(const char *fn, Oid table, Oid seq)
{
	Oid			role = GetUserId();

	if (!OidIsValid(table) ||
		(pg_class_aclcheck(table, role, ACL_INSERT | ACL_UPDATE) != ACLCHECK_OK &&
		 pg_attribute_aclcheck_all(table, role, ACL_INSERT | ACL_UPDATE, ACLMASK_ANY) != ACLCHECK_OK))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for table %s",
						OidIsValid(table) ? get_rel_name(table) : "(dropped)"),
				 errdetail("%s hands out ids only to roles that may insert into or update the table.", fn)));
	if (pg_class_aclcheck(seq, role, ACL_USAGE | ACL_UPDATE) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for sequence %s", get_rel_name(seq))));
	if (XactReadOnly && get_rel_persistence(seq) != RELPERSISTENCE_TEMP)
		PreventCommandIfReadOnly("nextval()");
	PreventCommandIfParallelMode("nextval()");
}

/*
 * Draws the next id of a kind from seq in a feed for table, registered before
 * any reader can see it.
 */
static int64
DrawId(RegistryDb *db, PositionKind kind, Oid table, Oid seq, const char *fn)
{
	int64		id;

	RequireDrawRights(fn, table, seq);
	(void) PinLine(db, RegistryMySlot(), V3_LINE(kind));
	id = nextval_internal(seq, false);	/* its checks are done */
	if (id <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("message ids must be positive, the sequence returned " INT64_FORMAT, id)));
	RegisterPosition(db, V3_LINE(kind), kind, 0, (uint64) id);
	LastDrawn[kind] = id;
	LastDrawnDb[kind] = db;
	return id;
}

/* The id default of one of xip83's own tables. */
static Datum
NextId(FunctionCallInfo fcinfo, PositionKind kind)
{
	static Oid	known[2];
	Oid			seq;

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
	PG_RETURN_INT64(DrawId(RegistryAttach(), kind, OwnTable(kind), seq,
						   kind == KIND_GROUP ? "next_group_id" : "next_welcome_id"));
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

/*
 * xip83.next_id(source regclass): the id default xip83.track gives a tracked
 * v3 table. Draws from the sequence the table's default used before (which
 * needs USAGE or UPDATE on it, as nextval does, and INSERT or UPDATE on the
 * table).
 */
Datum
next_id(PG_FUNCTION_ARGS)
{
	TrackedSource t;

	ArgRequire(fcinfo, 0, "source");
	if (!TrackedFind(PG_GETARG_OID(0), &t) || t.source != PG_GETARG_OID(0) ||
		t.kind == KIND_ENVELOPE)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table %s is not a tracked v3 table",
						DatumGetCString(DirectFunctionCall1(regclassout, PG_GETARG_DATUM(0)))),
				 errdetail("xip83.next_id is the id default xip83.track installs; xip83.untrack restores the table's own.")));
	if (Reg == NULL)
		PG_RETURN_INT64(nextval_internal(t.sequence, true));
	PG_RETURN_INT64(DrawId(RegistryAttachFeed(t.source), t.kind, t.source, t.sequence, "next_id"));
}

static void
TriggerMisuse(const char *fn, const char *what)
{
	ereport(ERROR,
			(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
			 errmsg("%s %s", fn, what),
			 errhint("CREATE EXTENSION xip83 installs it on xip83's own tables, and xip83.track on a node's tables.")));
}

/*
 * xip83's own table of each kind, looked up once per backend: the triggers
 * ask on every row. Dropped at every relcache invalidation (a table dropped
 * and created again gets a new OID).
 */
static Oid	OwnTables[3];

static Oid
OwnTable(PositionKind kind)
{
	if (!OidIsValid(OwnTables[kind]))
		OwnTables[kind] = RegistryOwnRelation(RegistryKindTable[kind]);
	return OwnTables[kind];
}

static void ForgetRowShapes(void);

static void
ForgetOwnTables(Datum arg, Oid relid)
{
	memset(OwnTables, 0, sizeof(OwnTables));
	ForgetRowShapes();
}

/* What a trigger firing acts on. */
typedef struct TriggerTarget
{
	PositionKind kind;
	Oid			feed;			/* the tracked table, InvalidOid: xip83's own tables */
	Oid			sequence;		/* v3 tracked tables: the id sequence */
	bool		blob;			/* an envelope blob table: no topic column */
} TriggerTarget;

/*
 * What a trigger acts on: xip83's own table of the kind its argument names,
 * or a table xip83.track covers with that kind (itself, its blob table or a
 * partition). Any other table is refused (trigger protocol), so attaching
 * the trigger by hand moves nothing.
 */
static bool
TriggerTargetOf(TriggerData *trigdata, const char *fn, TriggerTarget *out)
{
	const char *arg;
	Oid			relid = RelationGetRelid(trigdata->tg_relation);
	TrackedSource t;

	if (trigdata->tg_trigger->tgnargs != 1)
		TriggerMisuse(fn, "needs one argument: group, welcome or envelope");
	arg = trigdata->tg_trigger->tgargs[0];
	if (strcmp(arg, "group") == 0)
		out->kind = KIND_GROUP;
	else if (strcmp(arg, "welcome") == 0)
		out->kind = KIND_WELCOME;
	else if (strcmp(arg, "envelope") == 0)
		out->kind = KIND_ENVELOPE;
	else
		TriggerMisuse(fn, "needs one argument: group, welcome or envelope");
	out->blob = false;
	if (relid == OwnTable(out->kind))
	{
		out->feed = InvalidOid;
		out->sequence = InvalidOid;	/* looked up when an explicit id needs it */
		return true;
	}
	if (!TrackedFind(relid, &t) || t.kind != out->kind)
		TriggerMisuse(fn, psprintf("acts only on xip83.%s and on tables xip83.track follows as %s",
								   RegistryKindTable[out->kind], arg));
	out->feed = t.source;
	out->sequence = t.sequence;
	/* rows of a blob table carry no topic: their meta rows note it */
	out->blob = OidIsValid(t.blob);
	return true;
}

/* The attribute number of a column by name and type; 0 when the relation has none of that type. */
static AttrNumber
ColumnOf(TupleDesc desc, const char *column, Oid type)
{
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (!att->attisdropped && strcmp(NameStr(att->attname), column) == 0)
			return att->atttypid == type ? att->attnum : 0;
	}
	return 0;
}

/* A position column's attribute number; the trigger's table must have it. */
static AttrNumber
PositionColumnOf(TupleDesc desc, const char *column, Oid type)
{
	AttrNumber	attno = ColumnOf(desc, column, type);

	if (attno == 0)
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("register_position needs a column \"%s\" of type %s", column,
						format_type_be(type))));
	return attno;
}

/* The topic column of each kind, by PositionKind. */
static const char *const KindTopic[3] = {"group_id", "installation_key", "topic"};

/*
 * What the write path works out once per relation and trigger (or tracking
 * index): its target and the columns it reads, attribute numbers of the
 * table for a trigger, column numbers of the index for an index (position 0:
 * an inert index). Both fire for every row; looking these up by name each
 * time cost more than registering the row. Forgotten at every relcache
 * invalidation, so a track, an untrack or an ALTER TABLE is seen by the next
 * row.
 */
typedef struct RowShape
{
	Oid			relid;
	Oid			via;			/* the trigger or the xip83_track index */
	TriggerTarget target;
	AttrNumber	position;		/* id, or originator_sequence_id */
	AttrNumber	node;			/* originator_node_id (envelopes) */
	AttrNumber	topic;			/* 0: none (a blob table) */
} RowShape;

#define ROW_SHAPES 32			/* leaves a backend writes to in turn, with room */

static RowShape RowShapes[ROW_SHAPES];
static int	NRowShapes = 0;
static int	NextRowShape = 0;

static void
ForgetRowShapes(void)
{
	NRowShapes = 0;
	NextRowShape = 0;
}

static const RowShape *
FindShape(Oid relid, Oid key)
{
	for (int i = 0; i < NRowShapes; i++)
		if (RowShapes[i].relid == relid && RowShapes[i].via == key)
			return &RowShapes[i];
	return NULL;
}

/* Keeps a shape worked out, in place of the oldest when full. */
static const RowShape *
RememberShape(const RowShape *shape)
{
	RowShape   *slot;

	if (NRowShapes < ROW_SHAPES)
		slot = &RowShapes[NRowShapes++];
	else
	{
		slot = &RowShapes[NextRowShape];
		NextRowShape = (NextRowShape + 1) % ROW_SHAPES;
	}
	*slot = *shape;
	return slot;
}

static const RowShape *
RowShapeOf(TriggerData *trigdata)
{
	Oid			relid = RelationGetRelid(trigdata->tg_relation);
	Oid			tgoid = trigdata->tg_trigger->tgoid;
	TupleDesc	desc = RelationGetDescr(trigdata->tg_relation);
	RowShape	shape;
	const RowShape *known = FindShape(relid, tgoid);

	if (known != NULL)
		return known;
	memset(&shape, 0, sizeof(shape));
	shape.relid = relid;
	shape.via = tgoid;
	(void) TriggerTargetOf(trigdata, "register_position", &shape.target);
	if (shape.target.kind == KIND_ENVELOPE)
	{
		shape.node = PositionColumnOf(desc, "originator_node_id", INT4OID);
		shape.position = PositionColumnOf(desc, "originator_sequence_id", INT8OID);
	}
	else
		shape.position = PositionColumnOf(desc, "id", INT8OID);
	shape.topic = ColumnOf(desc, KindTopic[shape.target.kind], BYTEAOID);
	/* the lookups above may have processed invalidations: add the entry after them */
	return RememberShape(&shape);
}

/* A row's position column, which must not be null. */
static int64
RowPosition(HeapTuple tuple, TupleDesc desc, AttrNumber attno)
{
	bool		isnull;
	Datum		d = heap_getattr(tuple, attno, desc, &isnull);

	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_NOT_NULL_VIOLATION),
				 errmsg("xip83 positions must not be null"),
				 errdetail("Column \"%s\" is null.", NameStr(TupleDescAttr(desc, attno - 1)->attname))));
	return TupleDescAttr(desc, attno - 1)->atttypid == INT4OID ? DatumGetInt32(d) : DatumGetInt64(d);
}

/*
 * Notes a row's topic and position in the kind's recent-writes table before
 * the row can be seen, so that a wave never skips it (recent.h). topic NULL:
 * the row has none to note (a null topic, which the table refuses, or a blob
 * row, whose meta row notes it).
 */
static void
NoteRecent(RegistryDb *db, PositionKind kind, const bytea *topic, int32 node, uint64 position)
{
	RecentTable *table = RecentTableOf(db, kind);

	if (table == NULL || topic == NULL)
		return;					/* xip83.recent_entries = 0, or nothing to note */
	RecentNote(table, RecentKey(VARDATA_ANY(topic), VARSIZE_ANY_EXHDR(topic), node), position);
}

/*
 * Notes and registers one written row of a target: the write path of the
 * trigger and of the tracking index (track_am.c). sets_position false: an
 * UPDATE that moved the row to another topic, only noted; inserted: a new
 * row, whose id may be the one the default just drew.
 */
static void
RegisterRow(const TriggerTarget *target, int32 node, int64 position, const bytea *topic,
			bool sets_position, bool inserted)
{
	PositionKind kind = target->kind;
	RegistryDb *db;

	if (kind == KIND_ENVELOPE)
	{
		if (position < 0)
			ereport(ERROR,
					(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
					 errmsg("originator sequence ids must not be negative"),
					 errdetail("Originator %d, sequence id " INT64_FORMAT ".", node, position)));
		db = RegistryAttachFeed(target->feed);
		NoteRecent(db, kind, topic, node, (uint64) position);
		if (!sets_position)
			return;
		/* sequence 0 (chain originators) is at or below every horizon: a late write */
		RegisterPosition(db, OriginatorLine(db, node), kind, node, (uint64) position);
		return;
	}
	if (position <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_CHECK_VIOLATION),
				 errmsg("message ids must be positive")));
	db = RegistryAttachFeed(target->feed);
	NoteRecent(db, kind, topic, 0, (uint64) position);
	if (!sets_position)
		return;
	if (position == LastDrawn[kind] && LastDrawnDb[kind] == db && inserted)
	{
		LastDrawn[kind] = 0;	/* drawn by the default just now: registered */
		return;
	}
	/* first: its privilege check must not fail with the position registered */
	SequenceCatchUp(OidIsValid(target->feed) ? target->sequence
					: RegistryOwnRelation(KindSequence[kind]), (uint64) position);
	RegisterPosition(db, V3_LINE(kind), kind, 0, (uint64) position);
}

/*
 * Whether an UPDATE sets a position column of the kind. One that only moves
 * a row to another topic is noted for waves, not registered as a write.
 */
static bool
SetsPosition(TriggerData *trigdata, const RowShape *shape)
{
	if (!TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event))
		return true;
	if (bms_is_member(shape->position - FirstLowInvalidHeapAttributeNumber,
					  trigdata->tg_updatedcols))
		return true;
	return shape->node != 0 &&
		bms_is_member(shape->node - FirstLowInvalidHeapAttributeNumber, trigdata->tg_updatedcols);
}

/* A row's topic to note, or NULL (none, or null); errors when the table must have one. */
static const bytea *
RowTopic(const RowShape *shape, HeapTuple tuple, TupleDesc desc)
{
	bool		isnull;
	Datum		d;

	if (shape->topic == 0)
	{
		if (shape->target.blob)
			return NULL;
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("register_position needs a column \"%s\" of type bytea",
						KindTopic[shape->target.kind])));
	}
	d = heap_getattr(tuple, shape->topic, desc, &isnull);
	return isnull ? NULL : DatumGetByteaPP(d);
}

/*
 * register_position(): BEFORE INSERT OR UPDATE row trigger of the xip83
 * tables, and BEFORE UPDATE trigger of tracked tables (whose inserts the
 * tracking index registers). Notes the row's topic and position for waves,
 * then registers the position: ids from the default are already pinned (no
 * lock); explicit ones below the pin are checked against the published
 * horizon, and late ones go into the late ring. An UPDATE that sets no
 * position column (a row moved to another topic) is only noted.
 */
Datum
register_position(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	HeapTuple	tuple;
	TupleDesc	desc;
	const RowShape *shape;

	if (!CALLED_AS_TRIGGER(fcinfo))
		TriggerMisuse("register_position", "must be called as a trigger");
	if (!TRIGGER_FIRED_BEFORE(trigdata->tg_event) || !TRIGGER_FIRED_FOR_ROW(trigdata->tg_event) ||
		!(TRIGGER_FIRED_BY_INSERT(trigdata->tg_event) || TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event)))
		TriggerMisuse("register_position", "must be a BEFORE INSERT OR UPDATE row trigger");
	if (TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event))
		UpdateFired = true;		/* before anything here can fail */
	tuple = TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event)
		? trigdata->tg_newtuple : trigdata->tg_trigtuple;
	desc = RelationGetDescr(trigdata->tg_relation);
	shape = RowShapeOf(trigdata);
	if (Reg == NULL)
		return PointerGetDatum(tuple);
	RegisterRow(&shape->target,
				shape->node != 0 ? (int32) RowPosition(tuple, desc, shape->node) : 0,
				RowPosition(tuple, desc, shape->position),
				RowTopic(shape, tuple, desc),
				SetsPosition(trigdata, shape),
				TRIGGER_FIRED_BY_INSERT(trigdata->tg_event));
	return PointerGetDatum(tuple);
}

/*
 * The target and column numbers of a tracked table's xip83_track index
 * (track.c gives it positions first, then the topic), cached as the
 * trigger's are; NULL when the index is inert (track.h).
 */
static const RowShape *
IndexShapeOf(Relation heap, Relation index)
{
	Oid			relid = RelationGetRelid(heap);
	Oid			indexid = RelationGetRelid(index);
	TrackedSource t;
	bool		blob_side;
	RowShape	shape;
	const RowShape *known = FindShape(relid, indexid);

	if (known != NULL)
		return known->position == 0 ? NULL : known;
	memset(&shape, 0, sizeof(shape));
	shape.relid = relid;
	shape.via = indexid;
	if (TrackIndexOf(heap, index, &t, &blob_side) == TRACK_INDEX_LIVE)
	{
		shape.target.kind = t.kind;
		shape.target.feed = t.source;
		shape.target.sequence = t.sequence;
		shape.target.blob = OidIsValid(t.blob);
		shape.node = t.kind == KIND_ENVELOPE ? 1 : 0;
		shape.position = t.kind == KIND_ENVELOPE ? 2 : 1;
		shape.topic = blob_side ? 0 : shape.position + 1;
	}
	/* the lookups above may have processed invalidations: add the entry after them */
	known = RememberShape(&shape);
	return known->position == 0 ? NULL : known;
}

/* A position column of the tracking index: the table's key, never null. */
static int64
IndexPosition(const Datum *values, const bool *isnull, AttrNumber col, bool int4)
{
	if (isnull[col - 1])
		ereport(ERROR,
				(errcode(ERRCODE_NOT_NULL_VIOLATION),
				 errmsg("xip83 positions must not be null")));
	return int4 ? DatumGetInt32(values[col - 1]) : DatumGetInt64(values[col - 1]);
}

/* Whether a trigger of that enabled state fires in this session (commands/trigger.c's rule). */
static bool
FiresInSession(char tgenabled)
{
	if (tgenabled == TRIGGER_FIRES_ALWAYS)
		return true;
	if (tgenabled == TRIGGER_FIRES_ON_ORIGIN)
		return SessionReplicationRole != SESSION_REPLICATION_ROLE_REPLICA;
	if (tgenabled == TRIGGER_FIRES_ON_REPLICA)
		return SessionReplicationRole == SESSION_REPLICATION_ROLE_REPLICA;
	return false;				/* disabled */
}

/*
 * An UPDATE that sets a tracked column fires the table's trigger
 * xip83_register_position (BEFORE UPDATE OF the tracking index's columns,
 * track.c) before it inserts the new row version into the index. So in a
 * transaction where register_position has not fired for an UPDATE, on a
 * table where that trigger fires in this session and no stored generated
 * column can change an indexed one behind the SET list, an index insert is
 * a new row. Anything else may be an UPDATE's version: the caller reads the
 * row to tell. A wrong "new row" registers the row's position once more
 * (a late write at worst), never skips one.
 */
bool
PositionsInsertMayBeUpdate(Relation heap)
{
	TriggerDesc *trigdesc = heap->trigdesc;
	TupleConstr *constr = RelationGetDescr(heap)->constr;

	if (UpdateFired || trigdesc == NULL || (constr != NULL && constr->has_generated_stored))
		return true;
	for (int i = 0; i < trigdesc->numtriggers; i++)
	{
		const Trigger *t = &trigdesc->triggers[i];

		if (TRIGGER_FOR_ROW(t->tgtype) && TRIGGER_FOR_BEFORE(t->tgtype) &&
			TRIGGER_FOR_UPDATE(t->tgtype) && t->tgqual == NULL &&
			strcmp(t->tgname, "xip83_register_position") == 0)
			return !FiresInSession(t->tgenabled);
	}
	return true;
}

void
PositionsIndexInsert(Relation heap, Relation index, Datum *values, bool *isnull)
{
	const RowShape *shape;
	const bytea *topic = NULL;

	if (Reg == NULL || (shape = IndexShapeOf(heap, index)) == NULL)
		return;
	if (shape->topic != 0 && !isnull[shape->topic - 1])
		topic = DatumGetByteaPP(values[shape->topic - 1]);
	RegisterRow(&shape->target,
				shape->node != 0 ? (int32) IndexPosition(values, isnull, shape->node, true) : 0,
				IndexPosition(values, isnull, shape->position, false),
				topic, true, true);
}

/* Notes that a kind of a feed starts over when this transaction commits. */
static void
AddReset(RegistryDb *db, PositionKind kind)
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

/*
 * reset_positions(): AFTER TRUNCATE trigger of the xip83 tables and tracked
 * tables. When the TRUNCATE commits, the table's lines start over at 0
 * (TRUNCATE ... RESTART IDENTITY reuses ids, so live consumers must reset
 * their cursors too).
 */
Datum
reset_positions(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	TriggerTarget target;

	if (!CALLED_AS_TRIGGER(fcinfo) || !TRIGGER_FIRED_BY_TRUNCATE(trigdata->tg_event))
		TriggerMisuse("reset_positions", "must be an AFTER TRUNCATE trigger");
	(void) TriggerTargetOf(trigdata, "reset_positions", &target);
	if (Reg != NULL)
		AddReset(RegistryAttachFeed(target.feed), target.kind);
	return PointerGetDatum(NULL);
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
			RecentResetKind(Resets[i].db, Resets[i].kind);
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
	NotifierEnsured = false;
	NTouched = 0;
	NCounted = 0;
	NLates = 0;
	if (any && registry_wake != NULL)
		registry_wake();
}

/* Raises highs at commit, clears pins at every end, refuses PREPARE. */
static void
PositionsXactCallback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_PARALLEL_COMMIT ||
		event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT ||
		event == XACT_EVENT_PREPARE)
		UpdateFired = false;
	if (!LocalInit)
		return;
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
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			NResets = 0;
			ClearPins();
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
	/* an id drawn there is no longer registered: a row that names it registers it again */
	LastDrawn[KIND_GROUP] = LastDrawn[KIND_WELCOME] = 0;
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
PositionsSubXactCallback(SubXactEvent event, SubTransactionId mySubid,
						 SubTransactionId parentSubid, void *arg)
{
	int			level = GetCurrentTransactionNestLevel();
	int			kept = 0;

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
	if (get_rel_relkind(objectId) != RELKIND_RELATION &&
		get_rel_relkind(objectId) != RELKIND_PARTITIONED_TABLE)
		return;
	TrackedDropped(objectId);
	db = RegistryLookupMine();
	if (db == NULL)
		return;
	for (int k = 0; k < 3; k++)
		if (objectId == RegistryOwnRelation(RegistryKindTable[k]))
			AddReset(db, (PositionKind) k);
}

void
PositionsInstallHooks(void)
{
	CacheRegisterRelcacheCallback(ForgetOwnTables, (Datum) 0);
	RegisterXactCallback(PositionsXactCallback, NULL);
	RegisterSubXactCallback(PositionsSubXactCallback, NULL);
	prev_object_access_hook = object_access_hook;
	object_access_hook = PositionsObjectAccess;
}
