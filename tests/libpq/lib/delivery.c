/* delivery.c: see delivery.h. */
#include "delivery.h"

#include <stdlib.h>

#include "testlib.h"

void
positions_add(Positions *p, int64_t pos)
{
	if (p->n == p->cap)
	{
		p->cap = p->cap ? p->cap * 2 : 1024;
		p->pos = realloc(p->pos, p->cap * sizeof(int64_t));
		if (p->pos == NULL)
			tl_fatal("out of memory");
	}
	p->pos[p->n++] = pos;
}

Positions
positions_stored(PGconn *conn, const char *sql)
{
	PGresult   *r = tl_exec(conn, sql, 0, NULL);
	Positions	p = {0};

	for (int i = 0; i < PQntuples(r); i++)
		positions_add(&p, tl_int(r, i, 0));
	PQclear(r);
	return p;
}

static int
CompareInt64(const void *a, const void *b)
{
	int64_t		x = *(const int64_t *) a;
	int64_t		y = *(const int64_t *) b;

	return (x > y) - (x < y);
}

void
positions_check_once(const char *what, Positions *delivered, const Positions *stored)
{
	size_t		first_diff = 0;

	if (delivered->n > 0)
		qsort(delivered->pos, delivered->n, sizeof(int64_t), CompareInt64);
	while (first_diff < delivered->n && first_diff < stored->n &&
		   delivered->pos[first_diff] == stored->pos[first_diff])
		first_diff++;
	TL_CHECK(delivered->n == stored->n && first_diff == stored->n,
			 "%s: delivered %zu, stored %zu, first difference at %zu (%lld vs %lld)", what,
			 delivered->n, stored->n, first_diff,
			 first_diff < delivered->n ? (long long) delivered->pos[first_diff] : -1LL,
			 first_diff < stored->n ? (long long) stored->pos[first_diff] : -1LL);
}
