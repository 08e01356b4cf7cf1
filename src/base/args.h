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
#include "utils/array.h"

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

#endif							/* XIP83_ARGS_H */
