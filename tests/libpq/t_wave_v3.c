/*
 * t_wave_v3: the v3 wave scans against their SQL definition, row for row.
 *
 * Thousands of random waves (duplicate topics, unknown topics, the empty
 * topic, which the nodes store, empty and large arrays, floors above the ceiling, ceilings below the floors, scan
 * cursors mid-wave, every read strategy) over group and welcome messages, on
 * the extension's tables, on a node-layout table, and on partitioned copies.
 * A forked writer keeps inserting, deleting, updating and rolling back on the
 * extension's tables meanwhile; each comparison runs in one REPEATABLE READ
 * transaction so both sides see the same snapshot. Whole waves are paged
 * statelessly and streamed through a cursor and compared with the definition
 * without a limit. Huge arrays (1,000,000 topics) work and answer
 * statement_timeout and query cancel.
 */
#include "testlib.h"

#include <signal.h>
#include <sys/prctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define KNOWN_TOPICS	40
#define UNKNOWN_TOPICS	5
#define WAVES			2400

/* A message kind and how to read it: the function and the definition. */
typedef struct Kind
{
	const char *scan_fn;
	const char *stream_fn;
	const char *ceiling_fn;
	const char *topic_col;
	const char *columns;
	const char *sources[4];
	int			nsources;
} Kind;

static const Kind kinds[] = {
	{"xip83.group_wave_scan", "xip83.group_wave_stream", "xip83.group_ceiling", "group_id",
		"id, created_at, group_id, data, is_commit, sender_hmac, should_push",
		{"xip83.group_messages", "public.node_group_messages", "public.group_by_id",
		"public.group_by_topic"}, 4},
	{"xip83.welcome_wave_scan", "xip83.welcome_wave_stream", "xip83.welcome_ceiling",
		"installation_key",
		"id, created_at, installation_key, data, hpke_public_key, wrapper_algorithm, "
		"welcome_metadata, message_type",
		{"xip83.welcome_messages", "public.node_welcome_messages"}, 2},
};

static const char *strategies[] = {"auto", "heap", "walk"};

/* Tables: the extension's filled with skewed random rows, then static copies. */
static const char *setup_sql =
"SELECT setseed(0.83);"
"CREATE FUNCTION pg_temp.topic(k int) RETURNS bytea LANGUAGE sql IMMUTABLE AS"
"  $$ SELECT CASE k WHEN 0 THEN ''::bytea ELSE substring(int8send(k) from 9 - (1 + k % 3)) END $$;"
"INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash, is_commit, sender_hmac,"
"                                  should_push)"
"SELECT g, d, sha256(g || d), CASE WHEN random() < 0.2 THEN NULL ELSE random() < 0.3 END,"
"       CASE WHEN random() < 0.5 THEN int4send(i) END,"
"       CASE WHEN random() < 0.3 THEN NULL ELSE random() < 0.5 END"
"  FROM (SELECT i, pg_temp.topic(floor(40 * random() ^ 2)::int) g,"
"               int4send(i) || decode(repeat('ab', (random() * 40)::int), 'hex') d"
"          FROM generate_series(1, 4000) i) s;"
"INSERT INTO xip83.welcome_messages (installation_key, data, hpke_public_key,"
"        installation_key_data_hash, wrapper_algorithm, welcome_metadata, message_type)"
"SELECT k, d, CASE WHEN random() < 0.5 THEN int4send(i) END, sha256(k || d),"
"       (random() * 4)::int - 1, CASE WHEN random() < 0.5 THEN int8send(i) END, (random() * 3)::int"
"  FROM (SELECT i, pg_temp.topic(floor(40 * random() ^ 2)::int) k, int4send(i) d"
"          FROM generate_series(1, 3000) i) s;"
/* a node's own tables: other column order, extra columns */
"CREATE TABLE public.node_group_messages (note text DEFAULT 'n', should_push boolean,"
"    group_id bytea NOT NULL, data bytea NOT NULL, id bigint PRIMARY KEY,"
"    group_id_data_hash bytea, sender_hmac bytea, is_commit boolean,"
"    created_at timestamp NOT NULL);"
"INSERT INTO public.node_group_messages (should_push, group_id, data, id, sender_hmac,"
"    is_commit, created_at)"
"SELECT should_push, group_id, data, id, sender_hmac, is_commit, created_at"
"  FROM xip83.group_messages;"
"ALTER TABLE public.node_group_messages DROP COLUMN note;"
"CREATE INDEX ON public.node_group_messages (group_id, id);"
"CREATE TABLE public.node_welcome_messages (installation_key bytea NOT NULL,"
"    id bigint PRIMARY KEY, message_type smallint NOT NULL, data bytea NOT NULL,"
"    hpke_public_key bytea, wrapper_algorithm smallint NOT NULL, welcome_metadata bytea,"
"    created_at timestamp NOT NULL, extra int);"
"INSERT INTO public.node_welcome_messages (installation_key, id, message_type, data,"
"    hpke_public_key, wrapper_algorithm, welcome_metadata, created_at)"
"SELECT installation_key, id, message_type, data, hpke_public_key, wrapper_algorithm,"
"       welcome_metadata, created_at FROM xip83.welcome_messages;"
"CREATE INDEX ON public.node_welcome_messages (installation_key, id);"
/* RANGE partitions on id: leaves in id order, the dense walk applies */
"CREATE TABLE public.group_by_id (LIKE public.node_group_messages) PARTITION BY RANGE (id);"
"CREATE TABLE public.group_by_id_1 PARTITION OF public.group_by_id"
"    FOR VALUES FROM (MINVALUE) TO (1000);"
"CREATE TABLE public.group_by_id_2 PARTITION OF public.group_by_id"
"    FOR VALUES FROM (1000) TO (2500);"
"CREATE TABLE public.group_by_id_3 PARTITION OF public.group_by_id"
"    FOR VALUES FROM (2500) TO (MAXVALUE);"
"CREATE INDEX ON public.group_by_id (group_id, id);"
"CREATE UNIQUE INDEX ON public.group_by_id (id);"
"INSERT INTO public.group_by_id SELECT * FROM public.node_group_messages;"
/* HASH partitions on the topic: each (topic, leaf) is a stream of its own */
"CREATE TABLE public.group_by_topic (LIKE public.node_group_messages)"
"    PARTITION BY HASH (group_id);"
"CREATE TABLE public.group_by_topic_0 PARTITION OF public.group_by_topic"
"    FOR VALUES WITH (MODULUS 3, REMAINDER 0);"
"CREATE TABLE public.group_by_topic_1 PARTITION OF public.group_by_topic"
"    FOR VALUES WITH (MODULUS 3, REMAINDER 1);"
"CREATE TABLE public.group_by_topic_2 PARTITION OF public.group_by_topic"
"    FOR VALUES WITH (MODULUS 3, REMAINDER 2);"
"CREATE INDEX ON public.group_by_topic (group_id, id);"
"INSERT INTO public.group_by_topic SELECT * FROM public.node_group_messages;"
"ANALYZE;";

/* The writer's loop: inserts, deletes, topic changes, commits and rollbacks. */
static const char *writer_sql =
"BEGIN;"
"SELECT count(*) FROM xip83.insert_group_messages("
"    ARRAY(SELECT CASE k WHEN 0 THEN ''::bytea ELSE substring(int8send(k) from 9 - (1 + k % 3)) END"
"            FROM (SELECT floor(40 * random() ^ 2)::int k FROM generate_series(1, 4)) s),"
"    ARRAY(SELECT int8send((random() * 1e15)::bigint) FROM generate_series(1, 4)));"
"SELECT count(*) FROM xip83.insert_welcome_messages("
"    ARRAY[substring(int8send(7) from 7)], ARRAY[int8send((random() * 1e15)::bigint)]);"
"DELETE FROM xip83.group_messages WHERE id = (SELECT (random() * max(id))::bigint"
"    FROM xip83.group_messages);"
"UPDATE xip83.group_messages SET group_id = substring(int8send(5) from 7)"
"    WHERE id = (SELECT (random() * max(id))::bigint FROM xip83.group_messages);"
"UPDATE xip83.group_messages SET is_commit = NOT is_commit"
"    WHERE id = (SELECT (random() * max(id))::bigint FROM xip83.group_messages);"
"SELECT pg_sleep(random() * 0.004);";

/* Runs a script of several statements that must all succeed. */
static void
ExecScript(PGconn *conn, const char *sql)
{
	PGresult   *res = PQexec(conn, sql);

	if (PQresultStatus(res) != PGRES_COMMAND_OK && PQresultStatus(res) != PGRES_TUPLES_OK)
		tl_fatal("%s", PQerrorMessage(conn));
	PQclear(res);
}

/* Runs the writer until killed: each round commits or rolls back. */
static void
RunWriter(void)
{
	PGconn	   *conn;

	/* the writer ends with the test, however the test ends */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	conn = tl_connect();
	srandom((unsigned) getpid());
	for (;;)
	{
		PGresult   *res = PQexec(conn, writer_sql);

		PQclear(res);
		res = PQexec(conn, random() % 4 == 0 ? "ROLLBACK" : "COMMIT");
		PQclear(res);
	}
}

/* The topic of pool entry k as a bytea element literal ("\\x..."); 0 is the empty topic. */
static void
TopicLiteral(char *out, int k)
{
	int			len = k == 0 ? 0 : 1 + k % 3;

	out += sprintf(out, "\"\\\\x");
	for (int i = len - 1; i >= 0; i--)
		out += sprintf(out, "%02x", (unsigned) ((k >> (8 * i)) & 0xff));
	sprintf(out, "\"");
}

/* A random wave's arguments as text. */
typedef struct Wave
{
	char	   *topics;
	char	   *floors;
	char		scan_cursor[24];
	char		ceiling[24];
	char		page_limit[16];
	int			ntopics;
} Wave;

/* A random number in [lo, hi]. */
static long
Between(long lo, long hi)
{
	return hi <= lo ? lo : lo + random() % (hi - lo + 1);
}

/* Draws a random wave: sizes, duplicates, unknown topics, floors and bounds. */
static void
RandomWave(Wave *w, long max_id)
{
	int			r = (int) Between(0, 99);
	size_t		tp = 1, fp = 1;

	w->ntopics = r < 3 ? 0 : r < 45 ? (int) Between(1, 5) : r < 92 ? (int) Between(6, 45)
		: (int) Between(200, 2000);
	w->topics = malloc(16 + (size_t) w->ntopics * 24);
	w->floors = malloc(16 + (size_t) w->ntopics * 24);
	w->topics[0] = w->floors[0] = '{';
	for (int i = 0; i < w->ntopics; i++)
	{
		int			k = Between(0, 9) == 0 ? 1000 + (int) Between(0, UNKNOWN_TOPICS - 1)
			: (int) Between(0, KNOWN_TOPICS - 1);
		int			f = (int) Between(0, 9);
		long		floor = f < 5 ? 0 : f < 8 ? Between(-5, max_id) : Between(max_id - 50, max_id + 50);

		if (i > 0)
		{
			w->topics[tp++] = ',';
			w->floors[fp++] = ',';
		}
		TopicLiteral(w->topics + tp, k);
		tp += strlen(w->topics + tp);
		fp += sprintf(w->floors + fp, "%ld", floor);
	}
	strcpy(w->topics + tp, "}");
	strcpy(w->floors + fp, "}");
	snprintf(w->scan_cursor, sizeof(w->scan_cursor), "%ld",
			 Between(0, 9) < 4 ? 0 : Between(0, max_id));
	snprintf(w->ceiling, sizeof(w->ceiling), "%ld",
			 Between(0, 9) < 8 ? max_id : Between(0, max_id));
	snprintf(w->page_limit, sizeof(w->page_limit), "%ld",
			 Between(0, 9) == 0 ? 500 : Between(1, 60));
}

/* Whether two results hold the same rows, field for field; reports the first difference. */
static bool
SameRows(const PGresult *got, int got_from, const PGresult *want, int want_from, int n,
		 const char *what)
{
	for (int r = 0; r < n; r++)
		for (int c = 0; c < PQnfields(want); c++)
		{
			bool		gnull = PQgetisnull(got, got_from + r, c);
			bool		wnull = PQgetisnull(want, want_from + r, c);

			if (gnull != wnull ||
				(!gnull && strcmp(PQgetvalue(got, got_from + r, c),
								  PQgetvalue(want, want_from + r, c)) != 0))
			{
				TL_CHECK(false, "%s: row %d column %s: got %s, want %s", what, want_from + r,
						 PQfname(want, c), gnull ? "NULL" : PQgetvalue(got, got_from + r, c),
						 wnull ? "NULL" : PQgetvalue(want, want_from + r, c));
				return false;
			}
		}
	return true;
}

/* The definition's rows for a wave (limit NULL: the whole wave). */
static PGresult *
Definition(PGconn *conn, const Kind *kind, const char *source, const Wave *w, const char *limit)
{
	char		sql[1024];
	const char *params[5] = {w->topics, w->floors, w->scan_cursor, w->ceiling, limit};

	snprintf(sql, sizeof(sql),
			 "SELECT %s FROM %s m"
			 " WHERE EXISTS (SELECT FROM unnest($1::bytea[], $2::bigint[]) AS w(topic, floor)"
			 "                WHERE m.%s = w.topic AND m.id > w.floor)"
			 "   AND m.id > $3 AND m.id <= $4 ORDER BY m.id LIMIT $5::int",
			 kind->columns, source, kind->topic_col);
	return tl_exec(conn, sql, 5, params);
}

/* One page by the C function. */
static PGresult *
Page(PGconn *conn, const Kind *kind, const char *source, const Wave *w, const char *cursor)
{
	char		sql[512];
	const char *params[6] = {w->topics, w->floors, cursor, w->ceiling, w->page_limit, source};

	snprintf(sql, sizeof(sql), "SELECT * FROM %s($1, $2, $3, $4, $5, $6::regclass)",
			 kind->scan_fn);
	return tl_exec(conn, sql, 6, params);
}

/* Compares one page with the definition. */
static void
ComparePage(PGconn *conn, const Kind *kind, const char *source, const Wave *w)
{
	PGresult   *got = Page(conn, kind, source, w, w->scan_cursor);
	PGresult   *want = Definition(conn, kind, source, w, w->page_limit);

	bool		same_count = PQntuples(got) == PQntuples(want);

	TL_CHECK(same_count, "page of %s on %s: %d rows, want %d "
			 "(topics %.200s floors %.200s cursor %s ceiling %s limit %s)",
			 kind->scan_fn, source, PQntuples(got), PQntuples(want), w->topics, w->floors,
			 w->scan_cursor, w->ceiling, w->page_limit);
	if (same_count)
		SameRows(got, 0, want, 0, PQntuples(want), "page");
	PQclear(got);
	PQclear(want);
}

/* Pages a whole wave from its scan cursor and compares it with the definition. */
static void
CompareWholeWave(PGconn *conn, const Kind *kind, const char *source, const Wave *w)
{
	PGresult   *want = Definition(conn, kind, source, w, NULL);
	int			limit = atoi(w->page_limit);
	int			seen = 0;
	char		cursor[24];

	strcpy(cursor, w->scan_cursor);
	for (;;)
	{
		PGresult   *got = Page(conn, kind, source, w, cursor);
		int			n = PQntuples(got);
		bool		ok = seen + n <= PQntuples(want);

		TL_CHECK(ok, "whole wave on %s: more rows than the definition", source);
		if (!ok || !SameRows(got, 0, want, seen, n, "whole wave"))
		{
			PQclear(got);
			break;
		}
		seen += n;
		if (n > 0)
			snprintf(cursor, sizeof(cursor), "%s", PQgetvalue(got, n - 1, 0));
		PQclear(got);
		if (n < limit)
			break;
	}
	TL_CHECK(seen == PQntuples(want), "whole wave on %s: %d rows, want %d", source, seen,
			 PQntuples(want));
	PQclear(want);
}

/* Streams a whole wave through a cursor with random FETCH sizes and compares. */
static void
CompareStream(PGconn *conn, const Kind *kind, const char *source, const Wave *w)
{
	PGresult   *want = Definition(conn, kind, source, w, NULL);
	const char *params[5] = {w->topics, w->floors, w->scan_cursor, w->ceiling, source};
	char		sql[512];
	int			seen = 0;

	snprintf(sql, sizeof(sql),
			 "DECLARE wave CURSOR FOR SELECT * FROM %s($1, $2, $3, $4, $5::regclass)",
			 kind->stream_fn);
	PQclear(tl_exec(conn, sql, 5, params));
	for (;;)
	{
		char		fetch[64];
		PGresult   *got;
		int			n;
		long		ask = Between(1, 120);

		snprintf(fetch, sizeof(fetch), "FETCH %ld FROM wave", ask);
		got = tl_exec(conn, fetch, 0, NULL);
		n = PQntuples(got);
		bool		ok = seen + n <= PQntuples(want);

		TL_CHECK(ok, "stream on %s: too many rows", source);
		if (!ok || !SameRows(got, 0, want, seen, n, "stream"))
		{
			PQclear(got);
			break;
		}
		seen += n;
		PQclear(got);
		if (n < ask)
			break;
	}
	TL_CHECK(seen == PQntuples(want), "stream on %s: %d rows, want %d", source, seen,
			 PQntuples(want));
	PQclear(tl_exec(conn, "CLOSE wave", 0, NULL));
	PQclear(want);
}

/*
 * The highest id of a source; the C ceiling must agree wherever it applies
 * (a source partitioned by topic has no unique id index to read it from),
 * except over xip83's own tables, where it is the horizon.
 */
static long
Ceiling(PGconn *conn, const Kind *kind, const char *source)
{
	char		sql[256];
	PGresult   *res;
	long		ceiling;

	snprintf(sql, sizeof(sql), "SELECT coalesce(max(id), 0) FROM %s", source);
	res = tl_exec(conn, sql, 0, NULL);
	ceiling = (long) tl_int(res, 0, 0);
	PQclear(res);
	if (strcmp(source, "public.group_by_topic") == 0)
		return ceiling;
	if (strncmp(source, "xip83.", 6) == 0)
		return ceiling;			/* the horizon: see CheckHorizonCeiling */
	snprintf(sql, sizeof(sql), "SELECT %s('%s')", kind->ceiling_fn, source);
	res = tl_exec(conn, sql, 0, NULL);
	TL_CHECK(tl_int(res, 0, 0) == ceiling, "%s('%s') = %s, max(id) = %ld", kind->ceiling_fn,
			 source, PQgetvalue(res, 0, 0), ceiling);
	PQclear(res);
	return ceiling;
}

/*
 * Over xip83's own tables the ceiling is the kind's horizon, which only moves
 * forward: it lies between the horizons read just before and after it.
 */
static void
CheckHorizonCeiling(PGconn *conn, const Kind *kind)
{
	char		horizon_fn[64];
	char		sql[128];
	int64_t		v[3];

	snprintf(horizon_fn, sizeof(horizon_fn), "%s", kind->ceiling_fn);
	memcpy(strstr(horizon_fn, "ceiling"), "horizon", 7);
	for (int i = 0; i < 3; i++)
	{
		PGresult   *res;

		snprintf(sql, sizeof(sql), "SELECT %s()", i == 1 ? kind->ceiling_fn : horizon_fn);
		res = tl_exec(conn, sql, 0, NULL);
		v[i] = tl_int(res, 0, 0);
		PQclear(res);
	}
	TL_CHECK(v[0] <= v[1] && v[1] <= v[2], "%s() = %lld, horizons around it %lld and %lld",
			 kind->ceiling_fn, (long long) v[1], (long long) v[0], (long long) v[2]);
}

/* Huge arrays: a million topics work, and answer statement_timeout and cancel. */
static void
HugeArrays(PGconn *conn)
{
	/* a snprintf format: "%%" is the SQL modulo */
	const char *million =
		"SELECT count(*), coalesce(sum(id), 0) FROM xip83.group_wave_scan("
		" ARRAY(SELECT CASE i WHEN 0 THEN ''::bytea ELSE substring(int8send(i) from 9 - (1 + i %% 3)) END"
		"         FROM generate_series(0, 999999) i),"
		" array_fill(%s::bigint, ARRAY[1000000]), 0, xip83.group_ceiling(), 500)";
	char		sql[1024];
	PGresult   *got;
	PGresult   *want;
	PGcancel   *cancel;
	const char *state;

	/* caught up: nothing read */
	snprintf(sql, sizeof(sql), million, "xip83.group_ceiling()");
	got = tl_exec(conn, sql, 0, NULL);
	TL_CHECK(tl_int(got, 0, 0) == 0, "caught-up million-topic wave returned rows");
	PQclear(got);

	/* from the start: the first page equals the definition's */
	snprintf(sql, sizeof(sql), million, "0");
	got = tl_exec(conn, sql, 0, NULL);
	want = tl_exec(conn,
				   "SELECT count(*), coalesce(sum(id), 0) FROM (SELECT id FROM xip83.group_messages"
				   " WHERE id <= xip83.group_ceiling() ORDER BY id LIMIT 500) s", 0, NULL);
	SameRows(got, 0, want, 0, 1, "million topics");
	PQclear(got);
	PQclear(want);

	/* statement_timeout ends a million-descent merge */
	PQclear(tl_exec(conn, "SET xip83.wave_strategy = heap", 0, NULL));
	PQclear(tl_exec(conn, "SET statement_timeout = '100ms'", 0, NULL));
	snprintf(sql, sizeof(sql), million, "-1");
	TL_CHECK(tl_exec_fails(conn, sql, "57014"), "statement_timeout did not end the scan");
	PQclear(tl_exec(conn, "RESET statement_timeout", 0, NULL));

	/*
	 * so does a cancel request, sent as soon as statement_timeout fired
	 * above: the scan sets up only the topics it reaches and takes about
	 * 0.25 s here, so a later cancel can come after it has ended
	 */
	TL_CHECK(PQsendQuery(conn, sql) == 1, "send: %s", PQerrorMessage(conn));
	usleep(100 * 1000);
	cancel = PQgetCancel(conn);
	TL_CHECK(PQcancel(cancel, sql, sizeof(sql)) == 1, "cancel: %s", sql);
	PQfreeCancel(cancel);
	got = PQgetResult(conn);
	state = PQresultErrorField(got, PG_DIAG_SQLSTATE);
	TL_CHECK(state != NULL && strcmp(state, "57014") == 0, "cancel gave %s",
			 state ? state : PQresStatus(PQresultStatus(got)));
	PQclear(got);
	while ((got = PQgetResult(conn)) != NULL)
		PQclear(got);
	PQclear(tl_exec(conn, "RESET xip83.wave_strategy", 0, NULL));
}

int
main(void)
{
	PGconn	   *conn = tl_connect();
	pid_t		writer;
	int			status;

	srandom(8303);
	ExecScript(conn, setup_sql);

	writer = fork();
	if (writer < 0)
		tl_fatal("fork failed");
	if (writer == 0)
		RunWriter();

	for (int i = 0; i < WAVES; i++)
	{
		const Kind *kind = &kinds[Between(0, 2) == 0 ? 1 : 0];
		const char *source = kind->sources[Between(0, kind->nsources - 1)];
		char		set[64];
		Wave		w;

		if (strncmp(source, "xip83.", 6) == 0)
			CheckHorizonCeiling(conn, kind);
		PQclear(tl_exec(conn, "BEGIN ISOLATION LEVEL REPEATABLE READ", 0, NULL));
		snprintf(set, sizeof(set), "SET LOCAL xip83.wave_strategy = %s",
				 strategies[Between(0, 2)]);
		PQclear(tl_exec(conn, set, 0, NULL));
		RandomWave(&w, Ceiling(conn, kind, source));
		ComparePage(conn, kind, source, &w);
		if (i % 8 == 0)
			CompareWholeWave(conn, kind, source, &w);
		if (i % 8 == 4)
			CompareStream(conn, kind, source, &w);
		PQclear(tl_exec(conn, "COMMIT", 0, NULL));
		free(w.topics);
		free(w.floors);
		if (tl_failures > 10)
			break;
	}

	kill(writer, SIGTERM);
	waitpid(writer, &status, 0);
	HugeArrays(conn);
	PQfinish(conn);
	return tl_done("t_wave_v3");
}
