/*
 * rel.h: the API of src/rel, the relations xip83 reads: resolving and
 * checking a `source` relation (source.c) and the layouts of xip83's tables
 * (layouts.c). Knows catalogs and privileges, never shared memory.
 *
 * Resolving a `source` relation into what a scan reads.
 *
 * A source is a plain table or a partitioned one. Opening it checks, in this
 * order: the caller's USAGE on its schema and SELECT on it (42501), row-level security (refused
 * unless the caller bypasses it, 42501), the relation kind (42809), the
 * required columns and their types on every leaf (42703, 42804), and on every
 * leaf a valid, non-partial, ascending btree index whose leading columns are
 * the spec's key columns (55000, with the CREATE INDEX to run as the hint).
 *
 * SourceRequireReadable makes the first two checks alone, for any relation
 * (the live fetch reads xip83's tables through it); SourceCheckReadable
 * also resolves the source argument. A scan that finds it
 * has nothing to read (every floor at or above the ceiling) still refuses a
 * caller SQL would refuse, but opens nothing.
 *
 * Leaves come in partition-bound order at every level (so RANGE sub-levels
 * give their leaves in key order); a plain table is its own single leaf.
 * Every relation is opened with AccessShareLock and stays open until
 * SourceClose (or transaction abort, through the resource owner). No scan
 * opens a relation any other way than through here.
 */
#ifndef XIP83_REL_H
#define XIP83_REL_H

#include "postgres.h"

#include "utils/rel.h"

#include "base/base.h"

#define SOURCE_MAX_KEYS 3

/* A column a scan needs: name and exact type. */
typedef struct SourceColumn
{
	const char *name;
	Oid			type;
} SourceColumn;

/* What a binding requires of its source relation. */
typedef struct SourceSpec
{
	const char *argname;		/* SQL argument naming the relation, for messages */
	const SourceColumn *columns;	/* every column the binding reads */
	int			ncolumns;
	/* leading columns of the scan index: the topic prefix, then the position */
	const char *const *key_columns;
	int			nkeys;
	/* key columns of the optional unique walk index ([originator,] position); 0 = none */
	const char *const *walk_columns;
	int			nwalk;
	/* column whose RANGE partition bounds are reported per leaf, or NULL */
	const char *position_column;
	/* int4 column whose LIST partition bounds are reported per leaf, or NULL */
	const char *originator_column;
} SourceSpec;

/* One leaf relation of a source, with the indexes a scan uses on it. */
typedef struct SourceLeaf
{
	int			leafno;			/* index in Source.leaves */
	Relation	heap;
	Relation	index;			/* btree leading with spec->key_columns */
	Relation	walk_index;		/* btree leading with spec->walk_columns, or NULL */
	AttrNumber *attnos;			/* spec->columns mapped to this leaf's attributes */
	/* position range this leaf can hold: [position_lo, position_hi) */
	int64		position_lo;
	int64		position_hi;
	/* originators this leaf can hold (LIST bounds), or noriginators = -1: any */
	int			noriginators;
	int32	   *originators;
} SourceLeaf;

/* A resolved source: its leaves in key order. */
typedef struct Source
{
	Oid			relid;
	char	   *relname;		/* qualified, for messages */
	const SourceSpec *spec;
	int			nleaves;
	SourceLeaf *leaves;
} Source;

extern void SourceRequireReadable(Oid relid, const char *relname);
extern char *SourceCheckReadable(Oid relid, const SourceSpec *spec);
extern Source *SourceOpen(Oid relid, const SourceSpec *spec);
extern void SourceClose(Source *source);
extern Oid	SourceOwnTable(const char *table);
/* The xip83 relation of that name, or InvalidOid (no error: bookkeeping). */
extern Oid	SourceOwnRelation(const char *name);
extern void SourceOpenKeyed(Oid relid, const char *relname, Relation *heap, Relation *pk);
extern bool SourceLeafMayHoldOriginator(const SourceLeaf *leaf, int32 originator);

/* ---------------------------------------------------------------- layouts */

/* The two v3 message kinds (layouts.c). */
extern const SourceSpec WaveV3GroupSource;
extern const SourceSpec WaveV3WelcomeSource;
/* Positions of the columns every v3 kind shares, in SourceSpec.columns. */
#define V3_COL_ID		0
#define V3_COL_TOPIC	2

/* d14n layouts: meta with its payload, meta whose payload is in a blob table, the blob table. */
extern const SourceSpec *const WaveD14nSpecs[3];
/* The columns of an envelope source, in the order of the SourceSpecs. */
#define ENVELOPE_COL_ORIGINATOR		0
#define ENVELOPE_COL_SEQUENCE		1
/* The payload's column in the blob table's SourceSpec. */
#define ENVELOPE_COL_BLOB_PAYLOAD	2

#endif							/* XIP83_REL_H */
