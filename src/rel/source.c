/*
 * source.c: resolving a `source` relation into leaves and indexes (rel.h).
 *
 * Invariants: the privilege and row-level-security checks are made on the
 * relation the caller named, exactly where SQL would make them (a query on a
 * partitioned table checks the parent, never its partitions), USAGE on its
 * schema included, since a relation given by OID is never looked up by name.
 * Every leaf that SourceOpen returns has passed the column and index checks; a
 * Source is never half built (any failure raises an ERROR and the resource
 * owner releases what was opened).
 *
 * Locking: AccessShareLock on the named relation, its partitions and their
 * indexes, taken in parent-to-leaf order as the executor does and kept until
 * the end of the transaction (SourceClose closes with NoLock).
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/index.h"
#include "catalog/namespace.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "partitioning/partbounds.h"
#include "partitioning/partdesc.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/partcache.h"
#include "utils/rls.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

#include "base/base.h"
#include "rel.h"

/* What the bounds of the partitions above a leaf allow it to hold. */
typedef struct LeafBounds
{
	int64		position_lo;
	int64		position_hi;
	int			noriginators;	/* -1: any */
	int32	   *originators;
} LeafBounds;

/* The leaves found so far, grown as partitions are walked. */
typedef struct LeafList
{
	int			n;
	int			cap;
	SourceLeaf *leaves;
} LeafList;

/* The quoted, schema-qualified name of a relation. */
static char *
QualifiedName(Relation rel)
{
	return quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)),
									  RelationGetRelationName(rel));
}

/* "(a, b)" from a list of column names, quoted as SQL needs them. */
static char *
ColumnList(const char *const *columns, int n)
{
	StringInfoData buf;

	initStringInfo(&buf);
	appendStringInfoChar(&buf, '(');
	for (int i = 0; i < n; i++)
		appendStringInfo(&buf, "%s%s", i > 0 ? ", " : "", quote_identifier(columns[i]));
	appendStringInfoChar(&buf, ')');
	return buf.data;
}

/*
 * Refuses callers that SQL would refuse: no USAGE on the relation's schema (a
 * relation given by OID skips the name lookup that checks it), no SELECT, or
 * row-level security on.
 */
void
SourceRequireReadable(Oid relid, const char *relname)
{
	Oid			nspid = get_rel_namespace(relid);

	if (xip83_namespace_aclcheck(nspid, GetUserId(), ACL_USAGE) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for schema %s", get_namespace_name(nspid)),
				 errdetail("Reading table %s needs USAGE on its schema, as a query naming it would.",
						   relname)));
	if (pg_class_aclcheck(relid, GetUserId(), ACL_SELECT) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for table %s", relname),
				 errdetail("Reading it directly through its indexes checks what SELECT would.")));
	if (check_enable_rls(relid, InvalidOid, false) == RLS_ENABLED)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("cannot scan table %s: row-level security is enabled", relname),
				 errdetail("Index scans of this extension cannot apply row-level security policies."),
				 errhint("Scan as a role with BYPASSRLS or as the table owner, or disable row-level security on the table.")));
}

/* The attribute number of a named column of rel, or InvalidAttrNumber. */
static AttrNumber
ColumnAttno(Relation rel, const char *name)
{
	return get_attnum(RelationGetRelid(rel), name);
}

/* Checks that a leaf has every required column with its exact type; maps them. */
static AttrNumber *
MapColumns(Relation leaf, const Source *source)
{
	const SourceSpec *spec = source->spec;
	AttrNumber *attnos = palloc(sizeof(AttrNumber) * spec->ncolumns);

	for (int i = 0; i < spec->ncolumns; i++)
	{
		AttrNumber	attno = ColumnAttno(leaf, spec->columns[i].name);
		Oid			type;

		if (attno == InvalidAttrNumber)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("column \"%s\" of relation %s does not exist",
							spec->columns[i].name, QualifiedName(leaf)),
					 errdetail("Argument \"%s\" must name a table with the layout of the extension's own table (extra columns are fine).",
							   spec->argname)));
		type = TupleDescAttr(RelationGetDescr(leaf), attno - 1)->atttypid;
		if (type != spec->columns[i].type)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("column \"%s\" of relation %s has type %s, expected %s",
							spec->columns[i].name, QualifiedName(leaf),
							format_type_be(type), format_type_be(spec->columns[i].type)),
					 errdetail("Argument \"%s\" must name a table with the layout of the extension's own table.",
							   spec->argname)));
		attnos[i] = attno;
	}
	return attnos;
}

/*
 * Whether index leads with the named columns, ascending, under the default
 * btree operator classes (so its order is the order SQL sorts by), and covers
 * every row (valid and not partial). A unique index must have exactly these
 * key columns, so that they identify a row.
 */
static bool
IndexLeadsWith(Relation heap, Relation index, const char *const *columns, int n, bool unique)
{
	Form_pg_index form = index->rd_index;

	if (index->rd_rel->relam != BTREE_AM_OID || !form->indisvalid || !form->indisready ||
		form->indnkeyatts < n ||
		(unique && (!form->indisunique || form->indnkeyatts != n)) ||
		!heap_attisnull(index->rd_indextuple, Anum_pg_index_indpred, NULL))
		return false;
	for (int i = 0; i < n; i++)
	{
		AttrNumber	attno = ColumnAttno(heap, columns[i]);
		TypeCacheEntry *typentry;

		if (attno == InvalidAttrNumber || form->indkey.values[i] != attno ||
			(index->rd_indoption[i] & INDOPTION_DESC) != 0)
			return false;
		/* the default btree opfamily, cached (GetDefaultOpClass scans pg_opclass) */
		typentry = lookup_type_cache(TupleDescAttr(RelationGetDescr(heap), attno - 1)->atttypid,
									 TYPECACHE_BTREE_OPFAMILY);
		if (!OidIsValid(typentry->btree_opf) || index->rd_opfamily[i] != typentry->btree_opf)
			return false;
	}
	return true;
}

/* Opens the first index of heap that leads with the columns, or returns NULL. */
static Relation
FindIndex(Relation heap, const char *const *columns, int n, bool unique)
{
	List	   *indexes = RelationGetIndexList(heap);
	ListCell   *lc;
	Relation	found = NULL;

	foreach(lc, indexes)
	{
		Relation	index = index_open(lfirst_oid(lc), AccessShareLock);

		if (IndexLeadsWith(heap, index, columns, n, unique))
		{
			found = index;
			break;
		}
		index_close(index, AccessShareLock);
	}
	list_free(indexes);
	return found;
}

/*
 * Narrows partition `part` of `desc`'s bounds by what its own partition bound
 * says, read from the bounds the relcache keeps parsed for the parent.
 * RANGE: indexes[j] names the partition whose upper bound is datums[j]; its
 * lower bound is datums[j - 1] (indexes[0] is always the gap below).
 * LIST: indexes[j] names the partition that accepts datums[j].
 */
static LeafBounds
ChildBounds(Relation parent, PartitionDesc desc, int part, const SourceSpec *spec,
			LeafBounds bounds)
{
	PartitionKey key = RelationGetPartitionKey(parent);
	PartitionBoundInfo info = desc->boundinfo;
	AttrNumber	keyattno;

	if (key->partnatts != 1 || info == NULL || part == info->default_index)
		return bounds;
	keyattno = key->partattrs[0];

	if (key->strategy == PARTITION_STRATEGY_RANGE && spec->position_column != NULL &&
		keyattno == ColumnAttno(parent, spec->position_column) &&
		key->parttypid[0] == INT8OID)
	{
		for (int j = 1; j < info->ndatums; j++)
		{
			if (info->indexes[j] != part)
				continue;
			if (info->kind[j - 1][0] == PARTITION_RANGE_DATUM_VALUE)
				bounds.position_lo = Max(bounds.position_lo,
										 DatumGetInt64(info->datums[j - 1][0]));
			if (info->kind[j][0] == PARTITION_RANGE_DATUM_VALUE)
				bounds.position_hi = Min(bounds.position_hi,
										 DatumGetInt64(info->datums[j][0]));
			break;
		}
	}
	else if (key->strategy == PARTITION_STRATEGY_LIST && spec->originator_column != NULL &&
			 keyattno == ColumnAttno(parent, spec->originator_column) &&
			 key->parttypid[0] == INT4OID && bounds.noriginators < 0)
	{
		bounds.originators = palloc(sizeof(int32) * Max(info->ndatums, 1));
		bounds.noriginators = 0;
		for (int j = 0; j < info->ndatums; j++)
			if (info->indexes[j] == part)
				bounds.originators[bounds.noriginators++] = DatumGetInt32(info->datums[j][0]);
	}
	return bounds;
}

/* Fails with the CREATE INDEX to run when a leaf has no usable scan index. */
static void
ReportMissingIndex(const Source *source, const RelationData *parent, Relation leaf)
{
	const SourceSpec *spec = source->spec;
	char	   *columns = ColumnList(spec->key_columns, spec->nkeys);

	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("relation %s has no btree index leading with %s",
					source->relname, columns),
			 leaf != parent ?
			 errdetail("Partition %s has none; wave scans read every partition through that index.",
					   QualifiedName(leaf)) :
			 errdetail("Wave scans read each topic through that index."),
			 errhint("Create it with: CREATE INDEX ON %s %s;", source->relname, columns)));
}

/* Appends one leaf: checks its columns, opens its indexes. */
static void
AddLeaf(Source *source, LeafList *list, Relation parent, Relation heap, LeafBounds bounds)
{
	const SourceSpec *spec = source->spec;
	SourceLeaf *leaf;

	if (list->n == list->cap)
	{
		list->cap = list->cap * 2;
		list->leaves = repalloc(list->leaves, sizeof(SourceLeaf) * list->cap);
	}
	leaf = &list->leaves[list->n];
	memset(leaf, 0, sizeof(SourceLeaf));
	leaf->leafno = list->n;
	leaf->heap = heap;
	leaf->attnos = MapColumns(heap, source);
	leaf->index = FindIndex(heap, spec->key_columns, spec->nkeys, false);
	if (leaf->index == NULL)
		ReportMissingIndex(source, parent, heap);
	if (spec->nwalk > 0)
		leaf->walk_index = FindIndex(heap, spec->walk_columns, spec->nwalk, true);
	leaf->position_lo = bounds.position_lo;
	leaf->position_hi = bounds.position_hi;
	leaf->noriginators = bounds.noriginators;
	leaf->originators = bounds.originators;
	list->n++;
}

/* Walks a relation down to its leaves, in partition-bound order. */
static void
AddLeaves(Source *source, LeafList *list, Relation root, Relation rel, LeafBounds bounds)
{
	check_stack_depth();
	CHECK_FOR_INTERRUPTS();

	if (rel->rd_rel->relkind == RELKIND_RELATION)
	{
		AddLeaf(source, list, root, rel, bounds);
		return;
	}
	if (rel->rd_rel->relkind != RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("cannot scan relation %s", QualifiedName(rel)),
				 errdetail("Argument \"%s\" must name a table or a partitioned table whose partitions are tables.",
						   source->spec->argname)));
	else
	{
		PartitionDesc desc = RelationGetPartitionDesc(rel, true);

		for (int i = 0; i < desc->nparts; i++)
		{
			Relation	child = table_open(desc->oids[i], AccessShareLock);

			AddLeaves(source, list, root, child,
					  ChildBounds(rel, desc, i, source->spec, bounds));
		}
		/* the parent itself holds no rows: only its leaves are scanned */
		if (rel != root)
			table_close(rel, NoLock);
	}
}

/*
 * The checks SQL would make before reading relid (existence, SELECT, row-level
 * security), without opening it; returns its name. A scan with nothing to
 * read makes these and no others (see rel.h).
 */
char *
SourceCheckReadable(Oid relid, const SourceSpec *spec)
{
	char	   *name = get_rel_name(relid);

	if (name == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid),
				 errdetail("Argument \"%s\" names no relation.", spec->argname)));
	SourceRequireReadable(relid, name);
	return name;
}

/* Resolves, checks and opens a source relation for a binding (see rel.h). */
Source *
SourceOpen(Oid relid, const SourceSpec *spec)
{
	Source	   *source = palloc0(sizeof(Source));
	LeafList	list;
	LeafBounds	bounds = {PG_INT64_MIN, PG_INT64_MAX, -1, NULL};
	Relation	rel;

	(void) SourceCheckReadable(relid, spec);
	rel = table_open(relid, AccessShareLock);
	source->relid = relid;
	source->relname = QualifiedName(rel);
	source->spec = spec;

	list.n = 0;
	list.cap = 4;
	list.leaves = palloc(sizeof(SourceLeaf) * list.cap);
	AddLeaves(source, &list, rel, rel, bounds);
	source->nleaves = list.n;
	source->leaves = list.leaves;
	if (rel->rd_rel->relkind != RELKIND_RELATION)
		table_close(rel, NoLock);
	return source;
}

/* Closes every leaf and index of a source; locks stay until transaction end. */
void
SourceClose(Source *source)
{
	for (int i = 0; i < source->nleaves; i++)
	{
		SourceLeaf *leaf = &source->leaves[i];

		if (leaf->walk_index != NULL)
			index_close(leaf->walk_index, NoLock);
		index_close(leaf->index, NoLock);
		table_close(leaf->heap, NoLock);
	}
	source->nleaves = 0;
}

/* Whether a leaf's LIST bounds allow rows of this originator. */
bool
SourceLeafMayHoldOriginator(const SourceLeaf *leaf, int32 originator)
{
	if (leaf->noriginators < 0)
		return true;
	for (int i = 0; i < leaf->noriginators; i++)
		if (leaf->originators[i] == originator)
			return true;
	return false;
}

/*
 * Opens a plain table and its primary key for a primary-key range read,
 * after the checks every read makes (USAGE on its schema, SELECT, row-level
 * security).
 */
void
SourceOpenKeyed(Oid relid, const char *relname, Relation *heap, Relation *pk)
{
	Oid			pkid;

	SourceRequireReadable(relid, relname);
	*heap = table_open(relid, AccessShareLock);
	pkid = xip83_primary_key_index(*heap);
	if (!OidIsValid(pkid))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("relation %s has no primary key", relname)));
	*pk = index_open(pkid, AccessShareLock);
}

/* The xip83 table of that name (42P01 when it does not exist). */
Oid
SourceOwnRelation(const char *name)
{
	Oid			nsp = get_namespace_oid("xip83", true);

	return OidIsValid(nsp) ? get_relname_relid(name, nsp) : InvalidOid;
}

Oid
SourceOwnTable(const char *table)
{
	Oid			relid = get_relname_relid(table, get_namespace_oid("xip83", false));

	if (!OidIsValid(relid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation \"xip83.%s\" does not exist", table)));
	return relid;
}
