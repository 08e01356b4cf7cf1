/*
 * t_live_reload: horizons after the registry's memory is lost or the tables
 * are re-created. A server restart (fast, then a crash by SIGKILL) loads each
 * line from the sequences and tables, so the horizons are right on the first
 * read; DROP EXTENSION + CREATE EXTENSION starts the lines over, so the new
 * sequences' ids are accepted and followed.
 */
#include "testlib.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void
Write(PGconn *c)
{
	PQclear(tl_exec(c, "INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash)"
					" SELECT '\\x01', int8send(i), sha256('\\x01'::bytea || int8send(i))"
					"   FROM generate_series(1, 50) i"
					" ON CONFLICT DO NOTHING", 0, NULL));
	PQclear(tl_exec(c, "INSERT INTO xip83.welcome_messages (installation_key, data, installation_key_data_hash)"
					" SELECT '\\x02', int8send(i), sha256('\\x02'::bytea || int8send(i))"
					"   FROM generate_series(1, 20) i"
					" ON CONFLICT DO NOTHING", 0, NULL));
	PQclear(tl_exec(c, "INSERT INTO xip83.envelopes (originator_node_id, originator_sequence_id, topic, originator_envelope)"
					" SELECT o, s, '\\x03aa', '\\x00'"
					"   FROM generate_series(1, 3) o, generate_series(1, 10 * o) s"
					" ON CONFLICT DO NOTHING", 0, NULL));
}

/*
 * Nothing is in flight: v3 horizons reach the highest stored id (ids drawn
 * for rows that were never stored may lie between it and the sequence), and
 * each originator's horizon is its highest stored sequence.
 */
static void
CheckHorizons(PGconn *c, const char *when)
{
	TL_CHECK(tl_scalar(c, "SELECT ((xip83.group_horizon() BETWEEN (SELECT coalesce(max(id), 0) FROM xip83.group_messages)"
					"                                AND (SELECT last_value FROM xip83.group_messages_id_seq))"
					"   AND (xip83.welcome_horizon() BETWEEN (SELECT coalesce(max(id), 0) FROM xip83.welcome_messages)"
					"                                AND (SELECT last_value FROM xip83.welcome_messages_id_seq)))::int")
			 == 1, "%s: v3 horizons between the stored maxima and the sequences", when);
	TL_CHECK(tl_scalar(c, "SELECT count(*) FROM xip83.envelope_horizons() h"
					" FULL JOIN (SELECT originator_node_id, max(originator_sequence_id) AS m"
					"              FROM xip83.envelopes GROUP BY 1) e USING (originator_node_id)"
					" WHERE h.horizon IS DISTINCT FROM e.m") == 0,
			 "%s: originator horizons at the stored maxima", when);
}

int
main(void)
{
	PGconn	   *c = tl_connect();
	int			pid;

	Write(c);
	CheckHorizons(c, "before restart");

	PQfinish(c);
	tl_pgctl("restart -m fast");
	c = tl_reconnect();
	CheckHorizons(c, "after a restart");
	Write(c);
	CheckHorizons(c, "after writing again");

	/* a crash: the postmaster re-creates shared memory */
	pid = (int) tl_scalar(c, "SELECT pg_backend_pid()");
	PQclear(tl_exec(c, "BEGIN", 0, NULL));
	PQclear(tl_exec(c, "INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash)"
					" VALUES ('\\x09', '\\x09', sha256('\\x0909'))", 0, NULL));
	TL_CHECK(kill(pid, SIGKILL) == 0, "kill -9 a writer's backend");
	PQfinish(c);
	sleep(1);
	c = tl_reconnect();
	CheckHorizons(c, "after a crash");
	TL_CHECK(tl_scalar(c, "SELECT xip83.group_horizon() - (SELECT last_value FROM xip83.group_messages_id_seq)") <= 0,
			 "the horizon does not pass the sequence");

	/* re-created tables start over */
	PQclear(tl_exec(c, "DROP EXTENSION xip83", 0, NULL));
	PQclear(tl_exec(c, "CREATE EXTENSION xip83", 0, NULL));
	Write(c);
	CheckHorizons(c, "after DROP and CREATE EXTENSION");
	TL_CHECK(tl_scalar(c, "SELECT xip83.group_horizon()") == 50, "ids start at 1 again");
	PQfinish(c);
	return tl_done("t_live_reload");
}
