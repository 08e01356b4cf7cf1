/*
 * bench_recent: reconnect waves with the recent-writes tables (src/recent.h),
 * and what the tables cost writers; the numbers printed alongside.
 *
 *   bench_recent [rows [topics]]   defaults 1000000, 10000
 *
 * Restarts the server (XIP83_PGCTL) between writer runs with and without the
 * tables (xip83.recent_entries = 0), then loads `rows` group messages over
 * `topics` 16-byte topics (uniform, 64-byte payloads) after the last restart,
 * as a node's tables are written while it runs. Timings are the best of many
 * runs taken inside the server (plpgsql around the call, arrays built
 * beforehand; the machine may be shared), so every ratio compares calls fed
 * the same arrays in the same run:
 *   caught up     floors at each topic's last id, ceiling at the horizon,
 *                 against the same call with every floor at the ceiling;
 *   95%           floors at 95% of each topic's last id, first page of 500,
 *                 against fetching that page's rows by primary key;
 *   anchor A      the same pages in plain SQL (unnest-join of topics and
 *                 floors, ORDER BY id LIMIT 500), as nodes page today;
 *   writers       bulk INSERT ... SELECT and single-row INSERTs, rows/s with
 *                 the tables against without, best of five each.
 */
#include "testlib.h"

#include <stdio.h>
#include <stdlib.h>
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
	PGresult   *r = tl_exec(conn, sql, 0, NULL);
	double		v = atof(PQgetvalue(r, 0, 0));

	PQclear(r);
	return v;
}

static const char *const Setup =
"CREATE OR REPLACE FUNCTION bench_topic(g int) RETURNS bytea LANGUAGE sql IMMUTABLE"
"  AS $$ SELECT decode(md5('g' || g), 'hex') $$;"
"CREATE OR REPLACE FUNCTION bench_write(topics int, n int) RETURNS void LANGUAGE sql AS $$"
"  INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash)"
"  SELECT bench_topic((random() * (topics - 1))::int), d, sha256(d)"
"    FROM (SELECT decode(repeat(md5(random()::text), 2), 'hex') || int8send(i) || float8send(random()) d"
"            FROM generate_series(1, n) i) x $$;"
"CREATE OR REPLACE FUNCTION bench_wave(topics bytea[], floors bigint[], ceil bigint, runs int)"
"  RETURNS float8 LANGUAGE plpgsql AS $$"
"DECLARE t0 timestamptz; ts float8[] := '{}'; n bigint;"
"BEGIN FOR i IN 1..runs + 1 LOOP"
"    t0 := clock_timestamp();"
"    SELECT count(*) INTO n FROM xip83.group_wave_scan(topics, floors, 0, ceil, 500);"
"    IF i > 1 THEN ts := ts || extract(epoch FROM clock_timestamp() - t0) * 1000; END IF;"
"  END LOOP;"
"  RETURN (SELECT min(x) FROM unnest(ts) x); END $$;"
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
	PGresult   *r;

	conn = tl_reconnect();
	r = PQexec(conn, Setup);
	if (PQresultStatus(r) != PGRES_COMMAND_OK)
		tl_fatal("setup: %s", PQerrorMessage(conn));
	PQclear(r);
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

/* The reconnect calls of one mode, medians in ms. */
typedef struct Reads
{
	double		at_ceiling;
	double		caught;
	double		wave95;
} Reads;

static double WaveMs(const char *fn, const char *floor_expr, int runs);

/* Each call best of `runs`, the three interleaved `rounds` times (best kept). */
static Reads
MeasureReads(int runs, int rounds)
{
	Reads		r = {1e9, 1e9, 1e9};

	for (int i = 0; i < rounds; i++)
	{
		r.at_ceiling = Min2(r.at_ceiling, WaveMs("bench_wave", "xip83.group_ceiling()", runs));
		r.caught = Min2(r.caught, WaveMs("bench_wave", "last", runs));
		r.wave95 = Min2(r.wave95, WaveMs("bench_wave", "(last * 0.95)::bigint", runs / 2));
	}
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

int
main(int argc, char **argv)
{
	long long	rows = argc > 1 ? atoll(argv[1]) : 1000000;
	int			topics = argc > 2 ? atoi(argv[2]) : 10000;
	double		bulk[2] = {0, 0};
	double		single[2] = {0, 0};
	Reads		with, without;
	double		pk95,
				anchor_caught,
				anchor95;
	char		sql[2048];

	Connect();

	/* writers: best of five runs each way */
	for (int round = 0; round < 5; round++)
		for (int on = 0; on < 2; on++)
		{
			double		b, s;

			/* every run starts from an empty table, in alternating order */
			Restart((on + round) % 2 == 1);
			Exec("TRUNCATE xip83.group_messages RESTART IDENTITY");
			Writers(topics, 100000, 3000, &b, &s);
			bulk[(on + round) % 2] = Max2(bulk[(on + round) % 2], b);
			single[(on + round) % 2] = Max2(single[(on + round) % 2], s);
		}

	/* readers: rows written after the last start, as a running node has them */
	Restart(true);
	Exec("TRUNCATE xip83.group_messages RESTART IDENTITY");
	for (long long done = 0; done < rows; done += 100000)
	{
		snprintf(sql, sizeof(sql), "SELECT bench_write(%d, %lld)", topics,
				 rows - done < 100000 ? rows - done : 100000);
		Exec(sql);
	}
	Exec("VACUUM ANALYZE xip83.group_messages");
	Exec("DROP TABLE IF EXISTS bench_floors");
	Exec("CREATE TABLE bench_floors AS SELECT group_id AS topic, max(id) AS last"
		 "  FROM xip83.group_messages GROUP BY 1");

	with = MeasureReads(50, 5);
	snprintf(sql, sizeof(sql),
			 "SELECT bench_pk((SELECT array_agg(id) FROM xip83.group_wave_scan("
			 " (SELECT array_agg(topic) FROM bench_floors),"
			 " (SELECT array_agg((last * 0.95)::bigint) FROM bench_floors), 0, xip83.group_ceiling(), 500)), 50)");
	pk95 = 1e9;
	for (int i = 0; i < 5; i++)
		pk95 = Min2(pk95, Scalar(sql));
	anchor_caught = WaveMs("bench_anchor", "last", 10);
	anchor95 = WaveMs("bench_anchor", "(last * 0.95)::bigint", 10);

	/* the same calls on the same data, every topic descended (as before the tables) */
	Restart(false);
	without = MeasureReads(10, 2);

	printf("bench_recent: %lld rows, %d topics, pages of 500 (best of many runs, ms;"
		   " writer rates best of 5; one run, machine shared)\n", rows, topics);
	printf("  %-40s %9s %9s %9s %9s %8s  %s\n", "", "ours", "no tables", "vs", "anchor A",
		   "ours/vs", "target (issue's before)");
	printf("  %-40s %9.3f %9.3f %9.3f %9.3f %7.2fx  %s\n",
		   "10k caught up vs floors = ceiling", with.caught, without.caught, with.at_ceiling,
		   anchor_caught, with.caught / with.at_ceiling, "<= 2x (46 ms / 0.10 ms)");
	printf("  %-40s %9.3f %9.3f %9.3f %9.3f %7.2fx  %s\n",
		   "10k floors at 95% vs its rows by pk", with.wave95, without.wave95, pk95,
		   anchor95, with.wave95 / pk95, "<= 3x (49 ms, 80x)");
	printf("  %-40s %9.0f %9.0f %9s %9s %7.3f   %s\n", "writers, bulk INSERT rows/s",
		   bulk[1], bulk[0], "", "", bulk[1] / bulk[0], ">= 0.97");
	printf("  %-40s %9.0f %9.0f %9s %9s %7.3f   %s\n", "writers, one-row INSERTs/s",
		   single[1], single[0], "", "", single[1] / single[0], ">= 0.97");
	PQfinish(conn);
	return 0;
}
