/*
 * t_live_feed: the live feed under fire. 16 writers insert group messages,
 * welcomes and envelopes in transactions of 1-4 rows with random commit
 * delays (so ids commit out of order), while one consumer follows the feed
 * with the feed library (the code behind xip83-tail). Midway one writer is
 * terminated with a row in flight, the server is restarted (fast), and a
 * writer's backend is killed with SIGKILL mid-transaction (crash restart).
 * At the end every committed row must have been delivered exactly once, in
 * id order per kind and sequence order per originator, and the consumer must
 * have reported the outage and its end.
 *
 * Envelopes: writers share 4 originators and take sequence ids from a shared
 * counter, so one originator's sequences also commit out of order, and some
 * arrive after their originator's horizon passed them: those are late
 * writes, stored and delivered once through the late lane, flagged late and
 * below a position delivered before them; every other row arrives in order.
 *
 * XIP83_LIVE_MESSAGES sets the number of rows written (default 100000).
 */
#include "testlib.h"
#include "delivery.h"
#include "feedrun.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define WRITERS 16
#define ORIGINATORS 4

static int64_t target_rows;
static atomic_llong rows_attempted;
static atomic_llong envelopes_refused;
static atomic_llong next_sequence[ORIGINATORS + 1];
static atomic_int writers_done;

/* phases driven by main */
static atomic_int hold_request;		/* writer 0: hold a transaction open */
static atomic_int holding_pid;		/* its backend pid while holding */
static atomic_int release_hold;

/* what the consumer saw */
typedef struct Seen
{
	int64_t		high;			/* highest position delivered */
	Positions	p;
} Seen;

static Seen seen_group;
static Seen seen_welcome;
static Seen seen_env[ORIGINATORS + 1];
static atomic_llong consumed;
static atomic_llong late_rows;
static long order_violations;
static FeedRun run;

/*
 * Appends a position, counting any that does not ascend; a late row must lie
 * below one delivered before it (that is what late means), the others ascend.
 */
static void
SeenAdd(Seen *s, int64_t pos, bool late)
{
	if (late ? s->high <= pos : s->p.n > 0 && pos <= s->high)
		order_violations++;
	if (pos > s->high)
		s->high = pos;
	positions_add(&s->p, pos);
}

static void
OnRow(void *arg, const Xip83FeedRow *row)
{
	(void) arg;
	if (row->late)
		atomic_fetch_add(&late_rows, 1);
	if (row->kind == XIP83_FEED_GROUP)
		SeenAdd(&seen_group, row->position, row->late);
	else if (row->kind == XIP83_FEED_WELCOME)
		SeenAdd(&seen_welcome, row->position, row->late);
	else if (row->originator_node_id >= 1 && row->originator_node_id <= ORIGINATORS)
		SeenAdd(&seen_env[row->originator_node_id], row->position, row->late);
	else
		order_violations++;
	atomic_fetch_add(&consumed, 1);
}

/* Runs a statement; false if it failed (the caller rolls back or reconnects). */
static bool
Run(PGconn *c, const char *sql, int n, const char *const *params, const char **sqlstate)
{
	PGresult   *r = PQexecParams(c, sql, n, NULL, params, NULL, NULL, 0);
	ExecStatusType st = PQresultStatus(r);
	bool		ok = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK;
	static __thread char state[6];

	state[0] = '\0';
	if (!ok && PQresultErrorField(r, PG_DIAG_SQLSTATE))
		snprintf(state, sizeof(state), "%s", PQresultErrorField(r, PG_DIAG_SQLSTATE));
	if (sqlstate)
		*sqlstate = state;
	PQclear(r);
	return ok;
}

typedef TlWriter Writer;

/* Inserts one random row in the open transaction. */
static bool
InsertOne(Writer *w, const char **sqlstate)
{
	char		topic[32];
	char		data[64];
	char		node[8];
	char		seq[24];
	const char *params[4];
	int			kind = rand_r(&w->seed) % 10;

	snprintf(topic, sizeof(topic), "\\x%02x%02x", rand_r(&w->seed) % 50, w->id);
	snprintf(data, sizeof(data), "\\x%04x%016llx%08x", w->id, (long long) w->serial++,
			 rand_r(&w->seed));
	params[0] = topic;
	params[1] = data;
	if (kind < 6)
		return Run(w->conn, "INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash)"
				   " VALUES ($1, $2, sha256($1::bytea || $2::bytea))", 2, params, sqlstate);
	if (kind < 8)
		return Run(w->conn, "INSERT INTO xip83.welcome_messages"
				   " (installation_key, data, installation_key_data_hash)"
				   " VALUES ($1, $2, sha256($1::bytea || $2::bytea))", 2, params, sqlstate);
	{
		int			o = 1 + rand_r(&w->seed) % ORIGINATORS;

		snprintf(node, sizeof(node), "%d", o);
		snprintf(seq, sizeof(seq), "%lld", (long long) atomic_fetch_add(&next_sequence[o], 1));
		params[0] = node;
		params[1] = seq;
		params[2] = topic;
		params[3] = data;
		return Run(w->conn, "INSERT INTO xip83.envelopes"
				   " (originator_node_id, originator_sequence_id, topic, originator_envelope)"
				   " VALUES ($1, $2, $3, $4)", 4, params, sqlstate);
	}
}

/* Writer 0 on request: a transaction with a row, held open until released (or killed). */
static void
HoldTransaction(Writer *w)
{
	const char *state;

	atomic_store(&hold_request, 0);
	if (!Run(w->conn, "BEGIN", 0, NULL, NULL) || !InsertOne(w, &state))
		return;
	atomic_store(&holding_pid, PQbackendPID(w->conn));
	while (!atomic_load(&release_hold))
		tl_sleep_us(1000);
	atomic_store(&release_hold, 0);
	(void) Run(w->conn, "COMMIT", 0, NULL, NULL);
}

static void *
WriterMain(void *arg)
{
	Writer	   *w = arg;

	w->conn = tl_reconnect();
	while (atomic_load(&rows_attempted) < target_rows)
	{
		int			rows = 1 + rand_r(&w->seed) % 4;
		bool		ok;
		const char *state = "";

		if (w->id == 0 && atomic_load(&hold_request))
			HoldTransaction(w);
		else
		{
			ok = Run(w->conn, "BEGIN", 0, NULL, NULL);
			for (int i = 0; ok && i < rows; i++)
			{
				ok = InsertOne(w, &state);
				atomic_fetch_add(&rows_attempted, 1);
			}
			if (ok)
			{
				tl_sleep_us(rand_r(&w->seed) % 2000);	/* a random commit delay */
				ok = Run(w->conn, "COMMIT", 0, NULL, NULL);
			}
			else if (strcmp(state, "55000") == 0)
				atomic_fetch_add(&envelopes_refused, 1);
		}
		if (PQstatus(w->conn) != CONNECTION_OK)
		{
			PQfinish(w->conn);
			w->conn = tl_reconnect();
		}
		else if (PQtransactionStatus(w->conn) != PQTRANS_IDLE)
			(void) Run(w->conn, "ROLLBACK", 0, NULL, NULL);
	}
	PQfinish(w->conn);
	atomic_fetch_add(&writers_done, 1);
	return NULL;
}

/* Makes writer 0 hold a row open, then kills its backend: SIGTERM or SIGKILL. */
static void
KillHeldWriter(bool crash)
{
	PGconn	   *c;
	char		sql[96];
	int			pid;

	atomic_store(&holding_pid, 0);
	atomic_store(&hold_request, 1);
	while ((pid = atomic_load(&holding_pid)) == 0 && atomic_load(&writers_done) < WRITERS)
		tl_sleep_us(1000);
	if (pid == 0)
		return;
	tl_sleep_us(300000);			/* others commit past the held id meanwhile */
	if (crash)
	{
		fprintf(stderr, "killing backend %d with SIGKILL (crash restart)\n", pid);
		TL_CHECK(kill(pid, SIGKILL) == 0, "kill -9 %d", pid);
	}
	else
	{
		fprintf(stderr, "terminating backend %d mid-transaction\n", pid);
		c = tl_reconnect();
		snprintf(sql, sizeof(sql), "SELECT pg_terminate_backend(%d)", pid);
		PQclear(tl_exec(c, sql, 0, NULL));
		PQfinish(c);
	}
	atomic_store(&release_hold, 1);
}

int
main(void)
{
	pthread_t	consumer;
	pthread_t	writers[WRITERS];
	Writer		w[WRITERS];
	const char *env = getenv("XIP83_LIVE_MESSAGES");
	const char *pgctl = getenv("XIP83_PGCTL");
	PGconn	   *c;
	int64_t		stored_total = 0;
	Positions	stored_group;
	Positions	stored_welcome;
	Positions	stored_env[ORIGINATORS + 1];
	char		cmd[1024];
	struct timespec t0, t1;

	target_rows = env ? atoll(env) : 100000;
	if (pgctl == NULL)
		tl_fatal("XIP83_PGCTL is not set");
	for (int o = 1; o <= ORIGINATORS; o++)
		atomic_store(&next_sequence[o], 1);
	clock_gettime(CLOCK_MONOTONIC, &t0);

	run.opt.on_row = OnRow;
	run.opt.page_rows = 500;
	run.opt.offline_after_ms = 3000;
	run.step_ms = 100;
	pthread_create(&consumer, NULL, feedrun_thread, &run);
	for (int i = 0; i < WRITERS; i++)
	{
		w[i].id = i;
		w[i].seed = 83 + i;
		w[i].serial = 0;
		pthread_create(&writers[i], NULL, WriterMain, &w[i]);
	}

	tl_wait_share(&rows_attempted, target_rows, 0.25, &writers_done, WRITERS);
	KillHeldWriter(false);
	tl_wait_share(&rows_attempted, target_rows, 0.5, &writers_done, WRITERS);
	fprintf(stderr, "restarting the server\n");
	snprintf(cmd, sizeof(cmd), "%s restart -m fast >/dev/null", pgctl);
	TL_CHECK(system(cmd) == 0, "server restart");
	tl_wait_share(&rows_attempted, target_rows, 0.75, &writers_done, WRITERS);
	KillHeldWriter(true);

	for (int i = 0; i < WRITERS; i++)
		pthread_join(writers[i], NULL);

	/* the table is final now; wait for the consumer to deliver all of it */
	c = tl_reconnect();
	stored_group = positions_stored(c, "SELECT id FROM xip83.group_messages ORDER BY id");
	stored_welcome = positions_stored(c, "SELECT id FROM xip83.welcome_messages ORDER BY id");
	stored_total = (int64_t) (stored_group.n + stored_welcome.n);
	for (int o = 1; o <= ORIGINATORS; o++)
	{
		char		sql[128];

		snprintf(sql, sizeof(sql), "SELECT originator_sequence_id FROM xip83.envelopes"
				 " WHERE originator_node_id = %d ORDER BY 1", o);
		stored_env[o] = positions_stored(c, sql);
		stored_total += (int64_t) stored_env[o].n;
	}
	for (int i = 0; i < 600 && atomic_load(&consumed) < stored_total; i++)
		tl_sleep_us(100000);
	tl_sleep_us(300000);			/* anything extra would show up now */
	atomic_store(&run.stop, 1);
	pthread_join(consumer, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);

	positions_check_once("group messages", &seen_group.p, &stored_group);
	positions_check_once("welcomes", &seen_welcome.p, &stored_welcome);
	for (int o = 1; o <= ORIGINATORS; o++)
	{
		char		what[32];

		snprintf(what, sizeof(what), "originator %d", o);
		positions_check_once(what, &seen_env[o].p, &stored_env[o]);
	}
	TL_CHECK(order_violations == 0, "%ld rows out of order", order_violations);
	TL_CHECK(atomic_load(&run.offline) >= 1, "the consumer reported the outage");
	TL_CHECK(atomic_load(&run.late_lost) == 0, "no late write was lost to a restart (%d reports)",
			 atomic_load(&run.late_lost));
	TL_CHECK(atomic_load(&run.back) >= 1, "the consumer reported the feed back");
	TL_CHECK(stored_total > target_rows / 2, "most rows committed (%lld)", (long long) stored_total);
	TL_CHECK(atomic_load(&envelopes_refused) == 0, "no write refused (%lld were)",
			 (long long) atomic_load(&envelopes_refused));
	printf("t_live_feed: %lld rows attempted, %lld committed, %lld delivered late, %.1f s\n",
		   (long long) atomic_load(&rows_attempted), (long long) stored_total,
		   (long long) atomic_load(&late_rows),
		   (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	PQfinish(c);
	return tl_done("t_live_feed");
}
