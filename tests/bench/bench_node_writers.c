/*
 * bench_node_writers: what tracking costs a node's writers.
 *
 *   bench_node_writers [seconds per run [rounds]]   defaults 8, 3
 *
 * 16 clients write for a fixed time, one call per transaction (fsync on in
 * the bench cluster), through the node's own insert functions of
 * tests/nodes/: insert_group_message_v3 into public.group_messages, and
 * insert_gateway_envelopes (batches of 8) into the partitioned
 * gateway_envelopes_meta/blob. Each runs with the tables untracked and
 * tracked (xip83.track; skipped, and said so, where the extension has no
 * track yet). Alongside, the same v3 writes (per-topic advisory lock, then
 * INSERT with the id default) into xip83.group_messages against a plain copy
 * of it without xip83's id default and trigger. The two runs of a pair go
 * back to back, in the other order every other round (so a drift of the
 * machine's speed does not favour one), round after round; a ratio is the
 * median of the rounds' ratios, printed with their geometric mean and its
 * 90% confidence interval. A CHECKPOINT precedes every run.
 */
#include "testlib.h"
#include "nodes.h"
#include "wave_d14n_fixture.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CLIENTS 16
#define BATCH 8
#define TOPICS 1000
#define MAX_ROUNDS 64

typedef struct Arm
{
	const char *name;
	const char *sql;			/* one call: $1 topic, $2 data, or an envelope batch */
	bool		envelopes;
	int			track;			/* -1 leave, 0 untracked, 1 tracked */
	double		rate[MAX_ROUNDS];	/* rows per second */
} Arm;

typedef struct Client
{
	int			id;
	const Arm  *arm;
	double		seconds;
	pthread_barrier_t *start;
	long		rows;
} Client;

static atomic_llong next_sequence[5];
static long run_serial;

static void *
ClientMain(void *arg)
{
	Client	   *c = arg;
	PGconn	   *conn = tl_connect();
	unsigned int seed = 7 + c->id;
	char		topic[600];
	char		data[1200];
	char		nodes[64];
	char		seqs[256];
	double		end;

	pthread_barrier_wait(c->start);
	end = tl_now() + c->seconds;
	for (long i = 0; tl_now() < end; i++)
	{
		PGresult   *r;

		if (!c->arm->envelopes)
		{
			const char *params[2] = {topic, data};

			snprintf(topic, sizeof(topic), "\\x0a%06x", rand_r(&seed) % TOPICS);
			/* 256 bytes, unique across runs */
			snprintf(data, sizeof(data), "\\x%08lx%04x%016lx%0*d", run_serial, c->id, i, 484, 0);
			r = PQexecParams(conn, c->arm->sql, 2, NULL, params, NULL, NULL, 0);
		}
		else
		{
			int			node = 1 + rand_r(&seed) % 4;
			int64_t		first = atomic_fetch_add(&next_sequence[node], BATCH);
			size_t		lt = 1,
						ld = 1,
						ln = 1,
						ls = 1;
			const char *params[4] = {nodes, seqs, topic, data};

			strcpy(topic, "{");
			strcpy(data, "{");
			strcpy(nodes, "{");
			strcpy(seqs, "{");
			for (int k = 0; k < BATCH; k++)
			{
				const char *sep = k ? "," : "";

				lt += snprintf(topic + lt, sizeof(topic) - lt, "%s\"\\\\x00%06x\"", sep,
							   rand_r(&seed) % TOPICS);
				ld += snprintf(data + ld, sizeof(data) - ld, "%s\"\\\\x%0*d\"", sep, 120, k);
				ln += snprintf(nodes + ln, sizeof(nodes) - ln, "%s%d", sep, node);
				ls += snprintf(seqs + ls, sizeof(seqs) - ls, "%s%lld", sep,
							   (long long) (first + k));
			}
			strcat(topic, "}");
			strcat(data, "}");
			strcat(nodes, "}");
			strcat(seqs, "}");
			r = PQexecParams(conn, c->arm->sql, 4, NULL, params, NULL, NULL, 0);
		}
		if (PQresultStatus(r) != PGRES_TUPLES_OK && PQresultStatus(r) != PGRES_COMMAND_OK)
			tl_fatal("%s: %s", c->arm->name, PQerrorMessage(conn));
		PQclear(r);
		c->rows += c->arm->envelopes ? BATCH : 1;
	}
	PQfinish(conn);
	return NULL;
}

/* One timed run of an arm: rows per second over all clients. */
static double
RunArm(const Arm *arm, double seconds)
{
	pthread_t	threads[CLIENTS];
	Client		clients[CLIENTS];
	pthread_barrier_t start;
	long		rows = 0;
	double		t0;

	run_serial++;
	pthread_barrier_init(&start, NULL, CLIENTS + 1);
	for (int i = 0; i < CLIENTS; i++)
	{
		clients[i] = (Client) {.id = i, .arm = arm, .seconds = seconds, .start = &start};
		pthread_create(&threads[i], NULL, ClientMain, &clients[i]);
	}
	pthread_barrier_wait(&start);
	t0 = tl_now();
	for (int i = 0; i < CLIENTS; i++)
	{
		pthread_join(threads[i], NULL);
		rows += clients[i].rows;
	}
	pthread_barrier_destroy(&start);
	return rows / (tl_now() - t0);
}

/*
 * The median over rounds of a's rate divided by b's, the rounds' ratios into
 * each, and into spread the geometric mean and its 90% confidence interval:
 * a disk whose flush time wanders makes single rounds swing by a fifth, and
 * the interval says whether the rounds resolve the target.
 */
static double
MedianRatio(const Arm *a, const Arm *b, int rounds, char *each, size_t len,
			char *spread, size_t spread_len)
{
	double		r[MAX_ROUNDS] = {0};
	size_t		off = 0;
	TlRatios	s;

	for (int i = 0; i < rounds; i++)
	{
		r[i] = a->rate[i] / b->rate[i];
		off += snprintf(each + off, len - off, "%s%.3f", i ? " " : "", r[i]);
	}
	s = tl_ratios(r, rounds);
	if (rounds > 1)
		snprintf(spread, spread_len, "geometric mean %.3f, 90%% interval %.3f-%.3f",
				 s.gmean, s.lo, s.hi);
	else
		snprintf(spread, spread_len, "one round: no interval");
	return s.median;
}

/*
 * Whether pair p (0 v3, 1 d14n, 2 xip83's table) runs: all of them, or those
 * XIP83_BENCH_PAIRS names ("v3,d14n,own"), to measure one at more rounds.
 */
static bool
PairChosen(int p)
{
	static const char *const names[] = {"v3", "d14n", "own"};
	const char *only = getenv("XIP83_BENCH_PAIRS");

	return only == NULL || *only == '\0' || strstr(only, names[p]) != NULL;
}

int
main(int argc, char **argv)
{
	double		seconds = argc > 1 ? atof(argv[1]) : 8;
	int			rounds = argc > 2 ? atoi(argv[2]) : 3;
	PGconn	   *conn = tl_connect();
	NodeTables	node;
	NodeTables	own;
	bool		can_track;
	int			tracked_state = 0;
	char		each[8 * MAX_ROUNDS];
	char		spread[96];
	Arm			arms[] = {
		{.name = "v3 node table, untracked", .track = 0},
		{.name = "v3 node table, tracked", .track = 1},
		{.name = "d14n node tables, untracked", .envelopes = true, .track = 0},
		{.name = "d14n node tables, tracked", .envelopes = true, .track = 1},
		{.name = "xip83.group_messages", .track = -1},
		{.name = "plain copy of xip83.group_messages", .track = -1},
	};
	int			narms = sizeof(arms) / sizeof(arms[0]);

	if (seconds <= 0 || rounds < 1 || rounds > MAX_ROUNDS)
		tl_fatal("usage: bench_node_writers [seconds per run [rounds (1-%d)]]", MAX_ROUNDS);
	node = nodes_setup(conn, NODE_UNTRACKED);
	own = nodes_setup(conn, NODE_OWN);
	can_track = tl_scalar(conn, "SELECT (to_regprocedure('xip83.track(regclass, text, regclass)')"
						  " IS NOT NULL)::int") == 1;
	/* xip83's table without what xip83 adds to it: a plain sequence default, no trigger */
	wd_exec_script(conn, "CREATE TABLE public.plain_group_messages"
					" (LIKE xip83.group_messages INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING INDEXES);"
					" CREATE SEQUENCE public.plain_group_messages_id_seq"
					" OWNED BY public.plain_group_messages.id;"
					" ALTER TABLE public.plain_group_messages ALTER COLUMN id"
					" SET DEFAULT nextval('public.plain_group_messages_id_seq')");
	arms[0].sql = arms[1].sql = node.group_insert[2];
	arms[2].sql = arms[3].sql = node.envelope_insert;
	arms[4].sql = own.group_insert[0];
	{
		/* the same statement on the plain copy */
		static char plain[1024];
		const char *from = own.group_insert[0];
		const char *at = strstr(from, "xip83.group_messages");

		snprintf(plain, sizeof(plain), "%.*spublic.plain_group_messages%s", (int) (at - from), from,
				 at + strlen("xip83.group_messages"));
		arms[5].sql = plain;
	}
	for (int o = 1; o <= 4; o++)
		atomic_store(&next_sequence[o], 1);
	if (!can_track)
		printf("xip83.track is not installed: the tracked runs are skipped\n");

	printf("%d clients, %.0f s per run, %d interleaved rounds, one call per transaction\n",
		   CLIENTS, seconds, rounds);
	for (int r = 0; r < rounds; r++)
		for (int i = 0; i < narms; i++)
		{
			/* pairs (0,1), (2,3), (4,5) in turn, every other round the other way round */
			Arm		   *arm = &arms[r % 2 ? i ^ 1 : i];

			if (arm->track == 1 && !can_track)
				continue;
			if (!PairChosen(i / 2))
				continue;
			if (arm->track >= 0 && can_track && arm->track != tracked_state)
			{
				nodes_track(conn, arm->track == 1);
				tracked_state = arm->track;
			}
			PQclear(tl_exec(conn, "CHECKPOINT", 0, NULL));
			arm->rate[r] = RunArm(arm, seconds);
			printf("  round %d  %-36s %9.0f rows/s\n", r + 1, arm->name, arm->rate[r]);
			fflush(stdout);
		}
	if (can_track && PairChosen(0))
	{
		double		m = MedianRatio(&arms[1], &arms[0], rounds, each, sizeof(each),
									spread, sizeof(spread));

		printf("v3 node table, tracked / untracked    = %.3f  (%s; target >= 0.95)\n"
			   "  rounds: %s\n", m, spread, each);
	}
	if (can_track && PairChosen(1))
	{
		double		m = MedianRatio(&arms[3], &arms[2], rounds, each, sizeof(each),
									spread, sizeof(spread));

		printf("d14n node tables, tracked / untracked = %.3f  (%s; target >= 0.95)\n"
			   "  rounds: %s\n", m, spread, each);
	}
	if (PairChosen(2))
	{
		double		m = MedianRatio(&arms[4], &arms[5], rounds, each, sizeof(each),
									spread, sizeof(spread));

		printf("xip83.group_messages / plain copy     = %.3f  (%s)\n  rounds: %s\n",
			   m, spread, each);
	}
	PQfinish(conn);
	return 0;
}
