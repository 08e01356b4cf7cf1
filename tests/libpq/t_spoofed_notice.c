/*
 * t_spoofed_notice: a notice is only a wake-up. A role with nothing but
 * USAGE on the schema floods xip83_live with forged LiveNotices (256 and 300
 * fake originators with huge horizons, STOPPING states, new epochs every
 * time) and garbage payloads while a writer adds group messages and
 * envelopes of 300 originators, a new one at the end. The consumer (the feed
 * library behind xip83-tail) must deliver every committed row exactly once
 * and in order, and must never report the feed offline because of a forged
 * notice.
 */
#include "testlib.h"
#include "feedrun.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ORIGINATORS 300
#define ROUNDS 40

static FeedRun run;
static atomic_llong delivered;
static atomic_llong out_of_order;
static int64_t group_seen[1 << 16];
static int64_t last_group;
static int64_t last_seq[ORIGINATORS + 2];
static int	seq_seen[ORIGINATORS + 2];

static void
OnRow(void *arg, const Xip83FeedRow *row)
{
	(void) arg;
	if (row->kind == XIP83_FEED_GROUP)
	{
		if (row->position <= last_group)
			atomic_fetch_add(&out_of_order, 1);
		last_group = row->position;
		if (row->position < (1 << 16))
			group_seen[row->position]++;
	}
	else if (row->kind == XIP83_FEED_ENVELOPE)
	{
		int			o = row->originator_node_id;

		if (o < 1 || o > ORIGINATORS + 1 || row->position <= last_seq[o])
			atomic_fetch_add(&out_of_order, 1);
		else
		{
			last_seq[o] = row->position;
			seq_seen[o]++;
		}
	}
	atomic_fetch_add(&delivered, 1);
}

/* Forged notices and garbage, from the unprivileged role. */
static void
Spoof(PGconn *h, int round)
{
	char		sql[1024];

	snprintf(sql, sizeof(sql),
			 "SELECT pg_notify('xip83_live', xip83.live_notice_encode(%d, '%s', 1,"
			 " 9223372036854775807, 9223372036854775807,"
			 " (SELECT array_agg(g) FROM generate_series(1, %d) g),"
			 " (SELECT array_agg(9223372036854775807) FROM generate_series(1, %d) g)))",
			 1000 + round, round % 2 ? "stopping" : "live", round % 3 ? 256 : 300,
			 round % 3 ? 256 : 300);
	PQclear(tl_exec(h, sql, 0, NULL));
	PQclear(tl_exec(h, "SELECT pg_notify('xip83_live', 'not base64 !!!')", 0, NULL));
	PQclear(tl_exec(h, "SELECT pg_notify('xip83_live', '')", 0, NULL));
	PQclear(tl_exec(h, "SELECT pg_notify('xip83_live', repeat('QUFB', 1999))", 0, NULL));
}

int
main(void)
{
	PGconn	   *c = tl_connect();
	PGconn	   *h;
	pthread_t	consumer;
	int64_t		rows;
	int			missing = 0;
	PGresult   *r;

	PQclear(tl_exec(c, "DROP ROLE IF EXISTS xip83_spoofer", 0, NULL));
	PQclear(tl_exec(c, "CREATE ROLE xip83_spoofer LOGIN", 0, NULL));
	PQclear(tl_exec(c, "GRANT USAGE ON SCHEMA xip83 TO xip83_spoofer", 0, NULL));
	{
		char		conninfo[256];

		snprintf(conninfo, sizeof(conninfo), "dbname=%s user=xip83_spoofer", PQdb(c));
		h = PQconnectdb(conninfo);
		if (PQstatus(h) != CONNECTION_OK)
			tl_fatal("spoofer cannot connect: %s", PQerrorMessage(h));
	}

	run.opt.on_row = OnRow;
	run.opt.kinds = XIP83_FEED_GROUP | XIP83_FEED_ENVELOPE;
	run.opt.page_rows = 200;
	run.opt.offline_after_ms = 5000;
	run.step_ms = 50;
	pthread_create(&consumer, NULL, feedrun_thread, &run);
	for (int i = 0; i < 100 && atomic_load(&run.live) == 0; i++)
	{
		PQclear(tl_exec(c, "SELECT xip83.group_horizon()", 0, NULL));
		usleep(50000);
	}
	TL_CHECK(atomic_load(&run.live) > 0, "the feed went live");

	for (int round = 0; round < ROUNDS; round++)
	{
		char		sql[512];

		Spoof(h, round);
		PQclear(tl_exec(c, "INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash)"
						" SELECT '\\x0a', int8send(g), sha256('\\x0a'::bytea || int8send(g))"
						"   FROM generate_series(1, 5) g"
						" ON CONFLICT DO NOTHING", 0, NULL));
		snprintf(sql, sizeof(sql),
				 "INSERT INTO xip83.envelopes (originator_node_id, originator_sequence_id, topic,"
				 " originator_envelope) SELECT o, %d, '\\x03aa', int4send(o)"
				 " FROM generate_series(1, %d) o", round + 1, round < ROUNDS - 1 ? ORIGINATORS : ORIGINATORS + 1);
		PQclear(tl_exec(c, sql, 0, NULL));
		usleep(20000);
	}
	Spoof(h, ROUNDS);

	rows = tl_scalar(c, "SELECT (SELECT count(*) FROM xip83.group_messages)"
					 " + (SELECT count(*) FROM xip83.envelopes)");
	for (int i = 0; i < 200 && atomic_load(&delivered) < rows; i++)
		usleep(50000);
	usleep(300000);
	atomic_store(&run.stop, 1);
	pthread_join(consumer, NULL);

	TL_CHECK(atomic_load(&delivered) == rows, "every row delivered once: %lld of %lld",
			 (long long) atomic_load(&delivered), (long long) rows);
	TL_CHECK(atomic_load(&out_of_order) == 0, "in order (%lld not)", (long long) atomic_load(&out_of_order));
	r = tl_exec(c, "SELECT id FROM xip83.group_messages", 0, NULL);
	for (int i = 0; i < PQntuples(r); i++)
	{
		int64_t		id = tl_int(r, i, 0);

		missing += id >= (1 << 16) || group_seen[id] != 1;
	}
	PQclear(r);
	TL_CHECK(missing == 0, "each group message exactly once (%d not)", missing);
	missing = 0;
	for (int o = 1; o <= ORIGINATORS; o++)
		missing += seq_seen[o] != ROUNDS - 1 + (o <= ORIGINATORS);
	TL_CHECK(missing == 0 && seq_seen[ORIGINATORS + 1] == 1,
			 "every originator's envelopes, the new one's too (%d originators wrong)", missing);
	TL_CHECK(atomic_load(&run.offline) == 0, "forged notices never took the feed offline (%d times)",
			 atomic_load(&run.offline));
	PQfinish(h);
	PQclear(tl_exec(c, "REVOKE ALL ON SCHEMA xip83 FROM xip83_spoofer", 0, NULL));
	PQclear(tl_exec(c, "DROP ROLE xip83_spoofer", 0, NULL));
	PQfinish(c);
	return tl_done("t_spoofed_notice");
}
