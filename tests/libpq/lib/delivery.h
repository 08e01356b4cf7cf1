/*
 * delivery.h: checking that a consumer delivered every stored row exactly
 * once. Positions (ids, or envelope keys) are collected as delivered, then
 * compared, sorted, with the stored ones: equal element for element.
 */
#ifndef XIP83_DELIVERY_H
#define XIP83_DELIVERY_H

#include <libpq-fe.h>
#include <stddef.h>
#include <stdint.h>

/* A growing list of positions: zero-initialized. */
typedef struct Positions
{
	int64_t    *pos;
	size_t		n;
	size_t		cap;
} Positions;

void		positions_add(Positions *p, int64_t pos);
/* The first column of every row of a query that must succeed, in its order. */
Positions	positions_stored(PGconn *conn, const char *sql);
/* Sorts delivered and checks it equals stored (ascending): each row once. */
void		positions_check_once(const char *what, Positions *delivered, const Positions *stored);

#endif							/* XIP83_DELIVERY_H */
