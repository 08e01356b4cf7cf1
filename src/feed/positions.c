/*
 * positions.c: the write path above the registry (src/core/registry.h has
 * the model): the id defaults, the row trigger (and, for a tracked table's
 * inserts, the tracking index of track_am.c) that finds each written row's
 * feed, position and topic, notes the topic in the recent-writes table and
 * registers the position (src/core/pins.c) before the row can be seen, and
 * the TRUNCATE trigger. Their SQL functions are in src/sql/writes.c.
 *
 * Who may call what. The id defaults draw only from the sequence of the table
 * they were installed for, the triggers act only on xip83's own tables, and
 * every column is found by name and type: a caller cannot point them at a
 * table or sequence of its own. Nothing runs as another role: moving a
 * sequence up to an explicit id is a setval by the writer itself, which
 * needs UPDATE on the sequence. Every check that can refuse a caller runs
 * before the position is pinned: a pin outlives the error that follows it
 * until its (sub)transaction ends (src/core/pins.c gives back what an
 * aborted subtransaction pinned).
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

#include "base/base.h"
#include "core/core.h"
#include "rel/rel.h"
#include "feed_internal.h"

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

/* Moves a v3 table's sequence up to an explicit id above it, as the writer. */
static void
SequenceCatchUp(Oid seq, uint64 x)
{
	if (!OidIsValid(seq) || (int64) x <= FeedSequenceLastValue(seq))
		return;
	(void) DirectFunctionCall2(setval_oid, ObjectIdGetDatum(seq), Int64GetDatum((int64) x));
}

/* The line of a v3 kind. */
#define V3_LINE(kind) ((kind) == KIND_GROUP ? LINE_GROUP : LINE_WELCOME)

/*
 * Refuses a caller who may not write the table an id default serves, or draw
 * from its sequence, before anything is pinned or a feed's entry is taken: a
 * pin held by a call that then fails would hold the table's horizon until
 * the caller's transaction ends, and a role that cannot write a table must
 * not be able to hold its horizon at all. The table: INSERT or UPDATE on it
 * or on any of its columns (what lets a statement evaluate the default; an
 * INSERT that leaves id to its default needs no privilege on id itself). The
 * sequence: what nextval checks, in the same order.
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
 * Draws the next id of a kind from seq in a feed, registered before any
 * reader can see it; RequireDrawRights ran before.
 */
static int64
DrawId(RegistryDb *db, PositionKind kind, Oid seq)
{
	int64		id;

	PinsBeforeDraw(db, V3_LINE(kind));
	id = nextval_internal(seq, false);	/* its checks are done */
	if (id <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("message ids must be positive, the sequence returned " INT64_FORMAT, id)));
	PinsRegister(db, V3_LINE(kind), kind, 0, (uint64) id);
	LastDrawn[kind] = id;
	LastDrawnDb[kind] = db;
	return id;
}

int64
PositionsNextOwnId(PositionKind kind, Oid seq)
{
	static Oid	known[2];

	if (!OidIsValid(seq) || seq != known[kind])
	{
		known[kind] = SourceOwnRelation(KindSequence[kind]);
		if (seq != known[kind])
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%s draws only from xip83.%s",
							kind == KIND_GROUP ? "next_group_id" : "next_welcome_id",
							KindSequence[kind]),
					 errdetail("It is the id default of xip83.%s, and registers every id it hands out.",
							   RegistryKindTable[kind])));
	}
	if (!RegistryReady())
		return nextval_internal(seq, true);
	RequireDrawRights(kind == KIND_GROUP ? "next_group_id" : "next_welcome_id",
					  OwnTable(kind), seq);
	return DrawId(RegistryAttach(), kind, seq);
}

int64
PositionsNextTrackedId(Oid source)
{
	TrackedSource t;

	if (!TrackedFind(source, &t) || t.source != source ||
		t.kind == KIND_ENVELOPE)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table %s is not a tracked v3 table",
						DatumGetCString(DirectFunctionCall1(regclassout, ObjectIdGetDatum(source)))),
				 errdetail("xip83.next_id is the id default xip83.track installs; xip83.untrack restores the table's own.")));
	if (!RegistryReady())
		return nextval_internal(t.sequence, true);
	/* before the feed's entry is taken: a stranger takes none */
	RequireDrawRights("next_id", t.source, t.sequence);
	return DrawId(RegistryAttachFeed(t.source), t.kind, t.sequence);
}

/* Refuses a misused trigger function; never returns. */
static xip83_noreturn void
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
		OwnTables[kind] = SourceOwnRelation(RegistryKindTable[kind]);
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
				 errdetail("Column \"%s\" is null.", NameStr(TupleDescAttr(desc, attno - 1)->attname)),
				 errhint("Give every row its position: an id (or the table's id default), or an originator and sequence id.")));
	return TupleDescAttr(desc, attno - 1)->atttypid == INT4OID ? DatumGetInt32(d) : DatumGetInt64(d);
}

/*
 * Notes a row's topic and position in the kind's recent-writes table and
 * summary before the row can be seen, so that a wave never skips it
 * (src/core/recent.c, src/core/summary.c). topic NULL:
 * the row has none to note (a null topic, which the table refuses, or a blob
 * row, whose meta row notes it).
 */
static void
NoteRecent(RegistryDb *db, PositionKind kind, const bytea *topic, int32 node, uint64 position)
{
	RecentTable *table = RecentTableOf(db, kind);
	Summary    *summary = SummaryOf(db, kind);
	uint32		key;

	if (topic == NULL || (table == NULL && summary == NULL))
		return;					/* nothing to note, or neither kept */
	key = RecentKey(VARDATA_ANY(topic), VARSIZE_ANY_EXHDR(topic), node);
	/* whatever the summary's state: a pass reads only what was stored before it */
	if (summary != NULL)
		SummaryNote(summary, key, position);
	if (table != NULL)
		RecentNote(table, key, position);
}

/*
 * A write a standby's summary cannot find by position (a late write, a row
 * moved to another topic): WAL tells the standby before the row is written
 * (core.h, the summary). Fresh writes log nothing: the standby reads them by
 * position once a horizon (for envelopes, their originator's) passes them.
 */
static void
RaiseOnStandbys(RegistryDb *db, PositionKind kind, const bytea *topic, int32 node,
				uint64 position)
{
	if (topic == NULL || !XLogStandbyInfoActive())
		return;
	/* the record carries the writer's xid: a standby's pass waits for it */
	(void) GetCurrentTransactionId();
	RegistryLogSummaryRaise(db, kind,
							RecentKey(VARDATA_ANY(topic), VARSIZE_ANY_EXHDR(topic), node),
							position);
}

/*
 * Notes and registers one written row of a target: the write path of the
 * trigger and of the tracking index (track_am.c). sets_position false: an
 * UPDATE that moved the row to another topic, only noted; inserted: a new
 * row, whose id may be the one the default just drew. Returns whether the
 * write is late.
 */
static bool
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
		{
			RaiseOnStandbys(db, kind, topic, node, (uint64) position);
			return false;
		}
		/* sequence 0 (chain originators) is at or below every horizon: a late write */
		if (!PinsRegister(db, PinsOriginatorLine(db, node), kind, node, (uint64) position))
			return false;
		RaiseOnStandbys(db, kind, topic, node, (uint64) position);
		return true;
	}
	if (position <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_CHECK_VIOLATION),
				 errmsg("message ids must be positive")));
	db = RegistryAttachFeed(target->feed);
	NoteRecent(db, kind, topic, 0, (uint64) position);
	if (!sets_position)
	{
		RaiseOnStandbys(db, kind, topic, 0, (uint64) position);
		return false;
	}
	if (position == LastDrawn[kind] && LastDrawnDb[kind] == db && inserted)
	{
		LastDrawn[kind] = 0;	/* drawn by the default just now: registered */
		return false;
	}
	/* first: its privilege check must not fail with the position registered */
	SequenceCatchUp(OidIsValid(target->feed) ? target->sequence
					: SourceOwnRelation(KindSequence[kind]), (uint64) position);
	if (!PinsRegister(db, V3_LINE(kind), kind, 0, (uint64) position))
		return false;
	RaiseOnStandbys(db, kind, topic, 0, (uint64) position);
	return true;
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
HeapTuple
PositionsOnRow(TriggerData *trigdata)
{
	HeapTuple	tuple;
	TupleDesc	desc;
	const RowShape *shape;

	if (trigdata == NULL)
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
	if (!RegistryReady())
		return tuple;
	(void) RegisterRow(&shape->target,
				shape->node != 0 ? (int32) RowPosition(tuple, desc, shape->node) : 0,
				RowPosition(tuple, desc, shape->position),
				RowTopic(shape, tuple, desc),
				SetsPosition(trigdata, shape),
				TRIGGER_FIRED_BY_INSERT(trigdata->tg_event));
	return tuple;
}

/*
 * The target and column numbers of a tracked table's xip83_track index
 * (track.c gives it positions first, then the topic), cached as the
 * trigger's are; NULL when the index is inert (feed_internal.h).
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
				 errmsg("xip83 positions must not be null"),
				 errhint("Give every row its position: an id (or the table's id default), or an originator and sequence id.")));
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

bool
PositionsIndexInsert(Relation heap, Relation index, Datum *values, bool *isnull)
{
	const RowShape *shape;
	const bytea *topic = NULL;

	if (!RegistryReady() || (shape = IndexShapeOf(heap, index)) == NULL)
		return false;
	if (shape->topic != 0 && !isnull[shape->topic - 1])
		topic = DatumGetByteaPP(values[shape->topic - 1]);
	return RegisterRow(&shape->target,
				shape->node != 0 ? (int32) IndexPosition(values, isnull, shape->node, true) : 0,
				IndexPosition(values, isnull, shape->position, false),
				topic, true, true);
}

/*
 * reset_positions(): AFTER TRUNCATE trigger of the xip83 tables and tracked
 * tables. When the TRUNCATE commits, the table's lines start over at 0
 * (TRUNCATE ... RESTART IDENTITY reuses ids, so live consumers must reset
 * their cursors too).
 */
void
PositionsOnTruncate(TriggerData *trigdata)
{
	TriggerTarget target;

	if (trigdata == NULL || !TRIGGER_FIRED_BY_TRUNCATE(trigdata->tg_event))
		TriggerMisuse("reset_positions", "must be an AFTER TRUNCATE trigger");
	(void) TriggerTargetOf(trigdata, "reset_positions", &target);
	if (RegistryReady())
	{
		RegistryDb *db = RegistryAttachFeed(target.feed);

		PinsResetAtCommit(db, target.kind);
		/* positions start over below what a standby follows: before the commit */
		RegistryLogSummaryReset(db, target.kind, true);
	}
}

/* A transaction's end forgets whether register_position fired for an UPDATE. */
static void
PositionsXactCallback(XactEvent event, void *arg)
{
	bool		ends = event == XACT_EVENT_COMMIT || event == XACT_EVENT_PARALLEL_COMMIT ||
		event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT ||
		event == XACT_EVENT_PREPARE;

	if (ends)
		UpdateFired = false;
}

/* An id drawn in an aborted subtransaction is no longer registered: a row that names it registers it again. */
static void
PositionsSubXactCallback(SubXactEvent event, SubTransactionId mySubid,
						 SubTransactionId parentSubid, void *arg)
{
	if (event == SUBXACT_EVENT_ABORT_SUB)
		LastDrawn[KIND_GROUP] = LastDrawn[KIND_WELCOME] = 0;
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
	if (access != OAT_DROP || classId != RelationRelationId || subId != 0 || !RegistryReady())
		return;
	if (get_rel_relkind(objectId) != RELKIND_RELATION &&
		get_rel_relkind(objectId) != RELKIND_PARTITIONED_TABLE)
		return;
	TrackedDropped(objectId);
	db = RegistryLookupMine();
	if (db == NULL)
		return;
	for (int k = 0; k < 3; k++)
		if (objectId == SourceOwnRelation(RegistryKindTable[k]))
		{
			PinsResetAtCommit(db, (PositionKind) k);
			RegistryLogSummaryReset(db, (PositionKind) k, true);
		}
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
