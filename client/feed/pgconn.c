/*
 * pgconn.c: the client programs' database connections (see pgconn.h).
 */
#include "pgconn.h"

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Applied unless the conninfo, which comes after them, sets its own. */
static const char *const Keys[] = {
	"connect_timeout", "keepalives", "keepalives_idle", "keepalives_interval",
	"keepalives_count", "tcp_user_timeout", "fallback_application_name", "dbname", NULL
};
#define NKEYS 8
#define DEFAULT_TIMEOUT_S 10
#define TEXT_(x) #x
#define TEXT(x) TEXT_(x)

/* The values of Keys: ours, then the caller's conninfo, expanded last. */
static void
Values(const char **values, const char *conninfo, const char *app)
{
	values[0] = TEXT(DEFAULT_TIMEOUT_S);
	/* a peer silent for ~25 s (idle) or 30 s (data unacknowledged) is gone */
	values[1] = "1";
	values[2] = "10";
	values[3] = "5";
	values[4] = "3";
	values[5] = "30000";
	values[6] = app;
	values[7] = conninfo ? conninfo : "";
	values[NKEYS] = NULL;
}

PGconn *
xip83_pg_connect(const char *conninfo, const char *app)
{
	const char *values[NKEYS + 1];

	Values(values, conninfo, app);
	return PQconnectdbParams(Keys, values, 1);
}

/* The connection's connect_timeout in ms, as libpq reads it (0 or less: none). */
static int64_t
TimeoutMs(PGconn *conn)
{
	PQconninfoOption *opts = PQconninfo(conn);
	int64_t		ms = (int64_t) DEFAULT_TIMEOUT_S * 1000;

	for (PQconninfoOption *o = opts; o != NULL && o->keyword != NULL; o++)
		if (o->val != NULL && *o->val != '\0' && strcmp(o->keyword, "connect_timeout") == 0)
			ms = (int64_t) atoi(o->val) * 1000;
	PQconninfoFree(opts);
	/* libpq's own floor: under 2 s means 2 s; 0 means none, which never ends here */
	return ms <= 0 ? INT64_MAX / 2 : ms < 2000 ? 2000 : ms;
}

static bool
Begin(Xip83PgStart *c, PGconn *conn, int reset)
{
	c->conn = conn;
	c->reset = reset;
	c->wants = PGRES_POLLING_WRITING;
	if (conn == NULL)
		return false;
	c->deadline_ms = xip83_now_ms() + TimeoutMs(conn);
	return PQstatus(conn) != CONNECTION_BAD;
}

bool
xip83_pg_start(Xip83PgStart *c, const char *conninfo, const char *app)
{
	const char *values[NKEYS + 1];

	Values(values, conninfo, app);
	return Begin(c, PQconnectStartParams(Keys, values, 1), 0);
}

bool
xip83_pg_start_reset(Xip83PgStart *c, PGconn *conn)
{
	/* a server refusing at once (restarting) fails it here: its first step says so */
	bool		started = PQresetStart(conn) == 1;

	if (!Begin(c, conn, 1) || !started)
	{
		c->wants = PGRES_POLLING_FAILED;
		return false;
	}
	return true;
}

PostgresPollingStatusType
xip83_pg_step(Xip83PgStart *c, int wait_ms)
{
	int64_t		end = wait_ms < 0 ? c->deadline_ms : xip83_now_ms() + wait_ms;

	if (end > c->deadline_ms)
		end = c->deadline_ms;
	while (c->wants == PGRES_POLLING_READING || c->wants == PGRES_POLLING_WRITING)
	{
		/* PQconnectPoll only once the socket is ready for what it wants */
		struct pollfd pfd = {
			.fd = PQsocket(c->conn),
			.events = c->wants == PGRES_POLLING_READING ? POLLIN : POLLOUT
		};
		int64_t		now = xip83_now_ms();
		int			rc;

		if (pfd.fd < 0)
			return c->wants = PGRES_POLLING_FAILED;
		rc = poll(&pfd, 1, now < end ? (int) (end - now) : 0);
		if (rc < 0 && errno != EINTR)
			return c->wants = PGRES_POLLING_FAILED;
		if (rc <= 0)
		{
			if (xip83_now_ms() >= c->deadline_ms)
				return c->wants = PGRES_POLLING_FAILED;
			if (xip83_now_ms() >= end)
				return c->wants;
			continue;
		}
		c->wants = c->reset ? PQresetPoll(c->conn) : PQconnectPoll(c->conn);
	}
	return c->wants;
}

uint64_t
xip83_pg_lsn(const char *text)
{
	unsigned int hi,
				lo;

	if (text == NULL || sscanf(text, "%X/%X", &hi, &lo) != 2)
		return 0;
	return ((uint64_t) hi << 32) | lo;
}
