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
 *
 * Beside throughput, what the server spent: the CPU time of the postmaster
 * and all its processes (backends, notifier, WAL writer, checkpointer,
 * autovacuum; ns from /proc/PID/schedstat, reaped children from the
 * postmaster's cutime and cstime) from the moment every client is connected
 * to the moment every one has finished, per row written: what tracking costs
 * the machine, including the notifier and the WAL writer's work for it. It
 * moves with the disk less than throughput does, but not apart from it: a
 * slower run groups fewer commits into a flush, so each row costs more.
 * Printed only where /proc shows the server.
 *
 * XIP83_BENCH_SUMMARY_KB=n restarts the server with xip83.summary_memory = n
 * kB first (0: no topic summary), to compare the writers with and without it.
 */
#include "testlib.h"
#include "nodes.h"
#include "wave_d14n_fixture.h"

#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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
	double		cpu[MAX_ROUNDS];	/* server CPU µs per row; 0 when not known */
} Arm;

typedef struct Client
{
	int			id;
	const Arm  *arm;
	double		seconds;
	pthread_barrier_t *start;
	pthread_barrier_t *done;	/* after the last call, before disconnecting */
	long		rows;
} Client;

static atomic_llong next_sequence[5];
static long run_serial;
static long postmaster_pid;		/* 0 when /proc does not show the server */

/*
 * From /proc/PID/stat: the parent pid and the CPU seconds of the children it
 * reaped (cutime + cstime); false when the process is gone.
 */
static bool
StatFields(long pid, long *ppid, double *cutime_s)
{
	char		path[64];
	char		buf[1024];
	FILE	   *f;
	size_t		n;
	char	   *p;
	long		cutime,
				cstime;

	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	if ((f = fopen(path, "r")) == NULL)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	if ((p = strrchr(buf, ')')) == NULL ||
		sscanf(p + 2, "%*c %ld %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %ld %ld",
			   ppid, &cutime, &cstime) != 3)
		return false;
	*cutime_s = (double) (cutime + cstime) / sysconf(_SC_CLK_TCK);
	return true;
}

/* A process's time on a CPU so far (ns in /proc/PID/schedstat), in s; 0 when gone. */
static double
RunTime(long pid)
{
	char		path[64];
	FILE	   *f;
	unsigned long long ns = 0;

	snprintf(path, sizeof(path), "/proc/%ld/schedstat", pid);
	if ((f = fopen(path, "r")) == NULL)
		return 0;
	if (fscanf(f, "%llu", &ns) != 1)
		ns = 0;
	fclose(f);
	return ns / 1e9;
}

/* CPU seconds the server has used: the postmaster, its live children and those it reaped. */
static double
ServerCpu(void)
{
	DIR		   *d = opendir("/proc");
	struct dirent *e;
	long		ppid;
	double		reaped;
	double		total;

	if (d == NULL || !StatFields(postmaster_pid, &ppid, &reaped))
	{
		if (d != NULL)
			closedir(d);
		return -1;
	}
	total = RunTime(postmaster_pid) + reaped;
	while ((e = readdir(d)) != NULL)
	{
		long		pid = atol(e->d_name);
		double		ignored;

		if (pid > 0 && StatFields(pid, &ppid, &ignored) && ppid == postmaster_pid)
			total += RunTime(pid);
	}
	closedir(d);
	return total;
}

/* The postmaster of conn's backend, when it runs on this machine (0 when not). */
static void
FindPostmaster(PGconn *conn)
{
	long		backend = (long) tl_scalar(conn, "SELECT pg_backend_pid()");
	char		path[64];
	char		comm[32] = "";
	FILE	   *f;
	long		ppid;
	double		ignored;

	postmaster_pid = 0;
	snprintf(path, sizeof(path), "/proc/%ld/comm", backend);
	if ((f = fopen(path, "r")) == NULL)
		return;
	if (fgets(comm, sizeof(comm), f) == NULL)
		comm[0] = '\0';
	fclose(f);
	/* a server elsewhere: the pid is another process here, or none */
	if (strcmp(comm, "postgres\n") == 0 && StatFields(backend, &ppid, &ignored) &&
		RunTime(backend) > 0)
		postmaster_pid = ppid;
}

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
	/* connected until the server's CPU time is read */
	pthread_barrier_wait(c->done);
	PQfinish(conn);
	return NULL;
}

/* One timed run of an arm: rows per second over all clients, and server CPU µs per row into *cpu. */
static double
RunArm(const Arm *arm, double seconds, double *cpu)
{
	pthread_t	threads[CLIENTS];
	Client		clients[CLIENTS];
	pthread_barrier_t start;
	pthread_barrier_t done;
	long		rows = 0;
	double		t0;
	double		elapsed;
	double		cpu0;
	double		cpu1;

	run_serial++;
	pthread_barrier_init(&start, NULL, CLIENTS + 1);
	pthread_barrier_init(&done, NULL, CLIENTS + 1);
	for (int i = 0; i < CLIENTS; i++)
	{
		clients[i] = (Client) {.id = i, .arm = arm, .seconds = seconds, .start = &start,
		.done = &done};
		pthread_create(&threads[i], NULL, ClientMain, &clients[i]);
	}
	cpu0 = postmaster_pid ? ServerCpu() : -1;
	pthread_barrier_wait(&start);
	t0 = tl_now();
	pthread_barrier_wait(&done);
	elapsed = tl_now() - t0;
	cpu1 = postmaster_pid ? ServerCpu() : -1;
	for (int i = 0; i < CLIENTS; i++)
	{
		pthread_join(threads[i], NULL);
		rows += clients[i].rows;
	}
	pthread_barrier_destroy(&start);
	pthread_barrier_destroy(&done);
	*cpu = cpu0 >= 0 && cpu1 > cpu0 && rows > 0 ? (cpu1 - cpu0) * 1e6 / rows : 0;
	return rows / elapsed;
}

/*
 * The median over rounds of a's rate divided by b's, the rounds' ratios into
 * each, and into spread the geometric mean and its 90% confidence interval:
 * a disk whose flush time wanders makes single rounds swing by a fifth, and
 * the interval says whether the rounds resolve the target.
 */
static double
MedianRatio(const double *a, const double *b, int rounds, char *each, size_t len,
			char *spread, size_t spread_len)
{
	double		r[MAX_ROUNDS] = {0};
	size_t		off = 0;
	TlRatios	s;

	for (int i = 0; i < rounds; i++)
	{
		r[i] = a[i] / b[i];
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
 * A pair's lines: throughput a over b, then (when /proc showed the server in
 * every run) server CPU per row a over b.
 */
static void
PrintPair(const char *what, const Arm *a, const Arm *b, int rounds, const char *target)
{
	char		each[8 * MAX_ROUNDS];
	char		spread[96];
	double		m = MedianRatio(a->rate, b->rate, rounds, each, sizeof(each),
								spread, sizeof(spread));
	bool		have_cpu = true;

	printf("%s = %.3f  (%s%s)\n  rounds: %s\n", what, m, spread, target, each);
	tl_result("bench_node_writers", "pair=%s", "throughput_ratio", m, "ratio", what);
	for (int i = 0; i < rounds; i++)
		have_cpu &= a->cpu[i] > 0 && b->cpu[i] > 0;
	if (!have_cpu)
		return;
	m = MedianRatio(a->cpu, b->cpu, rounds, each, sizeof(each), spread, sizeof(spread));
	printf("  server CPU a row, %s: %.3f  (%s)\n  rounds: %s\n",
		   a->track >= 0 ? "tracked / untracked" : "xip83 / plain", m, spread, each);
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

/*
 * With XIP83_BENCH_SUMMARY_KB set, restarts the server with that
 * xip83.summary_memory first (0: no topic summary), to see what the summary
 * costs the writers; returns the connection to use.
 */
static PGconn *
WithSummaryMemory(PGconn *conn)
{
	const char *kb = getenv("XIP83_BENCH_SUMMARY_KB");
	char		args[128];

	if (kb == NULL || *kb == '\0')
		return conn;
	PQfinish(conn);
	/* -o every time: a bare restart would reuse the previous start's options */
	snprintf(args, sizeof(args), "restart -m fast -o '-c xip83.summary_memory=%d'", atoi(kb));
	tl_pgctl(args);
	printf("xip83.summary_memory = %d kB\n", atoi(kb));
	return tl_connect();
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
	conn = WithSummaryMemory(conn);
	FindPostmaster(conn);
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
			arm->rate[r] = RunArm(arm, seconds, &arm->cpu[r]);
			printf("  round %d  %-36s %9.0f rows/s", r + 1, arm->name, arm->rate[r]);
			if (arm->cpu[r] > 0)
				printf("  %7.1f µs server CPU a row", arm->cpu[r]);
			printf("\n");
			fflush(stdout);
		}
	if (can_track && PairChosen(0))
		PrintPair("v3 node table, tracked / untracked   ", &arms[1], &arms[0], rounds,
				  "; target >= 0.95");
	if (can_track && PairChosen(1))
		PrintPair("d14n node tables, tracked / untracked", &arms[3], &arms[2], rounds,
				  "; target >= 0.95");
	if (PairChosen(2))
		PrintPair("xip83.group_messages / plain copy    ", &arms[4], &arms[5], rounds, "");
	PQfinish(conn);
	return 0;
}
