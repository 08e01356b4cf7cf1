/*
 * args.c: checked reading of SQL arguments (see base.h for the rules).
 */
#include "postgres.h"

#include "access/tupmacs.h"
#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/lsyscache.h"

#include "base.h"

int			xip83_max_page_limit = 10000;

/* Fails with 22004 when argument argno is NULL. */
void
ArgRequire(FunctionCallInfo fcinfo, int argno, const char *name)
{
	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"%s\" must not be null", name),
				 errhint("Give \"%s\" a value: NULL does not stand for a default here.", name)));
}

/* The first element of an array (ARR_DATA_PTR, without its mixed-sign ?:). */
static char *
ArgDataPtr(ArrayType *arr)
{
	return (char *) arr + (ARR_HASNULL(arr) ? (Size) arr->dataoffset
						   : ARR_OVERHEAD_NONULLS(ARR_NDIM(arr)));
}

/* Fails with 22004 naming the first NULL element of arr, if it has one. */
static void
ArgRefuseNulls(ArrayType *arr, const char *name)
{
	bits8	   *bitmap = ARR_NULLBITMAP(arr);
	int			n = ArrayGetNItems(ARR_NDIM(arr), ARR_DIMS(arr));

	if (bitmap == NULL)
		return;
	for (int i = 0; i < n; i++)
		if (att_isnull(i, bitmap))
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("argument \"%s\" must not contain null elements", name),
					 errdetail("Element %d is null.", i + 1),
					 errhint("Every element of \"%s\" needs a value.", name)));
}

/* The checks every array argument gets: present, one dimension, elemtype, no NULLs. */
static ArgArray
ArgCheckArray(FunctionCallInfo fcinfo, int argno, const char *name, Oid elemtype)
{
	ArgArray	result;
	ArrayType  *arr;

	ArgRequire(fcinfo, argno, name);
	arr = PG_GETARG_ARRAYTYPE_P(argno);
	if (ARR_NDIM(arr) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"%s\" must be a one-dimensional array", name)));
	if (ARR_ELEMTYPE(arr) != elemtype)
		elog(ERROR, "argument \"%s\" has element type %u, expected %u",
			 name, ARR_ELEMTYPE(arr), elemtype);
	ArgRefuseNulls(arr, name);

	result.name = name;
	result.n = ArrayGetNItems(ARR_NDIM(arr), ARR_DIMS(arr));
	result.values = NULL;
	result.array = arr;
	get_typlenbyvalalign(elemtype, &result.typlen, &result.byval, &result.align);
	return result;
}

/* Reads a required one-dimensional array of elemtype without NULL elements. */
ArgArray
ArgGetArray(FunctionCallInfo fcinfo, int argno, const char *name, Oid elemtype)
{
	ArgArray	result = ArgCheckArray(fcinfo, argno, name, elemtype);

	if (result.byval && result.typlen == sizeof(Datum))
	{
		/* int8 on a 64-bit server: the elements already are Datums, in place */
		result.values = (Datum *) ArgDataPtr(result.array);
		return result;
	}
	(void) ArgValues(&result);
	return result;
}

ArgArray
ArgGetVarlenaArray(FunctionCallInfo fcinfo, int argno, const char *name, Oid elemtype)
{
	ArgArray	result = ArgCheckArray(fcinfo, argno, name, elemtype);

	Assert(result.typlen == -1);
	return result;
}

/* The elements of an array argument, deconstructed on first use. */
Datum *
ArgValues(ArgArray *a)
{
	bool	   *nulls;
	int			n;

	if (a->values != NULL)
		return a->values;
	deconstruct_array(a->array, ARR_ELEMTYPE(a->array), a->typlen, a->byval, a->align,
					  &a->values, &nulls, &n);
	pfree(nulls);
	return a->values;
}

ArgWalk
ArgWalkBegin(const ArgArray *a)
{
	ArgWalk		walk = {ArgDataPtr(a->array), a->n};

	return walk;
}

/*
 * The next min(count, elements left) elements of a varlena array read in
 * place into out, as deconstruct_array would give them; returns how many.
 * Elements of the size of the one before (topics are of one size) are found
 * by stride, so finding one does not wait for the header before it.
 */
int
ArgNextVarlenas(const ArgArray *a, ArgWalk *walk, int count, Datum *out)
{
	const char *p = walk->next;
	int			n = Min(count, walk->left);
	int			i = 0;

	while (i < n)
	{
		uint32		header;
		Size		stride;

		/* one element the general way, and the stride it would repeat with */
		out[i++] = PointerGetDatum(p);
		if (VARATT_IS_1B(p))
		{
			p = (const char *) att_align_nominal(p + VARSIZE_ANY(p), a->align);
			continue;
		}
		memcpy(&header, p, sizeof(header));
		stride = att_align_nominal(VARSIZE_4B(p), a->align);
		p += stride;
		/* from an aligned element the next of the same size starts a stride on */
		while (i < n && memcmp(p, &header, sizeof(header)) == 0)
		{
			out[i++] = PointerGetDatum(p);
			p += stride;
		}
	}
	walk->next = p;
	walk->left -= n;
	return n;
}

/* Fails with 22023 when two paired arrays differ in length. */
void
ArgRequireSameLength(const ArgArray *a, const ArgArray *b)
{
	if (a->n != b->n)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("array arguments have unequal lengths"),
				 errdetail("Argument \"%s\" has length %d where %d was expected.",
						   b->name, b->n, a->n),
				 errhint("Give \"%s\" one element for each of \"%s\".", b->name, a->name)));
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
