/*
 * track.c: what xip83.track / xip83.untrack do (their SQL functions are in
 * src/sql/writes.c, tracked_status in src/sql/horizons.c) and the table
 * they keep, xip83.tracked_sources (feed.h has the model).
 *
 * What track changes on a node's table, and untrack restores:
 *   - v3 (group, welcome): the id column's default `nextval('seq')` becomes
 *     `xip83.next_id('<table>')`, which pins the id's line before drawing
 *     from that same sequence (positions.c), so an id is registered before
 *     any reader can see it;
 *   - an index `<table>_xip83_track` of the access method xip83_track
 *     (track_am.c) on the position columns and the topic, whose insert
 *     callback registers every new row (on the blob table too, positions
 *     only); PostgreSQL gives every partition one, including partitions
 *     created or attached later;
 *   - a BEFORE UPDATE OF <those columns> row trigger `xip83_register_position`
 *     (on the blob table too), ENABLE ALWAYS, cloned to every partition;
 *   - an AFTER TRUNCATE statement trigger `xip83_reset_positions`.
 * No row is rewritten; the DDL takes each table's lock for a moment (SET
 * DEFAULT takes ACCESS EXCLUSIVE, which also waits out every writer that
 * started before: their unregistered writes commit before the feed loads).
 *
 * Who may do it. Every tracked table in use holds one of the server's
 * xip83.max_tracked_tables registry entries, which all databases share, so
 * tracking is granted, not owned: EXECUTE on xip83.track is revoked from
 * PUBLIC and given by an administrator to the roles that own node tables; the
 * caller must also own the tables, and the DDL runs as the caller. Temporary
 * tables are refused: no other session can read one, so it can never be a
 * node's feed. untrack stays open to the tables' owner: it only gives an
 * entry back. The row of xip83.tracked_sources is written here directly (no
 * role has INSERT on it): it is the only thing that makes the triggers and
 * the index act on a table, so a role that attaches them to a table of its
 * own changes nothing.
 *
 * Entries come back when the tracking ends: untrack, or a drop of the table
 * or its blob table (DROP TABLE, DROP SCHEMA ... CASCADE, DROP OWNED), frees
 * the feed's entry as the transaction commits (RegistryReleaseAtCommit), not
 * a minute later.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/partition.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/primnodes.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "base/base.h"
#include "core/core.h"
#include "rel/rel.h"
#include "feed_internal.h"


/* Columns of xip83.tracked_sources. */
#define TS_SOURCE		1
#define TS_KIND			2
#define TS_BLOB			3
#define TS_SEQUENCE		4
#define TS_TRACKED_AT	5
#define TS_NATTS		5

static const char *const KindName[3] = {"group", "welcome", "envelope"};

static char *QualifiedName(Oid relid);

/* ------------------------------------------------------------ the table */

static Oid
CatalogRelid(void)
{
	Oid			nsp = get_namespace_oid("xip83", true);

	return OidIsValid(nsp) ? get_relname_relid("tracked_sources", nsp) : InvalidOid;
}

/* A row of the table as a TrackedSource. */
static void
RowToTracked(HeapTuple tuple, TupleDesc desc, TrackedSource *out)
{
	bool		isnull;
	char	   *kind;

	out->source = DatumGetObjectId(heap_getattr(tuple, TS_SOURCE, desc, &isnull));
	kind = TextDatumGetCString(heap_getattr(tuple, TS_KIND, desc, &isnull));
	out->kind = strcmp(kind, "group") == 0 ? KIND_GROUP
		: strcmp(kind, "welcome") == 0 ? KIND_WELCOME : KIND_ENVELOPE;
	out->blob = DatumGetObjectId(heap_getattr(tuple, TS_BLOB, desc, &isnull));
	if (isnull)
		out->blob = InvalidOid;
	out->sequence = DatumGetObjectId(heap_getattr(tuple, TS_SEQUENCE, desc, &isnull));
	if (isnull)
		out->sequence = InvalidOid;
}

/*
 * Scans the table for a row naming relid as its source (or, with any_role,
 * as its blob table too). With delete, the row found is deleted.
 */
static bool
CatalogFind(Oid relid, bool any_role, bool delete, TrackedSource *out)
{
	Oid			catalog = CatalogRelid();
	Relation	rel;
	TableScanDesc scan;
	HeapTuple	tuple;
	Snapshot	snapshot;
	bool		found = false;

	if (!OidIsValid(catalog))
		return false;
	rel = table_open(catalog, delete ? RowExclusiveLock : AccessShareLock);
	snapshot = RegisterSnapshot(GetLatestSnapshot());
	scan = table_beginscan(rel, snapshot, 0, NULL);
	while ((tuple = heap_getnext(scan, ForwardScanDirection)) != NULL)
	{
		TrackedSource t;

		RowToTracked(tuple, RelationGetDescr(rel), &t);
		if (t.source != relid && !(any_role && t.blob == relid))
			continue;
		*out = t;
		found = true;
		if (delete)
			simple_heap_delete(rel, &tuple->t_self);
		break;
	}
	table_endscan(scan);
	UnregisterSnapshot(snapshot);
	table_close(rel, NoLock);
	if (delete && found)
		CommandCounterIncrement();
	return found;
}

static void
CatalogInsert(const TrackedSource *t)
{
	Relation	rel = table_open(CatalogRelid(), RowExclusiveLock);
	Datum		values[TS_NATTS];
	bool		nulls[TS_NATTS] = {false};

	values[TS_SOURCE - 1] = ObjectIdGetDatum(t->source);
	values[TS_KIND - 1] = CStringGetTextDatum(KindName[t->kind]);
	values[TS_BLOB - 1] = ObjectIdGetDatum(t->blob);
	nulls[TS_BLOB - 1] = !OidIsValid(t->blob);
	values[TS_SEQUENCE - 1] = ObjectIdGetDatum(t->sequence);
	nulls[TS_SEQUENCE - 1] = !OidIsValid(t->sequence);
	values[TS_TRACKED_AT - 1] = TimestampTzGetDatum(GetCurrentTransactionStartTimestamp());
	simple_heap_insert(rel, heap_form_tuple(RelationGetDescr(rel), values, nulls));
	table_close(rel, NoLock);
	CommandCounterIncrement();
}

/* ------------------------------------------------------------ the cache */

typedef struct CacheEntry
{
	Oid			relid;			/* key */
	bool		tracked;
	TrackedSource t;
} CacheEntry;

static HTAB *Cache = NULL;

static void
TrackInvalidate(Datum arg, Oid relid)
{
	if (Cache != NULL)
	{
		hash_destroy(Cache);
		Cache = NULL;
	}
}

void
TrackInstallHooks(void)
{
	CacheRegisterRelcacheCallback(TrackInvalidate, (Datum) 0);
	TrackDdlInstallHook();
}

/* The row covering relid, looked up through its partition ancestors. */
static bool
LookUp(Oid relid, TrackedSource *out)
{
	List	   *ancestors;
	ListCell   *lc;

	if (CatalogFind(relid, true, false, out))
		return true;
	if (!get_rel_relispartition(relid))
		return false;
	ancestors = get_partition_ancestors(relid);
	foreach(lc, ancestors)
		if (CatalogFind(lfirst_oid(lc), true, false, out))
			return true;
	return false;
}

bool
TrackedFind(Oid relid, TrackedSource *out)
{
	CacheEntry *e;
	bool		found;

	if (!OidIsValid(relid))
		return false;
	if (Cache == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(CacheEntry);
		ctl.hcxt = TopMemoryContext;
		Cache = hash_create("xip83 tracked tables", 16, &ctl,
							HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	e = hash_search(Cache, &relid, HASH_FIND, NULL);
	if (e == NULL)
	{
		TrackedSource t;
		bool		tracked = LookUp(relid, &t);

		/* the lookup may have processed invalidations that dropped the cache */
		if (Cache == NULL)
		{
			if (tracked)
				*out = t;
			return tracked;
		}
		e = hash_search(Cache, &relid, HASH_ENTER, &found);
		e->tracked = tracked;
		e->t = t;
	}
	if (e->tracked)
		*out = e->t;
	return e->tracked;
}

/* Every relcache entry of a table and its partitions is rebuilt, here and elsewhere. */
static void
InvalidateTree(Oid relid)
{
	List	   *all;
	ListCell   *lc;

	if (!OidIsValid(relid))
		return;
	all = find_all_inheritors(relid, NoLock, NULL);
	foreach(lc, all)
		CacheInvalidateRelcacheByRelid(lfirst_oid(lc));
}

/*
 * Refuses to drop the extension while a table is tracked: the drop would take
 * the tracked table's id default (it calls xip83.next_id), its xip83_track
 * index and its triggers along, CASCADE or not once dependencies are
 * followed, and the node's next insert would fail on a null id.
 *
 * Called where every way of dropping the extension passes: the drop of this
 * table, a member (DROP EXTENSION with or without CASCADE, DROP SCHEMA xip83
 * CASCADE, DROP OWNED BY ... CASCADE), seen by the object-access hook before
 * any object of the drop is gone for good: an error undoes the whole drop.
 * An event trigger would not do: it would be a member of the extension it
 * guards and does not fire in single-user mode. Also called before a plain
 * DROP EXTENSION, so that it gets this error rather than PostgreSQL's, whose
 * hint is to add CASCADE.
 */
void
TrackRefuseExtensionDrop(void)
{
	Oid			catalog = CatalogRelid();
	Relation	rel;
	TableScanDesc scan;
	HeapTuple	tuple;
	Snapshot	snapshot;
	int			n = 0;
	char	   *first = NULL;

	if (!OidIsValid(catalog))
		return;
	rel = table_open(catalog, AccessShareLock);
	snapshot = RegisterSnapshot(GetLatestSnapshot());
	scan = table_beginscan(rel, snapshot, 0, NULL);
	while ((tuple = heap_getnext(scan, ForwardScanDirection)) != NULL)
	{
		TrackedSource t;

		RowToTracked(tuple, RelationGetDescr(rel), &t);
		if (first == NULL && get_rel_name(t.source) != NULL)
			first = QualifiedName(t.source);
		n++;
	}
	table_endscan(scan);
	UnregisterSnapshot(snapshot);
	table_close(rel, AccessShareLock);
	if (n == 0)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
			 errmsg_plural("cannot drop extension xip83 while %d table is tracked",
						   "cannot drop extension xip83 while %d tables are tracked",
						   n, n),
			 errdetail("The drop would remove the id default, index and triggers xip83.track put on %s, and the node's next insert would fail.",
					   first ? first : "the tracked tables"),
			 errhint("Stop tracking first: SELECT xip83.untrack(source) FROM xip83.tracked_sources;")));
}

void
TrackedDropped(Oid relid)
{
	TrackedSource t;

	if (!OidIsValid(CatalogRelid()))
		return;
	if (CatalogRelid() == relid)
	{
		TrackRefuseExtensionDrop();
		return;
	}
	if (!CatalogFind(relid, true, true, &t))
		return;
	RegistryReleaseAtCommit(t.source);
	CacheInvalidateRelcacheByRelid(t.source);
}

/* ------------------------------------------------------------ track */

static PositionKind
ParseKind(text *kind)
{
	char	   *k = text_to_cstring(kind);

	for (int i = 0; i < 3; i++)
		if (strcmp(k, KindName[i]) == 0)
			return (PositionKind) i;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("kind must be group, welcome or envelope, not \"%s\"", k)));
	return KIND_GROUP;			/* keep compiler quiet */
}

static char *
QualifiedName(Oid relid)
{
	return quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
									  get_rel_name(relid));
}

static void
RequireOwner(Oid relid)
{
	if (!xip83_class_ownercheck(relid, GetUserId()))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be owner of table %s", QualifiedName(relid)),
				 errdetail("Tracking a table changes its id default and adds triggers to it.")));
}

/* A node's feed is read by other sessions: a temporary table cannot be one. */
static void
RequireShared(Oid relid)
{
	if (get_rel_persistence(relid) == RELPERSISTENCE_TEMP)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot track temporary table %s", quote_identifier(get_rel_name(relid))),
				 errdetail("Only the session that created a temporary table can read it, so it cannot be a node's feed.")));
}

/* Whether a table's primary key is (id), or (originator_node_id, originator_sequence_id). */
static bool
KeyLeadsWith(Relation rel, PositionKind kind)
{
	Oid			pk = xip83_primary_key_index(rel);
	Relation	index;
	bool		ok;
	Oid			relid = RelationGetRelid(rel);

	if (!OidIsValid(pk))
		return false;
	index = index_open(pk, AccessShareLock);
	if (kind == KIND_ENVELOPE)
		ok = index->rd_index->indnkeyatts == 2 &&
			index->rd_index->indkey.values[0] == get_attnum(relid, "originator_node_id") &&
			index->rd_index->indkey.values[1] == get_attnum(relid, "originator_sequence_id");
	else
		ok = index->rd_index->indnkeyatts == 1 &&
			index->rd_index->indkey.values[0] == get_attnum(relid, "id");
	index_close(index, AccessShareLock);
	return ok;
}

/* Every leaf has a primary key leading with the position columns: live fetch and loading read by it. */
static void
RequireKeys(Oid relid, PositionKind kind)
{
	List	   *all = find_all_inheritors(relid, AccessShareLock, NULL);
	ListCell   *lc;

	foreach(lc, all)
	{
		Relation	rel;
		bool		has_pk;

		if (get_rel_relkind(lfirst_oid(lc)) != RELKIND_RELATION)
			continue;
		rel = table_open(lfirst_oid(lc), AccessShareLock);
		has_pk = KeyLeadsWith(rel, kind);
		table_close(rel, AccessShareLock);
		if (!has_pk)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("table %s has no primary key on its positions", QualifiedName(lfirst_oid(lc))),
					 errhint("Live fetch reads a tracked table by its primary key: (id) for v3 tables, (originator_node_id, originator_sequence_id) for envelopes.")));
	}
}

/* The same layout checks (and hints) as the wave scans make, and the primary key. */
static void
RequireLayout(Oid relid, const SourceSpec *spec, PositionKind kind)
{
	Source	   *s = SourceOpen(relid, spec);

	SourceClose(s);
	RequireKeys(relid, kind);
}

/*
 * The sequence of a v3 table's id default, which must be a plain
 * nextval('sequence') (a bigserial column).
 */
static Oid
IdSequence(Oid relid)
{
	Relation	rel = table_open(relid, AccessShareLock);
	AttrNumber	attnum = get_attnum(relid, "id");
	TupleConstr *constr = RelationGetDescr(rel)->constr;
	Oid			seq = InvalidOid;

	for (int i = 0; constr != NULL && i < constr->num_defval; i++)
	{
		Node	   *expr;

		if (constr->defval[i].adnum != attnum)
			continue;
		expr = stringToNode(constr->defval[i].adbin);
		if (IsA(expr, FuncExpr) && ((FuncExpr *) expr)->funcid == F_NEXTVAL &&
			list_length(((FuncExpr *) expr)->args) == 1 &&
			IsA(linitial(((FuncExpr *) expr)->args), Const))
		{
			Const	   *c = linitial(((FuncExpr *) expr)->args);

			if (!c->constisnull && c->consttype == REGCLASSOID)
				seq = DatumGetObjectId(c->constvalue);
		}
	}
	table_close(rel, AccessShareLock);
	if (!OidIsValid(seq))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the id default of %s is not nextval() of a sequence", QualifiedName(relid)),
				 errdetail("track replaces that default with xip83.next_id(), which draws from the same sequence after registering the id."),
				 errhint("Give the column a bigserial default: ALTER TABLE ... ALTER COLUMN id SET DEFAULT nextval('a_sequence').")));
	return seq;
}

static void
Run(const char *sql)
{
	if (SPI_execute(sql, false, 0) < 0)
		elog(ERROR, "xip83: could not run: %s", sql);
}

/*
 * The columns of a kind's positions and topic (a blob table has no topic):
 * the xip83_track index's, in this order, and those whose UPDATE the trigger
 * follows.
 */
static const char *const *
IndexColumnList(PositionKind kind, bool blob)
{
	static const char *const group[] = {"id", "group_id", NULL};
	static const char *const welcome[] = {"id", "installation_key", NULL};
	static const char *const meta[] = {"originator_node_id", "originator_sequence_id", "topic", NULL};
	static const char *const blobs[] = {"originator_node_id", "originator_sequence_id", NULL};

	if (kind == KIND_GROUP)
		return group;
	if (kind == KIND_WELCOME)
		return welcome;
	return blob ? blobs : meta;
}

/* The same, as SQL: "a, b, c". */
static const char *
TrackIndexColumns(PositionKind kind, bool blob)
{
	const char *const *cols = IndexColumnList(kind, blob);
	char	   *sql = pstrdup(cols[0]);

	for (int i = 1; cols[i] != NULL; i++)
		sql = psprintf("%s, %s", sql, cols[i]);
	return sql;
}

/* Whether relid is root or a partition of it, at any depth. */
static bool
CoveredBy(Oid relid, Oid root)
{
	return relid == root ||
		(get_rel_relispartition(relid) && list_member_oid(get_partition_ancestors(relid), root));
}
/* A relation's access method, from its pg_class row. */
static Oid
RelationAm(Oid relid)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	Oid			am;

	if (!HeapTupleIsValid(tup))
		return InvalidOid;
	am = ((Form_pg_class) GETSTRUCT(tup))->relam;
	ReleaseSysCache(tup);
	return am;
}

/* The access method of the tracking index, or InvalidOid before the extension has it. */
static Oid
TrackAmOid(void)
{
	return get_am_oid("xip83_track", true);
}

/*
 * What track adds to one table: the tracking index (inserts), the UPDATE
 * trigger and, but on a blob table, the TRUNCATE trigger.
 */
static void
AddTracking(Oid relid, PositionKind kind, bool blob)
{
	char	   *name = QualifiedName(relid);
	char	   *index = ChooseRelationName(get_rel_name(relid), NULL, "xip83_track",
										   get_rel_namespace(relid), false);

	Run(psprintf("CREATE INDEX %s ON %s USING xip83_track (%s)",
				 quote_identifier(index), name, TrackIndexColumns(kind, blob)));
	Run(psprintf("CREATE TRIGGER xip83_register_position BEFORE UPDATE OF %s ON %s "
				 "FOR EACH ROW EXECUTE FUNCTION xip83.register_position(%s)",
				 TrackIndexColumns(kind, blob), name, KindName[kind]));
	Run(psprintf("ALTER TABLE %s ENABLE ALWAYS TRIGGER xip83_register_position", name));
	if (blob)
		return;
	Run(psprintf("CREATE TRIGGER xip83_reset_positions AFTER TRUNCATE ON %s "
				 "FOR EACH STATEMENT EXECUTE FUNCTION xip83.reset_positions(%s)",
				 name, KindName[kind]));
	Run(psprintf("ALTER TABLE %s ENABLE ALWAYS TRIGGER xip83_reset_positions", name));
}

/* What untrack drops from one table: its triggers and tracking indexes. */
static void
DropTracking(Oid relid, bool blob)
{
	Relation	rel;
	List	   *indexes;
	ListCell   *lc;
	Oid			am = TrackAmOid();

	if (get_rel_name(relid) == NULL)
		return;
	Run(psprintf("DROP TRIGGER IF EXISTS xip83_register_position ON %s", QualifiedName(relid)));
	if (!blob)
		Run(psprintf("DROP TRIGGER IF EXISTS xip83_reset_positions ON %s", QualifiedName(relid)));
	rel = table_open(relid, AccessShareLock);
	indexes = RelationGetIndexList(rel);
	table_close(rel, AccessShareLock);
	foreach(lc, indexes)
		if (OidIsValid(am) && RelationAm(lfirst_oid(lc)) == am)
			Run(psprintf("DROP INDEX %s", QualifiedName(lfirst_oid(lc))));
}

/*
 * What an xip83_track index is for: a tracked table's (or a partition's of
 * one, created or attached later) when on exactly the columns track names;
 * inert on any other table (CREATE TABLE ... LIKE ... INCLUDING INDEXES
 * copies it, and attaching the copy as a partition brings it to life).
 */
TrackIndexUse
TrackIndexOf(Relation heap, Relation index, TrackedSource *t, bool *blob_side)
{
	Oid			relid = RelationGetRelid(heap);
	const char *const *cols;
	int			n = 0;
	bool		ok = true;

	if (!LookUp(relid, t))
		return TRACK_INDEX_INERT;
	*blob_side = OidIsValid(t->blob) && !CoveredBy(relid, t->source);
	cols = IndexColumnList(t->kind, *blob_side);
	for (; cols[n] != NULL; n++)
		ok &= n < IndexRelationGetNumberOfKeyAttributes(index) &&
			index->rd_index->indkey.values[n] == get_attnum(relid, cols[n]);
	if (!ok || n != IndexRelationGetNumberOfAttributes(index) ||
		!heap_attisnull(index->rd_indextuple, Anum_pg_index_indpred, NULL) ||
		!heap_attisnull(index->rd_indextuple, Anum_pg_index_indexprs, NULL))
		return TRACK_INDEX_MISMATCH;
	return TRACK_INDEX_LIVE;
}

/* The index of a leaf that registers its inserts, or InvalidOid (none, or the leaf is not tracked). */
Oid
TrackLiveIndex(Relation heap)
{
	List	   *indexes = RelationGetIndexList(heap);
	ListCell   *lc;
	Oid			am = TrackAmOid();

	foreach(lc, indexes)
	{
		Relation	index;
		TrackedSource t;
		bool		blob_side;
		bool		live;

		if (!OidIsValid(am) || RelationAm(lfirst_oid(lc)) != am)
			continue;
		index = index_open(lfirst_oid(lc), AccessShareLock);
		live = TrackIndexOf(heap, index, &t, &blob_side) == TRACK_INDEX_LIVE;
		index_close(index, AccessShareLock);
		if (live)
			return lfirst_oid(lc);
	}
	return InvalidOid;
}

/* Whether column is one of the positions or the topic the tracking of relid follows. */
bool
TrackedColumn(Oid relid, const char *column)
{
	TrackedSource t;
	const char *const *cols;

	if (!TrackedFind(relid, &t))
		return false;
	/* a blob table's list is the meta table's without the topic, which it lacks */
	cols = IndexColumnList(t.kind, false);
	for (int i = 0; cols[i] != NULL; i++)
		if (strcmp(cols[i], column) == 0)
			return true;
	return false;
}

/* Refuses to build an xip83_track index a tracked table would misread. */
void
TrackCheckIndex(Relation heap, Relation index)
{
	TrackedSource t;
	bool		blob_side;

	if (TrackIndexOf(heap, index, &t, &blob_side) == TRACK_INDEX_MISMATCH)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("an xip83_track index of %s must be on (%s) alone",
						QualifiedName(RelationGetRelid(heap)), TrackIndexColumns(t.kind, blob_side)),
				 errdetail("The table is tracked: xip83.track made its index, which registers its inserts.")));
}

/*
 * xip83.track(source, kind, blob_source): checks the tables and the caller,
 * then makes a node's table a feed of its own (see the header of this file).
 */
void
TrackTable(Oid source, text *kind, Oid blob)
{
	TrackedSource t;
	TrackedSource old;

	RegistryRequirePreload();
	t.source = source;
	t.kind = ParseKind(kind);
	t.blob = blob;
	t.sequence = InvalidOid;
	if (get_rel_name(t.source) == NULL || (OidIsValid(t.blob) && get_rel_name(t.blob) == NULL))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist",
						get_rel_name(t.source) == NULL ? t.source : t.blob)));
	if (OidIsValid(t.blob) && t.kind != KIND_ENVELOPE)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("blob_source is for envelopes only")));
	if (t.blob == t.source)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("blob_source must be another table than source")));
	for (int k = 0; k < 3; k++)
		if (t.source == SourceOwnRelation(RegistryKindTable[k]) ||
			t.blob == SourceOwnRelation(RegistryKindTable[k]))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("xip83.%s is xip83's own table: its writes are followed already",
							RegistryKindTable[k])));
	RequireOwner(t.source);
	if (OidIsValid(t.blob))
		RequireOwner(t.blob);
	if (TrackedFind(t.source, &old) || (OidIsValid(t.blob) && TrackedFind(t.blob, &old)))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("table %s is tracked already, as part of %s",
						QualifiedName(OidIsValid(t.blob) && old.source != t.source ? t.blob : t.source),
						QualifiedName(old.source)),
				 errhint("Run xip83.untrack(%s) first to track it differently.",
						 quote_literal_cstr(QualifiedName(old.source)))));
	if (get_rel_relispartition(t.source))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("table %s is a partition", QualifiedName(t.source)),
				 errhint("Track the partitioned table: every partition follows.")));
	RequireShared(t.source);
	if (OidIsValid(t.blob))
		RequireShared(t.blob);

	if (t.kind == KIND_ENVELOPE)
	{
		RequireLayout(t.source, WaveD14nSpecs[OidIsValid(t.blob) ? 1 : 0], t.kind);
		if (OidIsValid(t.blob))
			RequireLayout(t.blob, WaveD14nSpecs[2], t.kind);
	}
	else
	{
		if (get_rel_relkind(t.source) != RELKIND_RELATION)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("a tracked v3 table must be a plain table")));
		RequireLayout(t.source, t.kind == KIND_GROUP ? &WaveV3GroupSource : &WaveV3WelcomeSource,
					  t.kind);
		t.sequence = IdSequence(t.source);
	}

	SPI_connect();
	if (t.kind != KIND_ENVELOPE)
		Run(psprintf("ALTER TABLE %s ALTER COLUMN id SET DEFAULT xip83.next_id(%s::regclass)",
					 QualifiedName(t.source), quote_literal_cstr(QualifiedName(t.source))));
	/* the row first: building the tracking index checks the table is tracked */
	CatalogInsert(&t);
	InvalidateTree(t.source);
	InvalidateTree(t.blob);
	AddTracking(t.source, t.kind, false);
	if (OidIsValid(t.blob))
		AddTracking(t.blob, t.kind, true);
	SPI_finish();

	RegistryForgetFeed(t.source);
}

/* xip83.untrack(source regclass): restores what track changed. */
void
UntrackTable(Oid relid)
{
	TrackedSource t;

	RegistryRequirePreload();
	if (!CatalogFind(relid, false, false, &t))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("table %s is not tracked",
						get_rel_name(relid) ? QualifiedName(relid) : psprintf("%u", relid))));
	RequireOwner(t.source);
	if (OidIsValid(t.blob))
		RequireOwner(t.blob);

	/* the row first: a tracking index in use may not be dropped (track_ddl.c) */
	(void) CatalogFind(relid, false, true, &t);
	InvalidateTree(t.source);
	InvalidateTree(t.blob);
	CommandCounterIncrement();
	SPI_connect();
	if (t.kind != KIND_ENVELOPE && OidIsValid(t.sequence) && get_rel_name(t.sequence) != NULL)
		Run(psprintf("ALTER TABLE %s ALTER COLUMN id SET DEFAULT nextval(%s::regclass)",
					 QualifiedName(t.source), quote_literal_cstr(QualifiedName(t.sequence))));
	DropTracking(t.source, false);
	if (OidIsValid(t.blob))
		DropTracking(t.blob, true);
	SPI_finish();

	RegistryReleaseAtCommit(t.source);
}

/* ------------------------------------------------------------ status */

