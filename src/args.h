/*
 * args.h: checked reading of SQL arguments shared by every entry point.
 *
 * SQL functions here are not STRICT: a NULL argument is a caller's mistake and
 * gets SQLSTATE 22004 with the argument's name, never a silent NULL result.
 * Arrays must be one-dimensional and free of NULL elements (22004); arrays
 * that pair up element by element must have equal lengths (22023).
 */
#ifndef XIP83_ARGS_H
#define XIP83_ARGS_H

#include "postgres.h"
#include "fmgr.h"

/* A one-dimensional, NULL-free array argument, deconstructed. */
typedef struct ArgArray
{
	const char *name;			/* the SQL argument name, for messages */
	int			n;				/* element count */
	Datum	   *values;			/* n elements, read-only: varlenas point into the
								 * array, 8-byte by-value elements are its data */
} ArgArray;

extern void ArgRequire(FunctionCallInfo fcinfo, int argno, const char *name);
extern ArgArray ArgGetArray(FunctionCallInfo fcinfo, int argno, const char *name,
							Oid elemtype);
extern void ArgRequireSameLength(const ArgArray *a, const ArgArray *b);
extern int32 ArgGetPageLimit(FunctionCallInfo fcinfo, int argno, const char *name);

#endif							/* XIP83_ARGS_H */
