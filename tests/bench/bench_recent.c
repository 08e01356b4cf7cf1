/*
 * bench_recent: reconnect waves with the recent-writes tables (src/core/recent.c),
 * and what the tables cost writers; the targets and the figures from before the
 * tables printed alongside.
 *
 *   bench_recent [rows [topics]]   defaults 1000000, 10000
 *
 * Restarts the server (XIP83_PGCTL) between writer runs with and without the
 * tables (xip83.recent_entries = 0), then loads `rows` group messages over
 * `topics` 16-byte topics (uniform, 64-byte payloads) after the last restart,
 * as a node's tables are written while it runs. Timings are taken inside the
 * server (plpgsql around the call, arrays built beforehand; the machine may be
 * shared): each call's best of its runs in each of READ_ROUNDS rounds, the
 * calls of a ratio next to each other in every round, so every ratio compares
 * calls fed the same arrays at the same time. Printed: the best of all rounds
 * and its ratio, then the median and interval of the rounds' own ratios:
 *   caught up     floors at each topic's last id, ceiling at the horizon,
 *                 against the same call with every floor at the ceiling;
 *   95%           floors at 95% of each topic's last id, first page of 500,
 *                 against fetching that page's rows by primary key;
 *   anchor A      the same pages in plain SQL (unnest-join of topics and
 *                 floors, ORDER BY id LIMIT 500), as nodes page today;
 *   d14n          the same three shapes over `rows` envelopes of originator 1
 *                 on the same topics, floors per (topic, originator);
 *   writers       bulk INSERT ... SELECT and single-row INSERTs, rows/s with
 *                 the tables against without: the best of each side, and the
 *                 median and interval of the rounds' paired ratios
 *                 (XIP83_WRITER_ROUNDS rounds, default 10).
 */
#include "testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static PGconn *conn;

static void
Exec(const char *sql)
{
	PQclear(tl_exec(conn, sql, 0, NULL));
}

static double
Now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double
Max2(double a, double b)
{
	return a > b ? a : b;
}

static double
Min2(double a, double b)
{
	return a < b ? a : b;
}

static double
Scalar(const char *sql)
{
	return tl_scalar_float(conn, sql);
}

static const char *const Setup =
"CREATE OR REPLACE FUNCTION bench_topic(g int) RETURNS bytea LANGUAGE sql IMMUTABLE"
"  AS $$ SELECT decode(md5('g' || g), 'hex') $$;"
"CREATE OR REPLACE FUNCTION bench_write(topics int, n int) RETURNS void LANGUAGE sql AS $$"
"  INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash)"
"  SELECT bench_topic((random() * (topics - 1))::int), d, sha256(d)"
"    FROM (SELECT decode(repeat(md5(random()::text), 2), 'hex') || int8send(i) || float8send(random()) d"
"            FROM generate_series(1, n) i) x $$;"
TL_BENCH_WAVE_SQL
"CREATE OR REPLACE FUNCTION bench_anchor(topics bytea[], floors bigint[], ceil bigint, runs int)"
"  RETURNS float8 LANGUAGE plpgsql AS $$"
"DECLARE t0 timestamptz; ts float8[] := '{}'; n bigint;"
"BEGIN FOR i IN 1..runs + 1 LOOP"
"    t0 := clock_timestamp();"
"    SELECT count(*) INTO n FROM (SELECT m.id FROM unnest(topics, floors) w(topic, floor)"
"      JOIN xip83.group_messages m ON m.group_id = w.topic AND m.id > w.floor"
"      WHERE m.id > 0 AND m.id <= ceil ORDER BY m.id LIMIT 500) x;"
"    IF i > 1 THEN ts := ts || extract(epoch FROM clock_timestamp() - t0) * 1000; END IF;"
"  END LOOP;"
"  RETURN (SELECT min(x) FROM unnest(ts) x); END $$;"
/* d14n: one originator (1), the same topics; floors per (topic, originator) */
"CREATE OR REPLACE FUNCTION bench_env(topics bytea[], floors bigint[], ceil bigint, runs int)"
"  RETURNS float8 LANGUAGE plpgsql AS $$"
"DECLARE t0 timestamptz; ts float8[] := '{}'; n bigint;"
"  nodes int[] := array_fill(1, ARRAY[cardinality(topics)]);"
"BEGIN FOR i IN 1..runs + 1 LOOP"
"    t0 := clock_timestamp();"
"    SELECT count(*) INTO n FROM xip83.envelope_wave_scan(topics, nodes, floors, '{1}', ARRAY[ceil], 0, 0, 500);"
"    IF i > 1 THEN ts := ts || extract(epoch FROM clock_timestamp() - t0) * 1000; END IF;"
"  END LOOP;"
"  RETURN (SELECT min(x) FROM unnest(ts) x); END $$;"
"CREATE OR REPLACE FUNCTION bench_env_anchor(topics bytea[], floors bigint[], ceil bigint, runs int)"
"  RETURNS float8 LANGUAGE plpgsql AS $$"
"DECLARE t0 timestamptz; ts float8[] := '{}'; n bigint;"
"  nodes int[] := array_fill(1, ARRAY[cardinality(topics)]);"
"BEGIN FOR i IN 1..runs + 1 LOOP"
"    t0 := clock_timestamp();"
"    SELECT count(*) INTO n FROM (SELECT e.originator_sequence_id FROM unnest(topics, nodes, floors)"
"      w(topic, node, floor) JOIN xip83.envelopes e ON e.topic = w.topic"
"      AND e.originator_node_id = w.node AND e.originator_sequence_id > w.floor"
"      WHERE e.originator_node_id = 1 AND e.originator_sequence_id <= ceil"
"      ORDER BY e.originator_node_id, e.originator_sequence_id LIMIT 500) x;"
"    IF i > 1 THEN ts := ts || extract(epoch FROM clock_timestamp() - t0) * 1000; END IF;"
"  END LOOP;"
"  RETURN (SELECT min(x) FROM unnest(ts) x); END $$;"
"CREATE OR REPLACE FUNCTION bench_env_pk(seqs bigint[], runs int) RETURNS float8 LANGUAGE plpgsql AS $$"
"DECLARE t0 timestamptz; ts float8[] := '{}'; n bigint;"
"BEGIN FOR i IN 1..runs + 1 LOOP"
"    t0 := clock_timestamp();"
"    SELECT sum(length(originator_envelope)) INTO n FROM xip83.envelopes"
"      WHERE originator_node_id = 1 AND originator_sequence_id = ANY(seqs);"
"    IF i > 1 THEN ts := ts || extract(epoch FROM clock_timestamp() - t0) * 1000; END IF;"
"  END LOOP;"
"  RETURN (SELECT min(x) FROM unnest(ts) x); END $$;"
"CREATE OR REPLACE FUNCTION bench_pk(ids bigint[], runs int) RETURNS float8 LANGUAGE plpgsql AS $$"
"DECLARE t0 timestamptz; ts float8[] := '{}'; n bigint;"
"BEGIN FOR i IN 1..runs + 1 LOOP"
"    t0 := clock_timestamp();"
"    SELECT sum(length(data)) INTO n FROM xip83.group_messages WHERE id = ANY(ids);"
"    IF i > 1 THEN ts := ts || extract(epoch FROM clock_timestamp() - t0) * 1000; END IF;"
"  END LOOP;"
"  RETURN (SELECT min(x) FROM unnest(ts) x); END $$;";

static void
Connect(void)
{
	conn = tl_reconnect_setup(Setup);
}

static void
Restart(bool with_tables)
{
	PQfinish(conn);
	/* -o every time: a bare restart would reuse the previous start's options */
	tl_pgctl(with_tables ? "restart -m fast -o '-c xip83.recent_entries=12288'"
			 : "restart -m fast -o '-c xip83.recent_entries=0'");
	Connect();
	if ((Scalar("SELECT current_setting('xip83.recent_entries')::int") > 0) != with_tables)
		tl_fatal("the server did not restart with the tables %s", with_tables ? "on" : "off");
	/* writers measure the CPU the tables add, not the disk's flush time */
	Exec("SET synchronous_commit = off");
}

/* Rounds of the reconnect calls, each call's best of its runs per round. */
#define READ_ROUNDS 10

/*
 * The reconnect calls of one mode: each one's best ms over every round, and
 * the median and interval of the rounds' ratios (caught up against floors =
 * ceiling, 95% against its rows by primary key), calls of a round being next
 * to each other in time.
 */
typedef struct Reads
{
	double		at_ceiling;
	double		caught;
	double		wave95;
	double		pk95;			/* 0 when not measured */
	TlRatios	caught_r;
	TlRatios	r95;
} Reads;

static double WaveMs(const char *fn, const char *floor_expr, int runs);
static double EnvMs(const char *fn, const char *floor_expr, int runs);

/* A first page's best ms: fn (ours or the anchor), floors from an expression of `last`. */
typedef double (*PageMsFn) (const char *fn, const char *floor_expr, int runs);

/* Best ms of a page's rows fetched by primary key: pk_fmt takes the runs. */
static double
PkMs(const char *pk_fmt, int runs)
{
	char		sql[256];

	snprintf(sql, sizeof(sql), pk_fmt, runs);
	return Scalar(sql);
}

/*
 * The three calls of a kind (page: WaveMs or EnvMs, fn: its wave function,
 * at_ceiling: the floor expression that puts floors at the ceiling) and,
 * unless pk_fmt is NULL, the 95% page's rows by primary key, each best of
 * `runs` (the 95% calls of runs / 2), interleaved READ_ROUNDS times.
 */
static Reads
MeasureReads(PageMsFn page, const char *fn, const char *at_ceiling, const char *pk_fmt, int runs)
{
	Reads		r = {.at_ceiling = 1e9, .caught = 1e9, .wave95 = 1e9};
	double		caught_ratio[READ_ROUNDS];
	double		ratio95[READ_ROUNDS];

	for (int i = 0; i < READ_ROUNDS; i++)
	{
		double		c = page(fn, at_ceiling, runs);
		double		u = page(fn, "last", runs);
		double		w = page(fn, "(last * 0.95)::bigint", runs / 2);
		double		k = pk_fmt != NULL ? PkMs(pk_fmt, runs / 2) : 0;

		r.at_ceiling = Min2(r.at_ceiling, c);
		r.caught = Min2(r.caught, u);
		r.wave95 = Min2(r.wave95, w);
		r.pk95 = i == 0 ? k : Min2(r.pk95, k);
		caught_ratio[i] = u / c;
		ratio95[i] = k > 0 ? w / k : 1;
	}
	r.caught_r = tl_ratios(caught_ratio, READ_ROUNDS);
	r.r95 = tl_ratios(ratio95, READ_ROUNDS);
	return r;
}

/* Writer rows per second: one bulk statement of `bulk` rows, then `single` one-row statements. */
static void
Writers(int topics, int bulk, int single, double *bulk_rate, double *single_rate)
{
	char		sql[128];
	double		t0;

	snprintf(sql, sizeof(sql), "SELECT bench_write(%d, %d)", topics, bulk);
	t0 = Now();
	Exec(sql);
	*bulk_rate = bulk / (Now() - t0);
	snprintf(sql, sizeof(sql), "SELECT bench_write(%d, 1)", topics);
	t0 = Now();
	for (int i = 0; i < single; i++)
		Exec(sql);
	*single_rate = single / (Now() - t0);
}

#define ENV_CEILING "(SELECT max_sequence_id FROM xip83.originator_ceilings() WHERE originator_node_id = 1)"

/* Best ms of a first d14n page over every topic, floors from `last` (ENV_CEILING: the ceiling). */
static double
EnvMs(const char *fn, const char *floor_expr, int runs)
{
	char		sql[768];

	snprintf(sql, sizeof(sql),
			 "SELECT %s((SELECT array_agg(topic ORDER BY topic) FROM bench_env_floors),"
			 " (SELECT array_agg(%s ORDER BY topic) FROM bench_env_floors), %s, %d)",
			 fn, strcmp(floor_expr, "ENV_CEILING") == 0 ? ENV_CEILING : floor_expr,
			 ENV_CEILING, runs);
	return Scalar(sql);
}

/* Best ms of a first page over every topic (fn: ours or the anchor), floors from `last`. */
static double
WaveMs(const char *fn, const char *floor_expr, int runs)
{
	char		sql[512];

	snprintf(sql, sizeof(sql),
			 "SELECT %s((SELECT array_agg(topic ORDER BY topic) FROM bench_floors),"
			 " (SELECT array_agg(%s ORDER BY topic) FROM bench_floors), xip83.group_ceiling(), %d)",
			 fn, floor_expr, runs);
	return Scalar(sql);
}

/* One line of the read table. */
static void
PrintRead(const char *what, double ours, double no_tables, double vs, double anchor,
		  TlRatios rounds, const char *target)
{
	char		r[64];

	snprintf(r, sizeof(r), "%.2fx (%.2f-%.2f)", rounds.median, rounds.lo, rounds.hi);
	printf("  %-40s %9.3f %9.3f %9.3f %9.3f %7.2fx %22s  %s\n", what, ours, no_tables, vs,
		   anchor, ours / vs, r, target);
	tl_result("bench_recent", "case=%s", "ours", ours, "ms", what);
	tl_result("bench_recent", "case=%s", "tables_off", no_tables, "ms", what);
	tl_result("bench_recent", "case=%s", "comparator", vs, "ms", what);
	tl_result("bench_recent", "case=%s", "sql", anchor, "ms", what);
}

#define MAX_WRITER_ROUNDS 50

int
main(int argc, char **argv)
{
	long long	rows = argc > 1 ? atoll(argv[1]) : 1000000;
	int			topics = argc > 2 ? atoi(argv[2]) : 10000;
	int			writer_rounds = getenv("XIP83_WRITER_ROUNDS") ? atoi(getenv("XIP83_WRITER_ROUNDS")) : 10;
	double		bulk[2] = {0, 0};
	double		single[2] = {0, 0};
	double		bulk_ratio[MAX_WRITER_ROUNDS];
	double		single_ratio[MAX_WRITER_ROUNDS];
	TlRatios	bulk_r,
				single_r;
	Reads		with, without;
	double		anchor_caught,
				anchor95,
				env_anchor_caught,
				env_anchor95;
	Reads		env_with,
				env_without;
	char		sql[2048];

	if (writer_rounds < 1 || writer_rounds > MAX_WRITER_ROUNDS)
		tl_fatal("XIP83_WRITER_ROUNDS must be between 1 and %d", MAX_WRITER_ROUNDS);
	Connect();

	/*
	 * writers: rounds of one run each way, in alternating order, every run
	 * from a restart and an empty table; a round's two runs are next to each
	 * other in time, so their ratio cancels the machine's slow drifts
	 */
	for (int round = 0; round < writer_rounds; round++)
	{
		double		b[2], s[2];

		for (int on = 0; on < 2; on++)
		{
			int			arm = (on + round) % 2;

			Restart(arm == 1);
			Exec("TRUNCATE xip83.group_messages RESTART IDENTITY");
			Writers(topics, 100000, 3000, &b[arm], &s[arm]);
			bulk[arm] = Max2(bulk[arm], b[arm]);
			single[arm] = Max2(single[arm], s[arm]);
		}
		bulk_ratio[round] = b[1] / b[0];
		single_ratio[round] = s[1] / s[0];
	}

	/* readers: rows written after the last start, as a running node has them */
	Restart(true);
	Exec("TRUNCATE xip83.group_messages, xip83.envelopes RESTART IDENTITY");
	for (long long done = 0; done < rows; done += 100000)
	{
		snprintf(sql, sizeof(sql), "SELECT bench_write(%d, %lld)", topics,
				 rows - done < 100000 ? rows - done : 100000);
		Exec(sql);
	}
	for (long long done = 0; done < rows; done += 100000)
	{
		snprintf(sql, sizeof(sql),
				 "INSERT INTO xip83.envelopes (originator_node_id, originator_sequence_id, topic,"
				 " originator_envelope) SELECT 1, i, bench_topic((random() * (%d - 1))::int),"
				 " decode(repeat(md5(i::text), 2), 'hex')"
				 " FROM generate_series(%lld, %lld) i", topics, done + 1,
				 rows - done < 100000 ? rows : done + 100000);
		Exec(sql);
	}
	Exec("VACUUM ANALYZE xip83.group_messages");
	Exec("VACUUM ANALYZE xip83.envelopes");
	Exec("DROP TABLE IF EXISTS bench_env_floors");
	Exec("CREATE TABLE bench_env_floors AS SELECT topic, max(originator_sequence_id) AS last"
		 "  FROM xip83.envelopes GROUP BY 1");
	Exec("DROP TABLE IF EXISTS bench_floors");
	Exec("CREATE TABLE bench_floors AS SELECT group_id AS topic, max(id) AS last"
		 "  FROM xip83.group_messages GROUP BY 1");

	/* the 95% pages' rows, fetched by primary key in the same rounds as the pages */
	Exec("DROP TABLE IF EXISTS bench_ids95");
	Exec("CREATE TABLE bench_ids95 AS SELECT array_agg(id) AS ids FROM xip83.group_wave_scan("
		 " (SELECT array_agg(topic) FROM bench_floors),"
		 " (SELECT array_agg((last * 0.95)::bigint) FROM bench_floors), 0, xip83.group_ceiling(), 500)");
	Exec("DROP TABLE IF EXISTS bench_env_ids95");
	snprintf(sql, sizeof(sql),
			 "CREATE TABLE bench_env_ids95 AS SELECT array_agg(originator_sequence_id) AS ids"
			 " FROM xip83.envelope_wave_scan("
			 " (SELECT array_agg(topic) FROM bench_env_floors), array_fill(1, ARRAY[%d]),"
			 " (SELECT array_agg((last * 0.95)::bigint) FROM bench_env_floors), '{1}',"
			 " ARRAY[" ENV_CEILING "], 0, 0, 500)",
			 (int) Scalar("SELECT count(*) FROM bench_env_floors"));
	Exec(sql);
	with = MeasureReads(WaveMs, "bench_wave", "xip83.group_ceiling()",
						"SELECT bench_pk((SELECT ids FROM bench_ids95), %d)", 24);
	anchor_caught = WaveMs("bench_anchor", "last", 10);
	anchor95 = WaveMs("bench_anchor", "(last * 0.95)::bigint", 10);
	env_with = MeasureReads(EnvMs, "bench_env", "ENV_CEILING",
							"SELECT bench_env_pk((SELECT ids FROM bench_env_ids95), %d)", 24);
	env_anchor_caught = EnvMs("bench_env_anchor", "last", 10);
	env_anchor95 = EnvMs("bench_env_anchor", "(last * 0.95)::bigint", 10);

	/* the same calls on the same data, every topic descended (as before the tables) */
	Restart(false);
	without = MeasureReads(WaveMs, "bench_wave", "xip83.group_ceiling()", NULL, 4);
	env_without = MeasureReads(EnvMs, "bench_env", "ENV_CEILING", NULL, 4);

	printf("bench_recent: %lld rows, %d topics, pages of 500 (ms, best of each call over %d"
		   " interleaved rounds; ratios best/best, then the median and 90%% interval of the"
		   " rounds' ratios; writers in paired rounds; one run, machine shared)\n",
		   rows, topics, READ_ROUNDS);
	printf("  %-40s %9s %9s %9s %9s %8s %22s  %s\n", "", "ours", "no tables", "vs", "anchor A",
		   "ours/vs", "rounds: median (90%)", "target (issue's before)");
	PrintRead("10k caught up vs floors = ceiling", with.caught, without.caught, with.at_ceiling,
			  anchor_caught, with.caught_r, "<= 2x (46 ms / 0.10 ms)");
	PrintRead("10k floors at 95% vs its rows by pk", with.wave95, without.wave95, with.pk95,
			  anchor95, with.r95, "<= 3x (49 ms, 80x)");
	PrintRead("d14n 10k caught up vs floors = ceiling", env_with.caught, env_without.caught,
			  env_with.at_ceiling, env_anchor_caught, env_with.caught_r, "<= 2x");
	PrintRead("d14n 10k floors at 95% vs its rows by pk", env_with.wave95, env_without.wave95,
			  env_with.pk95, env_anchor95, env_with.r95, "<= 3x");
	bulk_r = tl_ratios(bulk_ratio, writer_rounds);
	single_r = tl_ratios(single_ratio, writer_rounds);
	printf("  %-40s %9.0f %9.0f %9s %9s %7.3f   %s\n", "writers, bulk INSERT rows/s (best)",
		   bulk[1], bulk[0], "", "", bulk[1] / bulk[0], ">= 0.97");
	printf("  %-40s %9.0f %9.0f %9s %9s %7.3f   %s\n", "writers, one-row INSERTs/s (best)",
		   single[1], single[0], "", "", single[1] / single[0], ">= 0.97");
	printf("  writers, %d paired rounds: bulk median %.3f (geometric mean %.3f, 90%% interval"
		   " %.3f-%.3f); one-row median %.3f (%.3f, %.3f-%.3f)\n", writer_rounds,
		   bulk_r.median, bulk_r.gmean, bulk_r.lo, bulk_r.hi,
		   single_r.median, single_r.gmean, single_r.lo, single_r.hi);
	PQfinish(conn);
	return 0;
}
