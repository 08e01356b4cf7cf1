/*
 * bench_summary: caught-up reconnect waves with the topic summary
 * (src/core/summary.c) and without, and what its pass costs.
 *
 *   bench_summary [rows [topics [summary_kb]]]
 *                 defaults 1000000, 100000, 8192 (10M rows: pass 10000000)
 *
 * Loads `rows` group messages over `topics` 16-byte topics, 1% of them
 * active (half the rows go to them). The waves: 5,000 topics picked at
 * random, and every topic, floors at each one's last id (caught up). Cases:
 *   (a) restart   floors from before a clean restart with
 *                 xip83.summary_memory = summary_kb, once its pass is done
 *                 (its time, and the summary's shared memory, are printed);
 *   (b) standby   the same floors on a hot standby of the server made then
 *                 (pg_basebackup), once its own pass is done; beside the
 *                 primary's recently written and summary-off calls;
 *   (c) idle      the same floors after 30,000 other topics were written
 *                 since: every topic of the waves idle longer than the
 *                 recent-writes window (12,288 entries).
 * Each beside the same call with every floor at the ceiling (about 1 ns a
 * topic), the same wave once each of its topics was written again (floors
 * at that new row: recently written), and the same wave after a restart
 * without a summary (one index descent per topic). Also, per case: a recent
 * wave (the 5,000 topics, floors at 95% of each one's last id) beside
 * fetching the rows its page returns by primary key; and a storm of 10,000
 * consecutive caught-up waves of 100 topics (slices of every topic) beside
 * the same calls with floors at the ceiling, in total server time.
 * Timings are taken inside the server (plpgsql around the call, arrays built
 * beforehand): each call's best of its runs per round, the calls of a ratio
 * next to each other in every round; printed the best over READ_ROUNDS
 * rounds and the median and interval of the rounds' ratios.
 */
#include "testlib.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static PGconn *conn;

/* Where the figures go: one set per table size (a run replaces its own set). */
static char BenchName[64] = "bench_summary";

static void
Exec(const char *sql)
{
	PQclear(tl_exec(conn, sql, 0, NULL));
}

static const char *const Setup =
"CREATE OR REPLACE FUNCTION bs_topic(g int) RETURNS bytea LANGUAGE sql IMMUTABLE"
"  AS $$ SELECT decode(md5('g' || g), 'hex') $$;"
/* half the rows to the 1% active topics, half over all of them */
"CREATE OR REPLACE FUNCTION bs_write(topics int, n int) RETURNS void LANGUAGE sql AS $$"
"  INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash)"
"  SELECT bs_topic(CASE WHEN random() < 0.5 THEN (random() * (topics / 100 - 1))::int"
"                       ELSE (random() * (topics - 1))::int END), d, sha256(d)"
"    FROM (SELECT decode(repeat(md5(random()::text), 2), 'hex') || int8send(i) || float8send(random()) d"
"            FROM generate_series(1, n) i) x $$;"
/* the best ms of `runs` fetches of rows by primary key */
"CREATE OR REPLACE FUNCTION bs_pk(ids bigint[], runs int) RETURNS float8 LANGUAGE plpgsql AS $$"
"DECLARE t0 timestamptz; best float8 := 1e9; n bigint;"
"BEGIN FOR i IN 1..runs + 1 LOOP"
"    t0 := clock_timestamp();"
"    SELECT sum(length(data)) INTO n FROM xip83.group_messages WHERE id = ANY(ids);"
"    IF i > 1 THEN best := least(best, extract(epoch FROM clock_timestamp() - t0) * 1000); END IF;"
"  END LOOP; RETURN best; END $$;"
/* the total ms of `calls` waves over the slices of bs_storm, floors at last or the ceiling */
"CREATE OR REPLACE FUNCTION bs_storm(calls int, at_ceiling boolean) RETURNS float8 LANGUAGE plpgsql AS $$"
"DECLARE t0 timestamptz; total float8 := 0; n bigint; ts bytea[]; fs bigint[];"
"  c bigint := xip83.group_ceiling(); slices int := (SELECT count(*) FROM bs_storm);"
"BEGIN FOR i IN 0..calls - 1 LOOP"
"    SELECT topics, CASE WHEN at_ceiling THEN array_fill(c, ARRAY[cardinality(floors)]) ELSE floors END"
"      INTO ts, fs FROM bs_storm WHERE s = i % slices;"
"    t0 := clock_timestamp();"
"    SELECT count(*) INTO n FROM xip83.group_wave_scan(ts, fs, 0, c, 500);"
"    total := total + extract(epoch FROM clock_timestamp() - t0) * 1000;"
"  END LOOP; RETURN total; END $$;"
TL_BENCH_WAVE_SQL;

static void
Connect(void)
{
	conn = tl_reconnect_setup(Setup);
}

static void
Restart(int summary_kb)
{
	char		args[128];

	PQfinish(conn);
	/* -o every time: a bare restart would reuse the previous start's options */
	snprintf(args, sizeof(args), "restart -m fast -o '-c xip83.summary_memory=%d'", summary_kb);
	tl_pgctl(args);
	Connect();
}

/* The query of the best ms of one wave over table's topics, floors from floor_expr. */
static void
WaveSql(char *sql, size_t size, const char *table, const char *floor_expr, int runs)
{
	snprintf(sql, size,
			 "SELECT bench_wave((SELECT array_agg(topic ORDER BY topic) FROM %s),"
			 " (SELECT array_agg(%s ORDER BY topic) FROM %s), xip83.group_ceiling(), %d)",
			 table, floor_expr, table, runs);
}

static double
WaveMs(const char *table, const char *floor_expr, int runs)
{
	char		sql[512];

	WaveSql(sql, sizeof(sql), table, floor_expr, runs);
	return tl_scalar_float(conn, sql);
}

#define READ_ROUNDS 7
#define RUNS 20
#define STORM_CALLS 10000

typedef struct Pair
{
	double		ours;			/* best ms */
	double		base;			/* best ms of what it is compared with */
	TlRatios	r;				/* rounds' ours / base */
} Pair;

/* Runs per call: fewer for the waves of every topic. */
static int
RunsFor(const char *table)
{
	return strcmp(table, "bs_all") == 0 ? 4 : RUNS;
}

/* Two queries returning ms, next to each other in every round: ours against base. */
static Pair
Compare(const char *ours_sql, const char *base_sql, int rounds)
{
	Pair		p = {.ours = 1e9, .base = 1e9};
	double		ratio[READ_ROUNDS];

	for (int i = 0; i < rounds; i++)
	{
		double		b = tl_scalar_float(conn, base_sql);
		double		u = tl_scalar_float(conn, ours_sql);

		p.base = b < p.base ? b : p.base;
		p.ours = u < p.ours ? u : p.ours;
		ratio[i] = u / b;
	}
	p.r = tl_ratios(ratio, rounds);
	return p;
}

/* A caught-up wave against the same call with every floor at the ceiling. */
static Pair
Measure(const char *table)
{
	char		ours[512];
	char		base[512];

	WaveSql(ours, sizeof(ours), table, "last", RunsFor(table));
	WaveSql(base, sizeof(base), table, "xip83.group_ceiling()", RunsFor(table));
	return Compare(ours, base, READ_ROUNDS);
}

/* The recent wave of bs_w5 (floors at 95% of last) against its page's rows by primary key. */
static Pair
MeasureRecent(bool make_page)
{
	char		ours[512];

	/* a standby reads the page the primary made of the same rows */
	if (make_page)
	{
		Exec("DROP TABLE IF EXISTS bs_page");
		Exec("CREATE TABLE bs_page AS SELECT array_agg(id) ids FROM xip83.group_wave_scan("
			 " (SELECT array_agg(topic ORDER BY topic) FROM bs_w5),"
			 " (SELECT array_agg((last * 0.95)::bigint ORDER BY topic) FROM bs_w5),"
			 " 0, xip83.group_ceiling(), 500)");
	}
	WaveSql(ours, sizeof(ours), "bs_w5", "(last * 0.95)::bigint", RUNS);
	return Compare(ours, "SELECT bs_pk((SELECT ids FROM bs_page), 20)", READ_ROUNDS);
}

/* The storm: total ms of its calls, floors at last, against floors at the ceiling. */
static Pair
MeasureStorm(int rounds)
{
	char		ours[128];
	char		base[128];

	snprintf(ours, sizeof(ours), "SELECT bs_storm(%d, false)", STORM_CALLS);
	snprintf(base, sizeof(base), "SELECT bs_storm(%d, true)", STORM_CALLS);
	return Compare(ours, base, rounds);
}

/* A wave's topics: bs_pick's k in (lo, hi], with each one's last id now. */
static void
PickSet(const char *name, long lo, long hi)
{
	char		sql[512];

	snprintf(sql, sizeof(sql),
			 "CREATE TABLE %s AS SELECT p.topic, max(m.id) last FROM bs_pick p"
			 "  JOIN xip83.group_messages m ON m.group_id = p.topic WHERE p.k > %ld AND p.k <= %ld"
			 "  GROUP BY 1", name, lo, hi);
	Exec(sql);
}

/* Writes one more row to each topic of a wave and moves its floors to them. */
static void
Rewrite(const char *table)
{
	char		sql[1024];

	snprintf(sql, sizeof(sql),
			 "WITH w AS (INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash)"
			 "  SELECT topic, convert_to('%s', 'UTF8') || int8send(last),"
			 "         sha256(convert_to('%s', 'UTF8') || int8send(last)) FROM %s"
			 "  RETURNING group_id, id)"
			 " UPDATE %s t SET last = w.id FROM w WHERE w.group_id = t.topic", table, table, table, table);
	Exec(sql);
}

/* Waits for the group summary's pass after a restart; seconds from the first use. */
static double
WaitReady(void)
{
	double		t0 = tl_now();

	Exec("SELECT count(*) FROM xip83.group_wave_scan('{x}', '{0}', 0, 1, 1)");
	while (tl_scalar_float(conn, "SELECT (summary_states[1] = 'ready')::int FROM xip83.feed_status") != 1)
	{
		if (tl_now() - t0 > 600)
			tl_fatal("the summary's pass did not end within 600 s");
		tl_sleep_us(10000);
	}
	return tl_now() - t0;
}

typedef struct Case
{
	Pair		w5;				/* 5,000 topics vs the ceiling call */
	Pair		all;			/* every topic vs the ceiling call */
	Pair		recent;			/* recent wave vs its rows by primary key */
	Pair		storm;			/* 10,000 waves of 100 vs the ceiling calls */
} Case;

static Case
MeasureCase(bool primary)
{
	Case		c;

	c.w5 = Measure("bs_w5");
	c.all = Measure("bs_all");
	c.recent = MeasureRecent(primary);
	c.storm = MeasureStorm(3);
	return c;
}

/* Runs a shell command as the server user with the server's programs first in PATH. */
static void
AsServer(const char *fmt,...) __attribute__((format(printf, 1, 2)));

static void
AsServer(const char *fmt,...)
{
	const char *as = getenv("XIP83_ASSERVER");
	char		args[1536];
	char		cmd[2048];
	va_list		ap;

	if (as == NULL)
		tl_fatal("XIP83_ASSERVER is not set (run through tests/driver.sh bench)");
	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	snprintf(cmd, sizeof(cmd), "%s %s >/dev/null", as, args);
	if (system(cmd) != 0)
		tl_fatal("as the server user: %s failed", args);
}

/* The hot standby of case (b): its data directory beside the server's run files. */
typedef struct Standby
{
	char		dir[512];
	int			port;
} Standby;

/*
 * Makes a streaming hot standby of the server (pg_basebackup) on the next
 * port with the same summary size, waits until it replayed the primary's
 * horizons and built its own summary; returns its connection.
 */
static PGconn *
StartStandby(Standby *sb, int summary_kb, double *ready_s)
{
	const char *pgctl = getenv("XIP83_PGCTL");
	const char *port = getenv("PGPORT");
	const char *slash = pgctl != NULL ? strrchr(pgctl, '/') : NULL;
	char		conninfo[64];
	char		sql[256];
	char	   *lsn;
	int64_t		ceiling;
	PGconn	   *c;
	PGresult   *res;

	if (slash == NULL)
		tl_fatal("XIP83_PGCTL is not set (run through tests/driver.sh bench)");
	snprintf(sb->dir, sizeof(sb->dir), "%.*s/standby", (int) (slash - pgctl), pgctl);
	sb->port = (port != NULL ? atoi(port) : 5432) + 1;
	AsServer("rm -rf '%s'", sb->dir);
	AsServer("pg_basebackup -D '%s' -R -X stream -c fast", sb->dir);
	AsServer("pg_ctl -D '%s' -l '%s.log' -w -t 120 -o '-p %d -c xip83.summary_memory=%d' start",
			 sb->dir, sb->dir, sb->port, summary_kb);
	snprintf(conninfo, sizeof(conninfo), "port=%d", sb->port);
	c = PQconnectdb(conninfo);
	if (PQstatus(c) != CONNECTION_OK)
		tl_fatal("the standby: %s", PQerrorMessage(c));
	/* a checkpoint makes the primary log every horizon; the standby replays past it */
	Exec("CHECKPOINT");
	ceiling = tl_scalar(conn, "SELECT xip83.group_ceiling()");
	res = tl_exec(conn, "SELECT pg_current_wal_lsn()::text", 0, NULL);
	lsn = strdup(PQgetvalue(res, 0, 0));
	PQclear(res);
	snprintf(sql, sizeof(sql), "SELECT (pg_last_wal_replay_lsn() >= '%s' AND"
			 " xip83.group_ceiling() >= %lld)::int", lsn, (long long) ceiling);
	free(lsn);
	for (double t0 = tl_now(); tl_scalar(c, sql) != 1; tl_sleep_us(20000))
		if (tl_now() - t0 > 120)
			tl_fatal("the standby did not replay the primary's horizons within 120 s");
	{
		PGconn	   *primary = conn;

		conn = c;
		*ready_s = WaitReady();
		conn = primary;
	}
	return c;
}

static void
StopStandby(const Standby *sb, PGconn *c)
{
	PQfinish(c);
	AsServer("pg_ctl -D '%s' -w -m fast stop", sb->dir);
	AsServer("rm -rf '%s'", sb->dir);
}

static void
Line(const char *what, const char *vs, Pair p, double rewritten, double off)
{
	printf("  %-34s %10.3f %10.3f %-9s %7.2fx (%5.2f-%5.2f)", what, p.ours, p.base, vs,
		   p.ours / p.base, p.r.lo, p.r.hi);
	if (rewritten > 0)
		printf(" %10.3f %6.2fx", rewritten, p.ours / rewritten);
	else
		printf(" %10s %7s", "", "");
	if (off > 0)
		printf(" %11.3f", off);
	printf("\n");
	tl_result(BenchName, "case=%s", "ours", p.ours, "ms", what);
	tl_result(BenchName, "case=%s", "comparator", p.base, "ms", what);
	tl_result(BenchName, "case=%s", "ratio", p.ours / p.base, "x", what);
	if (rewritten > 0)
		tl_result(BenchName, "case=%s", "recently_written", rewritten, "ms", what);
	if (off > 0)
		tl_result(BenchName, "case=%s", "summary_off", off, "ms", what);
}

static void
PrintCase(const char *name, Case c, Pair rw5, Pair rall, double off5, double offall,
		  double offstorm)
{
	char		what[64];

	snprintf(what, sizeof(what), "%s, 5,000 topics", name);
	Line(what, "ceiling", c.w5, rw5.ours, off5);
	snprintf(what, sizeof(what), "%s, every topic", name);
	Line(what, "ceiling", c.all, rall.ours, offall);
	snprintf(what, sizeof(what), "%s, 95%% floors", name);
	Line(what, "by pkey", c.recent, 0, 0);
	snprintf(what, sizeof(what), "%s, storm (total)", name);
	Line(what, "ceiling", c.storm, 0, offstorm);
}

int
main(int argc, char **argv)
{
	long long	rows = argc > 1 ? atoll(argv[1]) : 1000000;
	int			topics = argc > 2 ? atoi(argv[2]) : 100000;
	int			summary_kb = argc > 3 ? atoi(argv[3]) : 8192;
	int			wave = 5000;
	char		sql[1024];
	double		ready_s,
				pass_ms,
				shmem_mb,
				scanned;
	Case		a,
				b,
				c;
	Standby		sb;
	PGconn	   *standby;
	double		standby_ready_s;
	Pair		rw5,
				rall;
	double		off5,
				offall,
				offstorm;

	if (topics < 2 * wave)
		tl_fatal("need topics >= %d", 2 * wave);
	if (rows != 1000000)
		snprintf(BenchName, sizeof(BenchName), "bench_summary_%gm_rows", rows / 1e6);
	Connect();
	Restart(summary_kb);
	Exec("TRUNCATE xip83.group_messages RESTART IDENTITY");
	for (long long done = 0; done < rows; done += 100000)
	{
		snprintf(sql, sizeof(sql), "SELECT bs_write(%d, %lld)", topics,
				 rows - done < 100000 ? rows - done : 100000);
		Exec(sql);
	}
	Exec("VACUUM ANALYZE xip83.group_messages");
	/* the topics written, in random order: the first 5,000 are a wave */
	Exec("DROP TABLE IF EXISTS bs_pick, bs_w5, bs_all, bs_storm");
	Exec("CREATE TABLE bs_pick AS SELECT group_id topic, row_number() OVER (ORDER BY random()) k"
		 "  FROM (SELECT DISTINCT group_id FROM xip83.group_messages) d");
	PickSet("bs_w5", 0, wave);
	PickSet("bs_all", 0, topics);
	Exec("CREATE TABLE bs_storm AS SELECT (p.k - 1) / 100 s, array_agg(a.topic) topics,"
		 "  array_agg(a.last) floors FROM bs_pick p JOIN bs_all a USING (topic) GROUP BY 1");
	Exec("CREATE INDEX ON bs_storm (s)");

	/* (a) a clean restart: the pass, timed from the first use of the feed */
	Restart(summary_kb);
	ready_s = WaitReady();
	pass_ms = tl_scalar_float(conn, "SELECT summary_pass_ms[1] FROM xip83.feed_status");
	scanned = tl_scalar_float(conn, "SELECT summary_rows[1] FROM xip83.feed_status");
	shmem_mb = tl_scalar_float(conn, "SELECT coalesce(sum(allocated_size), 0) / 1048576.0 FROM pg_shmem_allocations"
							   " WHERE name = 'xip83 summary'");
	a = MeasureCase(true);

	/* (c) other topics written since, beyond the recent-writes window */
	Exec("INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash)"
		 " SELECT sha256(int8send(-i)), int8send(i), sha256(int8send(i)) FROM generate_series(1, 30000) i");
	c = MeasureCase(true);

	/* (b) a hot standby of the same rows, floors of before it existed */
	standby = StartStandby(&sb, summary_kb, &standby_ready_s);
	{
		PGconn	   *primary = conn;

		conn = standby;
		b = MeasureCase(false);
		conn = primary;
	}
	StopStandby(&sb, standby);

	/* the same waves with each topic written again: floors at those rows */
	Rewrite("bs_w5");
	rw5 = Measure("bs_w5");
	Rewrite("bs_all");
	rall = Measure("bs_all");
	/* every wave caught up again for the calls without a summary */
	Exec("UPDATE bs_w5 w SET last = a.last FROM bs_all a WHERE a.topic = w.topic");
	Exec("UPDATE bs_storm s SET floors = (SELECT array_agg(a.last ORDER BY o.n)"
		 "  FROM unnest(s.topics) WITH ORDINALITY o(topic, n) JOIN bs_all a USING (topic))");

	/* no summary: one descent per topic (fewer runs, one round) */
	Restart(0);
	off5 = WaveMs("bs_w5", "last", 3);
	offall = WaveMs("bs_all", "last", 1);
	snprintf(sql, sizeof(sql), "SELECT bs_storm(%d, false)", STORM_CALLS);
	offstorm = tl_scalar_float(conn, sql);
	Restart(summary_kb);

	printf("bench_summary: %lld rows, %d topics (1%% active), summary %d kB per feed and kind"
		   " (ms: a wave's best of its runs over %d interleaved rounds, a storm's total of %d"
		   " calls; one run, machine shared)\n", rows, topics, summary_kb, READ_ROUNDS, STORM_CALLS);
	printf("  %-34s %10s %10s %-9s %23s %10s %7s %11s\n", "caught-up waves", "ours", "vs", "",
		   "ratio (rounds)", "rewritten", "ratio", "no summary");
	PrintCase("(a) after a restart", a, rw5, rall, off5, offall, offstorm);
	PrintCase("(b) on a hot standby", b, rw5, rall, off5, offall, offstorm);
	PrintCase("(c) idle past recent writes", c, rw5, rall, off5, offall, offstorm);
	printf("  pass after the restart: %.0f rows in %.0f ms (ready %.2f s after the first use);"
		   " summary shared memory %.1f MB\n", scanned, pass_ms, ready_s, shmem_mb);
	tl_result(BenchName, "case=%s", "pass_ms", pass_ms, "ms", "rebuild");
	printf("  the standby's own pass: ready %.2f s after its first use; (b)'s rewritten and"
		   " no-summary columns are the primary's\n", standby_ready_s);
	tl_result(BenchName, "case=%s", "ready_s", ready_s, "s", "rebuild");
	tl_result(BenchName, "case=%s", "ready_s", standby_ready_s, "s", "standby rebuild");
	tl_result(BenchName, "case=%s", "rows", scanned, "rows", "rebuild");
	tl_result(BenchName, "case=%s", "shmem", shmem_mb, "MB", "rebuild");
	PQfinish(conn);
	return 0;
}
