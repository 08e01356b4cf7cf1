/*
 * bench_wave_d14n: the d14n wave scan and originator ceilings against the
 * plain-SQL query nodes run today (the wave in tests/wave_d14n_reference.sql),
 * on the same data, side by side.
 *
 *   bash tests/driver.sh bench bench_wave_d14n [ENVELOPES [TIMEOUT_S [LAYOUTS]]]
 *
 * Data: ENVELOPES (default 2,000,000) envelopes of 256 bytes, 7 originators
 * (one holding 76%), 20,000 topics skewed as in bench_wave_v3 (topic index =
 * floor(20000 u^2)), in production's layout (meta and blob tables, LIST by
 * originator, RANGE bands of 1,000,000 sequence ids) and as a plain copy in
 * xip83.envelopes. LAYOUTS is "both" (default), "partitioned" or "plain".
 *
 * Waves of 10 / 100 / 1,000 random topics with a cursor entry at 0 for every
 * (topic, originator) pair, ceilings from originator_ceilings, pages of 500.
 * Both sides run as prepared statements with binary results, the way a node
 * runs them. One page is timed as the median of several runs; the reference
 * both planned per call (custom plan) and with its generic plan. A whole wave
 * is paged the way a node pages it: keyset pages, each one starting after the
 * last (originator, sequence) of the page before (the reference under the
 * default plan_cache_mode, as a node gets it); ours is also read as a stream
 * through a cursor (envelope_wave_stream, FETCH 500). The reference's page
 * loop stops at TIMEOUT_S (default 300) and is reported as not finished.
 */
#include "testlib.h"
#include "wave_d14n_fixture.h"

#include <arpa/inet.h>
#include <endian.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PAGE		500
#define NTOPICS		20000

static const int32_t originators[] = {100, 200, 300, 400, 500, 600, 700};

#define NORIGINATORS 7

static double ref_timeout_ms;

/* Wall-clock milliseconds. */
static double
NowMs(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/*
 * Runs a prepared statement with binary results, as node drivers read bytea;
 * any failure but a statement timeout is fatal.
 */
static PGresult *
RunPrepared(PGconn *conn, const char *name, int nparams, const char *const *params,
			bool *timed_out)
{
	PGresult   *res = PQexecPrepared(conn, name, nparams, params, NULL, NULL, 1);
	const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);

	if (timed_out)
		*timed_out = false;
	if (PQresultStatus(res) == PGRES_TUPLES_OK)
		return res;
	if (timed_out && state && strcmp(state, "57014") == 0)
	{
		*timed_out = true;
		return res;
	}
	tl_fatal("%s: %s", name, PQerrorMessage(conn));
}

/* Prepares a statement or aborts. */
static void
Prepare(PGconn *conn, const char *name, const char *sql)
{
	PGresult   *res = PQprepare(conn, name, sql, 0, NULL);

	if (PQresultStatus(res) != PGRES_COMMAND_OK)
		tl_fatal("prepare %s: %s", name, PQerrorMessage(conn));
	PQclear(res);
}

/* Orders doubles, for medians. */
static int
CompareDoubles(const void *a, const void *b)
{
	double		x = *(const double *) a;
	double		y = *(const double *) b;

	return x < y ? -1 : x > y;
}

/* The median time of `reps` runs of a prepared statement, in ms. */
static double
MedianMs(PGconn *conn, const char *name, int nparams, const char *const *params, int reps)
{
	double		times[256];

	for (int r = 0; r < reps; r++)
	{
		double		t0 = NowMs();

		PQclear(RunPrepared(conn, name, nparams, params, NULL));
		times[r] = NowMs() - t0;
	}
	qsort(times, reps, sizeof(double), CompareDoubles);
	return times[reps / 2];
}

/* A whole wave paged with keyset pages; false when it hit the timeout. */
static bool
PageWave(PGconn *conn, const char *name, const WdWave *w, double limit_ms,
		 double *ms, long *rows, int *pages)
{
	WdCall		call;
	double		t0 = NowMs();
	bool		done = false;

	wd_call_init(&call, w, 0, 0, PAGE, NULL, NULL);
	*rows = 0;
	*pages = 0;
	for (;;)
	{
		bool		timed_out;
		PGresult   *res = RunPrepared(conn, name, 8, call.params, &timed_out);
		int			n = timed_out ? 0 : PQntuples(res);

		if (timed_out)
		{
			PQclear(res);
			break;
		}
		*rows += n;
		(*pages)++;
		if (n > 0)
		{
			uint32_t	o;
			uint64_t	q;

			memcpy(&o, PQgetvalue(res, n - 1, 0), 4);
			memcpy(&q, PQgetvalue(res, n - 1, 1), 8);
			wd_call_set_scan(&call, (int32_t) ntohl(o), (int64_t) be64toh(q));
		}
		PQclear(res);
		if (n < PAGE)
		{
			done = true;
			break;
		}
		if (NowMs() - t0 > limit_ms)
			break;
	}
	*ms = NowMs() - t0;
	wd_call_free(&call);
	return done;
}

/*
 * A whole wave read through envelope_wave_stream in a cursor, FETCH PAGE at a
 * time with binary results.
 */
static double
StreamWave(PGconn *conn, const WdWave *w, const char *meta, const char *blob, long *rows)
{
	WdCall		call;
	char		fetch[32];
	double		t0 = NowMs();
	PGresult   *res;

	wd_call_init(&call, w, 0, 0, 0, meta, blob);
	*rows = 0;
	wd_exec_script(conn, "BEGIN");
	PQclear(tl_exec(conn, "DECLARE wave CURSOR FOR SELECT * FROM xip83.envelope_wave_stream("
					"$1, $2, $3, $4, $5, $6, $7, $8, $9)", call.nparams, call.params));
	snprintf(fetch, sizeof(fetch), "FETCH %d FROM wave", PAGE);
	for (;;)
	{
		int			n;

		res = PQexecParams(conn, fetch, 0, NULL, NULL, NULL, NULL, 1);
		if (PQresultStatus(res) != PGRES_TUPLES_OK)
			tl_fatal("%s", PQerrorMessage(conn));
		n = PQntuples(res);
		*rows += n;
		PQclear(res);
		if (n < PAGE)
			break;
	}
	wd_exec_script(conn, "CLOSE wave; COMMIT");
	wd_call_free(&call);
	return NowMs() - t0;
}

/* Sets how prepared statements are planned, for the reference's two shapes. */
static void
PlanMode(PGconn *conn, const char *mode)
{
	char		sql[64];

	snprintf(sql, sizeof(sql), "SET plan_cache_mode = %s", mode);
	wd_exec_script(conn, sql);
}

/* A wave of n random distinct topics, every originator at 0, ceilings pinned now. */
static void
MakeWave(PGconn *conn, WdWave *w, int n, const char *source)
{
	static char seen[NTOPICS];
	const char *params[1] = {source};
	PGresult   *ceil = tl_exec(conn, "SELECT originator_node_id, max_sequence_id"
								   " FROM xip83.originator_ceilings(NULL, $1)", 1, params);

	memset(seen, 0, sizeof(seen));
	wd_wave_init(w);
	for (int i = 0; i < n;)
	{
		int			t = (int) (random() % NTOPICS);

		if (seen[t])
			continue;
		seen[t] = 1;
		i++;
		for (int o = 0; o < NORIGINATORS; o++)
			wd_wave_add(w, t, originators[o], 0);
	}
	for (int r = 0; r < PQntuples(ceil); r++)
	{
		w->ceiling_nodes[w->nceilings] = (int32_t) tl_int(ceil, r, 0);
		w->ceilings[w->nceilings++] = tl_int(ceil, r, 1);
	}
	PQclear(ceil);
}

/* Prints one comparison line: ours, the reference, and the ratio. */
static void
Report(const char *layout, const char *what, double ours, double ref, bool ref_finished,
	   const char *target)
{
	if (ref_finished)
		printf("%-12s %-52s %10.3f ms %12.3f ms %9.1fx   %s\n",
			   layout, what, ours, ref, ref / ours, target);
	else
		printf("%-12s %-52s %10.3f ms %9s >%.0f ms  >%7.1fx   %s (reference did not finish)\n",
			   layout, what, ours, "", ref, ref / ours, target);
	tl_result("bench_wave_d14n", "layout=%s,case=%s", "ours", ours, "ms", layout, what);
	tl_result("bench_wave_d14n", "layout=%s,case=%s", ref_finished ? "sql" : "sql_unfinished_after",
			  ref, "ms", layout, what);
	fflush(stdout);
}

/* Every measurement on one layout. */
static void
BenchLayout(PGconn *conn, const char *layout, const char *meta, const char *blob)
{
	char		sql[2048];
	char		what[128];
	const char *payload = blob ? "b.originator_envelope" : "m.originator_envelope";
	char		join[256] = "";
	static const int wave_sizes[] = {10, 100, 1000};

	if (blob)
		snprintf(join, sizeof(join),
				 "JOIN %s b ON b.originator_node_id = m.originator_node_id"
				 " AND b.originator_sequence_id = m.originator_sequence_id", blob);
	/* the plain-SQL wave: unnested floors and ceilings joined to meta and blob */
	snprintf(sql, sizeof(sql),
			 "SELECT m.originator_node_id, m.originator_sequence_id, m.gateway_time, m.topic, %s"
			 "  FROM unnest($1::bytea[], $2::int[], $3::bigint[]) AS f(topic, node, seq)"
			 "  JOIN unnest($4::int[], $5::bigint[]) AS c(node, seq) ON c.node = f.node"
			 "  JOIN %s m ON m.topic = f.topic AND m.originator_node_id = f.node"
			 "           AND m.originator_sequence_id > f.seq AND m.originator_sequence_id <= c.seq"
			 "  %s"
			 " WHERE (m.originator_node_id, m.originator_sequence_id) > ($6::int, $7::bigint)"
			 " ORDER BY m.originator_node_id, m.originator_sequence_id LIMIT $8::int",
			 payload, meta, join);
	wd_exec_script(conn, "DEALLOCATE ALL");
	Prepare(conn, "ref_page", sql);
	snprintf(sql, sizeof(sql),
			 "SELECT * FROM xip83.envelope_wave_scan($1::bytea[], $2::int[], $3::bigint[],"
			 " $4::int[], $5::bigint[], $6::int, $7::bigint, $8::int, '%s', %s%s%s)",
			 meta, blob ? "'" : "", blob ? blob : "NULL", blob ? "'" : "");
	Prepare(conn, "our_page", sql);

	for (int s = 0; s < 3; s++)
	{
		WdWave		w;
		WdCall		call;
		double		ours,
					ref,
					ours_ms,
					ref_ms;
		long		ours_rows,
					ref_rows;
		int			ours_pages,
					ref_pages;
		bool		ref_done;
		const char *const *p;

		MakeWave(conn, &w, wave_sizes[s], meta);
		wd_call_init(&call, &w, 0, 0, PAGE, NULL, NULL);
		p = call.params;

		/* one page: the first of the wave; the reference planned per call and generic */
		ours = MedianMs(conn, "our_page", 8, p, 21);
		PlanMode(conn, "force_custom_plan");
		ref = MedianMs(conn, "ref_page", 8, p, 5);
		snprintf(what, sizeof(what), "first page, %d-topic wave (ref custom plan)",
				 wave_sizes[s]);
		Report(layout, what, ours, ref, true, wave_sizes[s] == 100 ? ">= 50x" : "");
		PlanMode(conn, "force_generic_plan");
		ref = MedianMs(conn, "ref_page", 8, p, 3);
		snprintf(what, sizeof(what), "first page, %d-topic wave (ref generic plan)",
				 wave_sizes[s]);
		Report(layout, what, ours, ref, true, wave_sizes[s] == 100 ? ">= 50x" : "");
		PlanMode(conn, "auto");

		/* the whole wave: keyset pages on both sides, and our stream */
		if (wave_sizes[s] >= 100)
		{
			long		stream_rows;
			double		stream_ms;

			(void) PageWave(conn, "our_page", &w, 1e12, &ours_ms, &ours_rows, &ours_pages);
			stream_ms = StreamWave(conn, &w, meta, blob, &stream_rows);
			if (stream_rows != ours_rows)
				tl_fatal("the stream read %ld rows, the pages %ld", stream_rows, ours_rows);
			ref_done = PageWave(conn, "ref_page", &w, ref_timeout_ms, &ref_ms, &ref_rows,
								&ref_pages);
			snprintf(what, sizeof(what), "whole %d-topic wave, pages (%ld rows, %d pages)",
					 wave_sizes[s], ours_rows, ours_pages);
			Report(layout, what, ours_ms, ref_ms, ref_done,
				   ">= 100x, or ref > 300 s and ours < 1 s");
			snprintf(what, sizeof(what), "whole %d-topic wave, stream (FETCH %d)",
					 wave_sizes[s], PAGE);
			Report(layout, what, stream_ms, ref_ms, ref_done,
				   ">= 100x, or ref > 300 s and ours < 1 s");
			if (ref_done && ref_rows != ours_rows)
				tl_fatal("the reference paged %ld rows, ours %ld", ref_rows, ours_rows);
			if (!ref_done)
				printf("%-12s   (reference stopped after %d pages, %ld rows, at %.0f s)\n",
					   layout, ref_pages, ref_rows, ref_ms / 1000.0);
		}
		wd_call_free(&call);
		wd_wave_free(&w);
	}

	/* ceilings: every originator, and a list of all seven */
	snprintf(sql, sizeof(sql), "SELECT * FROM xip83.originator_ceilings(NULL, '%s')", meta);
	Prepare(conn, "our_ceil_all", sql);
	snprintf(sql, sizeof(sql),
			 "SELECT originator_node_id, max(originator_sequence_id) FROM %s"
			 " GROUP BY originator_node_id ORDER BY originator_node_id", meta);
	Prepare(conn, "ref_ceil_all", sql);
	snprintf(sql, sizeof(sql), "SELECT * FROM xip83.originator_ceilings($1::int[], '%s')", meta);
	Prepare(conn, "our_ceil_list", sql);
	snprintf(sql, sizeof(sql),
			 "SELECT n, coalesce((SELECT originator_sequence_id FROM %s"
			 "                     WHERE originator_node_id = n"
			 "                     ORDER BY originator_sequence_id DESC LIMIT 1), 0)"
			 "  FROM unnest($1::int[]) AS n", meta);
	Prepare(conn, "ref_ceil_list", sql);
	{
		const char *list[1] = {"{100,200,300,400,500,600,700}"};

		Report(layout, "originator_ceilings(NULL) vs GROUP BY max()",
			   MedianMs(conn, "our_ceil_all", 0, NULL, 101),
			   MedianMs(conn, "ref_ceil_all", 0, NULL, 5), true, ">= 1000x");
		Report(layout, "originator_ceilings(7 originators) vs probes",
			   MedianMs(conn, "our_ceil_list", 1, list, 101),
			   MedianMs(conn, "ref_ceil_list", 1, list, 101), true,
			   "ours <= 1.5x the probes (ratio >= 0.67x)");
	}
}

/* Generates the envelopes and loads both layouts (a database that has them is reused). */
static void
Load(PGconn *conn, long envelopes)
{
	char		sql[1024];

	wd_load_reference(conn);
	snprintf(sql, sizeof(sql),
			 "SET client_min_messages = warning;"
			 "SELECT setseed(0.83);"
			 "CREATE UNLOGGED TABLE staging (LIKE xip83.envelopes INCLUDING DEFAULTS);"
			 "SELECT wave_d14n_generate('staging', %ld, '{100,200,300,400,500,600,700}',"
			 "                          '{0.76,0.80,0.84,0.88,0.92,0.96}', %d, 256);"
			 "INSERT INTO xip83.envelopes SELECT * FROM staging;"
			 "CREATE SCHEMA prod;"
			 "SELECT wave_d14n_production_layout('prod.meta', 'prod.blob');"
			 "SELECT wave_d14n_load_split('staging', 'prod.meta', 'prod.blob');"
			 "DROP TABLE staging;",
			 envelopes, NTOPICS);
	wd_exec_script(conn, sql);
	wd_exec_script(conn, "VACUUM ANALYZE");
	wd_exec_script(conn, "CHECKPOINT");
}

int
main(int argc, char **argv)
{
	long		envelopes = argc > 1 ? atol(argv[1]) : 2000000;
	const char *layouts = argc > 3 ? argv[3] : "both";
	PGconn	   *conn = tl_connect();
	char		sql[1024];
	double		t0 = NowMs();
	PGresult   *res;
	bool		loaded;

	ref_timeout_ms = (argc > 2 ? atof(argv[2]) : 300) * 1000.0;
	srandom(83);
	printf("bench_wave_d14n: %ld envelopes, 7 originators (76%% in one), %d topics, "
		   "256-byte payloads, pages of %d\n", envelopes, NTOPICS, PAGE);
	res = tl_exec(conn, "SELECT to_regclass('prod.meta') IS NOT NULL", 0, NULL);
	loaded = tl_bool(res, 0, 0);
	PQclear(res);
	if (loaded)
		printf("reusing the data already loaded in this database\n");
	else
		Load(conn, envelopes);
	snprintf(sql, sizeof(sql), "SET statement_timeout = %.0f", ref_timeout_ms);
	wd_exec_script(conn, sql);
	printf("loaded in %.1f s\n\n", (NowMs() - t0) / 1000.0);
	printf("%-12s %-52s %13s %15s %10s   %s\n", "layout", "measurement", "ours",
		   "reference", "ratio", "target");

	if (strcmp(layouts, "plain") != 0)
		BenchLayout(conn, "partitioned", "prod.meta", "prod.blob");
	if (strcmp(layouts, "partitioned") != 0)
		BenchLayout(conn, "plain", "xip83.envelopes", NULL);

	PQfinish(conn);
	printf("\ntotal %.1f s\n", (NowMs() - t0) / 1000.0);
	return 0;
}
