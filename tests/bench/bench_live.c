/*
 * bench_live: the live feed's three comparisons, side by side in one run.
 *
 *   1. Writers: 16 clients, single-row transactions, synchronous_commit on.
 *      Inserts/s into a plain table of the same layout (no feed), into
 *      xip83.group_messages with the feed running and xip83-tail following,
 *      and into a plain table with a per-row pg_notify trigger and a listener.
 *   2. Latency from commit (acknowledged to the writer) to xip83-tail's print
 *      of the row, p50 and p99, at 500, 2,000, 5,000 and 10,000 rows/s.
 *   3. Misses: writers with random commit delays, read by today's node loop
 *      (poll every 25 ms, id > last ORDER BY id LIMIT 500) and by xip83-tail.
 *
 * usage: bench_live [--scale F] [--tail PATH] [--only writers|latency|misses]
 *        (scale multiplies durations)
 * Run with: bash tests/driver.sh bench bench_live
 * Each figure is also printed as a RESULT line (tl_result) for docs/performance.md.
 */
#include "testlib.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CLIENTS 16

static double scale = 1.0;
static pid_t running_tail = 0;	/* killed at exit, whatever the exit */
static int64_t salt;			/* keeps payloads of separate runs apart */
static const char *tail_path = "build/xip83-tail";

/* Monotonic microseconds. */
static int64_t
NowUs(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void
SleepUs(int64_t us)
{
	struct timespec ts;

	if (us <= 0)
		return;
	ts.tv_sec = us / 1000000;
	ts.tv_nsec = (us % 1000000) * 1000;
	nanosleep(&ts, NULL);
}

static int64_t
ScalarInt(PGconn *c, const char *sql)
{
	PGresult   *r = tl_exec(c, sql, 0, NULL);
	int64_t		v = PQgetisnull(r, 0, 0) ? 0 : tl_int(r, 0, 0);

	PQclear(r);
	return v;
}

/* Runs several statements at once (simple query protocol). */
static void
ExecScript(PGconn *c, const char *sql)
{
	PGresult   *r = PQexec(c, sql);

	if (PQresultStatus(r) != PGRES_COMMAND_OK)
		tl_fatal("%s", PQerrorMessage(c));
	PQclear(r);
}

/* ---------------------------------------------------------------- xip83-tail */

typedef struct Tail
{
	pid_t		pid;
	FILE	   *out;
} Tail;

/* Starts xip83-tail on group messages after an id, its stdout piped to us. */
static Tail
TailStart(int64_t after, bool timestamps)
{
	int			fds[2];
	Tail		t;
	char		after_s[32];

	snprintf(after_s, sizeof(after_s), "%lld", (long long) after);
	if (pipe(fds) != 0)
		tl_fatal("pipe: %s", strerror(errno));
	t.pid = fork();
	if (t.pid == 0)
	{
		char	   *args[12];
		int			n = 0;

		args[n++] = "xip83-tail";
		args[n++] = "--kinds";
		args[n++] = "group";
		args[n++] = "--group-after";
		args[n++] = after_s;
		args[n++] = "--offline-ms";
		args[n++] = "5000";
		if (timestamps)
			args[n++] = "--timestamps";
		args[n] = NULL;
		dup2(fds[1], 1);
		close(fds[0]);
		close(fds[1]);
		execv(tail_path, args);
		_exit(127);
	}
	close(fds[1]);
	running_tail = t.pid;
	t.out = fdopen(fds[0], "r");
	return t;
}

/* Leaves no xip83-tail behind. */
static void
KillTail(void)
{
	if (running_tail > 0)
		kill(running_tail, SIGTERM);
}

static void
TailStop(Tail *t)
{
	kill(t->pid, SIGTERM);
	waitpid(t->pid, NULL, 0);
	running_tail = 0;
	fclose(t->out);
}

/* ---------------------------------------------------------------- 1. writers */

typedef struct ThroughputRun
{
	const char *table;
	atomic_llong rows;
	atomic_int stop;
	atomic_llong serial;
} ThroughputRun;

static void *
ThroughputClient(void *arg)
{
	ThroughputRun *run = arg;
	PGconn	   *c = tl_connect();
	char		sql[256];

	snprintf(sql, sizeof(sql),
			 "INSERT INTO %s (group_id, data, group_id_data_hash)"
			 " VALUES ($1, $2, sha256($1::bytea || $2::bytea))", run->table);
	PQclear(tl_exec(c, "SET synchronous_commit = on", 0, NULL));
	while (!atomic_load(&run->stop))
	{
		char		g[16];
		char		d[600];
		const char *params[2] = {g, d};
		long long	n = atomic_fetch_add(&run->serial, 1);
		int			p;

		snprintf(g, sizeof(g), "\\x%04llx", n % 20000);
		p = snprintf(d, sizeof(d), "\\x%016llx", n);
		for (int i = 0; i < 248; i++)
			p += snprintf(d + p, sizeof(d) - p, "%02x", i);
		PQclear(tl_exec(c, sql, 2, params));
		atomic_fetch_add(&run->rows, 1);
	}
	PQfinish(c);
	return NULL;
}

/* Listener of the pg_notify anchor: drains its notifications. */
static atomic_int listener_stop;
static atomic_llong listener_heard;

static void *
NotifyListener(void *arg)
{
	PGconn	   *c = tl_connect();

	(void) arg;
	PQclear(tl_exec(c, "LISTEN bench_live", 0, NULL));
	while (!atomic_load(&listener_stop))
	{
		PGnotify   *n;

		SleepUs(1000);
		PQconsumeInput(c);
		while ((n = PQnotifies(c)) != NULL)
		{
			atomic_fetch_add(&listener_heard, 1);
			PQfreemem(n);
		}
	}
	PQfinish(c);
	return NULL;
}

/* Inserts/s of 16 single-row clients into a table for a while. */
static double
MeasureWriters(const char *table, double seconds)
{
	ThroughputRun run = {.table = table};
	pthread_t	t[CLIENTS];
	int64_t		t0;
	int64_t		r0;
	double		rate;

	atomic_store(&run.serial, NowUs());
	for (int i = 0; i < CLIENTS; i++)
		pthread_create(&t[i], NULL, ThroughputClient, &run);
	SleepUs(1000000);			/* warm up */
	r0 = atomic_load(&run.rows);
	t0 = NowUs();
	SleepUs((int64_t) (seconds * 1e6));
	rate = (atomic_load(&run.rows) - r0) / ((NowUs() - t0) / 1e6);
	atomic_store(&run.stop, 1);
	for (int i = 0; i < CLIENTS; i++)
		pthread_join(t[i], NULL);
	return rate;
}

/* Reads and discards a tail's output, so it never blocks on a full pipe. */
static void *
DrainTail(void *arg)
{
	Tail	   *t = arg;
	char		line[512];

	while (fgets(line, sizeof(line), t->out))
		;
	return NULL;
}

#define ROUNDS 3

/* The median of the rounds. */
static double
Median(const double *r)
{
	double		s[ROUNDS];

	memcpy(s, r, sizeof(s));
	for (int i = 0; i < ROUNDS; i++)
		for (int j = i + 1; j < ROUNDS; j++)
			if (s[j] < s[i])
			{
				double		t = s[i];

				s[i] = s[j];
				s[j] = t;
			}
	return s[ROUNDS / 2];
}

/* One line of the writers' table: median, best, every round, share of the anchor. */
static void
PrintWriters(const char *what, const double *r, const double *anchor)
{
	printf("   %-28s median %6.0f rows/s", what, Median(r));
	if (anchor)
		printf(" (%5.1f%% of no feed)", 100 * Median(r) / Median(anchor));
	else
		printf("                    ");
	printf("   rounds");
	for (int i = 0; i < ROUNDS; i++)
		printf(" %.0f", r[i]);
	printf("\n");
}

static void
BenchWriters(PGconn *c)
{
	double		plain[ROUNDS], feed[ROUNDS], notify[ROUNDS];
	double		secs = 10 * scale;
	Tail		tail;
	pthread_t	drain, listener;

	ExecScript(c,
					"CREATE TABLE bench_plain (id bigserial PRIMARY KEY,"
					" created_at timestamp NOT NULL DEFAULT now(), group_id bytea NOT NULL,"
					" data bytea NOT NULL, group_id_data_hash bytea NOT NULL UNIQUE,"
					" is_commit boolean NOT NULL DEFAULT false, sender_hmac bytea, should_push boolean);"
					"CREATE INDEX ON bench_plain (group_id, id);"
					"CREATE TABLE bench_notify (LIKE bench_plain INCLUDING ALL);"
					"ALTER TABLE bench_notify ALTER id SET DEFAULT nextval(pg_get_serial_sequence('bench_plain', 'id'));"
					"CREATE FUNCTION bench_notify_row() RETURNS trigger LANGUAGE plpgsql AS"
					" $$BEGIN PERFORM pg_notify('bench_live', NEW.id::text); RETURN NULL; END$$;"
					"CREATE TRIGGER bench_notify AFTER INSERT ON bench_notify"
					" FOR EACH ROW EXECUTE FUNCTION bench_notify_row();");

	tail = TailStart(ScalarInt(c, "SELECT xip83.group_horizon()"), false);
	pthread_create(&drain, NULL, DrainTail, &tail);
	pthread_create(&listener, NULL, NotifyListener, NULL);
	/* rounds interleaved, so a noisy moment of the shared disk hits all three */
	for (int round = 0; round < ROUNDS; round++)
	{
		plain[round] = MeasureWriters("bench_plain", secs);
		feed[round] = MeasureWriters("xip83.group_messages", secs);
		notify[round] = MeasureWriters("bench_notify", secs);
	}
	atomic_store(&listener_stop, 1);
	pthread_join(listener, NULL);
	TailStop(&tail);
	pthread_join(drain, NULL);

	printf("1. writers: 16 clients, single-row transactions, synchronous_commit on, %d interleaved rounds of %.0f s\n",
		   ROUNDS, secs);
	PrintWriters("no feed (plain table)", plain, NULL);
	PrintWriters("xip83 feed + xip83-tail", feed, plain);
	PrintWriters("per-row pg_notify trigger", notify, plain);
	printf("   median feed / median pg_notify %8.2fx\n", Median(feed) / Median(notify));
	tl_result("bench_live", "writers=16", "feed_vs_no_feed", Median(feed) / Median(plain), "ratio");
	tl_result("bench_live", "writers=16", "pg_notify_vs_no_feed", Median(notify) / Median(plain),
			  "ratio");
}

/* ---------------------------------------------------------------- 2. latency */

typedef struct LatencyRun
{
	int64_t		base;			/* ids above this belong to the run */
	int64_t		max_rows;
	int64_t    *ack_us;			/* by id - base - 1: when the writer saw the commit */
	int64_t    *print_us;		/* by id - base - 1: when xip83-tail printed it */
	double		rate;			/* rows/s over all clients */
	double		seconds;
	int			rows_per_commit;
	int64_t		start_us;
	int64_t		last_commit_us;	/* racy max, good enough for the achieved rate */
	int64_t		salt;
	atomic_llong written;
} LatencyRun;

static LatencyRun *lat;

static void *
LatencyClient(void *arg)
{
	int			me = (int) (intptr_t) arg;
	PGconn	   *c = tl_connect();
	double		interval_us = 1e6 * CLIENTS * lat->rows_per_commit / lat->rate;
	int64_t		start = lat->start_us + (int64_t) (interval_us * me / CLIENTS);
	int64_t		end = lat->start_us + (int64_t) (lat->seconds * 1e6);

	PQclear(tl_exec(c, "SET synchronous_commit = on", 0, NULL));
	for (int64_t k = 0;; k++)
	{
		int64_t		due = start + (int64_t) (k * interval_us);
		char		g[16];
		char		d[64];
		char		n[16];
		const char *params[3] = {g, d, n};
		PGresult   *r;
		int64_t		now;

		if (due >= end)
			break;
		SleepUs(due - NowUs());
		snprintf(g, sizeof(g), "\\x%04x", (int) (k % 20000));
		snprintf(d, sizeof(d), "\\x%08x%016llx%016llx", me, (long long) k,
				 (long long) lat->salt);
		snprintf(n, sizeof(n), "%d", lat->rows_per_commit);
		r = tl_exec(c, "INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash)"
					" SELECT $1, $2::bytea || int4send(i), sha256($1::bytea || $2::bytea || int4send(i))"
					"   FROM generate_series(1, $3::int) i RETURNING id", 3, params);
		now = NowUs();
		for (int i = 0; i < PQntuples(r); i++)
		{
			int64_t		id = tl_int(r, i, 0) - lat->base - 1;

			if (id >= 0 && id < lat->max_rows)
				lat->ack_us[id] = now;
		}
		atomic_fetch_add(&lat->written, PQntuples(r));
		PQclear(r);
		lat->last_commit_us = now > lat->last_commit_us ? now : lat->last_commit_us;
	}
	PQfinish(c);
	return NULL;
}

static int
CompareInt64(const void *a, const void *b)
{
	int64_t		x = *(const int64_t *) a;
	int64_t		y = *(const int64_t *) b;

	return (x > y) - (x < y);
}

/* Notes when xip83-tail printed a row (a "--timestamps" line); returns 1 for a row line. */
static int
RecordPrint(LatencyRun *run, const char *line)
{
	long long	ts, id;
	char		kind[16], topic[64];
	long		bytes;

	if (sscanf(line, "%lld %15s %63s %lld %ld", &ts, kind, topic, &id, &bytes) != 5)
		return 0;
	id = id - run->base - 1;
	if (id >= 0 && id < run->max_rows)
		run->print_us[id] = ts;
	return 1;
}

static void
BenchLatency(PGconn *c, double rate, int rows_per_commit)
{
	LatencyRun	run = {0};
	pthread_t	t[CLIENTS];
	Tail		tail;
	char		line[512];
	int64_t		printed = 0;
	int64_t	   *lats;
	int64_t		n = 0;
	int64_t		started;

	run.rate = rate;
	run.rows_per_commit = rows_per_commit;
	run.salt = NowUs();
	run.seconds = 10 * scale;
	run.max_rows = (int64_t) (rate * run.seconds * 1.2) + 1000;
	run.ack_us = calloc(run.max_rows, sizeof(int64_t));
	run.print_us = calloc(run.max_rows, sizeof(int64_t));
	run.base = ScalarInt(c, "SELECT xip83.group_horizon()");
	lat = &run;
	tail = TailStart(run.base, true);
	SleepUs(500000);			/* the tail has connected and listens */
	started = NowUs();
	run.start_us = started;
	for (int i = 0; i < CLIENTS; i++)
		pthread_create(&t[i], NULL, LatencyClient, (void *) (intptr_t) i);
	/* read the tail's lines until every written row is printed */
	while (fgets(line, sizeof(line), tail.out))
	{
		printed += RecordPrint(&run, line);
		if (NowUs() - started > (int64_t) (run.seconds * 1e6) &&
			printed >= atomic_load(&run.written))
			break;
	}
	for (int i = 0; i < CLIENTS; i++)
		pthread_join(t[i], NULL);
	while (printed < atomic_load(&run.written) && fgets(line, sizeof(line), tail.out))
		printed += RecordPrint(&run, line);
	TailStop(&tail);

	lats = malloc(run.max_rows * sizeof(int64_t));
	for (int64_t i = 0; i < run.max_rows; i++)
		if (run.ack_us[i] && run.print_us[i])
		{
			int64_t		l = run.print_us[i] - run.ack_us[i];

			lats[n++] = l < 0 ? 0 : l;	/* printed before the ack reached the writer */
		}
	qsort(lats, n, sizeof(int64_t), CompareInt64);
	printf("   %6.0f rows/s target (%2d rows per commit), %6.0f achieved: p50 %6.2f ms  p99 %6.2f ms  max %6.2f ms  (%lld rows)\n",
		   rate, rows_per_commit,
		   atomic_load(&run.written) / ((run.last_commit_us - run.start_us) / 1e6),
		   n ? lats[n / 2] / 1000.0 : -1, n ? lats[(int64_t) (n * 0.99)] / 1000.0 : -1,
		   n ? lats[n - 1] / 1000.0 : -1, (long long) n);
	if (n)
	{
		tl_result("bench_live", "rate=%.0f", "latency_p50", lats[n / 2] / 1000.0, "ms", rate);
		tl_result("bench_live", "rate=%.0f", "latency_p99", lats[(int64_t) (n * 0.99)] / 1000.0,
				  "ms", rate);
	}
	free(lats);
	free(run.ack_us);
	free(run.print_us);
}

/* ---------------------------------------------------------------- 3. misses */

static atomic_int misses_stop;

static void *
DelayedWriter(void *arg)
{
	unsigned int seed = (unsigned int) (intptr_t) arg;
	PGconn	   *c = tl_connect();
	int64_t		k = 0;

	while (!atomic_load(&misses_stop))
	{
		char		g[16];
		char		d[64];
		const char *params[2] = {g, d};

		snprintf(g, sizeof(g), "\\x%04x", rand_r(&seed) % 20000);
		snprintf(d, sizeof(d), "\\x%08x%016llx%016llx", seed, (long long) k++,
				 (long long) salt);
		PQclear(tl_exec(c, "BEGIN", 0, NULL));
		PQclear(tl_exec(c, "INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash)"
						" VALUES ($1, $2, sha256($1::bytea || $2::bytea))", 2, params));
		SleepUs(rand_r(&seed) % 5000);	/* the commit delay that reorders commits */
		PQclear(tl_exec(c, "COMMIT", 0, NULL));
	}
	PQfinish(c);
	return NULL;
}

/* Today's node loop: every 25 ms, id > last ORDER BY id LIMIT 500. */
typedef struct Poller
{
	int64_t		base;
	char	   *seen;			/* by id - base */
	int64_t		cap;
	atomic_int	stop;
} Poller;

static void *
PollerMain(void *arg)
{
	Poller	   *p = arg;
	PGconn	   *c = tl_connect();
	int64_t		last = p->base;

	while (!atomic_load(&p->stop))
	{
		char		last_s[32];
		const char *params[1] = {last_s};
		PGresult   *r;

		snprintf(last_s, sizeof(last_s), "%lld", (long long) last);
		r = tl_exec(c, "SELECT id FROM xip83.group_messages WHERE id > $1 ORDER BY id LIMIT 500",
					1, params);
		for (int i = 0; i < PQntuples(r); i++)
		{
			int64_t		id = tl_int(r, i, 0);

			if (id - p->base < p->cap)
				p->seen[id - p->base] = 1;
			last = id;
		}
		if (PQntuples(r) < 500)
			SleepUs(25000);
		PQclear(r);
	}
	PQfinish(c);
	return NULL;
}

static void
BenchMisses(PGconn *c)
{
	Poller		poller = {0};
	pthread_t	writers[CLIENTS];
	pthread_t	pt;
	Tail		tail;
	char	   *tail_seen;
	char		line[512];
	PGresult   *r;
	int64_t		stored = 0, poller_missed = 0, tail_missed = 0, tail_lines = 0, top;

	poller.base = ScalarInt(c, "SELECT xip83.group_horizon()");
	poller.cap = 10000000;
	poller.seen = calloc(poller.cap, 1);
	tail_seen = calloc(poller.cap, 1);
	tail = TailStart(poller.base, false);
	SleepUs(300000);
	pthread_create(&pt, NULL, PollerMain, &poller);
	for (int i = 0; i < CLIENTS; i++)
		pthread_create(&writers[i], NULL, DelayedWriter, (void *) (intptr_t) (1000 + i));
	SleepUs((int64_t) (10 * scale * 1e6));
	atomic_store(&misses_stop, 1);
	for (int i = 0; i < CLIENTS; i++)
		pthread_join(writers[i], NULL);
	top = ScalarInt(c, "SELECT max(id) FROM xip83.group_messages");
	SleepUs(500000);			/* both readers catch up with the last commits */
	atomic_store(&poller.stop, 1);
	pthread_join(pt, NULL);

	/* read the tail up to the highest id */
	while (fgets(line, sizeof(line), tail.out))
	{
		char		kind[16], topic[64];
		long long	id;
		long		bytes;

		if (sscanf(line, "%15s %63s %lld %ld", kind, topic, &id, &bytes) == 4)
		{
			if (id - poller.base < poller.cap)
				tail_seen[id - poller.base] = 1;
			tail_lines++;
			if (id >= top)
				break;
		}
	}
	TailStop(&tail);

	{
		char		base_s[32];
		const char *params[1] = {base_s};

		snprintf(base_s, sizeof(base_s), "%lld", (long long) poller.base);
		r = tl_exec(c, "SELECT id FROM xip83.group_messages WHERE id > $1 ORDER BY id", 1, params);
	}
	for (int i = 0; i < PQntuples(r); i++)
	{
		int64_t		off = tl_int(r, i, 0) - poller.base;

		stored++;
		if (!poller.seen[off])
			poller_missed++;
		if (!tail_seen[off])
			tail_missed++;
	}
	PQclear(r);
	printf("3. misses: 16 writers, commit delays of 0-5 ms, %.0f s, %lld rows committed\n",
		   10 * scale, (long long) stored);
	printf("   id > last poller (25 ms)       %8lld rows never seen (%.3f%%)\n",
		   (long long) poller_missed, 100.0 * poller_missed / (stored ? stored : 1));
	printf("   xip83-tail                     %8lld rows never seen (%lld lines printed)\n",
		   (long long) tail_missed, (long long) tail_lines);
	tl_result("bench_live", "writers=16", "missed_poller", 100.0 * poller_missed / (stored ? stored : 1),
			  "percent");
	tl_result("bench_live", "writers=16", "missed_tail", 100.0 * tail_missed / (stored ? stored : 1),
			  "percent");
	free(poller.seen);
	free(tail_seen);
}

int
main(int argc, char **argv)
{
	PGconn	   *c;
	const char *only = NULL;

	for (int i = 1; i < argc; i++)
	{
		if (strcmp(argv[i], "--scale") == 0 && i + 1 < argc)
			scale = atof(argv[++i]);
		else if (strcmp(argv[i], "--tail") == 0 && i + 1 < argc)
			tail_path = argv[++i];
		else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
			only = argv[++i];
		else
			tl_fatal("usage: bench_live [--scale F] [--tail PATH] [--only writers|latency|misses]");
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	atexit(KillTail);
	salt = NowUs();
	c = tl_connect();
	printf("bench_live: scale %.2f, %s\n", scale,
		   PQgetvalue(tl_exec(c, "SELECT 'synchronous_commit=' || current_setting('synchronous_commit')"
							  " || ', fsync=' || current_setting('fsync')", 0, NULL), 0, 0));
	if (only == NULL || strcmp(only, "writers") == 0)
		BenchWriters(c);
	if (only == NULL || strcmp(only, "latency") == 0)
	{
		printf("2. latency from commit (acknowledged to the writer) to xip83-tail's print, 16 clients\n");
		/* a sweep of rates, for latency against rate; busier rates commit more rows at once */
		BenchLatency(c, 500, 1);
		BenchLatency(c, 2000, 1);
		BenchLatency(c, 5000, 5);
		BenchLatency(c, 10000, 10);
	}
	if (only == NULL || strcmp(only, "misses") == 0)
		BenchMisses(c);
	PQfinish(c);
	return 0;
}
