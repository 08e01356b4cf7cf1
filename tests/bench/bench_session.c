/*
 * bench_session: the session engine's two speed targets, each printed with
 * what it is compared against, for both bindings, in one run.
 *
 *   bench_session [--only wave|latency] [--seconds S]
 *
 * 1. Wave: a 1,000-topic wave over 100,000 stored messages of those topics
 *    (100 each, 256-byte payloads; as many again in other topics), from
 *    cursor 0 / nothing seen. The engine: from sending the Mutate to reading
 *    its CatchupComplete, every frame read by the client (a fresh
 *    xip83-session each round, timed after its Started; an untimed round
 *    decodes every frame and checks the rows against the anchor's). The anchor: the bare
 *    wave replay, the same scans the engine runs (pages of 1,000 rows of
 *    group_wave_scan / envelope_wave_scan, array arguments as text) over one
 *    connection with binary results, ceilings pinned first, nothing encoded. Target: engine <= 1.5x the anchor. Medians of 5 rounds,
 *    alternating.
 * 2. Live latency: 16 clients write single-row transactions (synchronous
 *    commit) at 2,000 rows/s in all to 100 topics the session has live; the
 *    latency of a row is from its commit's acknowledgement to the writer to
 *    the client decoding the frame that carries it from the engine's stdout.
 *    Target: p99 <= 15 ms. The anchor beside it, at the same time over the same
 *    rows: the feed library alone (feed.h in a thread of this process, no
 *    engine, no pipe), so a stall of the shared machine hits both.
 *
 * Run with: bash tests/driver.sh bench bench_session
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "feed/feed.h"
#include "sessionproc.h"
#include "testlib.h"

#define WAVE_TOPICS 1000
#define PER_TOPIC	100
#define ROUNDS		5
#define CLIENTS		16
#define LIVE_TOPICS 100
#define RATE		2000.0
/* the engine's page: the anchor runs the very scans the engine runs */
#define BARE_PAGE	"1000"

static const char *argv0;
static double seconds = 10;

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
	if (us > 0)
		usleep((useconds_t) us);
}

static int
CmpDouble(const void *a, const void *b)
{
	double		x = *(const double *) a,
				y = *(const double *) b;

	return (x > y) - (x < y);
}

/* The median of n timings (sorts them). */
static double
Median(double *v, int n)
{
	qsort(v, (size_t) n, sizeof(double), CmpDouble);
	return v[n / 2];
}

/* ---------------------------------------------------------------- 1. wave */

/* Topic i of a binding: kind byte then "w" and its number (d14n topics keep the kind byte). */
static size_t
Topic(int i, uint8_t *out)
{
	out[0] = 0;
	return 1 + (size_t) sprintf((char *) out + 1, "w%05d", i);
}

static void
Load(PGconn *c, bool d14n)
{
	/* rows of an earlier run against a kept cluster are reused */
	if (tl_scalar(c, d14n ? "SELECT count(*) FROM xip83.envelopes WHERE originator_node_id >= 100"
				  : "SELECT count(*) FROM xip83.group_messages WHERE group_id >= 'w'") >= 200000)
		return;
	if (!d14n)
	{
		PQclear(tl_exec(c, "INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash)"
						" SELECT convert_to('w' || lpad((i % 2000)::text, 5, '0'), 'UTF8'), d, sha256(d)"
						" FROM generate_series(0, 199999) i,"
						" LATERAL (SELECT convert_to(i::text || repeat(md5(i::text), 8), 'UTF8') d) x",
						0, NULL));
		PQclear(tl_exec(c, "ANALYZE xip83.group_messages", 0, NULL));
		return;
	}
	/* real envelopes (the client decodes each one), 3 originators, in batches */
	for (int from = 0; from < 200000; from += 5000)
	{
		TlBuf		nodes = {0},
					seqs = {0},
					topics = {0},
					envs = {0};
		const char *params[4];

		tl_buf_add(&nodes, "{");
		tl_buf_add(&seqs, "{");
		tl_buf_add(&topics, "{");
		tl_buf_add(&envs, "{");
		for (int i = from; i < from + 5000; i++)
		{
			uint8_t		t[16];
			size_t		tl = Topic(i % 2000, t),
						el;
			unsigned char *env = sp_envelope(100 * (1 + i % 3), 1 + i / 3, t, tl, &el);

			tl_buf_add(&nodes, "%s%d", i > from ? "," : "", 100 * (1 + i % 3));
			tl_buf_add(&seqs, "%s%d", i > from ? "," : "", 1 + i / 3);
			sp_bytea_elem(&topics, t, tl);
			sp_bytea_elem(&envs, env, el);
			free(env);
		}
		tl_buf_add(&nodes, "}");
		tl_buf_add(&seqs, "}");
		tl_buf_add(&topics, "}");
		tl_buf_add(&envs, "}");
		params[0] = nodes.s;
		params[1] = seqs.s;
		params[2] = topics.s;
		params[3] = envs.s;
		PQclear(tl_exec(c, "INSERT INTO xip83.envelopes (originator_node_id, originator_sequence_id,"
						" topic, originator_envelope) SELECT * FROM unnest($1::int[], $2::bigint[],"
						" $3::bytea[], $4::bytea[])", 4, params));
		free(nodes.s);
		free(seqs.s);
		free(topics.s);
		free(envs.s);
	}
	PQclear(tl_exec(c, "ANALYZE xip83.envelopes", 0, NULL));
}

/* The bare replay: pages of 500 of the wave scan; returns ms and the rows read. */
static double
BareWave(PGconn *c, bool d14n, long *rows)
{
	TlBuf		topics = {0},
				nodes = {0},
				floors = {0},
				cnodes = {0},
				ceils = {0};
	int64_t		t0 = NowUs();
	PGresult   *res;
	char		node[16] = "-2147483648",
				seq[32] = "-9223372036854775808",
				last[32] = "0";

	*rows = 0;
	/* the arrays, as the engine builds them: text literals */
	res = tl_exec(c, d14n ? "SELECT originator_node_id, max_sequence_id FROM xip83.originator_ceilings()"
				  : "SELECT 0, xip83.group_ceiling()", 0, NULL);
	tl_buf_add(&topics, "{");
	tl_buf_add(&nodes, "{");
	tl_buf_add(&floors, "{");
	tl_buf_add(&cnodes, "{");
	tl_buf_add(&ceils, "{");
	for (int o = 0; o < PQntuples(res); o++)
	{
		tl_buf_add(&cnodes, "%s%s", o ? "," : "", PQgetvalue(res, o, 0));
		tl_buf_add(&ceils, "%s%s", o ? "," : "", PQgetvalue(res, o, 1));
	}
	for (int i = 0; i < WAVE_TOPICS; i++)
		for (int o = 0; o < (d14n ? PQntuples(res) : 1); o++)
		{
			uint8_t		t[16];
			size_t		n = Topic(i, t);

			tl_buf_add(&topics, "%s\"\\\\x", topics.len > 1 ? "," : "");
			for (size_t k = d14n ? 0 : 1; k < n; k++)
				tl_buf_add(&topics, "%02x", t[k]);
			tl_buf_add(&topics, "\"");
			tl_buf_add(&nodes, "%s%s", nodes.len > 1 ? "," : "", PQgetvalue(res, o, 0));
			tl_buf_add(&floors, "%s%s", floors.len > 1 ? "," : "", d14n ? "-1" : "0");
		}
	tl_buf_add(&topics, "}");
	tl_buf_add(&nodes, "}");
	tl_buf_add(&floors, "}");
	tl_buf_add(&cnodes, "}");
	tl_buf_add(&ceils, "}");
	PQclear(res);
	for (;;)
	{
		int			n;

		if (d14n)
		{
			const char *p[8] = {topics.s, nodes.s, floors.s, cnodes.s, ceils.s, node, seq, BARE_PAGE};

			res = PQexecParams(c, "SELECT originator_node_id, originator_sequence_id, topic, originator_envelope"
							   " FROM xip83.envelope_wave_scan($1::bytea[], $2::int[], $3::bigint[],"
							   " $4::int[], $5::bigint[], $6::int, $7::bigint, $8::int)",
							   8, NULL, p, NULL, NULL, 1);
		}
		else
		{
			char		ceiling[32];
			const char *p[5] = {topics.s, floors.s, last, ceiling, BARE_PAGE};

			snprintf(ceiling, sizeof(ceiling), "%s", ceils.s + 1);
			ceiling[strcspn(ceiling, "}")] = '\0';
			res = PQexecParams(c, "SELECT * FROM xip83.group_wave_scan($1::bytea[], $2::bigint[],"
							   " $3::bigint, $4::bigint, $5::int)", 5, NULL, p, NULL, NULL, 1);
		}
		if (PQresultStatus(res) != PGRES_TUPLES_OK)
			tl_fatal("bare wave: %s", PQerrorMessage(c));
		n = PQntuples(res);
		*rows += n;
		if (n > 0 && d14n)
		{
			snprintf(node, sizeof(node), "%lld", (long long) xip83_result_int(res, n - 1, 0));
			snprintf(seq, sizeof(seq), "%lld", (long long) xip83_result_int(res, n - 1, 1));
		}
		else if (n > 0)
			snprintf(last, sizeof(last), "%lld", (long long) xip83_result_int(res, n - 1, 0));
		PQclear(res);
		if (n < atoi(BARE_PAGE))
			break;
	}
	free(topics.s);
	free(nodes.s);
	free(floors.s);
	free(cnodes.s);
	free(ceils.s);
	return (NowUs() - t0) / 1000.0;
}

/*
 * The engine: Mutate to CatchupComplete, every frame read; returns ms. With
 * rows set (an untimed check) every frame is decoded and its rows counted.
 */
static double
EngineWave(bool d14n, long *rows)
{
	SessionProc p;
	SpCurAdd   *adds = calloc(WAVE_TOPICS, sizeof(SpCurAdd));
	uint8_t		(*t)[16] = calloc(WAVE_TOPICS, 16);
	SpRow		zero = {0};
	SpEvent		e;
	int64_t		t0;
	bool		done = false;
	double		ms;

	sp_start(&p, argv0, d14n ? "d14n" : "v3", 30000);
	if (!sp_next(&p, 10000, &e) || e.type != SP_STARTED)
		tl_fatal("no Started");
	sp_event_free(&e);
	for (int i = 0; i < WAVE_TOPICS; i++)
		adds[i] = (SpCurAdd) {t[i], Topic(i, t[i]), &zero, d14n ? 0 : 1};
	t0 = NowUs();
	sp_mutate_cur(&p, adds, WAVE_TOPICS, NULL, NULL, 0, false, 1);
	while (!done)
	{
		if (rows == NULL)
		{
			int			arm = sp_next_arm(&p, 60000);

			if (arm < 0)
				break;
			done = arm == SP_CATCHUP;
			continue;
		}
		if (!sp_next(&p, 60000, &e))
			break;
		if (e.type == SP_DELIVERY)
			*rows += (long) e.n_rows;
		done = e.type == SP_CATCHUP;
		sp_event_free(&e);
	}
	if (!done)
		tl_fatal("the engine's wave did not finish");
	ms = (NowUs() - t0) / 1000.0;
	sp_close(&p);
	sp_finish_events(&p, 10000, NULL, NULL);
	free(adds);
	free(t);
	return ms;
}

static void
BenchWave(PGconn *c, bool d14n)
{
	double		bare[ROUNDS],
				engine[ROUNDS];
	long		bare_rows = 0,
				engine_rows = 0;
	double		b,
				e;

	Load(c, d14n);
	/* untimed: warm buffers, and the engine's rows decoded and counted */
	BareWave(c, d14n, &bare_rows);
	EngineWave(d14n, &engine_rows);
	for (int r = 0; r < ROUNDS; r++)
	{
		engine[r] = EngineWave(d14n, NULL);
		bare[r] = BareWave(c, d14n, &bare_rows);
	}
	if (bare_rows != engine_rows)
		tl_fatal("the engine sent %ld rows, the bare replay read %ld", engine_rows, bare_rows);
	b = Median(bare, ROUNDS);
	e = Median(engine, ROUNDS);
	printf("   %-5s %ld rows: engine %8.1f ms   bare replay %8.1f ms   engine/bare %5.2fx (target <= 1.50)  %s\n",
		   d14n ? "d14n" : "v3", engine_rows, e, b, e / b, e / b <= 1.5 ? "met" : "NOT met");
	tl_result("bench_session", "binding=%s", "wave_engine", e, "ms", d14n ? "d14n" : "v3");
	tl_result("bench_session", "binding=%s", "wave_bare_replay", b, "ms", d14n ? "d14n" : "v3");
}

/* ---------------------------------------------------------------- 2. latency */

typedef struct LatRun
{
	bool		d14n;
	int64_t		base;			/* v3: ids above it are the run's */
	int64_t		max_rows;
	int64_t    *ack_us;			/* by row index */
	int64_t    *engine_us;		/* when the client decoded it from the engine's frame */
	int64_t    *feed_us;		/* when the feed library alone delivered it */
	int64_t		start_us;
	int64_t		end_us;
	atomic_llong written;
	atomic_int	stop;
} LatRun;

static LatRun *run;

/* The row index of a position: v3 id - base - 1; d14n client k's sequence s at k + CLIENTS * (s - 1). */
static int64_t
RowIndex(int32_t node, int64_t pos)
{
	int64_t		i = run->d14n ? (node - 1) + CLIENTS * (pos - 1) : pos - run->base - 1;

	return i >= 0 && i < run->max_rows ? i : -1;
}

static void *
Writer(void *arg)
{
	int			me = (int) (intptr_t) arg;
	PGconn	   *c = tl_connect();
	double		interval = 1e6 * CLIENTS / RATE;
	int64_t		start = run->start_us + (int64_t) (interval * me / CLIENTS);

	for (int64_t k = 0; !atomic_load(&run->stop); k++)
	{
		char		topic[16],
					node[16],
					seq[24],
					data[64];
		const char *params[4] = {topic, data, node, seq};
		PGresult   *r;
		int64_t		idx;

		SleepUs(start + (int64_t) (k * interval) - NowUs());
		/* a run's own bytes: repeats of an earlier run's rows would be refused */
		snprintf(data, sizeof(data), "\\x%08x%016llx%016llx", me, (long long) k,
				 (long long) run->start_us);
		snprintf(node, sizeof(node), "%d", me + 1);
		snprintf(seq, sizeof(seq), "%lld", (long long) k + 1);
		if (run->d14n)
		{
			/* the stored topic is kind-prefixed; the envelope is a real one */
			uint8_t		tb[3] = {0, (uint8_t) (k % LIVE_TOPICS >> 8), (uint8_t) (k % LIVE_TOPICS)};
			size_t		el;
			unsigned char *env = sp_envelope(me + 1, k + 1, tb, 3, &el);
			TlBuf		hex = {0};

			tl_buf_add(&hex, "\\x");
			for (size_t i = 0; i < el; i++)
				tl_buf_add(&hex, "%02x", env[i]);
			snprintf(topic, sizeof(topic), "\\x00%04x", (int) (k % LIVE_TOPICS));
			params[1] = hex.s;
			r = tl_exec(c, "INSERT INTO xip83.envelopes (originator_node_id, originator_sequence_id, topic,"
						" originator_envelope) VALUES ($3::int, $4::bigint, $1::bytea, $2::bytea)"
						" RETURNING $3::int, originator_sequence_id", 4, params);
			free(hex.s);
			free(env);
		}
		else
		{
			snprintf(topic, sizeof(topic), "\\x%04x", (int) (k % LIVE_TOPICS));
			r = tl_exec(c, "INSERT INTO xip83.group_messages (group_id, data, group_id_data_hash)"
						" VALUES ($1, $2, sha256($1::bytea || $2::bytea)) RETURNING 0, id", 2, params);
		}
		idx = RowIndex((int32_t) tl_int(r, 0, 0), tl_int(r, 0, 1));
		if (idx >= 0)
			run->ack_us[idx] = NowUs();
		PQclear(r);
		atomic_fetch_add(&run->written, 1);
	}
	PQfinish(c);
	return NULL;
}

static void
Seen(int64_t *at, int32_t node, int64_t pos)
{
	int64_t		idx = RowIndex(node, pos);

	if (idx >= 0 && at[idx] == 0)
		at[idx] = NowUs();
}

static void
FeedRow(void *arg, const Xip83FeedRow *row)
{
	(void) arg;
	Seen(run->feed_us, row->originator_node_id, row->position);
}

/* The feed library alone, in its own thread, following the same rows. */
static void *
FeedAlone(void *arg)
{
	Xip83Feed  *feed = arg;

	while (NowUs() < run->end_us + 1000000)
		if (xip83_feed_step(feed, 20) < 0)
			tl_fatal("feed failed");
	return NULL;
}

static int
CmpInt64(const void *a, const void *b)
{
	int64_t		x = *(const int64_t *) a,
				y = *(const int64_t *) b;

	return (x > y) - (x < y);
}

/* p50, p99 and max of one consumer's latencies; returns p99 in ms. */
static double
Report(const char *binding, const char *who, const int64_t *seen, bool target)
{
	int64_t    *lats = malloc(run->max_rows * sizeof(int64_t));
	int64_t		n = 0;
	double		p99;

	for (int64_t i = 0; i < run->max_rows; i++)
		if (run->ack_us[i] && seen[i])
			lats[n++] = seen[i] > run->ack_us[i] ? seen[i] - run->ack_us[i] : 0;
	qsort(lats, (size_t) n, sizeof(int64_t), CmpInt64);
	p99 = n ? lats[(int64_t) (n * 0.99)] / 1000.0 : -1;
	printf("   %-5s %-24s %6lld of %lld rows: p50 %6.2f ms  p99 %6.2f ms  max %7.2f ms%s\n",
		   binding, who, (long long) n, (long long) atomic_load(&run->written),
		   n ? lats[n / 2] / 1000.0 : -1, p99, n ? lats[n - 1] / 1000.0 : -1,
		   !target ? "" : p99 >= 0 && p99 <= 15 ? "  (target p99 <= 15 ms: met)"
		   : "  (target p99 <= 15 ms: NOT met)");
	if (n)
		tl_result("bench_session", "binding=%s,reader=%s", "live_p99", p99, "ms", binding, who);
	free(lats);
	return p99;
}

/* One load, two consumers at once: the engine (frames decoded) and the feed library alone. */
static void
BenchLatency(PGconn *c, bool d14n)
{
	LatRun		r = {0};
	pthread_t	t[CLIENTS],
				feed_thread;
	SessionProc p;
	Xip83FeedOptions fo = {.conninfo = "", .kinds = d14n ? XIP83_FEED_ENVELOPE : XIP83_FEED_GROUP,
	.on_row = FeedRow};
	Xip83Feed  *feed;
	SpCurAdd	adds[LIVE_TOPICS];
	uint8_t		tb[LIVE_TOPICS][3];
	SpRow		zero = {0};
	SpEvent		e;

	r.d14n = d14n;
	r.max_rows = (int64_t) (RATE * seconds * 1.5) + 1000;
	r.ack_us = calloc(r.max_rows, sizeof(int64_t));
	r.engine_us = calloc(r.max_rows, sizeof(int64_t));
	r.feed_us = calloc(r.max_rows, sizeof(int64_t));
	r.base = d14n ? 0 : tl_scalar(c, "SELECT coalesce(max(id), 0) FROM xip83.group_messages");
	run = &r;
	if (d14n)
		PQclear(tl_exec(c, "TRUNCATE xip83.envelopes", 0, NULL));
	sp_start(&p, argv0, d14n ? "d14n" : "v3", 30000);
	for (int i = 0; i < LIVE_TOPICS; i++)
	{
		tb[i][0] = 0;
		tb[i][1] = (uint8_t) (i >> 8);
		tb[i][2] = (uint8_t) i;
		adds[i] = (SpCurAdd) {tb[i], 3, &zero, d14n ? 0 : 1};
	}
	sp_mutate_cur(&p, adds, LIVE_TOPICS, NULL, NULL, 0, false, 1);
	while (sp_next(&p, 10000, &e) && e.type != SP_CATCHUP)
		sp_event_free(&e);
	sp_event_free(&e);
	feed = xip83_feed_new(&fo);
	if (!xip83_feed_start_at_horizon(feed))
		tl_fatal("feed: no horizons");
	r.start_us = NowUs() + 100000;
	r.end_us = r.start_us + (int64_t) (seconds * 1e6);
	pthread_create(&feed_thread, NULL, FeedAlone, feed);
	for (int i = 0; i < CLIENTS; i++)
		pthread_create(&t[i], NULL, Writer, (void *) (intptr_t) i);
	while (NowUs() < r.end_us + 1000000)
	{
		if (NowUs() >= r.end_us)
			atomic_store(&r.stop, 1);
		if (sp_next(&p, 20, &e))
		{
			for (size_t i = 0; i < e.n_rows && e.type == SP_DELIVERY; i++)
				Seen(r.engine_us, e.rows[i].node, e.rows[i].pos);
			sp_event_free(&e);
		}
	}
	for (int i = 0; i < CLIENTS; i++)
		pthread_join(t[i], NULL);
	pthread_join(feed_thread, NULL);
	sp_close(&p);
	sp_finish_events(&p, 10000, NULL, NULL);
	xip83_feed_free(feed);
	printf("   %-5s %lld rows written in %.0f s (%.0f rows/s)\n", d14n ? "d14n" : "v3",
		   (long long) atomic_load(&r.written), seconds, atomic_load(&r.written) / seconds);
	Report(d14n ? "d14n" : "v3", "engine (frame decoded)", r.engine_us, true);
	Report(d14n ? "d14n" : "v3", "feed library alone", r.feed_us, false);
	free(r.ack_us);
	free(r.engine_us);
	free(r.feed_us);
}

int
main(int argc, char **argv)
{
	PGconn	   *c = tl_connect();
	const char *only = NULL;

	argv0 = argv[0];
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int i = 1; i < argc; i++)
	{
		if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
			only = argv[++i];
		else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
			seconds = atof(argv[++i]);
		else
			tl_fatal("usage: bench_session [--only wave|latency] [--seconds S]");
	}
	if (only == NULL || strcmp(only, "wave") == 0)
	{
		printf("1. a 1,000-topic wave over %d stored messages of its topics, medians of %d rounds\n",
			   WAVE_TOPICS * PER_TOPIC, ROUNDS);
		BenchWave(c, false);
		BenchWave(c, true);
	}
	if (only == NULL || strcmp(only, "latency") == 0)
	{
		printf("2. live latency, commit acknowledged -> row decoded by the client, %d clients at %.0f rows/s, %.0f s\n",
			   CLIENTS, RATE, seconds);
		BenchLatency(c, false);
		BenchLatency(c, true);
	}
	PQfinish(c);
	return 0;
}
