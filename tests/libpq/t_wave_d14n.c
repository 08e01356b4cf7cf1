/*
 * t_wave_d14n: xip83.envelope_wave_scan and xip83.originator_ceilings equal
 * their SQL definition (tests/wave_d14n_reference.sql) row for row, on
 *   - the plain table xip83.envelopes,
 *   - production's layout: meta and blob tables LIST-partitioned by originator
 *     and RANGE-banded by 1,000,000 sequence ids,
 *   - plain meta with the partitioned blob table;
 *   - a table HASH-partitioned on the sequence, whose leaves are not bands;
 * with dead rows in the indexes and meta rows whose blob row is missing.
 * Stored rows include the empty topic and sequence 0 (chain originators), as
 * the nodes store them; floors include -1 ("nothing seen": sequence 0 is
 * read) and 0 ("seen 0").
 * Random waves have repeated entries, originators without rows or without a
 * ceiling, floors above ceilings, scan cursors mid-originator and random page
 * sizes; whole waves are paged with keyset pages while new partitions (a new
 * originator, a new band) are added and filled between pages.
 */
#include "testlib.h"
#include "wave_d14n_fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NTOPICS		60			/* stored topics; waves also ask for 60..69 */
#define NWAVES		400
#define NPAGED		40

/* A source configuration: meta table and blob table (NULL = none). */
typedef struct Layout
{
	const char *name;
	const char *source;
	const char *blob;
} Layout;

static const Layout layouts[] = {
	{"plain", "xip83.envelopes", NULL},
	{"partitioned meta/blob", "prod.meta", "prod.blob"},
	{"plain meta, partitioned blob", "xip83.envelopes", "prod.blob"},
	{"hash-partitioned (no bands)", "hashed.envelopes", NULL},
};

#define NLAYOUTS (int) (sizeof(layouts) / sizeof(layouts[0]))

/* Originators asked about: 5 and 50 never have rows, 45 appears mid-test. */
static const int32_t originators[] = {5, 10, 20, 30, 40, 45, 50};

#define NORIGINATORS (int) (sizeof(originators) / sizeof(originators[0]))

static int64_t top_sequence[NORIGINATORS];
static long rows_compared;

/* A random int64 in [0, n). */
static int64_t
RandomBelow(int64_t n)
{
	if (n <= 0)
		return 0;
	return (int64_t) ((((uint64_t) random() << 31) ^ (uint64_t) random()) % (uint64_t) n);
}

/* Reads every originator's highest sequence through the SQL definition. */
static void
RefreshTops(PGconn *conn)
{
	PGresult   *res = tl_exec(conn, "SELECT originator_node_id, max_sequence_id"
								  " FROM wave_d14n_reference_ceilings(NULL)", 0, NULL);

	memset(top_sequence, 0, sizeof(top_sequence));
	for (int r = 0; r < PQntuples(res); r++)
		for (int i = 0; i < NORIGINATORS; i++)
			if (tl_int(res, r, 0) == originators[i])
				top_sequence[i] = tl_int(res, r, 1);
	PQclear(res);
}

/* A random wave over the stored and some unknown topics. */
static void
RandomWave(WdWave *w, int max_topics)
{
	int			ntopics = (int) RandomBelow(max_topics + 1);

	wd_wave_init(w);
	for (int t = 0; t < ntopics; t++)
	{
		/* -1: the empty topic */
		int32_t		topic = random() % 12 == 0 ? -1 : (int32_t) RandomBelow(NTOPICS + 10);

		for (int i = 0; i < NORIGINATORS; i++)
		{
			int64_t		floor;

			if (random() % 4 == 0)
				continue;
			floor = random() % 3 == 0 ? -(random() % 2)
				: RandomBelow(top_sequence[i] + top_sequence[i] / 10 + 2);
			wd_wave_add(w, topic, originators[i], floor);
			if (random() % 6 == 0)	/* a repeated entry: the lowest floor wins */
				wd_wave_add(w, topic, originators[i], RandomBelow(top_sequence[i] + 2));
		}
	}
	for (int i = 0; i < NORIGINATORS && w->nceilings < 60; i++)
	{
		if (random() % 8 == 0)
			continue;			/* no ceiling: the originator is left out */
		w->ceiling_nodes[w->nceilings] = originators[i];
		w->ceilings[w->nceilings++] = random() % 2 ? top_sequence[i]
			: RandomBelow(top_sequence[i] + 2);
		if (random() % 8 == 0)
		{
			w->ceiling_nodes[w->nceilings] = originators[i];
			w->ceilings[w->nceilings++] = RandomBelow(top_sequence[i] + 2);
		}
	}
}

/* Runs one page through the C function and the definition; compares them. */
static PGresult *
ComparePage(PGconn *conn, const Layout *layout, const WdWave *w, int32_t scan_node,
			int64_t scan_sequence, int row_limit, const char *what)
{
	static const char *const c_sql =
		"SELECT * FROM xip83.envelope_wave_scan($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)";
	static const char *const ref_sql =
		"SELECT * FROM wave_d14n_reference_page($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)";
	WdCall		call;
	PGresult   *got,
			   *want;
	bool		same;

	wd_call_init(&call, w, scan_node, scan_sequence, row_limit, layout->source, layout->blob);
	got = tl_exec(conn, c_sql, call.nparams, call.params);
	want = tl_exec(conn, ref_sql, call.nparams, call.params);
	same = PQntuples(got) == PQntuples(want);
	for (int r = 0; same && r < PQntuples(got); r++)
		for (int c = 0; same && c < 5; c++)
			same = strcmp(PQgetvalue(got, r, c), PQgetvalue(want, r, c)) == 0;
	TL_CHECK(same, "%s on %s: %d rows, definition %d (%d entries, scan (%d,%lld), limit %d)",
			 what, layout->name, PQntuples(got), PQntuples(want), w->nentries,
			 scan_node, (long long) scan_sequence, row_limit);
	rows_compared += PQntuples(want);
	wd_call_free(&call);
	PQclear(want);
	return got;
}

/*
 * Reads a whole wave through envelope_wave_stream in a cursor, in FETCHes of
 * random size, and compares it with the definition's whole wave.
 */
static void
CompareStream(PGconn *conn, const Layout *layout, const WdWave *w, int32_t scan_node,
			  int64_t scan_sequence)
{
	WdCall		page,
				stream;
	char		fetch[32];
	PGresult   *want;
	int			row = 0;
	bool		same = true;

	wd_call_init(&page, w, scan_node, scan_sequence, 1000000, layout->source, layout->blob);
	wd_call_init(&stream, w, scan_node, scan_sequence, 0, layout->source, layout->blob);
	want = tl_exec(conn, "SELECT * FROM wave_d14n_reference_page($1, $2, $3, $4, $5, $6, $7,"
				   " $8, $9, $10)", page.nparams, page.params);
	wd_exec_script(conn, "BEGIN");
	PQclear(tl_exec(conn, "DECLARE w CURSOR FOR SELECT * FROM xip83.envelope_wave_stream("
					"$1, $2, $3, $4, $5, $6, $7, $8, $9)", stream.nparams, stream.params));
	for (;;)
	{
		PGresult   *got;
		int			n;

		snprintf(fetch, sizeof(fetch), "FETCH %d FROM w", 1 + (int) RandomBelow(300));
		got = tl_exec(conn, fetch, 0, NULL);
		n = PQntuples(got);
		for (int r = 0; same && r < n; r++, row++)
		{
			same = row < PQntuples(want);
			for (int c = 0; same && c < 5; c++)
				same = strcmp(PQgetvalue(got, r, c), PQgetvalue(want, row, c)) == 0;
		}
		PQclear(got);
		if (n == 0 || !same)
			break;
	}
	/* a cursor closed before its end must release what the stream holds */
	wd_exec_script(conn, "CLOSE w; COMMIT");
	TL_CHECK(same && row == PQntuples(want), "stream on %s: %d rows, definition %d",
			 layout->name, row, PQntuples(want));
	rows_compared += row;
	PQclear(want);
	wd_call_free(&page);
	wd_call_free(&stream);
}

/* A stream abandoned part way, and the plan that keeps it streaming. */
static void
CheckStreamPlan(PGconn *conn)
{
	PGresult   *plan = tl_exec(conn,
							   "EXPLAIN (COSTS OFF) SELECT * FROM xip83.envelope_wave_stream("
							   "'{}', '{}', '{}', '{}', '{}', 0, 0)", 0, NULL);
	bool		project_set = false;

	for (int r = 0; r < PQntuples(plan); r++)
		project_set |= strstr(PQgetvalue(plan, r, 0), "ProjectSet") != NULL;
	TL_CHECK(project_set, "envelope_wave_stream runs in a target list (ProjectSet)");
	PQclear(plan);
	wd_exec_script(conn,
				   "BEGIN;"
				   "DECLARE part CURSOR FOR SELECT * FROM xip83.envelope_wave_stream("
				   "  ARRAY(SELECT DISTINCT topic FROM xip83.envelopes),"
				   "  ARRAY(SELECT 10 FROM (SELECT DISTINCT topic FROM xip83.envelopes) t),"
				   "  ARRAY(SELECT 0::bigint FROM (SELECT DISTINCT topic FROM xip83.envelopes) t),"
				   "  '{10}', '{100000000}', 0, 0, 'prod.meta', 'prod.blob');"
				   "FETCH 3 FROM part;"
				   "CLOSE part;"
				   "COMMIT;");
}

/* Stores n more envelopes in both layouts, with partitions for them. */
static void
AddEnvelopes(PGconn *conn, int32_t originator, int n, int64_t stride)
{
	char		sql[1024];

	snprintf(sql, sizeof(sql),
			 "CREATE TEMP TABLE fresh (LIKE xip83.envelopes INCLUDING DEFAULTS);"
			 "SELECT wave_d14n_generate('fresh', %d, '{%d}', '{}', %d, 64, %lld);"
			 "UPDATE fresh SET originator_sequence_id = originator_sequence_id"
			 " + coalesce((SELECT max(originator_sequence_id) FROM xip83.envelopes"
			 "             WHERE originator_node_id = %d), 0);"
			 "INSERT INTO xip83.envelopes SELECT * FROM fresh;"
			 "INSERT INTO hashed.envelopes SELECT * FROM fresh;"
			 "SELECT wave_d14n_load_split('fresh', 'prod.meta', 'prod.blob');"
			 "DROP TABLE fresh;",
			 n, originator, NTOPICS, (long long) stride, originator);
	wd_exec_script(conn, sql);
}

/* Pages through whole waves, adding partitions and rows between pages. */
static void
PageWholeWaves(PGconn *conn)
{
	for (int wave = 0; wave < NPAGED; wave++)
	{
		const Layout *layout = &layouts[wave % NLAYOUTS];
		WdWave		w;
		int32_t		scan_node = 0;
		int64_t		scan_sequence = 0;
		int			pages = 0;

		RandomWave(&w, 25);
		for (;;)
		{
			int			limit = 1 + (int) RandomBelow(wave % 2 ? 40 : 400);
			PGresult   *page = ComparePage(conn, layout, &w, scan_node, scan_sequence,
										   limit, "page");
			int			n = PQntuples(page);

			if (n > 0)
			{
				scan_node = (int32_t) tl_int(page, n - 1, 0);
				scan_sequence = tl_int(page, n - 1, 1);
			}
			PQclear(page);
			if (n < limit)
				break;
			pages++;
			/* partitions appear while the wave is being paged */
			if (pages % 3 == 1)
				AddEnvelopes(conn, random() % 2 ? 45 : 40, 20, 90000);
		}
		wd_wave_free(&w);
		RefreshTops(conn);
	}
}

/* Compares originator_ceilings with its definition for NULL and random lists. */
static void
CompareCeilings(PGconn *conn, const char *source)
{
	for (int round = 0; round < 30; round++)
	{
		char		list[256] = "";
		size_t		len = 0;
		const char *params[2];
		PGresult   *got,
				   *want;
		bool		same;

		if (round > 0)
		{
			int			n = (int) RandomBelow(8);

			len += snprintf(list + len, sizeof(list) - len, "{");
			for (int i = 0; i < n; i++)
				len += snprintf(list + len, sizeof(list) - len, "%s%d", i ? "," : "",
								originators[RandomBelow(NORIGINATORS)] + (random() % 5 == 0));
			snprintf(list + len, sizeof(list) - len, "}");
		}
		params[0] = round > 0 ? list : NULL;
		params[1] = source;
		got = tl_exec(conn, "SELECT * FROM xip83.originator_ceilings($1, $2)", 2, params);
		want = tl_exec(conn, "SELECT * FROM wave_d14n_reference_ceilings($1, $2)", 2, params);
		same = PQntuples(got) == PQntuples(want);
		for (int r = 0; same && r < PQntuples(got); r++)
			same = strcmp(PQgetvalue(got, r, 0), PQgetvalue(want, r, 0)) == 0 &&
				strcmp(PQgetvalue(got, r, 1), PQgetvalue(want, r, 1)) == 0;
		TL_CHECK(same, "originator_ceilings(%s, %s): %d rows, definition %d",
				 round ? list : "NULL", source, PQntuples(got), PQntuples(want));
		PQclear(got);
		PQclear(want);
	}
}

/* Bad input and refused sources fail with the SQLSTATE a caller can act on. */
static void
CheckErrors(PGconn *conn)
{
	static const struct
	{
		const char *sql;
		const char *sqlstate;
	}			cases[] = {
		{"SELECT xip83.envelope_wave_scan(NULL, '{}', '{}', '{}', '{}', 0, 0, 1)", "22004"},
		{"SELECT xip83.envelope_wave_scan('{}', '{}', '{}', '{}', '{}', 0, NULL, 1)", "22004"},
		{"SELECT xip83.envelope_wave_scan('{\"\\\\x00\",NULL}', '{1,1}', '{0,0}', '{}', '{}', 0, 0, 1)", "22004"},
		{"SELECT xip83.envelope_wave_scan('{}', '{1}', '{}', '{}', '{}', 0, 0, 1)", "22023"},
		{"SELECT xip83.envelope_wave_scan('{}', '{}', '{}', '{}', '{}', 0, 0, 0)", "22023"},
		{"SELECT xip83.envelope_wave_scan('{}', '{}', '{}', '{}', '{}', 0, 0, 1, 'prod.meta')", "42703"},
		{"SELECT xip83.envelope_wave_scan('{}', '{}', '{}', '{}', '{}', 0, 0, 1, 'errs.no_index')", "55000"},
		{"SELECT xip83.originator_ceilings(NULL, 'errs.no_index')", "55000"},
		{"SELECT xip83.originator_ceilings(NULL, 'errs.wrong_type')", "42804"},
		{"SELECT xip83.originator_ceilings(NULL, 'errs.a_view')", "42809"},
		{"SELECT xip83.originator_ceilings('{1,NULL}')", "22004"},
		{"SET ROLE wave_d14n_nobody; SELECT xip83.originator_ceilings()", "42501"},
		{"SET ROLE wave_d14n_nobody; SELECT xip83.envelope_wave_scan('{}', '{}', '{}', '{}', '{}',"
		 " 0, 0, 1, 'prod.meta', 'prod.blob')", "42501"},
		{"SET ROLE wave_d14n_nobody; SELECT xip83.originator_ceilings(NULL, 'errs.with_rls')", "42501"},
	};

	wd_exec_script(conn,
				   "CREATE SCHEMA errs;"
				   "CREATE TABLE errs.no_index (LIKE xip83.envelopes);"
				   "CREATE TABLE errs.wrong_type (originator_node_id bigint,"
				   "                              originator_sequence_id bigint);"
				   "CREATE VIEW errs.a_view AS SELECT * FROM xip83.envelopes;"
				   "CREATE TABLE errs.with_rls (LIKE xip83.envelopes INCLUDING INDEXES);"
				   "ALTER TABLE errs.with_rls ENABLE ROW LEVEL SECURITY;"
				   "CREATE ROLE wave_d14n_nobody;"
				   "GRANT USAGE ON SCHEMA xip83, prod, errs TO wave_d14n_nobody;"
				   "GRANT SELECT ON prod.meta, errs.with_rls TO wave_d14n_nobody;");
	for (int i = 0; i < (int) (sizeof(cases) / sizeof(cases[0])); i++)
	{
		TL_CHECK(tl_exec_fails(conn, cases[i].sql, cases[i].sqlstate), "%s", cases[i].sql);
		wd_exec_script(conn, "RESET ROLE");
	}
	/* roles outlive the test database */
	wd_exec_script(conn,
				   "DROP SCHEMA errs CASCADE;"
				   "REVOKE ALL ON prod.meta FROM wave_d14n_nobody;"
				   "REVOKE ALL ON SCHEMA xip83, prod FROM wave_d14n_nobody;"
				   "DROP ROLE wave_d14n_nobody;");
}

int
main(void)
{
	PGconn	   *conn = tl_connect();

	srandom(1483);
	if (getenv("WD_DEBUG_WAIT"))
	{
		PGresult   *pid = tl_exec(conn, "SELECT pg_backend_pid()", 0, NULL);

		fprintf(stderr, "backend %s\n", PQgetvalue(pid, 0, 0));
		PQclear(pid);
		sleep(atoi(getenv("WD_DEBUG_WAIT")));
	}
	wd_load_reference(conn);
	wd_exec_script(conn,
				   "SELECT setseed(0.83);"
				   "SELECT wave_d14n_generate('xip83.envelopes', 4000, '{10,20,30,40}',"
				   "                          '{0.6,0.8,0.95}', 60, 64, 3000);"
				   /* the empty topic, stored by the nodes */
				   "UPDATE xip83.envelopes SET topic = '' WHERE originator_sequence_id % 13 = 0;"
				   "CREATE SCHEMA prod;"
				   "SELECT wave_d14n_production_layout('prod.meta', 'prod.blob');"
				   "SELECT wave_d14n_load_split('xip83.envelopes', 'prod.meta', 'prod.blob');"
				   "CREATE SCHEMA hashed;"
				   "CREATE TABLE hashed.envelopes (LIKE xip83.envelopes INCLUDING DEFAULTS,"
				   "  PRIMARY KEY (originator_node_id, originator_sequence_id))"
				   "  PARTITION BY HASH (originator_sequence_id);"
				   "CREATE INDEX ON hashed.envelopes (topic, originator_node_id, originator_sequence_id);"
				   "CREATE TABLE hashed.envelopes_0 PARTITION OF hashed.envelopes"
				   "  FOR VALUES WITH (MODULUS 3, REMAINDER 0);"
				   "CREATE TABLE hashed.envelopes_1 PARTITION OF hashed.envelopes"
				   "  FOR VALUES WITH (MODULUS 3, REMAINDER 1);"
				   "CREATE TABLE hashed.envelopes_2 PARTITION OF hashed.envelopes"
				   "  FOR VALUES WITH (MODULUS 3, REMAINDER 2);"
				   "INSERT INTO hashed.envelopes SELECT * FROM xip83.envelopes;"
				   /* dead index entries, and meta rows without their blob */
				   "DELETE FROM xip83.envelopes WHERE originator_sequence_id % 97 = 0;"
				   "DELETE FROM hashed.envelopes WHERE originator_sequence_id % 97 = 0;"
				   "DELETE FROM prod.meta WHERE originator_sequence_id % 97 = 0;"
				   "DELETE FROM prod.blob WHERE originator_sequence_id % 89 = 0;"
				   /* sequence 0 of chain originators, in every layout */
				   "CREATE TEMP TABLE zero (LIKE xip83.envelopes INCLUDING DEFAULTS);"
				   "INSERT INTO zero (originator_node_id, originator_sequence_id, topic,"
				   "                  originator_envelope)"
				   "VALUES (10, 0, '', '\\xe0'), (20, 0, '\\x0000000000', '\\xe1'),"
				   "       (30, 0, '\\x0000000001', '\\xe2');"
				   "INSERT INTO xip83.envelopes SELECT * FROM zero;"
				   "INSERT INTO hashed.envelopes SELECT * FROM zero;"
				   "SELECT wave_d14n_load_split('zero', 'prod.meta', 'prod.blob');"
				   "DROP TABLE zero;");
	RefreshTops(conn);

	for (int i = 0; i < NWAVES; i++)
	{
		WdWave		w;
		int			o = (int) RandomBelow(NORIGINATORS);
		bool		mid = random() % 2;
		int			limit = random() % 5 == 0 ? 10000 : 1 + (int) RandomBelow(300);

		RandomWave(&w, i % 10 == 0 ? 60 : 12);
		PQclear(ComparePage(conn, &layouts[i % NLAYOUTS], &w, mid ? originators[o] : 0,
							mid ? RandomBelow(top_sequence[o] + 2) : 0, limit, "random page"));
		wd_wave_free(&w);
	}
	PageWholeWaves(conn);
	for (int i = 0; i < 60; i++)
	{
		WdWave		w;
		int			o = (int) RandomBelow(NORIGINATORS);
		bool		mid = random() % 2;

		RandomWave(&w, 20);
		CompareStream(conn, &layouts[i % NLAYOUTS], &w, mid ? originators[o] : 0,
					  mid ? RandomBelow(top_sequence[o] + 2) : 0);
		wd_wave_free(&w);
	}
	CheckStreamPlan(conn);

	CompareCeilings(conn, "xip83.envelopes");
	CompareCeilings(conn, "prod.meta");
	CompareCeilings(conn, "prod.blob");
	CompareCeilings(conn, "hashed.envelopes");
	CheckErrors(conn);

	printf("compared %ld rows\n", rows_compared);
	TL_CHECK(rows_compared > 20000, "the random waves returned rows: %ld", rows_compared);
	PQfinish(conn);
	return tl_done("t_wave_d14n");
}
