/*
 * t_no_preload: the library loaded on demand instead of preloaded. CREATE
 * EXTENSION is refused with SQLSTATE 55000 and a hint naming
 * shared_preload_libraries. In a database that has the extension from
 * before, _PG_init must cope; every function that needs the registry or the
 * notifier fails with the same SQLSTATE and hint; the rest (batch inserts,
 * wave scans with a given ceiling, LiveNotice decoding) work. Preloading
 * again afterwards, the horizon covers what was written meanwhile.
 */
#include "testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool preloaded = true;

/* Restarts the server, preloading xip83 or not; the test's last step restores it. */
static void
Restart(bool preload)
{
	const char *pgctl = getenv("XIP83_PGCTL");
	char		cmd[1024];

	if (pgctl == NULL)
		tl_fatal("XIP83_PGCTL is not set");
	snprintf(cmd, sizeof(cmd), "%s stop -m fast >/dev/null && %s start %s >/dev/null", pgctl, pgctl,
			 preload ? "" : "-o '-c shared_preload_libraries='");
	if (system(cmd) != 0)
		tl_fatal("could not restart the server: %s", cmd);
	preloaded = preload;
}

/* A failed check must not leave the next test a server without xip83 preloaded. */
static void
RestoreAtExit(void)
{
	if (!preloaded)
		Restart(true);
}

/* A call that must fail with 55000 and a hint that names the setting. */
static void
NeedsPreload(PGconn *conn, const char *sql)
{
	PGresult   *res = PQexec(conn, sql);
	const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
	const char *hint = PQresultErrorField(res, PG_DIAG_MESSAGE_HINT);

	TL_CHECK(state != NULL && strcmp(state, "55000") == 0, "%s: SQLSTATE %s", sql,
			 state ? state : "none");
	TL_CHECK(hint != NULL && strstr(hint, "shared_preload_libraries") != NULL, "%s: hint %s",
			 sql, hint ? hint : "none");
	PQclear(res);
}

int
main(void)
{
	PGconn	   *conn;
	PGresult   *res;
	int64_t		id;

	Restart(false);
	atexit(RestoreAtExit);
	conn = tl_connect();
	res = tl_exec(conn, "SHOW shared_preload_libraries", 0, NULL);
	TL_CHECK(strcmp(PQgetvalue(res, 0, 0), "") == 0, "preloading %s", PQgetvalue(res, 0, 0));
	PQclear(res);

	/* a database without the extension cannot have it: refused, not half-working */
	PQclear(tl_exec(conn, "DROP DATABASE IF EXISTS xip83_no_preload", 0, NULL));
	PQclear(tl_exec(conn, "CREATE DATABASE xip83_no_preload", 0, NULL));
	{
		PGconn	   *other = PQconnectdb("dbname=xip83_no_preload");

		TL_CHECK(PQstatus(other) == CONNECTION_OK, "connect: %s", PQerrorMessage(other));
		NeedsPreload(other, "CREATE EXTENSION xip83");
		res = tl_exec(other, "SELECT count(*) FROM pg_namespace WHERE nspname = 'xip83'", 0, NULL);
		TL_CHECK(tl_int(res, 0, 0) == 0, "the refused CREATE EXTENSION left the schema behind");
		PQclear(res);
		PQfinish(other);
	}
	PQclear(tl_exec(conn, "DROP DATABASE xip83_no_preload", 0, NULL));

	/* the library loads on demand: functions that need nothing shared work */
	res = tl_exec(conn, "SELECT state FROM xip83.live_notice_decode("
				  "xip83.live_notice_encode(1, 'live', 0, 0, 0, '{}', '{}'))", 0, NULL);
	TL_CHECK(strcmp(PQgetvalue(res, 0, 0), "live") == 0, "decode works");
	PQclear(res);
	res = tl_exec(conn, "SELECT id FROM xip83.insert_group_messages("
				  "ARRAY['\\x0a01']::bytea[], ARRAY['\\x01']::bytea[])", 0, NULL);
	id = tl_int(res, 0, 0);
	TL_CHECK(id > 0, "insert without preloading got id %lld", (long long) id);
	PQclear(res);
	res = tl_exec(conn, "SELECT count(*) FROM xip83.group_wave_scan("
				  "ARRAY['\\x0a01']::bytea[], ARRAY[0]::bigint[], 0, 1000000, 10)", 0, NULL);
	TL_CHECK(tl_int(res, 0, 0) == 1, "wave scan with a given ceiling");
	PQclear(res);

	/* what needs the registry says what to do */
	NeedsPreload(conn, "SELECT xip83.group_horizon()");
	NeedsPreload(conn, "SELECT xip83.welcome_horizon()");
	NeedsPreload(conn, "SELECT * FROM xip83.envelope_horizons()");
	NeedsPreload(conn, "SELECT xip83.group_ceiling()");
	NeedsPreload(conn, "SELECT xip83.welcome_ceiling()");
	NeedsPreload(conn, "SELECT * FROM xip83.originator_ceilings()");
	NeedsPreload(conn, "SELECT * FROM xip83.live_group_messages(0, 10, 0)");
	NeedsPreload(conn, "SELECT * FROM xip83.live_envelopes(ARRAY[1], ARRAY[0]::bigint[], 10, 0)");
	NeedsPreload(conn, "SELECT * FROM xip83.feed_status");
	PQfinish(conn);

	/* preloaded again: the row written meanwhile is at or below the horizon */
	Restart(true);
	conn = tl_connect();
	res = tl_exec(conn, "SELECT xip83.group_horizon(), xip83.group_ceiling()", 0, NULL);
	TL_CHECK(tl_int(res, 0, 0) >= id && tl_int(res, 0, 1) >= id,
			 "horizon %s and ceiling %s cover id %lld", PQgetvalue(res, 0, 0),
			 PQgetvalue(res, 0, 1), (long long) id);
	PQclear(res);
	PQfinish(conn);
	return tl_done("t_no_preload");
}
