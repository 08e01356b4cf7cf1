/*
 * bench_wave_v3: v3 wave scans against today's SQL, on the same data, one run.
 *
 *   bench_wave_v3 [rows [groups [scenario]]]   defaults 2000000, 20000, all
 *
 * scenario: first, whole, caught or dense runs only those named (wholenoA:
 * whole waves without A, which takes a minute). Rows already
 * loaded (same count) are reused, for runs against a kept cluster.
 *
 * Data: `rows` group messages and as many welcomes over `groups` topics,
 * skewed (topic index = floor(groups * u^2)), 256-byte payloads, 16-byte
 * topics. Waves of 100 / 1,000 / 5,000 / all topics, drawn uniformly without
 * repetition, floors 0, ceiling = the kind's ceiling, pages of 500.
 *
 * Anchors, all fed the same binary arrays over the same connection:
 *   A      the merged keyset SQL (unnest-join floors, global cursor, pinned
 *          ceiling, ORDER BY id LIMIT 500), one query per page;
 *   B      per-topic LATERAL, LIMIT 64 per topic, rotating batches of 256
 *          topics, topics pruned once they return fewer than 64 rows;
 *   floor  the same rows straight off the indexes: per-topic index scans
 *          without a merge (whole waves) or the page's rows by primary key;
 *   pk     a plain primary-key range scan returning the same rows (dense wave).
 * Ours: xip83.*_wave_scan (stateless page) and xip83.*_wave_stream read
 * through a cursor with FETCH 500 (whole waves).
 *
 * Every timing is the median of several runs on warm buffers; every method's
 * row count and id checksum is compared with the others'. Caught-up waves (a
 * reconnect with nothing new) run at every wave size. Besides the table, each
 * figure is printed as a RESULT line (tl_result) for docs/performance.md.
 */
#include "testlib.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PAGE		500
#define B_BATCH		256
#define B_LIMIT		64
#define PIPELINE_DEPTH	4

/* A message kind: its table, topic column, functions. */
typedef struct Kind
{
	const char *name;
	const char *table;
	const char *topic_col;
	const char *scan_fn;
	const char *stream_fn;
	const char *ceiling_fn;
} Kind;

static const Kind group_kind = {"group", "xip83.group_messages", "group_id",
	"xip83.group_wave_scan", "xip83.group_wave_stream", "xip83.group_ceiling"};
static const Kind welcome_kind = {"welcome", "xip83.welcome_messages", "installation_key",
	"xip83.welcome_wave_scan", "xip83.welcome_wave_stream", "xip83.welcome_ceiling"};

/* A wave: its topics and floors, also as binary array parameters. */
typedef struct Wave
{
	int			n;
	int		   *groups;			/* topic indexes */
	unsigned char *topics;		/* n topics of 16 bytes */
	long long  *floors;
	char	   *topics_bin;
	int			topics_len;
	char	   *floors_bin;
	int			floors_len;
} Wave;

/* What a method delivered: rows and a checksum of their ids. */
typedef struct Delivery
{
	long long	rows;
	long long	id_sum;
	long long	last_id;
} Delivery;

static PGconn *conn;
static int	fetch_depth = 1;	/* FETCHes in flight when reading a cursor */

/* Seconds on the monotonic clock. */
static double
Now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Appends a big-endian 32-bit value. */
static char *
Put32(char *p, unsigned v)
{
	v = htonl(v);
	memcpy(p, &v, 4);
	return p + 4;
}

/* Appends a big-endian 64-bit value. */
static char *
Put64(char *p, long long v)
{
	p = Put32(p, (unsigned) ((unsigned long long) v >> 32));
	return Put32(p, (unsigned) (v & 0xffffffff));
}

/* The 16-byte topic of group index g: md5 of "g<index>", as the data has it. */
static void
TopicBytes(PGconn *c, const Wave *w, unsigned char *out)
{
	/* computed server-side once per wave: md5 is not worth reimplementing */
	char	   *list = malloc((size_t) w->n * 12 + 16);
	size_t		p = 0;
	PGresult   *res;
	const char *params[1];

	p += sprintf(list + p, "{");
	for (int i = 0; i < w->n; i++)
		p += sprintf(list + p, "%s%d", i ? "," : "", w->groups[i]);
	sprintf(list + p, "}");
	params[0] = list;
	res = tl_exec(c, "SELECT decode(md5('g' || k), 'hex') FROM unnest($1::int[]) WITH ORDINALITY"
				  " AS u(k, o) ORDER BY o", 1, params);
	for (int i = 0; i < w->n; i++)
	{
		size_t		len;
		unsigned char *b = tl_bytea(res, i, 0, &len);

		memcpy(out + 16 * i, b, 16);
		PQfreemem(b);
	}
	PQclear(res);
	free(list);
}

/*
 * A one-dimensional array in binary wire format: n elements of elemlen bytes
 * each, already in network byte order, of type elemtype. Returns its length.
 */
static int
EncodeArray(char **out, unsigned elemtype, int n, int elemlen, const unsigned char *elems)
{
	char	   *p;

	*out = malloc(20 + (size_t) n * (4 + elemlen));
	p = Put32(*out, 1);			/* dimensions */
	p = Put32(p, 0);			/* no NULLs */
	p = Put32(p, elemtype);
	p = Put32(p, (unsigned) n);
	p = Put32(p, 1);			/* lower bound */
	for (int i = 0; i < n; i++)
	{
		p = Put32(p, (unsigned) elemlen);
		memcpy(p, elems + (size_t) elemlen * i, elemlen);
		p += elemlen;
	}
	return (int) (p - *out);
}

/* Encodes topics (16 bytes each) and floors as the binary bytea[] and int8[] of a wave. */
static void
EncodeTopicsFloors(Wave *w, const unsigned char *topics, const long long *floors)
{
	unsigned char *be = malloc((size_t) w->n * 8 + 1);

	for (int i = 0; i < w->n; i++)
		Put64((char *) be + 8 * i, floors[i]);
	w->topics_len = EncodeArray(&w->topics_bin, 17, w->n, 16, topics);
	w->floors_len = EncodeArray(&w->floors_bin, 20, w->n, 8, be);
	free(be);
}

/* Builds the binary bytea[] and int8[] parameters of a wave. */
static void
EncodeWave(Wave *w)
{
	w->topics = malloc((size_t) w->n * 16 + 1);
	TopicBytes(conn, w, w->topics);
	EncodeTopicsFloors(w, w->topics, w->floors);
}

/* A wave of n distinct topics drawn uniformly from the groups, all floors at `floor`. */
static Wave
MakeWave(int n, int groups, long long floor)
{
	Wave		w = {0};
	int		   *perm = malloc(sizeof(int) * groups);

	for (int i = 0; i < groups; i++)
		perm[i] = i;
	for (int i = 0; i < n; i++)
	{
		int			j = i + (int) (random() % (groups - i));
		int			t = perm[i];

		perm[i] = perm[j];
		perm[j] = t;
	}
	w.n = n;
	w.groups = perm;
	w.floors = malloc(sizeof(long long) * n);
	for (int i = 0; i < n; i++)
		w.floors[i] = floor;
	EncodeWave(&w);
	return w;
}

/* Frees a wave. */
static void
FreeWave(Wave *w)
{
	free(w->groups);
	free(w->topics);
	free(w->floors);
	free(w->topics_bin);
	free(w->floors_bin);
}

/* Runs SQL with the wave's arrays as $1, $2 and text parameters after them. */
static PGresult *
ExecWave(const char *sql, const Wave *w, int nextra, const char *const *extra)
{
	const char *values[8];
	int			lengths[8] = {w->topics_len, w->floors_len};
	int			formats[8] = {1, 1};
	PGresult   *res;

	values[0] = w->topics_bin;
	values[1] = w->floors_bin;
	for (int i = 0; i < nextra; i++)
	{
		values[2 + i] = extra[i];
		lengths[2 + i] = 0;
		formats[2 + i] = 0;
	}
	res = PQexecParams(conn, sql, 2 + nextra, NULL, values, lengths, formats, 0);
	if (PQresultStatus(res) != PGRES_TUPLES_OK && PQresultStatus(res) != PGRES_COMMAND_OK)
		tl_fatal("%s\n  in: %s", PQerrorMessage(conn), sql);
	return res;
}

/* Bytes the client received, so that reading every field is not optimized away. */
static size_t received_bytes;
static long bench_rows;		/* rows loaded per kind, for the RESULT lines */

/* Takes a result's rows into a delivery (every field is touched). */
static int
Consume(PGresult *res, Delivery *d)
{
	int			n = PQntuples(res);
	size_t		bytes = 0;

	for (int r = 0; r < n; r++)
	{
		long long	id = atoll(PQgetvalue(res, r, 0));

		for (int c = 0; c < PQnfields(res); c++)
			bytes += (size_t) PQgetlength(res, r, c);
		d->rows++;
		d->id_sum += id;
		d->last_id = id;
	}
	PQclear(res);
	received_bytes += bytes;
	return n;
}

/* Runs a plain statement. */
static void
Exec(const char *sql)
{
	PQclear(tl_exec(conn, sql, 0, NULL));
}

/* Reads a cursor to its end in FETCH 500 steps; returns peak backend memory when asked. */
static long long
DrainCursor(Delivery *d, bool watch_memory)
{
	long long	peak = 0;

	for (int pages = 0;; pages++)
	{
		int			n = Consume(tl_exec(conn, "FETCH 500 FROM wave", 0, NULL), d);

		if (watch_memory && pages % 50 == 0)
		{
			PGresult   *m = tl_exec(conn, "SELECT sum(total_bytes) FROM pg_backend_memory_contexts",
									0, NULL);

			if (tl_int(m, 0, 0) > peak)
				peak = tl_int(m, 0, 0);
			PQclear(m);
		}
		if (n < PAGE)
			break;
	}
	return peak;
}

/*
 * Reads a cursor to its end in FETCH 500 steps with `depth` FETCHes in flight
 * (libpq pipeline mode): pages stay 500 rows and the client holds at most
 * depth of them; only the waits for round trips overlap.
 */
static void
DrainCursorPipelined(Delivery *d, int depth)
{
	int			inflight = 0;
	bool		more = true;
	PGresult   *res;

	if (!PQenterPipelineMode(conn))
		tl_fatal("pipeline mode: %s", PQerrorMessage(conn));
	while (more || inflight > 0)
	{
		int			n;

		for (; more && inflight < depth; inflight++)
			if (!PQsendQueryParams(conn, "FETCH 500 FROM wave", 0, NULL, NULL, NULL, NULL, 0))
				tl_fatal("send: %s", PQerrorMessage(conn));
		if (PQsendFlushRequest(conn) != 1 || PQflush(conn) != 0)
			tl_fatal("flush: %s", PQerrorMessage(conn));
		res = PQgetResult(conn);
		if (PQresultStatus(res) != PGRES_TUPLES_OK)
			tl_fatal("FETCH: %s", PQerrorMessage(conn));
		n = Consume(res, d);
		while ((res = PQgetResult(conn)) != NULL)
			PQclear(res);
		inflight--;
		if (n < PAGE)
			more = false;
	}
	if (PQpipelineSync(conn) != 1)
		tl_fatal("sync: %s", PQerrorMessage(conn));
	res = PQgetResult(conn);
	if (PQresultStatus(res) != PGRES_PIPELINE_SYNC)
		tl_fatal("sync result: %s", PQresStatus(PQresultStatus(res)));
	PQclear(res);
	if (!PQexitPipelineMode(conn))
		tl_fatal("exit pipeline mode: %s", PQerrorMessage(conn));
}

/* Reads the open cursor `wave` to its end, the way the run is configured. */
static long long
ReadCursor(Delivery *d, bool watch_memory)
{
	if (watch_memory || fetch_depth <= 1)
		return DrainCursor(d, watch_memory);
	DrainCursorPipelined(d, fetch_depth);
	return 0;
}

/* --------------------------------------------------------------- methods */

/* A's query: the merged keyset page in plain SQL, as nodes page today. */
static void
KeysetSql(char *sql, size_t size, const Kind *k)
{
	snprintf(sql, size,
			 "SELECT m.* FROM unnest($1::bytea[], $2::bigint[]) AS w(topic, floor)"
			 " JOIN %s m ON m.%s = w.topic AND m.id > w.floor"
			 " WHERE m.id > $3::bigint AND m.id <= $4::bigint ORDER BY m.id LIMIT 500",
			 k->table, k->topic_col);
}

/* Our stateless page. */
static void
PageSql(char *sql, size_t size, const Kind *k)
{
	snprintf(sql, size, "SELECT * FROM %s($1::bytea[], $2::bigint[], $3::bigint,"
			 " $4::bigint, 500)", k->scan_fn);
}

/* Pages with a query taking ($1 topics, $2 floors, $3 cursor, $4 ceiling); pages == 0: to the end. */
static void
PageLoop(const char *sql, const Wave *w, long long ceiling, int pages, Delivery *d)
{
	char		cur[24], ceil_s[24];
	const char *extra[2] = {cur, ceil_s};

	snprintf(ceil_s, sizeof(ceil_s), "%lld", ceiling);
	d->last_id = 0;
	for (int p = 0; pages == 0 || p < pages; p++)
	{
		snprintf(cur, sizeof(cur), "%lld", d->last_id);
		if (Consume(ExecWave(sql, w, 2, extra), d) < PAGE)
			break;
	}
}

/* A: one merged keyset query per page. */
static void
MethodA(const Kind *k, const Wave *w, long long ceiling, int pages, Delivery *d)
{
	char		sql[512];

	KeysetSql(sql, sizeof(sql), k);
	PageLoop(sql, w, ceiling, pages, d);
}

/* Ours, stateless: one *_wave_scan call per page. */
static void
MethodPage(const Kind *k, const Wave *w, long long ceiling, int pages, Delivery *d)
{
	char		sql[256];

	PageSql(sql, sizeof(sql), k);
	PageLoop(sql, w, ceiling, pages, d);
}

/* Ours, streamed: *_wave_stream through a cursor, FETCH 500 to the end. */
static long long
MethodStream(const Kind *k, const Wave *w, long long ceiling, Delivery *d, bool watch_memory)
{
	char		sql[256];
	char		ceil_s[24];
	const char *extra[1] = {ceil_s};
	long long	peak;

	snprintf(sql, sizeof(sql), "DECLARE wave CURSOR FOR SELECT * FROM %s($1::bytea[],"
			 " $2::bigint[], 0, $3::bigint)", k->stream_fn);
	snprintf(ceil_s, sizeof(ceil_s), "%lld", ceiling);
	Exec("BEGIN");
	PQclear(ExecWave(sql, w, 1, extra));
	peak = ReadCursor(d, watch_memory);
	Exec("COMMIT");
	return peak;
}

/* B: per-topic LATERAL LIMIT 64 in rotating batches of 256, pruning finished topics. */
static void
MethodB(const Kind *k, const Wave *w0, long long ceiling, Delivery *d)
{
	char		sql[512];
	char		ceil_s[24];
	const char *extra[1] = {ceil_s};
	int		   *active = malloc(sizeof(int) * w0->n);
	long long  *floors = malloc(sizeof(long long) * w0->n);
	unsigned char *topics = malloc((size_t) B_BATCH * 16);
	long long  *batch_floors = malloc(sizeof(long long) * B_BATCH);
	int			nactive = w0->n;

	for (int i = 0; i < w0->n; i++)
	{
		active[i] = i;
		floors[i] = w0->floors[i];
	}
	snprintf(sql, sizeof(sql),
			 "SELECT m.*, w.ord FROM unnest($1::bytea[], $2::bigint[]) WITH ORDINALITY"
			 " AS w(topic, floor, ord) CROSS JOIN LATERAL (SELECT * FROM %s m"
			 " WHERE m.%s = w.topic AND m.id > w.floor AND m.id <= $3::bigint"
			 " ORDER BY m.id LIMIT %d) m", k->table, k->topic_col, B_LIMIT);
	snprintf(ceil_s, sizeof(ceil_s), "%lld", ceiling);
	while (nactive > 0)
	{
		int			got[B_BATCH] = {0};
		int			nb = nactive < B_BATCH ? nactive : B_BATCH;
		Wave		w = {.n = nb};
		PGresult   *res;
		int			ordcol;
		int			keep = 0;

		/* the next batch is the head of the rotating list */
		for (int i = 0; i < nb; i++)
		{
			memcpy(topics + 16 * i, w0->topics + 16 * active[i], 16);
			batch_floors[i] = floors[active[i]];
		}
		EncodeTopicsFloors(&w, topics, batch_floors);
		res = ExecWave(sql, &w, 1, extra);
		free(w.topics_bin);
		free(w.floors_bin);
		ordcol = PQnfields(res) - 1;
		for (int r = 0; r < PQntuples(res); r++)
		{
			int			o = atoi(PQgetvalue(res, r, ordcol)) - 1;

			got[o]++;
			floors[active[o]] = atoll(PQgetvalue(res, r, 0));
		}
		Consume(res, d);
		/* rotate: the batch goes to the back, less the topics that came back short */
		{
			int		   *next = malloc(sizeof(int) * nactive);

			for (int i = nb; i < nactive; i++)
				next[keep++] = active[i];
			for (int i = 0; i < nb; i++)
				if (got[i] == B_LIMIT)
					next[keep++] = active[i];
			memcpy(active, next, sizeof(int) * keep);
			free(next);
			nactive = keep;
		}
	}
	free(active);
	free(floors);
	free(topics);
	free(batch_floors);
}

/* The floor of a whole wave: every topic's rows straight off its index, no merge. */
static void
MethodFloorWave(const Kind *k, const Wave *w, long long ceiling, Delivery *d)
{
	char		sql[512];
	char		ceil_s[24];
	const char *extra[1] = {ceil_s};

	snprintf(sql, sizeof(sql),
			 "DECLARE wave CURSOR FOR SELECT m.* FROM unnest($1::bytea[], $2::bigint[])"
			 " AS w(topic, floor) CROSS JOIN LATERAL (SELECT * FROM %s m WHERE m.%s = w.topic"
			 " AND m.id > w.floor AND m.id <= $3::bigint ORDER BY m.id) m",
			 k->table, k->topic_col);
	snprintf(ceil_s, sizeof(ceil_s), "%lld", ceiling);
	Exec("BEGIN");
	Exec("SET LOCAL enable_seqscan = off");
	Exec("SET LOCAL enable_bitmapscan = off");
	PQclear(ExecWave(sql, w, 1, extra));
	ReadCursor(d, false);
	Exec("COMMIT");
}

/* The floor of a page: the page's own rows fetched by primary key. */
static void
MethodFloorPage(const Kind *k, const char *ids, Delivery *d)
{
	char		sql[256];
	const char *params[1] = {ids};

	snprintf(sql, sizeof(sql), "SELECT * FROM %s WHERE id = ANY($1::bigint[]) ORDER BY id",
			 k->table);
	Consume(tl_exec(conn, sql, 1, params), d);
}

/* pk: a plain primary-key range scan of the same rows, through a cursor. */
static void
MethodPkRange(const Kind *k, long long ceiling, Delivery *d)
{
	char		sql[256];

	snprintf(sql, sizeof(sql), "DECLARE wave CURSOR FOR SELECT * FROM %s WHERE id > 0"
			 " AND id <= %lld ORDER BY id", k->table, ceiling);
	Exec("BEGIN");
	Exec(sql);
	ReadCursor(d, false);
	Exec("COMMIT");
}

/* pk page: one keyset page of the primary key. */
static void
MethodPkPage(const Kind *k, long long cursor, long long ceiling, Delivery *d)
{
	char		sql[256];

	snprintf(sql, sizeof(sql), "SELECT * FROM %s WHERE id > %lld AND id <= %lld"
			 " ORDER BY id LIMIT 500", k->table, cursor, ceiling);
	Consume(tl_exec(conn, sql, 0, NULL), d);
}

/* --------------------------------------------------------------- timing */

typedef enum Method
{
	M_A_PAGE, M_A_WAVE, M_B_WAVE, M_PAGE, M_PAGES_WAVE, M_STREAM, M_FLOOR_WAVE, M_PK_RANGE
} Method;

/* Runs a method once; returns seconds. */
static double
RunOnce(Method m, const Kind *k, const Wave *w, long long ceiling, Delivery *d)
{
	double		t0 = Now();

	memset(d, 0, sizeof(*d));
	switch (m)
	{
		case M_A_PAGE:
			MethodA(k, w, ceiling, 1, d);
			break;
		case M_A_WAVE:
			MethodA(k, w, ceiling, 0, d);
			break;
		case M_B_WAVE:
			MethodB(k, w, ceiling, d);
			break;
		case M_PAGE:
			MethodPage(k, w, ceiling, 1, d);
			break;
		case M_PAGES_WAVE:
			MethodPage(k, w, ceiling, 0, d);
			break;
		case M_STREAM:
			MethodStream(k, w, ceiling, d, false);
			break;
		case M_FLOOR_WAVE:
			MethodFloorWave(k, w, ceiling, d);
			break;
		case M_PK_RANGE:
			MethodPkRange(k, ceiling, d);
			break;
	}
	return Now() - t0;
}

/* Compares doubles for qsort. */
static int
CmpDouble(const void *a, const void *b)
{
	double		x = *(const double *) a, y = *(const double *) b;

	return x < y ? -1 : x > y;
}

/* The median of `runs` timings of a method, after one warm-up run when runs > 1. */
static double
Median(Method m, const Kind *k, const Wave *w, long long ceiling, int runs, Delivery *d)
{
	double		t[32];

	if (runs > 1)
		(void) RunOnce(m, k, w, ceiling, d);
	for (int i = 0; i < runs; i++)
		t[i] = RunOnce(m, k, w, ceiling, d);
	qsort(t, runs, sizeof(double), CmpDouble);
	return t[runs / 2];
}

/* A method measured in interleaved rounds, so a burst of outside load hits all alike. */
typedef struct Contender
{
	Method		method;
	int			depth;			/* FETCHes in flight when it reads a cursor */
	double		median;
	Delivery	d;
} Contender;

/* Runs every contender once per round, `rounds` rounds; keeps each one's median. */
static void
Interleave(Contender *c, int nc, const Kind *k, const Wave *w, long long ceiling, int rounds)
{
	double		t[8][16];

	for (int r = 0; r < rounds; r++)
		for (int i = 0; i < nc; i++)
		{
			fetch_depth = c[i].depth;
			t[i][r] = RunOnce(c[i].method, k, w, ceiling, &c[i].d);
		}
	fetch_depth = 1;
	for (int i = 0; i < nc; i++)
	{
		qsort(t[i], rounds, sizeof(double), CmpDouble);
		c[i].median = t[i][rounds / 2];
	}
}

/* Checks that two deliveries hold the same rows (count and id checksum). */
static void
Agree(const char *what, const Delivery *a, const Delivery *b)
{
	TL_CHECK(a->rows == b->rows && a->id_sum == b->id_sum,
			 "%s: %lld rows (sum %lld) vs %lld rows (sum %lld)", what, a->rows, a->id_sum,
			 b->rows, b->id_sum);
}

/* The current ceiling of a kind. */
static long long
Ceiling(const Kind *k)
{
	char		sql[128];
	PGresult   *res;
	long long	c;

	snprintf(sql, sizeof(sql), "SELECT %s()", k->ceiling_fn);
	res = tl_exec(conn, sql, 0, NULL);
	c = tl_int(res, 0, 0);
	PQclear(res);
	return c;
}

/* --------------------------------------------------------------- scenarios */

/* Target 1: the first page of a wave. */
static void
FirstPage(const Kind *k, int n, int groups, long long ceiling)
{
	Wave		w = MakeWave(n, groups, 0);
	Delivery	a, ours, fl;
	double		ta = Median(M_A_PAGE, k, &w, ceiling, n >= 5000 ? 3 : 5, &a);
	double		to = Median(M_PAGE, k, &w, ceiling, 9, &ours);
	char	   *ids = malloc(16 + (size_t) PAGE * 21);
	size_t		p = 0;
	PGresult   *res;
	char		sql[256];
	char		ceil_s[24];
	const char *extra[2] = {"0", ceil_s};
	double		tf[9];

	/* the page's ids, for the floor */
	snprintf(ceil_s, sizeof(ceil_s), "%lld", ceiling);
	PageSql(sql, sizeof(sql), k);
	res = ExecWave(sql, &w, 2, extra);
	p += sprintf(ids + p, "{");
	for (int r = 0; r < PQntuples(res); r++)
		p += sprintf(ids + p, "%s%s", r ? "," : "", PQgetvalue(res, r, 0));
	sprintf(ids + p, "}");
	PQclear(res);
	for (int i = 0; i < 9; i++)
	{
		double		t0 = Now();

		memset(&fl, 0, sizeof(fl));
		MethodFloorPage(k, ids, &fl);
		tf[i] = Now() - t0;
	}
	qsort(tf, 9, sizeof(double), CmpDouble);
	Agree("first page A vs ours", &a, &ours);
	Agree("first page floor vs ours", &fl, &ours);
	printf("  %-7s first page   %6d topics  A %9.2f ms  ours %7.2f ms  floor %6.2f ms"
		   "   A/ours %7.1fx  ours/floor %5.1fx\n",
		   k->name, n, ta * 1e3, to * 1e3, tf[4] * 1e3, ta / to, to / tf[4]);
	tl_result("bench_wave_v3", "kind=%s,rows=%ld,topics=%d", "first_page_ours", to * 1e3, "ms",
			  k->name, bench_rows, n);
	tl_result("bench_wave_v3", "kind=%s,rows=%ld,topics=%d", "first_page_sql", ta * 1e3, "ms",
			  k->name, bench_rows, n);
	free(ids);
	FreeWave(&w);
}

/* Target 2: the whole wave, merged, in pages of 500. */
static void
WholeWave(const Kind *k, int n, int groups, long long ceiling, bool run_a)
{
	Wave		w = MakeWave(n, groups, 0);
	Delivery	a = {0}, b, s, pg, fl, mem;
	Contender	c[4] = {{.method = M_B_WAVE, .depth = 1}, {.method = M_STREAM, .depth = 1},
	{.method = M_STREAM, .depth = PIPELINE_DEPTH}, {.method = M_FLOOR_WAVE, .depth = 1}};
	double		ta = run_a ? RunOnce(M_A_WAVE, k, &w, ceiling, &a) : 0;
	double		tp = n <= 1000 ? RunOnce(M_PAGES_WAVE, k, &w, ceiling, &pg) : 0;
	double		tb, ts, ts4, tf;
	Delivery	s4;

	Interleave(c, 4, k, &w, ceiling, 5);
	tb = c[0].median, b = c[0].d;
	ts = c[1].median, s = c[1].d;
	ts4 = c[2].median, s4 = c[2].d;
	tf = c[3].median, fl = c[3].d;
	Agree("whole wave pipelined stream vs stream", &s4, &s);
	long long	peak;

	memset(&mem, 0, sizeof(mem));
	peak = MethodStream(k, &w, ceiling, &mem, true);
	Agree("whole wave B vs stream", &b, &s);
	Agree("whole wave floor vs stream", &fl, &s);
	if (run_a)
		Agree("whole wave A vs stream", &a, &s);
	if (n <= 1000)
		Agree("whole wave pages vs stream", &pg, &s);
	printf("  %-7s whole wave   %6d topics  %7lld rows  A %s  B %8.1f ms  stream %8.1f ms"
		   "  pages %s  floor %7.1f ms\n",
		   k->name, n, s.rows, run_a ? "" : "(not run)", tb * 1e3, ts * 1e3,
		   n <= 1000 ? "" : "(not run)", tf * 1e3);
	if (run_a)
		printf("  %-7s               A %9.1f ms   A/stream %6.1fx", k->name, ta * 1e3, ta / ts);
	else
		printf("  %-7s              ", k->name);
	printf("   B/stream %5.2fx   stream/floor %5.2fx", tb / ts, ts / tf);
	if (n <= 1000)
		printf("   stateless pages %8.1f ms (A/pages %5.1fx)", tp * 1e3, run_a ? ta / tp : 0);
	printf("   peak backend memory %lld kB\n", peak / 1024);
	tl_result("bench_wave_v3", "kind=%s,rows=%ld,topics=%d", "whole_wave_stream", ts * 1e3, "ms",
			  k->name, bench_rows, n);
	tl_result("bench_wave_v3", "kind=%s,rows=%ld,topics=%d", "whole_wave_lateral", tb * 1e3, "ms",
			  k->name, bench_rows, n);
	if (run_a)
		tl_result("bench_wave_v3", "kind=%s,rows=%ld,topics=%d", "whole_wave_sql", ta * 1e3, "ms",
				  k->name, bench_rows, n);
	printf("  %-7s               stream with %d FETCH 500 in flight %8.1f ms   B/stream %5.2fx",
		   k->name, PIPELINE_DEPTH, ts4 * 1e3, tb / ts4);
	if (run_a)
		printf("   A/stream %6.1fx", ta / ts4);
	printf("\n");
	FreeWave(&w);
}

/* Planning plus execution time of the first page of a method, as the server reports it (median of 9). */
static double
ServerTime(Method m, const Kind *k, const Wave *w, long long ceiling)
{
	char		sql[1024];
	char		ceil_s[24];
	const char *extra[2] = {"0", ceil_s};
	double		t[9];

	snprintf(ceil_s, sizeof(ceil_s), "%lld", ceiling);
	strcpy(sql, "EXPLAIN (ANALYZE, TIMING OFF, SUMMARY ON) ");
	if (m == M_A_PAGE)
		KeysetSql(sql + strlen(sql), sizeof(sql) - strlen(sql), k);
	else
		PageSql(sql + strlen(sql), sizeof(sql) - strlen(sql), k);
	for (int i = 0; i < 9; i++)
	{
		PGresult   *res = ExecWave(sql, w, 2, extra);

		t[i] = 0;
		for (int r = 0; r < PQntuples(res); r++)
		{
			const char *line = PQgetvalue(res, r, 0);
			double		ms;

			if (sscanf(line, "Planning Time: %lf ms", &ms) == 1 ||
				sscanf(line, "Execution Time: %lf ms", &ms) == 1)
				t[i] += ms / 1e3;
		}
		PQclear(res);
	}
	qsort(t, 9, sizeof(double), CmpDouble);
	return t[4];
}

/* Target 3: a caught-up reconnect, every floor at the ceiling. */
static void
CaughtUp(const Kind *k, int n, int groups, long long ceiling)
{
	Wave		w = MakeWave(n, groups, ceiling);
	Delivery	a, ours;
	double		ta = Median(M_A_PAGE, k, &w, ceiling, 9, &a);
	double		to = Median(M_PAGE, k, &w, ceiling, 31, &ours);

	double		sa, so;
	double		te[31];

	/* the round trip of the same arguments, doing nothing with them */
	for (int i = 0; i < 31; i++)
	{
		double		t0 = Now();

		PQclear(ExecWave("SELECT cardinality($1::bytea[]) + cardinality($2::bigint[])", &w,
						 0, NULL));
		te[i] = Now() - t0;
	}
	qsort(te, 31, sizeof(double), CmpDouble);
	Agree("caught up", &a, &ours);
	/* server time of one call, without the round trip: EXPLAIN ANALYZE's planning + execution */
	sa = ServerTime(M_A_PAGE, k, &w, ceiling);
	so = ServerTime(M_PAGE, k, &w, ceiling);
	printf("  %-7s caught up    %6d topics  A %9.3f ms  ours %7.3f ms   A/ours %7.1fx"
		   "   (round trip of the arguments alone %6.3f ms)\n",
		   k->name, n, ta * 1e3, to * 1e3, ta / to, te[15] * 1e3);
	tl_result("bench_wave_v3", "kind=%s,rows=%ld,topics=%d", "caught_up_ours", to * 1e3, "ms",
			  k->name, bench_rows, n);
	tl_result("bench_wave_v3", "kind=%s,rows=%ld,topics=%d", "caught_up_sql", ta * 1e3, "ms",
			  k->name, bench_rows, n);
	printf("  %-7s                             in the server (planning + execution):"
		   " A %7.3f ms  ours %7.4f ms   A/ours %7.1fx\n", k->name, sa * 1e3, so * 1e3, sa / so);
	FreeWave(&w);
}

/* Target 4: the dense wave (every topic) against a primary-key range scan. */
static void
Dense(const Kind *k, int groups, long long ceiling)
{
	Wave		w = MakeWave(groups, groups, 0);
	Delivery	s, pk;
	Contender	c[4] = {{.method = M_STREAM, .depth = 1}, {.method = M_PK_RANGE, .depth = 1},
	{.method = M_STREAM, .depth = PIPELINE_DEPTH}, {.method = M_PK_RANGE, .depth = PIPELINE_DEPTH}};
	double		ts, tk;
	double		tp[11], tq[11];

	double		ts4, tk4;
	Delivery	s4, pk4;

	Interleave(c, 4, k, &w, ceiling, 3);
	ts = c[0].median, s = c[0].d;
	tk = c[1].median, pk = c[1].d;
	ts4 = c[2].median, s4 = c[2].d;
	tk4 = c[3].median, pk4 = c[3].d;
	Agree("dense stream vs pk", &s, &pk);
	Agree("dense pipelined stream vs pk", &s4, &pk4);
	/* stateless pages at spread cursors, each against the same keyset page */
	for (int i = 0; i < 11; i++)
	{
		long long	cursor = ceiling / 12 * (i + 1);
		char		sql[256];
		char		cur[24], ceil_s[24];
		const char *extra[2] = {cur, ceil_s};
		Delivery	d1 = {0}, d2 = {0};
		double		t0;

		snprintf(cur, sizeof(cur), "%lld", cursor);
		snprintf(ceil_s, sizeof(ceil_s), "%lld", ceiling);
		PageSql(sql, sizeof(sql), k);
		t0 = Now();
		Consume(ExecWave(sql, &w, 2, extra), &d1);
		tp[i] = Now() - t0;
		t0 = Now();
		MethodPkPage(k, cursor, ceiling, &d2);
		tq[i] = Now() - t0;
		Agree("dense page vs pk page", &d1, &d2);
	}
	qsort(tp, 11, sizeof(double), CmpDouble);
	qsort(tq, 11, sizeof(double), CmpDouble);
	printf("  %-7s dense wave   %6d topics  %7lld rows  stream %8.1f ms  pk range %8.1f ms"
		   "   stream/pk %4.2fx   stateless page %6.2f ms vs pk page %5.2f ms (%4.1fx)\n",
		   k->name, groups, s.rows, ts * 1e3, tk * 1e3, ts / tk, tp[5] * 1e3, tq[5] * 1e3,
		   tp[5] / tq[5]);
	printf("  %-7s               with %d FETCH 500 in flight: stream %8.1f ms  pk range %8.1f ms"
		   "   stream/pk %4.2fx\n", k->name, PIPELINE_DEPTH, ts4 * 1e3, tk4 * 1e3, ts4 / tk4);
	FreeWave(&w);
}

/* Loads the data set for both kinds (unless already there) and warms the buffers. */
static void
Load(long rows, int groups)
{
	char		sql[2048];
	long		chunk = 250000;
	double		t0 = Now();
	PGresult   *res = tl_exec(conn, "SELECT (SELECT count(*) FROM xip83.group_messages)"
							  " + (SELECT count(*) FROM xip83.welcome_messages)", 0, NULL);
	long		have = (long) tl_int(res, 0, 0);

	PQclear(res);
	if (have == 2 * rows)
	{
		printf("reusing the %ld rows already loaded\n", have);
		return;
	}
	if (have != 0)
		tl_fatal("the tables hold %ld rows: start from empty ones", have);

	Exec("SELECT setseed(0.83)");
	for (long from = 1; from <= rows; from += chunk)
	{
		long		to = from + chunk - 1 < rows ? from + chunk - 1 : rows;

		snprintf(sql, sizeof(sql),
				 "INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash, is_commit)"
				 " SELECT g, d, sha256(g || d), i %% 10 = 0 FROM (SELECT i,"
				 "   decode(md5('g' || floor(%d * random() ^ 2)::int), 'hex') g,"
				 "   decode(repeat(md5(i::text), 16), 'hex') d"
				 "   FROM generate_series(%ld, %ld) i) s",
				 groups, from, to);
		Exec(sql);
		snprintf(sql, sizeof(sql),
				 "INSERT INTO xip83.welcome_messages (installation_key, data, hpke_public_key,"
				 "   installation_key_data_hash, welcome_metadata)"
				 " SELECT g, d, substr(d, 1, 32), sha256(g || d), substr(d, 33, 16) FROM (SELECT i,"
				 "   decode(md5('g' || floor(%d * random() ^ 2)::int), 'hex') g,"
				 "   decode(repeat(md5('w' || i::text), 16), 'hex') d"
				 "   FROM generate_series(%ld, %ld) i) s",
				 groups, from, to);
		Exec(sql);
	}
	Exec("VACUUM ANALYZE xip83.group_messages");
	Exec("VACUUM ANALYZE xip83.welcome_messages");
	Exec("CREATE EXTENSION IF NOT EXISTS pg_prewarm");
	Exec("SELECT pg_prewarm(c.oid) FROM pg_class c WHERE c.relnamespace = 'xip83'::regnamespace"
		 " AND c.relkind IN ('r', 'i')");
	printf("loaded %ld group messages and %ld welcomes over %d topics in %.1f s\n",
		   rows, rows, groups, Now() - t0);
}

/* Whether the scenario filter asks for a scenario (an empty filter asks for all). */
static bool
Wants(const char *only, const char *what)
{
	return *only == '\0' || strstr(only, what) != NULL;
}

int
main(int argc, char **argv)
{
	long		rows = argc > 1 ? atol(argv[1]) : 2000000;
	int			groups = argc > 2 ? atoi(argv[2]) : 20000;
	const Kind *kinds[2] = {&group_kind, &welcome_kind};
	int			sizes[3] = {100, 1000, 5000};
	const char *only = argc > 3 ? argv[3] : "";	/* e.g. "whole": one scenario */

	setvbuf(stdout, NULL, _IOLBF, 0);
	srandom(83);
	conn = tl_connect();
	bench_rows = rows;
	Load(rows, groups);
	for (int i = 0; i < 3; i++)
		if (sizes[i] > groups)
			sizes[i] = groups;

	for (int ki = 0; ki < 2; ki++)
	{
		const Kind *k = kinds[ki];
		long long	ceiling = Ceiling(k);

		printf("\n%s messages: %ld rows, %d topics, ceiling %lld, pages of %d\n",
			   k->name, rows, groups, ceiling, PAGE);
		for (int i = 0; i < 3 && Wants(only, "first"); i++)
			FirstPage(k, sizes[i], groups, ceiling);
		for (int i = 0; i < 3 && Wants(only, "whole"); i++)
			WholeWave(k, sizes[i], groups, ceiling, sizes[i] <= 1000 && !strstr(only, "noA"));
		/* every size: what a reconnect costs against the topics it names */
		for (int i = 0; i < 3 && Wants(only, "caught"); i++)
			CaughtUp(k, sizes[i], groups, ceiling);
		if (Wants(only, "dense"))
			Dense(k, groups, ceiling);
	}
	PQfinish(conn);
	printf("client received %.1f MB of field data\n", received_bytes / 1048576.0);
	return tl_done("bench_wave_v3");
}
