/*
 * bench_summary: caught-up reconnect waves after a restart, with the topic
 * summary (src/core/summary.c) and without, and what its pass costs.
 *
 *   bench_summary [rows [topics [wave [summary_kb]]]]
 *                 defaults 1000000, 100000, 5000, 8192
 *
 * Loads `rows` group messages over `topics` 16-byte topics, 1% of them
 * active (half the rows go to them), then picks `wave` topics at random
 * (floors at each one's last id: a caught-up client) and `wave` other topics
 * that it writes once more (floors at that new row: recently written). Then:
 *   recent        the recently written wave before any restart, answered by
 *                 the recent-writes tables (the best case before the summary);
 *   restart       a clean restart with xip83.summary_memory = summary_kb: the
 *                 pass's time (feed_status) and wall time until ready, and
 *                 the summary's shared memory;
 *   idle, rewritten  both waves with floors from before the restart, the
 *                 summary ready, against the same call with every floor at
 *                 the ceiling (about 2 ns a topic) and against the recent case;
 *   off           the same waves after a restart without a summary: one index
 *                 descent per topic.
 * Timings are taken inside the server (plpgsql around the call, arrays built
 * beforehand): each call's best of its runs per round, the calls of a ratio
 * next to each other in every round; printed the best over READ_ROUNDS rounds
 * and the median and interval of the rounds' ratios.
 */
#include "testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static PGconn *conn;

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

/* Best ms of one wave: table bs_idle or bs_recent, floors from `last` (or the ceiling). */
static double
WaveMs(const char *table, const char *floor_expr, int runs)
{
	char		sql[512];

	snprintf(sql, sizeof(sql),
			 "SELECT bench_wave((SELECT array_agg(topic ORDER BY topic) FROM %s),"
			 " (SELECT array_agg(%s ORDER BY topic) FROM %s), xip83.group_ceiling(), %d)",
			 table, floor_expr, table, runs);
	return tl_scalar_float(conn, sql);
}

#define READ_ROUNDS 7
#define RUNS 20

typedef struct Pair
{
	double		caught;			/* best ms, floors at last */
	double		ceiling;		/* best ms, floors at the ceiling */
	TlRatios	r;				/* rounds' caught / ceiling */
} Pair;

static Pair
Measure(const char *table)
{
	Pair		p = {.caught = 1e9, .ceiling = 1e9};
	double		ratio[READ_ROUNDS];

	for (int i = 0; i < READ_ROUNDS; i++)
	{
		double		c = WaveMs(table, "xip83.group_ceiling()", RUNS);
		double		u = WaveMs(table, "last", RUNS);

		p.ceiling = c < p.ceiling ? c : p.ceiling;
		p.caught = u < p.caught ? u : p.caught;
		ratio[i] = u / c;
	}
	p.r = tl_ratios(ratio, READ_ROUNDS);
	return p;
}

/* A wave's topics, bs_pick's (lo, hi], with each one's last id now. */
static void
PickSet(const char *name, int lo, int hi)
{
	char		sql[512];

	snprintf(sql, sizeof(sql),
			 "CREATE TABLE %s AS SELECT p.topic, max(m.id) last FROM bs_pick p"
			 "  JOIN xip83.group_messages m ON m.group_id = p.topic WHERE p.k > %d AND p.k <= %d"
			 "  GROUP BY 1", name, lo, hi);
	Exec(sql);
}

static void
Print(const char *what, Pair p, double vs_recent, double off)
{
	printf("  %-46s %9.3f %9.3f %7.2fx (%5.2f-%5.2f) %7.2fx %9.3f\n", what, p.caught, p.ceiling,
		   p.caught / p.ceiling, p.r.lo, p.r.hi, vs_recent > 0 ? p.caught / vs_recent : 0, off);
	tl_result("bench_summary", "case=%s", "ours", p.caught, "ms", what);
	tl_result("bench_summary", "case=%s", "comparator", p.ceiling, "ms", what);
	if (off > 0)
		tl_result("bench_summary", "case=%s", "summary_off", off, "ms", what);
}

int
main(int argc, char **argv)
{
	long long	rows = argc > 1 ? atoll(argv[1]) : 1000000;
	int			topics = argc > 2 ? atoi(argv[2]) : 100000;
	int			wave = argc > 3 ? atoi(argv[3]) : 5000;
	int			summary_kb = argc > 4 ? atoi(argv[4]) : 8192;
	char		sql[1024];
	double		t0,
				ready_s,
				pass_ms,
				shmem_mb,
				scanned;
	Pair		recent,
				idle,
				rewritten,
				idle_off,
				rewritten_off;

	if (topics < 200 || wave * 2 > topics)
		tl_fatal("need topics >= 200 and wave <= topics / 2");
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
	/* two disjoint random sets of topics, among those written */
	Exec("DROP TABLE IF EXISTS bs_pick, bs_idle, bs_recent");
	snprintf(sql, sizeof(sql),
			 "CREATE TABLE bs_pick AS SELECT group_id topic, row_number() OVER (ORDER BY random()) k"
			 "  FROM (SELECT DISTINCT group_id FROM xip83.group_messages) d");
	Exec(sql);
	snprintf(sql, sizeof(sql),
			 "INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash)"
			 " SELECT topic, int8send(k) || '\\x01', sha256(int8send(k) || '\\x01')"
			 "   FROM bs_pick WHERE k > %d AND k <= %d", wave, 2 * wave);
	Exec(sql);
	PickSet("bs_idle", 0, wave);
	PickSet("bs_recent", wave, 2 * wave);

	/* the best case before the summary: every topic recently written */
	recent = Measure("bs_recent");

	/* a clean restart: the pass, timed from the first use of the feed */
	Restart(summary_kb);
	t0 = tl_now();
	Exec("SELECT count(*) FROM xip83.group_wave_scan('{x}', '{0}', 0, 1, 1)");
	while (tl_scalar_float(conn, "SELECT (summary_states[1] = 'ready')::int FROM xip83.feed_status") != 1)
	{
		if (tl_now() - t0 > 600)
			tl_fatal("the summary's pass did not end within 600 s");
		tl_sleep_us(10000);
	}
	ready_s = tl_now() - t0;
	pass_ms = tl_scalar_float(conn, "SELECT summary_pass_ms[1] FROM xip83.feed_status");
	scanned = tl_scalar_float(conn, "SELECT summary_rows[1] FROM xip83.feed_status");
	shmem_mb = tl_scalar_float(conn, "SELECT coalesce(sum(allocated_size), 0) / 1048576.0 FROM pg_shmem_allocations"
					  " WHERE name = 'xip83 summary'");
	idle = Measure("bs_idle");
	rewritten = Measure("bs_recent");

	/* the same waves with no summary: one descent per topic */
	Restart(0);
	idle_off = Measure("bs_idle");
	rewritten_off = Measure("bs_recent");
	Restart(summary_kb);

	printf("bench_summary: %lld rows, %d topics (1%% active), waves of %d topics, summary %d kB"
		   " per feed and kind (ms, best of %d runs over %d interleaved rounds; one run, machine"
		   " shared)\n", rows, topics, wave, summary_kb, RUNS, READ_ROUNDS);
	printf("  %-46s %9s %9s %23s %8s %9s\n", "caught-up wave", "ours", "ceiling",
		   "ours/ceiling (rounds)", "/recent", "no summ.");
	Print("recently written, recent-writes tables", recent, 0, 0);
	Print("idle topics, floors from before a restart", idle, recent.caught, idle_off.caught);
	Print("recently written, floors from before a restart", rewritten, recent.caught,
		  rewritten_off.caught);
	printf("  %-46s %9.3f ms per wave (%.0fx the summary)\n", "idle topics, no summary",
		   idle_off.caught, idle_off.caught / idle.caught);
	printf("  pass after the restart: %.0f rows in %.0f ms (ready %.2f s after the first use);"
		   " summary shared memory %.1f MB\n", scanned, pass_ms, ready_s, shmem_mb);
	tl_result("bench_summary", "case=%s", "pass_ms", pass_ms, "ms", "rebuild");
	tl_result("bench_summary", "case=%s", "rows", scanned, "rows", "rebuild");
	tl_result("bench_summary", "case=%s", "shmem", shmem_mb, "MB", "rebuild");
	PQfinish(conn);
	return 0;
}
