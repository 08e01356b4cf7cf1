/*
 * t_recent_waves: reconnect waves over xip83's own tables, which skip topics
 * by the recent-writes table (src/core/recent.c), return exactly the rows of the
 * plain-SQL definition of a page, whatever happened since the floors were
 * taken: writers committing between waves, open transactions holding
 * positions (committed after a wave's snapshot, then found by the next wave
 * with the same floors), explicit ids above the sequence, late writes (a row
 * deleted and written again below the horizon), a row moved to a quiet topic, a TRUNCATE, clean and crash
 * restarts, and more distinct topics than the table holds (low-water rises).
 * Topics the table knows exactly (src/core/recent.c, RecentExact) are read by
 * position: floors at their own ids, more and fewer rows above them than it
 * retains, rows rolled back, deleted, moved or written below the sequence.
 *
 * Floors are a client's view taken at some point (seen_*): each topic's last
 * id then, a little below it, or anywhere below; plus topics never written.
 * The same for d14n waves per (topic, originator), three originators.
 * Any skip made unconditional loses rows written after the floors were taken.
 *
 * The topic summary (src/core/summary.c) answers for every topic once its
 * pass has read the stored rows: the waves run again once it is ready after
 * each start, with floors from before the restart (so that the recent-writes
 * tables, empty then, leave the skip to it), after rows moved, deleted and
 * written again, a TRUNCATE, a crash in the middle of its pass, and with the
 * summary far smaller than the topics (1kB: 16 blocks of 7 slots) and off.
 */
#include "testlib.h"

#include <stdio.h>
#include <stdlib.h>

static void
Exec(PGconn *c, const char *sql)
{
	PQclear(tl_exec(c, sql, 0, NULL));
}

/*
 * diff_wave(kind, pick, seed): a wave over a random pick of the topics seen,
 * floors at, near or below each one's last seen id, ceiling from the ceiling
 * function, compared with the definition; returns rows expected and the
 * symmetric difference. One page large enough for everything.
 */
static const char *const Setup =
"CREATE TABLE seen_group (topic bytea PRIMARY KEY, last bigint);"
"CREATE TABLE seen_welcome (topic bytea PRIMARY KEY, last bigint);"
"CREATE FUNCTION take_seen() RETURNS void LANGUAGE sql AS $$"
"  TRUNCATE seen_group, seen_welcome;"
"  INSERT INTO seen_group SELECT group_id, max(id) FROM xip83.group_messages GROUP BY 1;"
"  INSERT INTO seen_welcome SELECT installation_key, max(id) FROM xip83.welcome_messages GROUP BY 1;"
"$$;"
"CREATE FUNCTION diff_wave(kind text, pick float8, seed float8, OUT expected bigint, OUT differ bigint)"
" LANGUAGE plpgsql AS $$"
"DECLARE tab text := CASE kind WHEN 'group' THEN 'group_messages' ELSE 'welcome_messages' END;"
"  col text := CASE kind WHEN 'group' THEN 'group_id' ELSE 'installation_key' END;"
"  topics bytea[]; floors bigint[]; ceil bigint;"
"BEGIN"
"  PERFORM setseed(seed);"
"  EXECUTE format('SELECT array_agg(topic ORDER BY k), array_agg(fl ORDER BY k) FROM ("
"      SELECT topic, random() k, CASE WHEN r < 0.6 THEN last WHEN r < 0.8 THEN greatest(last - (random() * 3)::int, 0)"
"                                   ELSE (last * random())::bigint END fl"
"        FROM (SELECT *, random() r FROM seen_%s) s WHERE random() < $1"
"      UNION ALL SELECT ''\\xfffe''::bytea, 0.5, 0"
"      UNION ALL SELECT ''\\xfffd''::bytea, 0.6, 10) x', kind) INTO topics, floors USING pick;"
"  EXECUTE format('SELECT xip83.%s_ceiling()', kind) INTO ceil;"
"  EXECUTE format('WITH f AS (SELECT * FROM unnest($1, $2) f(topic, fl)),"
"      w AS (SELECT id FROM xip83.%s_wave_scan($1, $2, 0, $3, 1000000)),"
"      e AS (SELECT m.id FROM xip83.%s m WHERE m.id <= $3 AND EXISTS"
"             (SELECT 1 FROM f WHERE f.topic = m.%s AND m.id > f.fl))"
"    SELECT (SELECT count(*) FROM e),"
"           (SELECT count(*) FROM ((SELECT id FROM e EXCEPT SELECT id FROM w)"
"                                  UNION ALL (SELECT id FROM w EXCEPT SELECT id FROM e)) d)',"
"      kind, tab, col) INTO expected, differ USING topics, floors, ceil;"
"END $$;"
/*
 * diff_pages: a wave read page by page (scan cursor = the last id of the
 * previous page) under a wave strategy, compared in order with the
 * definition: floors at, near (90-100% of), far below or above (past the
 * ceiling) each topic's last id, some topics listed again with another floor,
 * a topic never written. With nth > 0 instead each topic's floor is one of
 * its own ids now, the first to the nth highest (0 when it has fewer): at a
 * position the recent-writes table retains or just dropped, so that the
 * topics it knows exactly take their rows from it and the others descend.
 * 0 when the ids are the same in the same order.
 */
"CREATE FUNCTION diff_pages(kind text, pick float8, seed float8, page int, strategy text,"
"    nth int DEFAULT 0, OUT expected bigint, OUT differ bigint) LANGUAGE plpgsql AS $$"
"DECLARE tab text := CASE kind WHEN 'group' THEN 'group_messages' ELSE 'welcome_messages' END;"
"  col text := CASE kind WHEN 'group' THEN 'group_id' ELSE 'installation_key' END;"
"  topics bytea[]; floors bigint[]; ceil bigint; cur bigint := 0; got bigint[] := '{}';"
"  part bigint[]; want bigint[];"
"BEGIN"
"  PERFORM setseed(seed);"
"  PERFORM set_config('xip83.wave_strategy', strategy, true);"
"  EXECUTE format('SELECT array_agg(topic ORDER BY k), array_agg(fl ORDER BY k) FROM ("
"      SELECT topic, random() k, CASE WHEN r < 0.3 THEN last"
"          WHEN r < 0.6 THEN (last * (0.9 + random() * 0.1))::bigint"
"          WHEN r < 0.7 THEN 1000000000 WHEN r < 0.8 THEN greatest(last - (random() * 3)::int, 0)"
"          ELSE (last * random())::bigint END fl"
"        FROM (SELECT *, random() r FROM seen_%s) s WHERE random() < $1"
"      UNION ALL SELECT topic, random(), (last * random())::bigint FROM seen_%s WHERE random() < $1 / 4"
"      UNION ALL SELECT ''\\xfffe''::bytea, 0.5, 0) x', kind, kind) INTO topics, floors USING pick;"
"  IF nth > 0 THEN"
"    EXECUTE format('SELECT array_agg(topic ORDER BY random()), array_agg(coalesce(fl, 0) ORDER BY random())"
"        FROM (SELECT %s topic, (array_agg(id ORDER BY id DESC))[1 + (random() * ($2 - 1))::int] fl"
"                FROM xip83.%s GROUP BY 1) x WHERE random() < $1', col, tab)"
"      INTO topics, floors USING pick, nth;"
"  END IF;"
"  EXECUTE format('SELECT xip83.%s_ceiling()', kind) INTO ceil;"
"  LOOP"
"    EXECUTE format('SELECT array_agg(t.id ORDER BY t.ordinality)"
"        FROM xip83.%s_wave_scan($1, $2, $3, $4, $5) WITH ORDINALITY t', kind)"
"      INTO part USING topics, floors, cur, ceil, page;"
"    EXIT WHEN part IS NULL;"
"    got := got || part;"
"    EXIT WHEN cardinality(part) < page;"
"    cur := part[cardinality(part)];"
"  END LOOP;"
"  EXECUTE format('SELECT array_agg(m.id ORDER BY m.id) FROM xip83.%s m WHERE m.id <= $3 AND EXISTS"
"      (SELECT 1 FROM unnest($1, $2) f(topic, fl) WHERE f.topic = m.%s AND m.id > f.fl)', tab, col)"
"    INTO want USING topics, floors, ceil;"
"  expected := coalesce(cardinality(want), 0);"
"  differ := CASE WHEN got = coalesce(want, '{}') THEN 0"
"                 ELSE 1 + abs(coalesce(cardinality(got), 0) - expected) END;"
"END $$;"
/* d14n: per (topic, originator) */
"CREATE TABLE seen_env (topic bytea, node int, last bigint, PRIMARY KEY (topic, node));"
"CREATE FUNCTION take_seen_env() RETURNS void LANGUAGE sql AS $$"
"  TRUNCATE seen_env;"
"  INSERT INTO seen_env SELECT topic, originator_node_id, max(originator_sequence_id)"
"    FROM xip83.envelopes GROUP BY 1, 2;"
"$$;"
"CREATE FUNCTION write_env(ntopics int, n int, nodes int[]) RETURNS void LANGUAGE sql AS $$"
"  INSERT INTO xip83.envelopes (originator_node_id, originator_sequence_id, topic, originator_envelope)"
"  SELECT node, coalesce((SELECT max(originator_sequence_id) FROM xip83.envelopes e"
"                          WHERE e.originator_node_id = node), 0) + i,"
"         int4send((random() * ntopics)::int), '\\x01'"
"    FROM generate_series(1, n) i, unnest(nodes) node;"
"$$;"
/* diff_env: diff_wave of envelopes; nth as in diff_pages, per (topic, originator) */
"CREATE FUNCTION diff_env(pick float8, seed float8, nth int DEFAULT 0,"
"    OUT expected bigint, OUT differ bigint) LANGUAGE plpgsql AS $$"
"DECLARE topics bytea[]; nodes int[]; floors bigint[]; cn int[]; cs bigint[];"
"BEGIN"
"  PERFORM setseed(seed);"
"  SELECT array_agg(topic ORDER BY k), array_agg(node ORDER BY k), array_agg(fl ORDER BY k)"
"    INTO topics, nodes, floors FROM ("
"      SELECT topic, node, random() k, CASE WHEN r < 0.6 THEN last"
"             WHEN r < 0.8 THEN greatest(last - (random() * 3)::int, 0) ELSE (last * random())::bigint END fl"
"        FROM (SELECT *, random() r FROM seen_env) s WHERE random() < pick AND nth = 0"
"      UNION ALL SELECT topic, originator_node_id, random(), coalesce((array_agg(originator_sequence_id"
"             ORDER BY originator_sequence_id DESC))[1 + (random() * (nth - 1))::int], 0)"
"        FROM xip83.envelopes WHERE nth > 0 GROUP BY 1, 2 HAVING random() < pick"
"      UNION ALL SELECT '\\xfffe'::bytea, 100, 0, 0) x;"
"  SELECT array_agg(originator_node_id), array_agg(max_sequence_id) INTO cn, cs"
"    FROM xip83.originator_ceilings();"
"  WITH f AS (SELECT * FROM unnest(topics, nodes, floors) f(topic, node, fl)),"
"       c AS (SELECT * FROM unnest(cn, cs) c(node, ceil)),"
"       w AS (SELECT originator_node_id n, originator_sequence_id q"
"               FROM xip83.envelope_wave_scan(topics, nodes, floors, cn, cs, 0, 0, 1000000)),"
"       e AS (SELECT m.originator_node_id n, m.originator_sequence_id q FROM xip83.envelopes m"
"               JOIN c ON c.node = m.originator_node_id AND m.originator_sequence_id <= c.ceil"
"              WHERE EXISTS (SELECT 1 FROM f WHERE f.topic = m.topic AND f.node = m.originator_node_id"
"                              AND m.originator_sequence_id > f.fl))"
"  SELECT (SELECT count(*) FROM e),"
"         (SELECT count(*) FROM ((SELECT * FROM e EXCEPT SELECT * FROM w)"
"                                UNION ALL (SELECT * FROM w EXCEPT SELECT * FROM e)) d)"
"    INTO expected, differ;"
"END $$;";

#define INSERT_GROUP \
	"INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash)" \
	" SELECT int4send((random() * %d)::int), d, sha256(d)" \
	"   FROM (SELECT int8send(i) || int4send(%d) || float8send(random()) d" \
	"           FROM generate_series(1, %d) i) x"
#define INSERT_WELCOME \
	"INSERT INTO xip83.welcome_messages (installation_key, data, installation_key_data_hash)" \
	" SELECT int4send((random() * %d)::int), d, sha256(d)" \
	"   FROM (SELECT int8send(i) || int4send(%d) || float8send(random()) d" \
	"           FROM generate_series(1, %d) i) x"

static int	Tag = 0;

/* A connection whose pages may hold a whole wave. */
static PGconn *
Connect(bool retry)
{
	PGconn	   *c = retry ? tl_reconnect() : tl_connect();

	Exec(c, "SET xip83.max_page_limit = 1000000");
	return c;
}

/*
 * n rows over topics 0..ntopics of every kind; envelopes of originators 100,
 * 200, 300, or with `alone` of 400 only (sequence ids of one originator come
 * from one writer at a time).
 */
static void
WriteAs(PGconn *c, int ntopics, int n, bool alone)
{
	char		sql[640];

	Tag++;
	snprintf(sql, sizeof(sql), INSERT_GROUP, ntopics, Tag, n);
	Exec(c, sql);
	snprintf(sql, sizeof(sql), INSERT_WELCOME, ntopics, Tag, n / 4 + 1);
	Exec(c, sql);
	snprintf(sql, sizeof(sql), "SELECT write_env(%d, %d, '%s')", ntopics, n / 6 + 1,
			 alone ? "{400}" : "{100,200,300}");
	Exec(c, sql);
}

static void
Write(PGconn *c, int ntopics, int n)
{
	WriteAs(c, ntopics, n, false);
}

static int	Waves = 0;

/* One envelope wave against its definition (diff_env; nth as there). */
static void
CheckEnv(PGconn *c, const char *when, double pick, int nth)
{
	char		sql[256];
	PGresult   *r;

	snprintf(sql, sizeof(sql), "SELECT * FROM diff_env(%g, %g, %d)", pick,
			 (double) (++Waves % 1000) / 1000.0, nth);
	r = tl_exec(c, sql, 0, NULL);
	TL_CHECK(tl_int(r, 0, 1) == 0, "%s: envelope wave (pick %g, nth %d) differs from its"
			 " definition in %lld of %lld rows", when, pick, nth,
			 (long long) tl_int(r, 0, 1), (long long) tl_int(r, 0, 0));
	PQclear(r);
}

/* A few waves of each kind at different picks; every one must equal the definition. */
static void
CheckWaves(PGconn *c, const char *when)
{
	static const char *const kinds[] = {"group", "welcome"};
	static const double picks[] = {1.0, 0.3, 0.02};

	for (int k = 0; k < 2; k++)
		for (int p = 0; p < 3; p++)
		{
			char		sql[256];
			PGresult   *r;

			snprintf(sql, sizeof(sql), "SELECT * FROM diff_wave('%s', %g, %g)", kinds[k],
					 picks[p], (double) (++Waves % 1000) / 1000.0);
			r = tl_exec(c, sql, 0, NULL);
			TL_CHECK(tl_int(r, 0, 1) == 0, "%s: %s wave (pick %g) differs from its definition"
					 " in %lld of %lld rows", when, kinds[k], picks[p],
					 (long long) tl_int(r, 0, 1), (long long) tl_int(r, 0, 0));
			PQclear(r);
		}
	/* paged, in order, each wave strategy in turn */
	for (int p = 0; p < 3; p++)
	{
		static const char *const strategies[] = {"auto", "heap", "walk"};
		static const int pages[] = {50, 7, 1};
		const char *strategy = strategies[(Waves + p) % 3];
		char		sql[256];
		PGresult   *r;

		snprintf(sql, sizeof(sql), "SELECT * FROM diff_pages('%s', %g, %g, %d, '%s')",
				 kinds[p % 2], picks[p], (double) (++Waves % 1000) / 1000.0, pages[p], strategy);
		r = tl_exec(c, sql, 0, NULL);
		TL_CHECK(tl_int(r, 0, 1) == 0, "%s: %s wave in pages of %d (%s) differs from its"
				 " definition (%lld rows expected)", when, kinds[p % 2], pages[p], strategy,
				 (long long) tl_int(r, 0, 0));
		PQclear(r);
	}
	for (int p = 0; p < 3; p++)
		CheckEnv(c, when, picks[p], 0);
}

/*
 * Waves whose floors are at each topic's own ids, from its highest to the
 * 20th (the table retains 12): topics with fewer rows above the floor than
 * it retains take them from it, the others descend; paged under each
 * strategy.
 */
static void
CheckExact(PGconn *c, const char *when)
{
	static const char *const strategies[] = {"auto", "heap", "walk"};
	static const int pages[] = {1, 7, 500};
	static const int nths[] = {20, 13, 3};

	for (int k = 0; k < 2; k++)
		for (int p = 0; p < 3; p++)
		{
			const char *kind = k == 0 ? "group" : "welcome";
			const char *strategy = strategies[(Waves + k) % 3];
			char		sql[256];
			PGresult   *r;

			snprintf(sql, sizeof(sql), "SELECT * FROM diff_pages('%s', %g, %g, %d, '%s', %d)",
					 kind, p == 2 ? 1.0 : 0.5, (double) (++Waves % 1000) / 1000.0, pages[p],
					 strategy, nths[p]);
			r = tl_exec(c, sql, 0, NULL);
			TL_CHECK(tl_int(r, 0, 1) == 0, "%s: %s wave, floors at the %dth highest ids, in pages"
					 " of %d differs from its definition (%lld rows expected)", when, kind,
					 nths[p], pages[p], (long long) tl_int(r, 0, 0));
			PQclear(r);
		}
	for (int p = 0; p < 3; p++)
		CheckEnv(c, when, p == 2 ? 1.0 : 0.5, nths[p]);
}

/*
 * Few topics, many rows each, then what the table's retained positions must
 * not be trusted for: rolled-back writes (their positions noted, then reused
 * by envelopes of other topics), deleted rows, rows moved to another topic,
 * explicit ids below the sequence (into the gaps those left).
 */
static void
WriteAndDisturb(PGconn *w, int ntopics)
{
	Write(w, ntopics, 240);
	Exec(w, "BEGIN");
	Write(w, ntopics, 120);
	Exec(w, "ROLLBACK");
	Write(w, ntopics, 60);
	Exec(w, "DELETE FROM xip83.group_messages WHERE id > (SELECT max(id) - 100 FROM"
		 " xip83.group_messages) AND random() < 0.3");
	Exec(w, "DELETE FROM xip83.envelopes e USING (SELECT originator_node_id n,"
		 " max(originator_sequence_id) - 30 q FROM xip83.envelopes GROUP BY 1) m"
		 " WHERE e.originator_node_id = m.n AND e.originator_sequence_id > m.q AND random() < 0.3");
	{
		char		sql[512];

		snprintf(sql, sizeof(sql), "UPDATE xip83.group_messages SET group_id = int4send((random() * %d)::int)"
				 " WHERE id > (SELECT max(id) - 100 FROM xip83.group_messages) AND random() < 0.2",
				 ntopics);
		Exec(w, sql);
		snprintf(sql, sizeof(sql), "UPDATE xip83.envelopes e SET topic = int4send((random() * %d)::int)"
				 " FROM (SELECT originator_node_id n, max(originator_sequence_id) - 30 q"
				 " FROM xip83.envelopes GROUP BY 1) m"
				 " WHERE e.originator_node_id = m.n AND e.originator_sequence_id > m.q AND random() < 0.2",
				 ntopics);
		Exec(w, sql);
		snprintf(sql, sizeof(sql), "INSERT INTO xip83.group_messages (id, group_id, data, group_id_data_hash)"
				 " SELECT g, int4send((random() * %d)::int), int8send(g) || '\\xee', sha256(int8send(g) || '\\xee')"
				 " FROM generate_series((SELECT max(id) - 400 FROM xip83.group_messages),"
				 " (SELECT max(id) FROM xip83.group_messages)) g"
				 " WHERE NOT EXISTS (SELECT 1 FROM xip83.group_messages WHERE id = g) AND random() < 0.5",
				 ntopics);
		Exec(w, sql);
		snprintf(sql, sizeof(sql), "INSERT INTO xip83.envelopes (originator_node_id, originator_sequence_id,"
				 " topic, originator_envelope) SELECT 100, q, int4send((random() * %d)::int), '\\x02'"
				 " FROM generate_series((SELECT max(originator_sequence_id) - 30 FROM xip83.envelopes"
				 " WHERE originator_node_id = 100), (SELECT max(originator_sequence_id) FROM xip83.envelopes"
				 " WHERE originator_node_id = 100)) q WHERE NOT EXISTS (SELECT 1 FROM xip83.envelopes"
				 " WHERE originator_node_id = 100 AND originator_sequence_id = q) AND random() < 0.5",
				 ntopics);
		Exec(w, sql);
	}
}

/*
 * Waits until the topic summary of every kind is ready (a wave of each kind
 * asks for its pass), so that the waves after it skip by it; with off, until
 * feed_status says there is none.
 */
static void
WaitSummary(PGconn *c, const char *when, const char *want)
{
	char		sql[256];

	snprintf(sql, sizeof(sql), "SELECT (summary_states = '{%s,%s,%s}')::int FROM xip83.feed_status",
			 want, want, want);
	for (int i = 0; i < 600; i++)
	{
		Exec(c, "SELECT count(*) FROM xip83.group_wave_scan('{\\x00}', '{0}', 0, 1, 1)");
		Exec(c, "SELECT count(*) FROM xip83.welcome_wave_scan('{\\x00}', '{0}', 0, 1, 1)");
		Exec(c, "SELECT count(*) FROM xip83.envelope_wave_scan('{\\x00}', '{100}', '{0}',"
			 " '{100}', '{1}', 0, 0, 1)");
		if (tl_scalar(c, sql) == 1)
			return;
		tl_sleep_us(50000);
	}
	TL_CHECK(false, "%s: the topic summary is %s within 30 s (%s)", when, want,
			 PQgetvalue(tl_exec(c, "SELECT summary_states::text FROM xip83.feed_status", 0, NULL), 0, 0));
}

/*
 * Whether the group summary's pass is reading rows (past its wait for
 * writers and its snapshot) within 2 s; a wave asks for the pass.
 */
static bool
WaitPassReading(PGconn *c)
{
	for (int i = 0; i < 100; i++)
	{
		Exec(c, "SELECT count(*) FROM xip83.group_wave_scan('{\\x00}', '{0}', 0, 1, 1)");
		if (tl_scalar(c, "SELECT (summary_states[1] = 'building' AND summary_rows[1] > 0)::int"
					  " FROM xip83.feed_status") == 1)
			return true;
		tl_sleep_us(20000);
	}
	return false;
}

/* A crash restart (pg_ctl stop -m immediate), then both connections again. */
static void
CrashRestart(PGconn **c, PGconn **w)
{
	PQfinish(*c);
	PQfinish(*w);
	tl_pgctl("stop -m immediate");
	tl_pgctl("start");
	*c = Connect(true);
	*w = Connect(true);
}

/* Restarts the server with a setting changed (NULL value: reset). */
static void
RestartWith(PGconn **c, PGconn **w, const char *setting, const char *value)
{
	char		sql[256];

	if (value != NULL)
		snprintf(sql, sizeof(sql), "ALTER SYSTEM SET %s = '%s'", setting, value);
	else
		snprintf(sql, sizeof(sql), "ALTER SYSTEM RESET %s", setting);
	Exec(*c, sql);
	PQfinish(*c);
	PQfinish(*w);
	tl_pgctl("restart -m fast");
	*c = Connect(true);
	*w = Connect(true);
}

/* Rows found by waves whose floors were taken before them: the skip must not hide them. */
static void
CheckFoundNew(PGconn *c, const char *when)
{
	int64_t		n = tl_scalar(c, "SELECT count(*) FROM xip83.group_wave_scan("
							  "(SELECT array_agg(topic) FROM seen_group),"
							  "(SELECT array_agg(last) FROM seen_group), 0,"
							  " xip83.group_ceiling(), 1000000)");
	int64_t		want = tl_scalar(c, "SELECT count(*) FROM xip83.group_messages m JOIN seen_group s"
								 " ON s.topic = m.group_id AND m.id > s.last"
								 " WHERE m.id <= xip83.group_horizon()");

	TL_CHECK(n == want, "%s: a caught-up wave returns the %lld rows written since (got %lld)",
			 when, (long long) want, (long long) n);
}

int
main(void)
{
	PGconn	   *c = Connect(false);
	PGconn	   *w = Connect(false);
	PGconn	   *open = Connect(false);

	{
		PGresult   *r = PQexec(c, Setup);

		if (PQresultStatus(r) != PGRES_COMMAND_OK)
			tl_fatal("setup: %s", PQerrorMessage(c));
		PQclear(r);
	}
	Write(c, 300, 3000);
	/* a topic nobody writes again: rows moved into it must still be found */
	Exec(c, "INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash)"
		 " VALUES ('\\xabababab', '\\x00', sha256('\\xabababab00'))");
	Exec(c, "SELECT take_seen(), take_seen_env()");
	CheckWaves(c, "caught up");
	WaitSummary(c, "first load", "ready");
	CheckWaves(c, "caught up, summary ready");
	TL_CHECK(tl_scalar(c, "SELECT count(*) FROM xip83.group_wave_scan('{}', '{}', 0,"
					   " xip83.group_ceiling(), 10)") == 0, "a wave of no topics returns no rows");

	/* writers since the floors, one transaction left open across waves */
	Write(w, 300, 500);
	Exec(open, "BEGIN");
	WriteAs(open, 300, 40, true);
	Write(w, 300, 200);
	CheckWaves(c, "an open writer");
	CheckFoundNew(c, "an open writer");
	Exec(open, "COMMIT");
	CheckWaves(c, "the open writer committed after the waves");
	CheckFoundNew(c, "the open writer committed after the waves");

	/* a late write below the horizon, a row moved to a quiet topic, an explicit id above the sequence */
	Exec(w, "WITH d AS (DELETE FROM xip83.group_messages WHERE id = (SELECT max(id) - 5 FROM"
		 " xip83.group_messages) RETURNING *) INSERT INTO xip83.group_messages SELECT * FROM d");
	Exec(w, "UPDATE xip83.group_messages SET group_id = '\\xabababab'"
		 " WHERE id = (SELECT max(id) - 9 FROM xip83.group_messages)");
	Exec(w, "INSERT INTO xip83.group_messages (id, group_id, data, group_id_data_hash)"
		 " SELECT max(id) + 37, '\\x00000007', '\\x01', sha256('\\x0701') FROM xip83.group_messages");
	CheckWaves(c, "explicit, late and moved rows");
	CheckFoundNew(c, "explicit, late and moved rows");

	/* exact candidates, with rows the table's positions wrongly promise */
	WriteAndDisturb(w, 30);
	CheckWaves(c, "rows rolled back, deleted, moved and written below the sequence");
	CheckExact(c, "rows rolled back, deleted, moved and written below the sequence");

	/* restarts between writes and waves: the table starts empty, low at the high */
	Exec(c, "SELECT take_seen(), take_seen_env()");
	Write(w, 300, 300);
	PQfinish(c);
	PQfinish(w);
	PQfinish(open);
	tl_pgctl("restart -m fast");
	c = Connect(true);
	w = Connect(true);
	CheckWaves(c, "after a clean restart");
	CheckFoundNew(c, "after a clean restart");
	/* floors from before the restart: the summary alone skips */
	WaitSummary(c, "after a clean restart", "ready");
	CheckWaves(c, "after a clean restart, summary ready");
	CheckFoundNew(c, "after a clean restart, summary ready");
	Write(w, 300, 300);
	CheckWaves(c, "written after a clean restart");
	CheckExact(c, "after a clean restart");
	WriteAndDisturb(w, 30);
	CheckExact(c, "disturbed after a clean restart");
	CheckWaves(c, "disturbed after a clean restart");
	CheckFoundNew(c, "disturbed after a clean restart");
	Exec(c, "SELECT take_seen(), take_seen_env()");
	Write(w, 300, 200);

	/*
	 * Writes while the summary's pass reads (slowed down to 1000 rows a
	 * second), after it took its snapshot: rows it cannot see, one
	 * transaction left open until the summary is ready.
	 */
	RestartWith(&c, &w, "xip83.summary_pass_rows_per_s", "1000");
	TL_CHECK(WaitPassReading(c), "the summary's pass reads before the writes");
	open = Connect(true);
	Exec(open, "BEGIN");
	WriteAs(open, 300, 40, true);
	Write(w, 300, 300);
	WriteAndDisturb(w, 30);
	TL_CHECK(tl_scalar(c, "SELECT (summary_states[1] = 'building')::int FROM xip83.feed_status") == 1,
			 "the writes ran while the summary's pass read");
	Exec(c, "ALTER SYSTEM RESET xip83.summary_pass_rows_per_s");
	Exec(c, "SELECT pg_reload_conf()");
	/* the group pass read on; the other kinds' wait for the open writer to end */
	for (int i = 0; i < 600 && tl_scalar(c, "SELECT (summary_states[1] = 'ready')::int"
										 " FROM xip83.feed_status") != 1; i++)
		tl_sleep_us(50000);
	TL_CHECK(tl_scalar(c, "SELECT (summary_states = '{ready,building,waiting}')::int"
					   " FROM xip83.feed_status") == 1,
			 "the group summary is ready, the welcome pass waits for the open writer");
	CheckWaves(c, "written while the summary's pass read, summary ready");
	CheckFoundNew(c, "written while the summary's pass read, summary ready");
	CheckExact(c, "written while the summary's pass read, summary ready");
	Exec(open, "COMMIT");
	PQfinish(open);
	CheckWaves(c, "committed after the summary was ready");
	CheckFoundNew(c, "committed after the summary was ready");
	WaitSummary(c, "the open writer committed", "ready");
	CheckWaves(c, "the open writer committed, every summary ready");

	/* a crash while the summary's pass reads */
	Exec(c, "SELECT take_seen(), take_seen_env()");
	RestartWith(&c, &w, "xip83.summary_pass_rows_per_s", "1000");
	TL_CHECK(WaitPassReading(c), "the summary's pass is running before the crash");
	CheckWaves(c, "while the summary's pass reads");
	CrashRestart(&c, &w);
	CheckWaves(c, "after a crash in the summary's pass");
	CheckFoundNew(c, "after a crash in the summary's pass");
	RestartWith(&c, &w, "xip83.summary_pass_rows_per_s", NULL);
	WaitSummary(c, "after a crash in the summary's pass", "ready");
	CheckWaves(c, "after a crash in the summary's pass, summary ready");
	CheckFoundNew(c, "after a crash in the summary's pass, summary ready");
	CheckExact(c, "after a crash in the summary's pass, summary ready");
	CrashRestart(&c, &w);
	CheckWaves(c, "after a crash restart");
	CheckFoundNew(c, "after a crash restart");
	WaitSummary(c, "after a crash restart", "ready");
	CheckWaves(c, "after a crash restart, summary ready");
	CheckFoundNew(c, "after a crash restart, summary ready");

	/* more distinct topics than the table holds: low-water rises, waves still exact */
	Exec(c, "SELECT take_seen(), take_seen_env()");
	Write(w, 40000, 30000);
	TL_CHECK(tl_scalar(c, "SELECT group_low_water FROM xip83.feed_status") > 0,
			 "overflow raised the group low-water position");
	CheckWaves(c, "after overflow");
	CheckFoundNew(c, "after overflow");
	Exec(c, "SELECT take_seen(), take_seen_env()");
	Write(w, 300, 400);
	CheckWaves(c, "after overflow, old topics written again");
	CheckFoundNew(c, "after overflow, old topics written again");
	CheckExact(c, "after overflow, old topics written again");

	/* a TRUNCATE that restarts ids, and rows written in its own transaction */
	Exec(w, "BEGIN");
	Exec(w, "TRUNCATE xip83.group_messages, xip83.welcome_messages, xip83.envelopes RESTART IDENTITY");
	Write(w, 50, 100);
	Exec(w, "COMMIT");
	Exec(c, "TRUNCATE seen_group, seen_welcome, seen_env");
	Exec(c, "INSERT INTO seen_group SELECT DISTINCT group_id, 0 FROM xip83.group_messages");
	CheckFoundNew(c, "a TRUNCATE's own rows");
	Exec(c, "SELECT take_seen(), take_seen_env()");
	Write(w, 50, 100);
	CheckWaves(c, "after a TRUNCATE");
	CheckFoundNew(c, "after a TRUNCATE");
	WaitSummary(c, "after a TRUNCATE", "ready");
	Exec(c, "SELECT take_seen(), take_seen_env()");
	Write(w, 50, 100);
	CheckWaves(c, "after a TRUNCATE, summary ready again");
	CheckFoundNew(c, "after a TRUNCATE, summary ready again");

	/* positions further apart than an entry's 32-bit distances reach */
	Exec(w, "INSERT INTO xip83.group_messages (id, group_id, data, group_id_data_hash)"
		 " SELECT max(id) + 5000000000, '\\x00000003', '\\x03', sha256('\\x0303')"
		 " FROM xip83.group_messages");
	Exec(w, "INSERT INTO xip83.envelopes (originator_node_id, originator_sequence_id, topic,"
		 " originator_envelope) SELECT 100, max(originator_sequence_id) + 5000000000,"
		 " '\\x00000003', '\\x03' FROM xip83.envelopes WHERE originator_node_id = 100");
	Write(w, 50, 100);
	CheckWaves(c, "positions far apart");
	CheckExact(c, "positions far apart");

	/*
	 * A summary far smaller than the topics (16 blocks of 7 slots for thousands of
	 * (topic, originator)s): coarser answers, the same rows; then none.
	 */
	Exec(c, "SELECT take_seen(), take_seen_env()");
	Write(w, 3000, 3000);
	RestartWith(&c, &w, "xip83.summary_memory", "1kB");
	WaitSummary(c, "a tiny summary", "ready");
	CheckWaves(c, "a tiny summary, floors from before the restart");
	CheckFoundNew(c, "a tiny summary, floors from before the restart");
	Exec(c, "SELECT take_seen(), take_seen_env()");
	Write(w, 300, 300);
	WriteAndDisturb(w, 30);
	CheckWaves(c, "a tiny summary, written and disturbed");
	CheckExact(c, "a tiny summary, written and disturbed");
	CheckFoundNew(c, "a tiny summary, written and disturbed");
	RestartWith(&c, &w, "xip83.summary_memory", "0");
	WaitSummary(c, "no summary", "off");
	CheckWaves(c, "no summary");
	CheckFoundNew(c, "no summary");
	RestartWith(&c, &w, "xip83.summary_memory", NULL);
	WaitSummary(c, "the summary back", "ready");
	CheckWaves(c, "the summary back");

	PQfinish(c);
	PQfinish(w);
	return tl_done("t_recent_waves");
}
