/*
 * v3row.c: reads a v3 row from a binary libpq result (see v3row.h).
 */
#include "v3row.h"

#include <string.h>

/* PostgreSQL timestamps count microseconds from 2000-01-01. */
#define PG_EPOCH_UNIX_US INT64_C(946684800000000)

const Xip83V3Cols xip83_v3_scan_cols = {{0, 1, 2, 3, 4, 5, 6, 7}};

int64_t
xip83_result_int(const PGresult *res, int row, int col)
{
	const unsigned char *p = (const unsigned char *) PQgetvalue(res, row, col);
	int			len = PQgetlength(res, row, col);
	int64_t		v = 0;

	if (PQgetisnull(res, row, col))
		return 0;
	for (int i = 0; i < len; i++)
		v = (int64_t) (((uint64_t) v << 8) | p[i]);
	/* sign-extend int2 and int4 */
	if (len < 8 && len > 0 && (p[0] & 0x80))
		v -= (int64_t) 1 << (8 * len);
	return v;
}

static const unsigned char *
Bytes(const PGresult *res, int row, int col, size_t *len)
{
	if (PQgetisnull(res, row, col))
	{
		*len = 0;
		return (const unsigned char *) "";
	}
	*len = (size_t) PQgetlength(res, row, col);
	return (const unsigned char *) PQgetvalue(res, row, col);
}

static bool
Bool(const PGresult *res, int row, int col)
{
	return !PQgetisnull(res, row, col) && PQgetvalue(res, row, col)[0] != 0;
}

void
xip83_v3row_read(const PGresult *res, int row, int kind, const Xip83V3Cols *cols,
				 Xip83V3Row *out)
{
	const int  *c = cols->col;
	int64_t		us = xip83_result_int(res, row, c[1]);

	memset(out, 0, sizeof(*out));
	out->kind = kind;
	out->id = xip83_result_int(res, row, c[0]);
	out->created_ns = us + PG_EPOCH_UNIX_US > 0 ? (uint64_t) (us + PG_EPOCH_UNIX_US) * 1000 : 0;
	out->key = Bytes(res, row, c[2], &out->key_len);
	out->data = Bytes(res, row, c[3], &out->data_len);
	if (kind == XIP83_V3_GROUP)
	{
		out->is_commit = Bool(res, row, c[4]);
		out->aux = Bytes(res, row, c[5], &out->aux_len);
		out->should_push = Bool(res, row, c[6]);
	}
	else
	{
		out->aux = Bytes(res, row, c[4], &out->aux_len);
		out->wrapper_algorithm = (int) xip83_result_int(res, row, c[5]);
		out->metadata = Bytes(res, row, c[6], &out->metadata_len);
		out->message_type = (int) xip83_result_int(res, row, c[7]);
	}
}
