/*
 * pgconn.h: how the client programs connect to the database.
 *
 * Every connection gets a connect timeout (10 s) and TCP keepalives unless
 * its conninfo sets its own, so that neither a connect nor a query on a
 * silent network can wait forever. A connection made without blocking
 * (xip83_pg_start) is driven by xip83_pg_step, which never waits longer than
 * it is told and fails it once its connect timeout has passed: libpq itself
 * bounds only the blocking calls.
 */
#ifndef XIP83_PGCONN_H
#define XIP83_PGCONN_H

#include <stdbool.h>
#include <stdint.h>

#include <libpq-fe.h>

#include "clock.h"

/* A blocking connect; check PQstatus. app: the fallback application_name. */
extern PGconn *xip83_pg_connect(const char *conninfo, const char *app);

/* An in-progress connect or reset, driven by xip83_pg_step. */
typedef struct Xip83PgStart
{
	PGconn	   *conn;
	PostgresPollingStatusType wants;	/* what the last step waits for */
	int64_t		deadline_ms;	/* monotonic: when the attempt fails */
	int			reset;			/* PQresetStart's, not PQconnectStart's */
} Xip83PgStart;

/* Starts a connect without blocking (false: out of memory or a bad conninfo). */
extern bool xip83_pg_start(Xip83PgStart *c, const char *conninfo, const char *app);
/*
 * Starts resetting a connection without blocking; false when it failed at
 * once (a refused connect): c is then a failed attempt, which
 * xip83_pg_step reports.
 */
extern bool xip83_pg_start_reset(Xip83PgStart *c, PGconn *conn);

/*
 * Advances it, waiting at most wait_ms (0: not at all, -1: until it ends)
 * for its socket: PGRES_POLLING_OK (connected), PGRES_POLLING_FAILED (also
 * when its deadline passed), or PGRES_POLLING_READING / _WRITING: still
 * going, PQsocket(c->conn) wants that.
 */
extern PostgresPollingStatusType xip83_pg_step(Xip83PgStart *c, int wait_ms);

/* A WAL position's text ("16/B374D848") as a number; 0 when it is none. */
extern uint64_t xip83_pg_lsn(const char *text);

#endif							/* XIP83_PGCONN_H */
