/*
 * bench_frames: a page of group messages as frames against the same page as
 * rows, and against the rows plus encoding them in the client.
 *
 *   bench_frames [rows [groups [rounds]]]   defaults 200000, 2000, 300
 *
 * Data: `rows` group messages of 256-byte payloads over `groups` 16-byte
 * topics (reused when already loaded). The page: the first 500 rows of a wave
 * of 200 topics, floors 0, pinned ceiling. Every method runs over one
 * connection with binary results, the same arrays, in interleaved rounds;
 * times are medians of the rounds:
 *   rows    SELECT * FROM xip83.group_wave_scan(...)
 *   frames  SELECT frame FROM xip83.group_wave_scan(..., mutate_id, max_frame_bytes)
 *   client  rows, then encoded into one SubscribeResponse with protobuf-c here
 *   client-text  the same with text results (bytea as hex, as many drivers
 *          read it), unescaped before encoding
 * It prints frames/rows (target <= 1.3) and client/frames (target >= 3).
 */
#define _GNU_SOURCE
#include "testlib.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "xip83/mls_api.pb-c.h"

#define PAGE	500
#define TOPICS	200

static PGconn *conn;

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int
cmp_double(const void *a, const void *b)
{
	double		x = *(const double *) a,
				y = *(const double *) b;

	return x < y ? -1 : x > y;
}

static uint64_t
be64(const char *p)
{
	uint64_t	v = 0;

	for (int i = 0; i < 8; i++)
		v = (v << 8) | (unsigned char) p[i];
	return v;
}

/* Wraps filled GroupMessage.V1 values into one SubscribeResponse and packs it; its size. */
static size_t
pack_page(Xmtp__Mls__Api__V1__GroupMessage__V1 *v1s, int n, uint64_t mutate_id)
{
	Xmtp__Mls__Api__V1__GroupMessage *msgs = calloc(n, sizeof(*msgs));
	Xmtp__Mls__Api__V1__GroupMessage **ptrs = calloc(n, sizeof(*ptrs));
	Xmtp__Mls__Api__V1__SubscribeResponse__V1__Messages body = XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__MESSAGES__INIT;
	Xmtp__Mls__Api__V1__SubscribeResponse__V1 v1 = XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__INIT;
	Xmtp__Mls__Api__V1__SubscribeResponse resp = XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__INIT;
	uint8_t    *out;
	size_t		size;

	for (int r = 0; r < n; r++)
	{
		xmtp__mls__api__v1__group_message__init(&msgs[r]);
		msgs[r].version_case = XMTP__MLS__API__V1__GROUP_MESSAGE__VERSION_V1;
		msgs[r].v1 = &v1s[r];
		ptrs[r] = &msgs[r];
	}
	body.n_group_messages = n;
	body.group_messages = ptrs;
	body.mutate_id = mutate_id;
	v1.response_case = XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__V1__RESPONSE_MESSAGES;
	v1.messages = &body;
	resp.version_case = XMTP__MLS__API__V1__SUBSCRIBE_RESPONSE__VERSION_V1;
	resp.v1 = &v1;
	size = xmtp__mls__api__v1__subscribe_response__get_packed_size(&resp);
	out = malloc(size);
	xmtp__mls__api__v1__subscribe_response__pack(&resp, out);
	free(out);
	free(ptrs);
	free(msgs);
	return size;
}

/* Encodes a binary wave_scan result as one SubscribeResponse; returns its size. */
static size_t
encode_in_client(const PGresult *res, uint64_t mutate_id)
{
	int			n = PQntuples(res);
	Xmtp__Mls__Api__V1__GroupMessage__V1 *v1s = calloc(n, sizeof(*v1s));
	size_t		size;

	for (int r = 0; r < n; r++)
	{
		Xmtp__Mls__Api__V1__GroupMessage__V1 *v = &v1s[r];

		xmtp__mls__api__v1__group_message__v1__init(v);
		v->id = be64(PQgetvalue(res, r, 0));
		v->created_ns = (be64(PQgetvalue(res, r, 1)) + 946684800000000ULL) * 1000;
		v->group_id.data = (uint8_t *) PQgetvalue(res, r, 2);
		v->group_id.len = PQgetlength(res, r, 2);
		v->data.data = (uint8_t *) PQgetvalue(res, r, 3);
		v->data.len = PQgetlength(res, r, 3);
		v->is_commit = !PQgetisnull(res, r, 4) && PQgetvalue(res, r, 4)[0];
		if (!PQgetisnull(res, r, 5))
		{
			v->sender_hmac.data = (uint8_t *) PQgetvalue(res, r, 5);
			v->sender_hmac.len = PQgetlength(res, r, 5);
		}
		v->should_push = !PQgetisnull(res, r, 6) && PQgetvalue(res, r, 6)[0];
	}
	size = pack_page(v1s, n, mutate_id);
	free(v1s);
	return size;
}

/* Encodes a text-format wave_scan result: bytea unescaped, times parsed. */
static size_t
encode_text_in_client(const PGresult *res, uint64_t mutate_id)
{
	int			n = PQntuples(res);
	Xmtp__Mls__Api__V1__GroupMessage__V1 *v1s = calloc(n, sizeof(*v1s));
	unsigned char **owned = calloc(3 * n, sizeof(*owned));
	size_t		size;

	for (int r = 0; r < n; r++)
	{
		Xmtp__Mls__Api__V1__GroupMessage__V1 *v = &v1s[r];
		struct tm	tm = {0};
		const char *ts = PQgetvalue(res, r, 1);
		const char *dot = strchr(ts, '.');

		xmtp__mls__api__v1__group_message__v1__init(v);
		v->id = strtoull(PQgetvalue(res, r, 0), NULL, 10);
		strptime(ts, "%Y-%m-%d %H:%M:%S", &tm);
		v->created_ns = (uint64_t) timegm(&tm) * 1000000000ULL +
			(dot ? (uint64_t) (atof(dot) * 1e9 + 0.5) : 0);
		v->group_id.data = owned[3 * r] =
			PQunescapeBytea((const unsigned char *) PQgetvalue(res, r, 2), &v->group_id.len);
		v->data.data = owned[3 * r + 1] =
			PQunescapeBytea((const unsigned char *) PQgetvalue(res, r, 3), &v->data.len);
		v->is_commit = PQgetvalue(res, r, 4)[0] == 't';
		if (!PQgetisnull(res, r, 5))
			v->sender_hmac.data = owned[3 * r + 2] =
				PQunescapeBytea((const unsigned char *) PQgetvalue(res, r, 5), &v->sender_hmac.len);
		v->should_push = PQgetvalue(res, r, 6)[0] == 't';
	}
	size = pack_page(v1s, n, mutate_id);
	for (int i = 0; i < 3 * n; i++)
		if (owned[i])
			PQfreemem(owned[i]);
	free(owned);
	free(v1s);
	return size;
}

int
main(int argc, char **argv)
{
	long		rows = argc > 1 ? atol(argv[1]) : 200000;
	long		groups = argc > 2 ? atol(argv[2]) : 2000;
	int			rounds = argc > 3 ? atoi(argv[3]) : 300;
	char		sql[1024];
	PGresult   *res;
	double	   *t_rows = calloc(rounds, sizeof(double)),
			   *t_frames = calloc(rounds, sizeof(double)),
			   *t_client = calloc(rounds, sizeof(double)),
			   *t_text = calloc(rounds, sizeof(double));
	size_t		frame_bytes = 0,
				client_bytes = 0,
				text_bytes = 0;

	conn = tl_connect();
	res = tl_exec(conn, "SELECT count(*) FROM xip83.group_messages", 0, NULL);
	if (tl_int(res, 0, 0) != rows)
	{
		printf("loading %ld rows over %ld groups\n", rows, groups);
		PQclear(tl_exec(conn, "TRUNCATE xip83.group_messages", 0, NULL));
		for (long done = 0; done < rows; done += 20000)
		{
			snprintf(sql, sizeof(sql),
					 "SELECT count(*) FROM xip83.insert_group_messages("
					 "  ARRAY(SELECT substring(sha256(int8send((g * 7919) %% %ld)) for 16) "
					 "        FROM generate_series(%ld, %ld) g), "
					 "  ARRAY(SELECT substring(sha512(int8send(g)) || sha512(int8send(-g)) || "
					 "        sha512(int8send(g + 1)) || sha512(int8send(-g - 1)) for 256) "
					 "        FROM generate_series(%ld, %ld) g))",
					 groups, done + 1, done + 20000 < rows ? done + 20000 : rows, done + 1,
					 done + 20000 < rows ? done + 20000 : rows);
			PQclear(tl_exec(conn, sql, 0, NULL));
		}
		PQclear(tl_exec(conn, "VACUUM ANALYZE xip83.group_messages", 0, NULL));
	}
	PQclear(res);
	snprintf(sql, sizeof(sql),
			 "CREATE TEMP TABLE w AS SELECT ARRAY(SELECT DISTINCT group_id FROM xip83.group_messages "
			 "  ORDER BY group_id LIMIT %d) AS topics, array_fill(0::bigint, ARRAY[%d]) AS floors, "
			 "  xip83.group_ceiling() AS ceiling", TOPICS, TOPICS);
	PQclear(tl_exec(conn, sql, 0, NULL));

	for (int r = 0; r < rounds; r++)
	{
		double		t0;

		t0 = now_ms();
		res = PQexecParams(conn, "SELECT s.* FROM w, LATERAL xip83.group_wave_scan(w.topics, w.floors, 0, w.ceiling, 500) s",
						   0, NULL, NULL, NULL, NULL, 1);
		t_rows[r] = now_ms() - t0;
		if (PQntuples(res) != PAGE)
			tl_fatal("rows page has %d rows", PQntuples(res));
		PQclear(res);

		t0 = now_ms();
		res = PQexecParams(conn, "SELECT f.frame FROM w, LATERAL xip83.group_wave_scan(w.topics, w.floors, 0, w.ceiling, 500, 7, 2097152) f",
						   0, NULL, NULL, NULL, NULL, 1);
		t_frames[r] = now_ms() - t0;
		if (PQntuples(res) != 1)
			tl_fatal("frames page has %d frames", PQntuples(res));
		frame_bytes = PQgetlength(res, 0, 0);
		PQclear(res);

		t0 = now_ms();
		res = PQexecParams(conn, "SELECT s.* FROM w, LATERAL xip83.group_wave_scan(w.topics, w.floors, 0, w.ceiling, 500) s",
						   0, NULL, NULL, NULL, NULL, 1);
		client_bytes = encode_in_client(res, 7);
		t_client[r] = now_ms() - t0;
		PQclear(res);

		t0 = now_ms();
		res = PQexecParams(conn, "SELECT s.* FROM w, LATERAL xip83.group_wave_scan(w.topics, w.floors, 0, w.ceiling, 500) s",
						   0, NULL, NULL, NULL, NULL, 0);
		text_bytes = encode_text_in_client(res, 7);
		t_text[r] = now_ms() - t0;
		PQclear(res);
	}
	qsort(t_rows, rounds, sizeof(double), cmp_double);
	qsort(t_frames, rounds, sizeof(double), cmp_double);
	qsort(t_client, rounds, sizeof(double), cmp_double);
	qsort(t_text, rounds, sizeof(double), cmp_double);
	printf("page of %d group messages, %d topics, %d rounds (medians)\n", PAGE, TOPICS, rounds);
	printf("  rows   (group_wave_scan)           %8.3f ms\n", t_rows[rounds / 2]);
	printf("  frames (group_wave_scan frames)    %8.3f ms  (%zu bytes)\n", t_frames[rounds / 2], frame_bytes);
	printf("  client (rows + protobuf-c here)    %8.3f ms  (%zu bytes)\n", t_client[rounds / 2], client_bytes);
	printf("  client-text (text rows + protobuf-c)  %8.3f ms  (%zu bytes)\n", t_text[rounds / 2], text_bytes);
	printf("  frames / rows        = %.2f  (target <= 1.3)\n", t_frames[rounds / 2] / t_rows[rounds / 2]);
	printf("  client / frames      = %.2f  (target >= 3)\n", t_client[rounds / 2] / t_frames[rounds / 2]);
	printf("  client-text / frames = %.2f\n", t_text[rounds / 2] / t_frames[rounds / 2]);
	tl_result("bench_frames", "page=%d,topics=%d", "rows", t_rows[rounds / 2], "ms", PAGE, TOPICS);
	tl_result("bench_frames", "page=%d,topics=%d", "frames", t_frames[rounds / 2], "ms", PAGE, TOPICS);
	tl_result("bench_frames", "page=%d,topics=%d", "client_encode", t_client[rounds / 2], "ms",
			  PAGE, TOPICS);
	TL_CHECK(frame_bytes == client_bytes && frame_bytes == text_bytes,
			 "frames and client encodings have the same size: %zu, %zu, %zu",
			 frame_bytes, client_bytes, text_bytes);
	PQfinish(conn);
	return tl_done("bench_frames");
}
