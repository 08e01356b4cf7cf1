/*
 * wave_d14n_source.c: resolving an envelope `source` or `blob_source` relation
 * for the d14n scans: privileges, row-level security, the columns, the leaves
 * of a partitioned table with their bound ranges, and each leaf's btree index.
 *
 * Invariants: a source is opened only after the caller's SELECT privilege on
 * the root (table, or every column the scan reads) is checked and row-level
 * security is found not to apply, because the scans read indexes and heaps
 * directly and would otherwise get around what SQL enforces. The root and then
 * every partition below it are locked with AccessShareLock, parents before
 * children as the executor does, and stay locked to the end of the
 * transaction. Relations are closed, and scans ended, by EnvelopeSourceClose;
 * on ERROR the resource owner releases them. A partition detached
 * concurrently is left out as the executor would (omit_detached).
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/nbtree.h"
#include "access/table.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "miscadmin.h"
#include "partitioning/partbounds.h"
#include "partitioning/partdesc.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/partcache.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"

#include "wave_d14n.h"

/* An inclusive originator and sequence range a partition's bounds allow. */
typedef struct LeafRange
{
	int64		originator_lo;
	int64		originator_hi;
	int64		sequence_lo;
	int64		sequence_hi;
} LeafRange;

/* The columns a source may be asked for, with their required types. */
typedef struct EnvelopeColumn
{
	const char *name;
	Oid			type;
	int			need;			/* 0 = always */
} EnvelopeColumn;

static const EnvelopeColumn envelope_columns[] = {
	{"originator_node_id", INT4OID, 0},
	{"originator_sequence_id", INT8OID, 0},
	{"topic", BYTEAOID, ENVELOPE_NEED_META},
	{"gateway_time", TIMESTAMPOID, ENVELOPE_NEED_META},
	{"originator_envelope", BYTEAOID, ENVELOPE_NEED_BLOB},
};

#define NUM_ENVELOPE_COLUMNS lengthof(envelope_columns)

/* Returns the attribute number of a live column by name, or 0. */
static AttrNumber
FindColumn(Relation rel, const char *name, Oid *type)
{
	TupleDesc	desc = RelationGetDescr(rel);

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (!att->attisdropped && strcmp(NameStr(att->attname), name) == 0)
		{
			*type = att->atttypid;
			return att->attnum;
		}
	}
	return InvalidAttrNumber;
}

/* The index columns a scan needs, by name, in index order. */
static int
IndexColumnNames(EnvelopeIndexKind kind, const char **names)
{
	if (kind == ENVELOPE_TOPIC_INDEX)
	{
		names[0] = "topic";
		names[1] = "originator_node_id";
		names[2] = "originator_sequence_id";
		return 3;
	}
	names[0] = "originator_node_id";
	names[1] = "originator_sequence_id";
	return 2;
}

/* Fails with 42501 unless the caller may read what the scan reads, and RLS is off. */
static void
CheckSourcePrivileges(Relation root, const char *argname, int need)
{
	Oid			relid = RelationGetRelid(root);
	Oid			user = GetUserId();

	if (pg_class_aclcheck(relid, user, ACL_SELECT) != ACLCHECK_OK)
	{
		/* column privileges suffice when they cover every column read */
		for (int i = 0; i < (int) NUM_ENVELOPE_COLUMNS; i++)
		{
			const EnvelopeColumn *c = &envelope_columns[i];
			Oid			type;
			AttrNumber	att;

			if (c->need != 0 && (need & c->need) == 0)
				continue;
			att = FindColumn(root, c->name, &type);
			if (att == InvalidAttrNumber ||
				pg_attribute_aclcheck(relid, att, user, ACL_SELECT) != ACLCHECK_OK)
				ereport(ERROR,
						(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
						 errmsg("permission denied for table %s",
								RelationGetRelationName(root)),
						 errdetail("Argument \"%s\" needs SELECT on the table or on its column \"%s\".",
								   argname, c->name)));
		}
	}
	if (check_enable_rls(relid, InvalidOid, true) == RLS_ENABLED)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("row-level security is enabled on table %s",
						RelationGetRelationName(root)),
				 errdetail("The scan reads the table's indexes directly and cannot apply its policies."),
				 errhint("Call it as a role that bypasses row-level security, or scan a table without policies.")));
}

/* Fails unless the root is a table with every needed column of the right type. */
static void
CheckSourceColumns(Relation root, const char *argname, int need)
{
	char		kind = root->rd_rel->relkind;

	if (kind != RELKIND_RELATION && kind != RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("argument \"%s\" must be a table or a partitioned table",
						argname),
				 errdetail("\"%s\" is neither.", RelationGetRelationName(root))));
	for (int i = 0; i < (int) NUM_ENVELOPE_COLUMNS; i++)
	{
		const EnvelopeColumn *c = &envelope_columns[i];
		Oid			type;

		if (c->need != 0 && (need & c->need) == 0)
			continue;
		if (FindColumn(root, c->name, &type) == InvalidAttrNumber)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("table %s given as \"%s\" has no column \"%s\"",
							RelationGetRelationName(root), argname, c->name),
					 errhint("An envelope source needs the columns of xip83.envelopes it is read for.")));
		if (type != c->type)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("column \"%s\" of table %s has type %s, expected %s",
							c->name, RelationGetRelationName(root),
							format_type_be(type), format_type_be(c->type))));
	}
}

/* Returns a valid btree index of rel leading with the given columns, or NULL. */
static Relation
FindLeafIndex(Relation rel, const AttrNumber *atts, const Oid *types, int natts)
{
	List	   *indexes = RelationGetIndexList(rel);
	ListCell   *lc;

	foreach(lc, indexes)
	{
		Relation	index = index_open(lfirst_oid(lc), AccessShareLock);
		Form_pg_index form = index->rd_index;
		bool		fits = index->rd_rel->relam == BTREE_AM_OID &&
			form->indisvalid && form->indisready && form->indislive &&
			form->indnkeyatts >= natts &&
			heap_attisnull(index->rd_indextuple, Anum_pg_index_indpred, NULL) &&
			heap_attisnull(index->rd_indextuple, Anum_pg_index_indexprs, NULL);

		for (int i = 0; fits && i < natts; i++)
			fits = form->indkey.values[i] == atts[i] &&
				index->rd_opfamily[i] ==
				get_opclass_family(GetDefaultOpClass(types[i], BTREE_AM_OID));
		if (fits)
		{
			list_free(indexes);
			return index;
		}
		index_close(index, AccessShareLock);
	}
	list_free(indexes);
	return NULL;
}

/* Narrows a range by one partition's bound at a level keyed on one of our columns. */
static void
NarrowByBound(LeafRange *range, Relation parent, PartitionKey key,
			  PartitionBoundInfo bounds, int partidx)
{
	Oid			type;
	bool		is_originator;
	int64		lo = PG_INT64_MIN;
	int64		hi = PG_INT64_MAX;
	bool		found = false;

	if (key->partnatts != 1 || key->partattrs[0] == 0 || partidx == bounds->default_index)
		return;
	if (key->partattrs[0] == FindColumn(parent, "originator_node_id", &type))
		is_originator = true;
	else if (key->partattrs[0] == FindColumn(parent, "originator_sequence_id", &type))
		is_originator = false;
	else
		return;

	if (key->strategy == PARTITION_STRATEGY_LIST)
	{
		for (int i = 0; i < bounds->ndatums; i++)
		{
			int64		v;

			if (bounds->indexes[i] != partidx)
				continue;
			v = is_originator ? DatumGetInt32(bounds->datums[i][0])
				: DatumGetInt64(bounds->datums[i][0]);
			lo = found ? Min(lo, v) : v;
			hi = found ? Max(hi, v) : v;
			found = true;
		}
		if (!found)
			return;				/* only NULLs: leave it open */
	}
	else if (key->strategy == PARTITION_STRATEGY_RANGE)
	{
		for (int i = 0; i < bounds->ndatums; i++)
		{
			if (bounds->indexes[i] != partidx)
				continue;
			if (bounds->kind[i][0] == PARTITION_RANGE_DATUM_VALUE)
			{
				int64		upper = is_originator ? DatumGetInt32(bounds->datums[i][0])
					: DatumGetInt64(bounds->datums[i][0]);

				hi = upper - 1; /* upper bounds are exclusive */
			}
			if (i > 0 && bounds->kind[i - 1][0] == PARTITION_RANGE_DATUM_VALUE)
				lo = is_originator ? DatumGetInt32(bounds->datums[i - 1][0])
					: DatumGetInt64(bounds->datums[i - 1][0]);
			break;
		}
	}
	else
		return;

	if (is_originator)
	{
		range->originator_lo = Max(range->originator_lo, lo);
		range->originator_hi = Min(range->originator_hi, hi);
	}
	else
	{
		range->sequence_lo = Max(range->sequence_lo, lo);
		range->sequence_hi = Min(range->sequence_hi, hi);
	}
}

/* Adds rel (a leaf, or every leaf below a partitioned rel) to the source. */
static void
CollectLeaves(EnvelopeSource *src, List **leaves, Relation rel, LeafRange range)
{
	if (rel->rd_rel->relkind == RELKIND_PARTITIONED_TABLE)
	{
		PartitionKey key = RelationGetPartitionKey(rel);
		PartitionDesc desc = RelationGetPartitionDesc(rel, true);

		for (int i = 0; i < desc->nparts; i++)
		{
			LeafRange	child_range = range;
			Relation	child;

			CHECK_FOR_INTERRUPTS();
			NarrowByBound(&child_range, rel, key, desc->boundinfo, i);
			child = table_open(desc->oids[i], AccessShareLock);
			CollectLeaves(src, leaves, child, child_range);
		}
		if (rel != src->root)
			table_close(rel, NoLock);
		return;
	}
	if (rel->rd_rel->relkind != RELKIND_RELATION)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("partition \"%s\" of table %s is not a plain table",
						RelationGetRelationName(rel), RelationGetRelationName(src->root)),
				 errdetail("Envelope scans read btree indexes of heap tables only.")));
	{
		EnvelopeLeaf *leaf = palloc0(sizeof(EnvelopeLeaf));

		leaf->heap = rel;
		leaf->originator_lo = range.originator_lo;
		leaf->originator_hi = range.originator_hi;
		leaf->sequence_lo = range.sequence_lo;
		leaf->sequence_hi = range.sequence_hi;
		*leaves = lappend(*leaves, leaf);
	}
}

/* Finds a leaf's attribute numbers and index; fails with a CREATE INDEX hint. */
static void
ResolveLeaf(EnvelopeSource *src, EnvelopeLeaf *leaf, const char *argname, int need,
			EnvelopeIndexKind kind)
{
	const char *names[3];
	AttrNumber	atts[3];
	Oid			types[3];
	int			natts = IndexColumnNames(kind, names);
	Oid			type;

	leaf->originator_att = FindColumn(leaf->heap, "originator_node_id", &type);
	leaf->sequence_att = FindColumn(leaf->heap, "originator_sequence_id", &type);
	if (need & ENVELOPE_NEED_META)
	{
		leaf->topic_att = FindColumn(leaf->heap, "topic", &type);
		leaf->gateway_time_att = FindColumn(leaf->heap, "gateway_time", &type);
	}
	if (need & ENVELOPE_NEED_BLOB)
		leaf->envelope_att = FindColumn(leaf->heap, "originator_envelope", &type);
	for (int i = 0; i < natts; i++)
		atts[i] = FindColumn(leaf->heap, names[i], &types[i]);

	leaf->index = FindLeafIndex(leaf->heap, atts, types, natts);
	if (leaf->index == NULL)
	{
		const char *root = quote_qualified_identifier(
			get_namespace_name(RelationGetNamespace(src->root)),
			RelationGetRelationName(src->root));
		const char *cols = kind == ENVELOPE_TOPIC_INDEX
			? "topic, originator_node_id, originator_sequence_id"
			: "originator_node_id, originator_sequence_id";

		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table %s given as \"%s\" has no btree index on (%s)",
						RelationGetRelationName(leaf->heap), argname, cols),
				 leaf->heap != src->root
				 ? errdetail("Partition %s of %s lacks the index.",
							 RelationGetRelationName(leaf->heap), root) : 0,
				 errhint("Create it with: CREATE INDEX ON %s (%s);", root, cols)));
	}
	leaf->scan_cxt = CurrentMemoryContext;
	leaf->slot = table_slot_create(leaf->heap, NULL);
	leaf->fetch_slot = table_slot_create(leaf->heap, NULL);
}

/* Opens and checks a source relation; its leaves are in partition bound order. */
EnvelopeSource *
EnvelopeSourceOpen(Oid relid, const char *argname, int need, EnvelopeIndexKind kind)
{
	EnvelopeSource *src = palloc0(sizeof(EnvelopeSource));
	LeafRange	all = {PG_INT64_MIN, PG_INT64_MAX, PG_INT64_MIN, PG_INT64_MAX};
	List	   *leaves = NIL;
	ListCell   *lc;
	int			i = 0;

	src->root = table_open(relid, AccessShareLock);
	CheckSourcePrivileges(src->root, argname, need);
	CheckSourceColumns(src->root, argname, need);
	CollectLeaves(src, &leaves, src->root, all);

	src->nleaves = list_length(leaves);
	src->leaves = palloc(sizeof(EnvelopeLeaf) * Max(src->nleaves, 1));
	foreach(lc, leaves)
	{
		src->leaves[i] = *(EnvelopeLeaf *) lfirst(lc);
		ResolveLeaf(src, &src->leaves[i], argname, need, kind);
		i++;
	}
	list_free_deep(leaves);
	src->snapshot = GetActiveSnapshot();
	return src;
}

/* Ends the scans and closes every relation a source opened (locks are kept). */
void
EnvelopeSourceClose(EnvelopeSource *src)
{
	for (int i = 0; i < src->nleaves; i++)
	{
		EnvelopeLeaf *leaf = &src->leaves[i];

		if (leaf->scan)
			index_endscan(leaf->scan);
		ExecDropSingleTupleTableSlot(leaf->slot);
		ExecDropSingleTupleTableSlot(leaf->fetch_slot);
		index_close(leaf->index, NoLock);
		if (leaf->heap != src->root)
			table_close(leaf->heap, NoLock);
	}
	table_close(src->root, NoLock);
}

/* Whether a leaf's bounds allow rows of originator in (after, upto]. */
bool
EnvelopeLeafMayHold(const EnvelopeLeaf *leaf, int32 originator,
					int64 after_sequence, int64 upto_sequence)
{
	return originator >= leaf->originator_lo && originator <= leaf->originator_hi &&
		upto_sequence >= leaf->sequence_lo && after_sequence < leaf->sequence_hi;
}

/*
 * Positions the leaf's one index scan on new keys, opening it on first use; a
 * leaf serves one kind of probe, so nkeys is the same on every call.
 */
void
EnvelopeLeafScan(EnvelopeLeaf *leaf, ScanKey keys, int nkeys)
{
	if (leaf->scan == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(leaf->scan_cxt);

		leaf->scan = index_beginscan(leaf->heap, leaf->index, GetActiveSnapshot(), nkeys, 0);
		MemoryContextSwitchTo(old);
	}
	Assert(leaf->scan->numberOfKeys == nkeys);
	index_rescan(leaf->scan, keys, nkeys, NULL, 0);
}

/*
 * Fetches the next visible row of the leaf's scan into leaf->slot. Runs in the
 * scan's context: the index AM may allocate there (btree's killed items) and
 * frees it at index_endscan, after any per-row context was reset.
 */
bool
EnvelopeLeafNext(EnvelopeLeaf *leaf, ScanDirection direction)
{
	MemoryContext old = MemoryContextSwitchTo(leaf->scan_cxt);
	bool		found = index_getnext_slot(leaf->scan, direction, leaf->slot);

	MemoryContextSwitchTo(old);
	return found;
}
