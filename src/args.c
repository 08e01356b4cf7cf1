/*
 * args.c: checked reading of SQL arguments (see args.h for the rules).
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/lsyscache.h"

#include "args.h"
#include "xip83.h"

/* Fails with 22004 when argument argno is NULL. */
void
ArgRequire(FunctionCallInfo fcinfo, int argno, const char *name)
{
	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"%s\" must not be null", name)));
}

/* Reads a required one-dimensional array of elemtype without NULL elements. */
ArgArray
ArgGetArray(FunctionCallInfo fcinfo, int argno, const char *name, Oid elemtype)
{
	ArgArray	result;
	ArrayType  *arr;
	int16		typlen;
	bool		typbyval;
	char		typalign;
	bool	   *nulls;

	ArgRequire(fcinfo, argno, name);
	arr = PG_GETARG_ARRAYTYPE_P(argno);
	if (ARR_NDIM(arr) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"%s\" must be a one-dimensional array", name)));
	if (ARR_ELEMTYPE(arr) != elemtype)
		elog(ERROR, "argument \"%s\" has element type %u, expected %u",
			 name, ARR_ELEMTYPE(arr), elemtype);

	result.name = name;
	get_typlenbyvalalign(elemtype, &typlen, &typbyval, &typalign);
	if (typbyval && typlen == sizeof(Datum) && !ARR_HASNULL(arr))
	{
		/* int8 on a 64-bit server: the elements already are Datums, in place */
		result.n = ArrayGetNItems(ARR_NDIM(arr), ARR_DIMS(arr));
		result.values = (Datum *) ((char *) arr + ARR_OVERHEAD_NONULLS(ARR_NDIM(arr)));
		return result;
	}
	deconstruct_array(arr, elemtype, typlen, typbyval, typalign,
					  &result.values, &nulls, &result.n);
	if (ARR_HASNULL(arr))
	{
		for (int i = 0; i < result.n; i++)
			if (nulls[i])
				ereport(ERROR,
						(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
						 errmsg("argument \"%s\" must not contain null elements", name),
						 errdetail("Element %d is null.", i + 1)));
	}
	pfree(nulls);
	return result;
}

/* Fails with 22023 when two paired arrays differ in length. */
void
ArgRequireSameLength(const ArgArray *a, const ArgArray *b)
{
	if (a->n != b->n)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("arrays \"%s\" and \"%s\" must have the same length",
						a->name, b->name),
				 errdetail("\"%s\" has %d elements and \"%s\" has %d.",
						   a->name, a->n, b->name, b->n)));
}

/* Reads a page size: 1 .. xip83.max_page_limit, else 22023. */
int32
ArgGetPageLimit(FunctionCallInfo fcinfo, int argno, const char *name)
{
	int32		limit;

	ArgRequire(fcinfo, argno, name);
	limit = PG_GETARG_INT32(argno);
	if (limit < 1 || limit > xip83_max_page_limit)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"%s\" must be between 1 and %d", name, xip83_max_page_limit),
				 errdetail("It is %d.", limit),
				 errhint("Raise xip83.max_page_limit for larger pages.")));
	return limit;
}
