/*
 * t_node_feed: a node's tables under fire, followed by xip83-tail and the Go
 * example (examples/go) side by side; both must report every committed row
 * exactly once.
 *
 * The tables are chosen by XIP83_NODE_TABLES (lib/nodes.h): the node schemas
 * of tests/nodes/ tracked with xip83.track, or xip83's own tables. 16 writers
 * go through the node's insert functions (a per-topic advisory lock, then
 * INSERT with the id default: ids commit out of order across topics) and the
 * node's envelope batch function (explicit sequence ids from a shared counter
 * per originator, so sequences commit out of order too), in transactions of
 * 1-4 calls with random commit delays. Along the way:
 *  - some transactions are rolled back on purpose; a rolled-back envelope
 *    batch is retried with the same ids, as a node retries a failed batch;
 *  - writers' backends are terminated mid-transaction (pg_terminate_backend)
 *    and retry, as does any transaction that failed (deadlocks included);
 *  - originators 1-4 start with their partitions of the first band, as a
 *    running node's tables have them; originator 2 starts just below the
 *    next band of 1,000,000 sequence ids and crosses it (the node's function
 *    creates that band while the writers run), and originators 5 and 6 start
 *    writing midway, their partitions created just before, while the
 *    writers run (CreatePartitions says why not by the writers);
 *  - the server is restarted (fast) midway; the consumers reconnect;
 *  - a late write is open while the consumers start and commits after.
 * Originator 1 starts at sequence 0 where the tables store it (a chain
 * originator). The consumers start once a fifth of the rows are written, so
 * xip83-tail replays from the start and the Go program pages a wave first.
 *
 * XIP83_NODE_ROWS sets the number of insert calls (default 20000).
 */
#include "testlib.h"
#include "delivery.h"
#include "nodes.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define WRITERS 16
#define ORIGINATORS 6			/* 1-4 from the start, 5 and 6 from midway */
#define GROUP_TOPICS 64
#define ENVELOPE_TOPICS 40
#define MAX_TRIES 600			/* with the backoff below, about a minute */

static NodeTables tables;
static int	group_versions;		/* insert function versions to rotate through */
static int64_t target_calls;
static atomic_llong calls_done;
static atomic_llong next_sequence[ORIGINATORS + 1];
static atomic_int open_originators = 4;
static atomic_int writers_done;
static atomic_llong rolled_back;	/* transactions rolled back on purpose */
static atomic_llong batches_retried;	/* of those, envelope batches retried */
static atomic_llong failed_attempts;	/* transactions that failed and were retried */
static atomic_llong given_up;

/* ---------------------------------------------------------------- writers */

typedef struct Call
{
	bool		envelope;
	char		topics[128];	/* a bytea, or a bytea[] literal */
	char		data[160];
	char		nodes[32];		/* int[] literal */
	char		sequences[80];	/* bigint[] literal */
	int			version;		/* the group insert function used */
} Call;

typedef struct Plan
{
	int			ncalls;
	Call		calls[4];
	bool		roll_back_first;
	bool		has_envelopes;
} Plan;

typedef TlWriter Writer;

/* One group message, or a batch of 1-3 envelopes of one originator with consecutive ids. */
static void
MakeCall(Writer *w, Call *c)
{
	c->envelope = rand_r(&w->seed) % 10 >= 6;
	if (!c->envelope)
	{
		snprintf(c->topics, sizeof(c->topics), "\\x0a%02x", rand_r(&w->seed) % GROUP_TOPICS);
		snprintf(c->data, sizeof(c->data), "\\x%04x%016llx%08x", w->id,
				 (long long) w->serial++, rand_r(&w->seed));
		c->version = rand_r(&w->seed) % group_versions;
		return;
	}
	{
		int			node = 1 + rand_r(&w->seed) % atomic_load(&open_originators);
		int			n = 1 + rand_r(&w->seed) % 3;
		int64_t		first = atomic_fetch_add(&next_sequence[node], n);
		size_t		lt = 1,
					ld = 1,
					ln = 1,
					ls = 1;

		strcpy(c->topics, "{");
		strcpy(c->data, "{");
		strcpy(c->nodes, "{");
		strcpy(c->sequences, "{");
		for (int i = 0; i < n; i++)
		{
			const char *sep = i ? "," : "";

			lt += snprintf(c->topics + lt, sizeof(c->topics) - lt, "%s\"\\\\x00%02x\"", sep,
						   rand_r(&w->seed) % ENVELOPE_TOPICS);
			ld += snprintf(c->data + ld, sizeof(c->data) - ld, "%s\"\\\\x%04x%016llx\"", sep,
						   w->id, (long long) w->serial++);
			ln += snprintf(c->nodes + ln, sizeof(c->nodes) - ln, "%s%d", sep, node);
			ls += snprintf(c->sequences + ls, sizeof(c->sequences) - ls, "%s%lld", sep,
						   (long long) (first + i));
		}
		strcat(c->topics, "}");
		strcat(c->data, "}");
		strcat(c->nodes, "}");
		strcat(c->sequences, "}");
	}
}

static void
MakePlan(Writer *w, Plan *p)
{
	p->ncalls = 1 + rand_r(&w->seed) % 4;
	p->has_envelopes = false;
	for (int i = 0; i < p->ncalls; i++)
	{
		MakeCall(w, &p->calls[i]);
		p->has_envelopes |= p->calls[i].envelope;
	}
	p->roll_back_first = rand_r(&w->seed) % 25 == 0;
}

static bool
Run(PGconn *c, const char *sql, int n, const char *const *params)
{
	PGresult   *r = PQexecParams(c, sql, n, NULL, params, NULL, NULL, 0);
	ExecStatusType st = PQresultStatus(r);

	PQclear(r);
	return st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK;
}

static PGconn *
WriterConnect(void)
{
	PGconn	   *c = tl_reconnect();

	/* how KillWriter finds writers */
	(void) Run(c, "SET application_name = 'node_writer'", 0, NULL);
	return c;
}

/* The plan in one transaction, committed or rolled back; whether that succeeded. */
static bool
Attempt(Writer *w, const Plan *p, bool commit)
{
	bool		ok = Run(w->conn, "BEGIN", 0, NULL);

	for (int i = 0; ok && i < p->ncalls; i++)
	{
		const Call *c = &p->calls[i];

		if (c->envelope)
		{
			const char *params[4] = {c->nodes, c->sequences, c->topics, c->data};

			ok = Run(w->conn, tables.envelope_insert, 4, params);
		}
		else
		{
			const char *params[2] = {c->topics, c->data};

			ok = Run(w->conn, tables.group_insert[c->version], 2, params);
		}
	}
	if (ok)
	{
		tl_sleep_us(rand_r(&w->seed) % 2000);	/* a random commit delay */
		ok = Run(w->conn, commit ? "COMMIT" : "ROLLBACK", 0, NULL);
	}
	if (PQstatus(w->conn) != CONNECTION_OK)
	{
		PQfinish(w->conn);
		w->conn = WriterConnect();
	}
	else if (PQtransactionStatus(w->conn) != PQTRANS_IDLE)
		(void) Run(w->conn, "ROLLBACK", 0, NULL);
	return ok;
}

static void *
WriterMain(void *arg)
{
	Writer	   *w = arg;
	Plan		plan;

	w->conn = WriterConnect();
	while (atomic_load(&calls_done) < target_calls)
	{
		int			tries = 0;

		MakePlan(w, &plan);
		if (plan.roll_back_first)
		{
			(void) Attempt(w, &plan, false);
			atomic_fetch_add(&rolled_back, 1);
			/* group messages rolled back are gone; a node retries a failed envelope batch */
			if (!plan.has_envelopes)
				continue;
			atomic_fetch_add(&batches_retried, 1);
		}
		while (!Attempt(w, &plan, true))
		{
			atomic_fetch_add(&failed_attempts, 1);
			if (++tries == MAX_TRIES)
			{
				atomic_fetch_add(&given_up, 1);
				break;
			}
			/* a fast restart on a loaded machine can take seconds: back off to 100 ms */
			tl_sleep_us(1000 * (tries < 100 ? tries : 100));
		}
		atomic_fetch_add(&calls_done, plan.ncalls);
	}
	PQfinish(w->conn);
	atomic_fetch_add(&writers_done, 1);
	return NULL;
}

/* Terminates a writer's backend while its transaction is open. */
static void
KillWriter(void)
{
	PGconn	   *c = tl_reconnect();

	for (int i = 0; i < 5000; i++)
	{
		PGresult   *r = tl_exec(c, "SELECT pid, pg_terminate_backend(pid) FROM pg_stat_activity"
								" WHERE application_name = 'node_writer'"
								" AND state = 'idle in transaction'"
								" AND datname = current_database() LIMIT 1", 0, NULL);
		int			hit = PQntuples(r);

		if (hit)
			fprintf(stderr, "terminated writer backend %s mid-transaction\n", PQgetvalue(r, 0, 0));
		PQclear(r);
		if (hit)
			break;
		tl_sleep_us(1000);
	}
	PQfinish(c);
}

/*
 * A late write held open while the consumers start: an envelope of
 * originator 3 rolled back, written again once the horizon has passed its
 * sequence (so the retry is a late write), and committed only after the
 * consumers have started. A consumer whose late cursor passed the open write
 * would find its row neither in its first snapshot nor in its late lane.
 */
static PGconn *
OpenLateWrite(void)
{
	PGconn	   *c = tl_reconnect();
	long long	seq = atomic_fetch_add(&next_sequence[3], 1);
	char		seqs[32];
	char		data[64];
	const char *params[4] = {"{3}", seqs, "{\"\\\\x0000\"}", data};
	const char *source[1] = {tables.envelope_source};
	int			tries = 0;

	snprintf(seqs, sizeof(seqs), "{%lld}", seq);
	snprintf(data, sizeof(data), "{\"\\\\xffff%016llx\"}", seq);
	if (!Run(c, "BEGIN", 0, NULL) || !Run(c, tables.envelope_insert, 4, params) ||
		!Run(c, "ROLLBACK", 0, NULL))
		tl_fatal("late write: the first attempt failed: %s", PQerrorMessage(c));
	for (;; tl_sleep_us(1000))
	{
		PGresult   *r = PQexecParams(c, "SELECT horizon FROM xip83.envelope_horizons("
									 "coalesce($1::regclass, 'xip83.envelopes'))"
									 " WHERE originator_node_id = 3", 1, NULL, source, NULL, NULL, 0);
		bool		passed = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 &&
			atoll(PQgetvalue(r, 0, 0)) >= seq;

		PQclear(r);
		if (passed)
			break;
		if (++tries == 30000)
			tl_fatal("late write: the horizon of originator 3 never passed %lld", seq);
	}
	if (!Run(c, "BEGIN", 0, NULL) || !Run(c, tables.envelope_insert, 4, params))
		tl_fatal("late write: the retry failed: %s", PQerrorMessage(c));
	fprintf(stderr, "late write 3:%lld open while the consumers start\n", seq);
	return c;
}

/* ---------------------------------------------------------------- consumers */

typedef struct Consumer
{
	const char *name;
	bool		envelopes;		/* follows envelopes, else group messages */
	char	   *argv[16];
	int			argc;
	pid_t		pid;
	char		out[300];
	char		err[300];
} Consumer;

static void
Arg(Consumer *c, const char *a)
{
	c->argv[c->argc++] = (char *) a;
	c->argv[c->argc] = NULL;
}

static void
Spawn(Consumer *c, const char *dir)
{
	snprintf(c->out, sizeof(c->out), "%s/%s.out", dir, c->name);
	snprintf(c->err, sizeof(c->err), "%s/%s.err", dir, c->name);
	c->pid = fork();
	if (c->pid < 0)
		tl_fatal("fork: %s", strerror(errno));
	if (c->pid == 0)
	{
		int			out = open(c->out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int			err = open(c->err, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (out < 0 || err < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
			_exit(126);
		execv(c->argv[0], c->argv);
		_exit(127);
	}
	fprintf(stderr, "started %s (pid %d): %s\n", c->name, (int) c->pid, c->argv[0]);
}

typedef struct Delivered
{
	Positions	p;
	long		lines;
	long		late;
	long		bad;			/* lines of the wrong kind or form */
} Delivered;

/*
 * Reads a consumer's lines: "group <topic> <id> <bytes>[ late]" or
 * "envelope <topic> <originator>:<sequence> <bytes>[ late]".
 */
static Delivered
ReadDelivered(const Consumer *c)
{
	Delivered	d = {0};
	FILE	   *f = fopen(c->out, "r");
	char		line[512];

	if (f == NULL)
		return d;
	while (fgets(line, sizeof(line), f))
	{
		char		kind[16];
		char		pos[64];
		int			node;
		long long	seq;

		if (strchr(line, '\n') == NULL)
			break;				/* a line still being written */
		d.lines++;
		if (strstr(line, " late\n"))
			d.late++;
		if (sscanf(line, "%15s %*s %63s", kind, pos) != 2)
			d.bad++;
		else if (c->envelopes && strcmp(kind, "envelope") == 0 &&
				 sscanf(pos, "%d:%lld", &node, &seq) == 2)
			positions_add(&d.p, nodes_envelope_key(node, seq));
		else if (!c->envelopes && strcmp(kind, "group") == 0)
			positions_add(&d.p, strtoll(pos, NULL, 10));
		else
			d.bad++;
	}
	fclose(f);
	return d;
}

static void
ShowFile(const char *path)
{
	char		cmd[400];

	snprintf(cmd, sizeof(cmd), "tail -n 20 '%s' >&2", path);
	if (system(cmd) != 0)
		fprintf(stderr, "(cannot show %s)\n", path);
}

/* ---------------------------------------------------------------- main */

/*
 * Creates the first band's partitions of originators [from, to] through the
 * node's function, in a transaction of its own. Left to the writers' batches,
 * a new originator's list partition can wait forever: a transaction of
 * several calls that holds the parent's lock from an earlier batch waits in
 * the node's function for the partition lock, whose holder waits for the
 * parent's lock; deadlock detection kills the creator, the next writer to
 * need the partition becomes the creator and meets the same cycle (CI saw a
 * deadlock a second for 15 min). Created here, no writer needs the partition
 * lock meanwhile, and the DDL only waits out the writers' open transactions.
 */
static void
CreatePartitions(PGconn *c, int from, int to)
{
	for (int o = from; o <= to; o++)
	{
		char		sql[96];

		snprintf(sql, sizeof(sql), "SELECT public.ensure_gateway_envelope_partitions(%d, 0)", o);
		PQclear(tl_exec(c, sql, 0, NULL));
	}
}

int
main(int argc, char **argv)
{
	const char *env = getenv("XIP83_NODE_ROWS");
	char		self[1024];
	const char *bindir;
	char		tail_path[1100];
	char		go_path[1100];
	char		dir[] = "/tmp/t_node_feed.XXXXXX";
	Consumer	consumers[4] = {
		{.name = "tail-group"}, {.name = "tail-envelope", .envelopes = true},
		{.name = "go-group"}, {.name = "go-envelope", .envelopes = true},
	};
	pthread_t	writers[WRITERS];
	Writer		w[WRITERS];
	PGconn	   *c;
	PGconn	   *late_write;
	Positions	stored_group;
	Positions	stored_env;
	char		cmd[1200];
	struct timespec t0, t1;
	bool		all_ok;

	(void) argc;
	target_calls = env ? atoll(env) : 20000;
	if (getenv("XIP83_PGCTL") == NULL)
		tl_fatal("XIP83_PGCTL is not set");
	/* both next to the test programs' directory: build/xip83-tail, build/xip83-go-node */
	snprintf(self, sizeof(self), "%s", argv[0]);
	bindir = dirname(self);
	snprintf(tail_path, sizeof(tail_path), "%s/../xip83-tail", bindir);
	snprintf(go_path, sizeof(go_path), "%s/../xip83-go-node", bindir);
	if (access(go_path, X_OK) != 0)
		tl_fatal("%s is missing: make test-programs builds it only where go is installed "
				 "(golang-go, golang-github-jackc-pgx-v4-dev)", go_path);
	if (mkdtemp(dir) == NULL)
		tl_fatal("mkdtemp: %s", strerror(errno));
	clock_gettime(CLOCK_MONOTONIC, &t0);

	c = tl_connect();
	tables = nodes_setup(c, nodes_mode_from_env());
	/* a running node's tables: originators 1-4 have their first band */
	if (tables.mode != NODE_OWN)
		CreatePartitions(c, 1, 4);
	PQfinish(c);
	fprintf(stderr, "tables: %s\n", tables.mode == NODE_OWN ? "xip83's own" : "node, tracked");
	while (group_versions < 3 && tables.group_insert[group_versions])
		group_versions++;
	for (int o = 1; o <= ORIGINATORS; o++)
		atomic_store(&next_sequence[o], o == 2 ? 999990 : o == 1 ? tables.first_sequence : 1);

	/* the same consumers for either kind of table: only the table arguments differ */
	for (int i = 0; i < 4; i++)
	{
		Consumer   *k = &consumers[i];
		bool		go = i >= 2;
		const char *source = k->envelopes ? tables.envelope_source : tables.group_source;

		Arg(k, go ? go_path : tail_path);
		Arg(k, go ? "-kind" : "--kinds");
		Arg(k, k->envelopes ? "envelope" : "group");
		if (!go)
			Arg(k, "--from-start");
		if (source)
		{
			Arg(k, go ? "-source" : "--source");
			Arg(k, source);
		}
		if (source && k->envelopes)
		{
			Arg(k, go ? "-blob-source" : "--blob-source");
			Arg(k, tables.envelope_blob);
		}
	}

	for (int i = 0; i < WRITERS; i++)
	{
		w[i] = (Writer) {.id = i, .seed = 1183 + i};
		pthread_create(&writers[i], NULL, WriterMain, &w[i]);
	}

	tl_wait_share(&calls_done, target_calls, 0.2, &writers_done, WRITERS);
	late_write = OpenLateWrite();
	for (int i = 0; i < 4; i++)
		Spawn(&consumers[i], dir);
	tl_sleep_us(1000000);		/* they read their start meanwhile */
	if (!Run(late_write, "COMMIT", 0, NULL))
		tl_fatal("late write: commit failed: %s", PQerrorMessage(late_write));
	PQfinish(late_write);
	tl_wait_share(&calls_done, target_calls, 0.3, &writers_done, WRITERS);
	KillWriter();
	tl_wait_share(&calls_done, target_calls, 0.4, &writers_done, WRITERS);
	fprintf(stderr, "originators 5 and 6 start writing\n");
	if (tables.mode != NODE_OWN)
	{
		/* their partitions created while the writers run, before any batch needs them */
		PGconn	   *ddl = tl_connect();

		CreatePartitions(ddl, 5, 6);
		PQfinish(ddl);
	}
	atomic_store(&open_originators, 6);
	KillWriter();
	tl_wait_share(&calls_done, target_calls, 0.6, &writers_done, WRITERS);
	fprintf(stderr, "restarting the server\n");
	tl_pgctl("restart -m fast");
	tl_wait_share(&calls_done, target_calls, 0.8, &writers_done, WRITERS);
	KillWriter();
	for (int i = 0; i < WRITERS; i++)
		pthread_join(writers[i], NULL);

	/* the tables are final now: wait for every consumer to deliver all of it */
	c = tl_reconnect();
	stored_group = positions_stored(c, tables.group_positions);
	stored_env = positions_stored(c, tables.envelope_positions);
	PQfinish(c);
	for (int t = 0; t < 1200; t++)
	{
		all_ok = true;
		for (int i = 0; i < 4; i++)
		{
			Delivered	d = ReadDelivered(&consumers[i]);

			all_ok &= (size_t) d.lines >= (consumers[i].envelopes ? stored_env.n : stored_group.n);
			free(d.p.pos);
		}
		if (all_ok)
			break;
		tl_sleep_us(100000);
	}
	tl_sleep_us(500000);			/* anything extra would show up now */
	clock_gettime(CLOCK_MONOTONIC, &t1);

	for (int i = 0; i < 4; i++)
	{
		Consumer   *k = &consumers[i];
		int			status;
		Delivered	d;
		bool		running = waitpid(k->pid, &status, WNOHANG) == 0;

		TL_CHECK(running, "%s still following at the end", k->name);
		if (running)
		{
			kill(k->pid, SIGTERM);
			waitpid(k->pid, &status, 0);
		}
		d = ReadDelivered(k);
		TL_CHECK(d.bad == 0, "%s: %ld lines not of its kind and form", k->name, d.bad);
		positions_check_once(k->name, &d.p, k->envelopes ? &stored_env : &stored_group);
		printf("%s: %ld rows, %ld late\n", k->name, d.lines, d.late);
		if (tl_failures > 0)
		{
			fprintf(stderr, "--- %s stderr (%s):\n", k->name, k->err);
			ShowFile(k->err);
		}
		free(d.p.pos);
	}
	TL_CHECK(atomic_load(&given_up) == 0, "%lld transactions failed %d times",
			 (long long) atomic_load(&given_up), MAX_TRIES);
	TL_CHECK(atomic_load(&batches_retried) > 0, "an envelope batch was rolled back and retried");
	TL_CHECK(stored_group.n > 0 && stored_env.n > 0, "rows committed");
	/* positions are sorted and originator 1 has the lowest keys: its first sequence leads */
	TL_CHECK(stored_env.n > 0 && stored_env.pos[0] == nodes_envelope_key(1, tables.first_sequence),
			 "originator 1's sequence %lld is stored (and was delivered above)",
			 (long long) tables.first_sequence);
	printf("t_node_feed (%s): %lld calls, %zu group messages and %zu envelopes committed, "
		   "%lld rolled back on purpose (%lld envelope batches retried), %lld failed attempts "
		   "retried, %.1f s\n", tables.mode == NODE_OWN ? "own tables" : "tracked node tables",
		   (long long) atomic_load(&calls_done), stored_group.n, stored_env.n,
		   (long long) atomic_load(&rolled_back), (long long) atomic_load(&batches_retried),
		   (long long) atomic_load(&failed_attempts),
		   (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	if (tl_failures == 0)
	{
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		(void) system(cmd);
	}
	else
		fprintf(stderr, "consumer output kept in %s\n", dir);
	return tl_done("t_node_feed");
}
