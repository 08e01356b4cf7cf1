/*
 * base.h: the API of src/base, what every floor of the extension may use and
 * that knows nothing of xip83's tables or shared memory: checked reading of
 * SQL arguments (args.c), the server APIs that differ between PostgreSQL
 * majors, and protobuf-c on PostgreSQL memory (pbmem.c).
 */
#ifndef XIP83_BASE_H
#define XIP83_BASE_H

#include "postgres.h"
#include "fmgr.h"
#include "utils/array.h"
#include <protobuf-c/protobuf-c.h>

/* ---------------------------------------------------------------- arguments */
/*
 * Checked reading of SQL arguments shared by every entry point.
 *
 * SQL functions here are not STRICT: a NULL argument is a caller's mistake and
 * gets SQLSTATE 22004 with the argument's name, never a silent NULL result.
 * Arrays must be one-dimensional and free of NULL elements (22004); arrays
 * that pair up element by element must have equal lengths (22023).
 */
/* A one-dimensional, NULL-free array argument. */
typedef struct ArgArray
{
	const char *name;			/* the SQL argument name, for messages */
	int			n;				/* element count */
	Datum	   *values;			/* n elements, read-only: varlenas point into the
								 * array, 8-byte by-value elements are its data;
								 * NULL until ArgValues when read in place */
	ArrayType  *array;			/* the array, detoasted */
	int16		typlen;			/* its elements' typlen, typbyval, typalign */
	bool		byval;
	char		align;
} ArgArray;

/*
 * Where ArgNextVarlenas continues in an array read in place: the next
 * element's address and how many elements are left.
 */
typedef struct ArgWalk
{
	const char *next;
	int			left;
} ArgWalk;

extern void ArgRequire(FunctionCallInfo fcinfo, int argno, const char *name);
extern ArgArray ArgGetArray(FunctionCallInfo fcinfo, int argno, const char *name,
							Oid elemtype);
/*
 * A varlena array read in place: checked like ArgGetArray, elements not yet
 * deconstructed (a wave that reads nothing never needs them); walk them with
 * ArgWalkBegin/ArgNextVarlenas or get them all with ArgValues.
 */
extern ArgArray ArgGetVarlenaArray(FunctionCallInfo fcinfo, int argno, const char *name,
								   Oid elemtype);
extern Datum *ArgValues(ArgArray *a);
extern ArgWalk ArgWalkBegin(const ArgArray *a);
extern int	ArgNextVarlenas(const ArgArray *a, ArgWalk *walk, int count, Datum *out);
extern void ArgRequireSameLength(const ArgArray *a, const ArgArray *b);
extern int32 ArgGetPageLimit(FunctionCallInfo fcinfo, int argno, const char *name);

/* The longest page a page_limit argument may ask for (xip83.max_page_limit). */
extern int	xip83_max_page_limit;

/* ---------------------------------------------------------------- versions */
/*
 * The few server APIs that differ between the supported PostgreSQL
 * major versions (15 and 18 are built and tested; 16 and 17 only through the
 * same guards). Each guard names the version that changed the API.
 *
 * Macros only: each expands at its use site, whose file includes the server
 * header that declares the real function.
 */
/* 18: pg_noreturn, before the declaration, replaced pg_attribute_noreturn(). */
#if PG_VERSION_NUM >= 180000
#define xip83_noreturn pg_noreturn
#else
#define xip83_noreturn pg_attribute_noreturn()
#endif

/* 18: index_beginscan takes an IndexScanInstrumentation pointer (may be NULL). */
#if PG_VERSION_NUM >= 180000
#define xip83_index_beginscan(heap, index, snapshot, nkeys, norderbys) \
	index_beginscan((heap), (index), (snapshot), NULL, (nkeys), (norderbys))
#else
#define xip83_index_beginscan(heap, index, snapshot, nkeys, norderbys) \
	index_beginscan((heap), (index), (snapshot), (nkeys), (norderbys))
#endif

/* 17: IsBackgroundWorker gave way to AmBackgroundWorkerProcess() (miscadmin.h). */
#if PG_VERSION_NUM < 170000
#define AmBackgroundWorkerProcess() (IsBackgroundWorker)
#endif

/* 17: RelationGetPrimaryKeyIndex gained deferrable_ok (utils/relcache.h). */
#if PG_VERSION_NUM >= 170000
#define xip83_primary_key_index(rel) RelationGetPrimaryKeyIndex((rel), false)
#else
#define xip83_primary_key_index(rel) RelationGetPrimaryKeyIndex(rel)
#endif

/* 17: a backend's process number is MyProcNumber (storage/proc.h). */
#if PG_VERSION_NUM >= 170000
#define xip83_my_proc_number() ((int) MyProcNumber)
#else
#define xip83_my_proc_number() (MyProc->pgprocno)
#endif

/* 16: pg_namespace_aclcheck gave way to object_aclcheck (utils/acl.h, catalog/pg_namespace.h). */
#if PG_VERSION_NUM >= 160000
#define xip83_namespace_aclcheck(nsp, role, mode) \
	object_aclcheck(NamespaceRelationId, (nsp), (role), (mode))
#else
#define xip83_namespace_aclcheck(nsp, role, mode) pg_namespace_aclcheck((nsp), (role), (mode))
#endif

/* 16: pg_class_ownercheck gave way to object_ownercheck (utils/acl.h, catalog/pg_class.h). */
#if PG_VERSION_NUM >= 160000
#define xip83_class_ownercheck(relid, role) object_ownercheck(RelationRelationId, (relid), (role))
#else
#define xip83_class_ownercheck(relid, role) pg_class_ownercheck((relid), (role))
#endif

/* ---------------------------------------------------------------- protobuf */
/*
 * protobuf-c on PostgreSQL memory (pbmem.c).
 *
 * Decoding allocates through palloc in CurrentMemoryContext, so a message
 * that fails half-way, or an ERROR thrown while one is in use, leaks nothing
 * past the context's reset.
 */
extern ProtobufCAllocator *PbAllocator(void);
extern bytea *PbPackToBytea(const ProtobufCMessage *msg);

#endif							/* XIP83_BASE_H */
